"""Models and inputs for the CDMPP benchmark (bench/run_cdmpp_bench.sh), written into --out.

    /usr/bin/python3 bench/make_bench_models.py --out DIR [--programs 512] [--leaves 5]

Per model NAME in {paper, compact} (converters/cdmpp_torch.py's named configs, seeded random
weights with non-trivial LayerNorm/BatchNorm statistics, converted by converters/convert.py):

  NAME.safetensors          the tempo model file (BatchNorm folded, 4-program selftest)
  NAME.checkpoint.pt        the converter's input (config, unfolded state_dict, norm,
                            transform): PyTorch eager runs this model
  NAME.programs.jsonl       --programs random compact ASTs with exactly --leaves leaves
                            (design.md schema; `device` iff the model has the branch)
  NAME.inputs.safetensors   the same programs preprocessed (normalised + tree PE, float32):
                            x [B, leaves, F], mask [B, leaves] (all ones), device [B, 8] (paper)
                            -- what PyTorch eager and TorchScript are timed on
  NAME.torchscript.pt       torch.jit.trace of the eval-mode model's forward(x, mask[, device])
                            (frozen), checked against eager at batch 1, 16 and --programs
  manifest.json             configs, parameter counts, weight bytes, the files

The paper file is ~55 MB: write it outside the repository.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from converters import cdmpp_torch as ct  # noqa: E402
from converters import convert as cv  # noqa: E402
from converters import random_programs as rp  # noqa: E402
from converters.make_parity_fixtures import calibrate_batchnorm, randomise  # noqa: E402
from converters import safetensors_io  # noqa: E402

T = ct.OutputTransform
SPECS = {  # name -> (seed, config, output transform)
    "paper": (201, ct.paper_config(dropout=0.0), T("boxcox", -0.08, -10.0, 3.0)),
    "compact": (202, ct.compact_config(dropout=0.0), T("boxcox", 0.05, -6.5, 1.2)),
}
CALIBRATION = 128


class Forward(torch.nn.Module):
    """The model's forward on already-preprocessed tensors, as TorchScript sees it."""

    def __init__(self, model, device: bool):
        super().__init__()
        self.model = model
        self.device = device

    def forward(self, x, mask, device=None):
        return self.model(x, mask, device)


def build(name: str, out: str, programs: int, leaves: int) -> dict:
    seed, config, transform = SPECS[name]
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    prof = rp.random_profile(rng, config.feature_dim)
    model = ct.CdmppModel(config, transform)
    randomise(model, gen)
    exact = config.pooling == "flatten"
    calib = [rp.random_program(rng, prof, n, config.device)
             for n in rp.random_leaf_counts(rng, CALIBRATION, config.max_leaves, exact)]
    calibrate_batchnorm(model, *ct.preprocess(calib, prof.norm_min, prof.norm_max, config,
                                              dtype=torch.float32))

    # the model file
    ckpt = cv.make_checkpoint(model, prof.norm_min, prof.norm_max,
                              {"note": "random weights, benchmark model", "seed": seed})
    tensors, metadata = cv.convert(ckpt, selftest=4, seed=seed)
    safetensors_io.save_file(tensors, os.path.join(out, f"{name}.safetensors"), metadata)
    torch.save(ckpt, os.path.join(out, f"{name}.checkpoint.pt"))  # for PyTorch eager

    # programs with exactly `leaves` leaves, raw and preprocessed
    asts = [rp.random_program(rng, prof, leaves, config.device, pid=f"{name}-{k}")
            for k in range(programs)]
    with open(os.path.join(out, f"{name}.programs.jsonl"), "w") as f:
        for ast in asts:
            f.write(json.dumps(ast, separators=(",", ":")) + "\n")
    x, mask, dev = ct.preprocess(asts, prof.norm_min, prof.norm_max, config)  # float64, L = max
    x = x[:, :leaves].float().contiguous()          # no padding rows: every program has `leaves`
    mask = mask[:, :leaves].contiguous()
    dev = None if dev is None else dev.float().contiguous()
    inputs = {"x": x.numpy(), "mask": mask.to(torch.float32).numpy()}
    if dev is not None:
        inputs["device"] = dev.numpy()
    safetensors_io.save_file(inputs, os.path.join(out, f"{name}.inputs.safetensors"),
                             {"leaves": str(leaves), "programs": str(programs)})

    # TorchScript: trace the eval-mode forward, freeze, check against eager at every batch
    model.eval()
    wrapper = Forward(model, config.device).eval()
    example = (x[:16], mask[:16]) + ((dev[:16],) if dev is not None else ())
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer warns about the shape checks it bakes in
        traced = torch.jit.trace(wrapper, example, check_trace=False)
        traced = torch.jit.freeze(traced)
    worst = 0.0
    with torch.no_grad():
        for b in (1, 16, programs):
            args = (x[:b], mask[:b]) + ((dev[:b],) if dev is not None else ())
            want = model(*args)
            got = traced(*args)
            worst = max(worst, float((got - want).abs().max()))
    if not worst <= 1e-4:
        raise RuntimeError(f"{name}: TorchScript differs from eager by {worst}")
    script_path = os.path.join(out, f"{name}.torchscript.pt")
    traced.save(script_path)

    weights = sum(int(np.prod(v.shape)) for k, v in tensors.items()
                  if not k.startswith("selftest.") and not k.startswith("norm."))
    script_bytes = os.path.getsize(script_path)
    if script_bytes < 0.95 * 4 * weights:  # freezing shares identical tensors: none may be
        raise RuntimeError(f"{name}: TorchScript file holds {script_bytes} bytes for "
                           f"{4 * weights} bytes of weights")
    return {"name": name, "seed": seed, "config": config.to_dict(),
            "parameters": ct.count_parameters(model), "file_parameters": weights,
            "weight_bytes": 4 * weights, "programs": programs, "leaves": leaves,
            "torchscript_max_abs_diff": worst, "torchscript_bytes": script_bytes,
            "files": {"model": f"{name}.safetensors", "checkpoint": f"{name}.checkpoint.pt",
                      "programs": f"{name}.programs.jsonl",
                      "inputs": f"{name}.inputs.safetensors",
                      "torchscript": f"{name}.torchscript.pt"}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="CDMPP benchmark models and inputs")
    ap.add_argument("--out", required=True, help="output directory (outside the repository)")
    ap.add_argument("--programs", type=int, default=512)
    ap.add_argument("--leaves", type=int, default=5)
    ap.add_argument("--only", action="append", choices=sorted(SPECS))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    entries = {}
    for name in args.only or list(SPECS):
        entries[name] = build(name, args.out, args.programs, args.leaves)
        print(f"{name}: {entries[name]['parameters']} parameters, TorchScript vs eager "
              f"{entries[name]['torchscript_max_abs_diff']:.1e}", file=sys.stderr)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump({"generator": "bench/make_bench_models.py", "models": entries}, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
