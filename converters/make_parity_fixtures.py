"""Golden parity fixtures for the C++ CDMPP engine: seeded random models, converted files,
raw compact-AST inputs and float64 expected outputs.

    python3 -m converters.make_parity_fixtures                      # all committed fixtures
                                                                    #   -> tests/fixtures/cdmpp/
    python3 converters/make_parity_fixtures.py --only paper --out DIR   # the big paper model
                                                                    #   (not committed)

Per model NAME, in the output directory:
  NAME.safetensors      the converted model (float32, BN folded, with a 4-program selftest)
  NAME.inputs.jsonl     64 compact ASTs (design.md schema: raw, un-normalised features,
                        leaf_ids, tree, device when the model has a device branch, id)
  NAME.expected.jsonl   per input line: {"id", "transformed", "seconds"} from the float64
                        PyTorch model (model.double(), BatchNorm not folded)
  manifest.json         the models written, their config, files and suggested tolerances

Models are made "realistic": LayerNorm affine and attention biases randomised, BatchNorm
running statistics calibrated on random programs (then gamma/beta randomised), output
transforms that map the predictions to plausible latencies.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import Optional

import numpy as np
import torch

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from converters import cdmpp_torch as ct  # noqa: E402
from converters import convert as cv  # noqa: E402
from converters import random_programs as rp  # noqa: E402
from converters import safetensors_io  # noqa: E402

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "tests", "fixtures", "cdmpp")
PROGRAMS = 64
SELFTEST = 4
CALIBRATION = 192

T = ct.OutputTransform


def _specs():
    """name -> (seed, config, output transform, committed)."""
    return {
        # the released tuned config with the cross-device branch; 13.8M parameters
        "paper": (101, ct.paper_config(dropout=0.0), T("boxcox", -0.08, -10.0, 3.0), False),
        # tempo's shipped fast config
        "compact": (102, ct.compact_config(dropout=0.0), T("boxcox", 0.05, -6.5, 1.2), True),
        # flatten over exactly 5 leaves with the device branch (164->40 projection, head
        # dim 10), Box-Cox lambda exactly 0
        "flatten5_device": (103, ct.paper_config(
            dropout=0.0, d_model=40, heads=4, ffn_dim=48, layers=2, embed_dims=[48, 32, 24],
            device_dims=[16, 24], decoder_dims=[24, 24]), T("boxcox", 0.0, -7.5, 1.8), True),
        # d=100 with 5 heads after a 164->100 projection, masked mean, device branch, PE at
        # half amplitude
        "d100_h5_mean_device": (104, ct.compact_config(
            dropout=0.0, d_model=100, heads=5, ffn_dim=32, layers=1, max_leaves=8,
            embed_dims=[48, 24], device=True, device_dims=[24, 24], decoder_dims=[24],
            pe_scale=0.5),
            T("boxcox", 0.1, -5.0, 0.9), True),
        # pre-norm + GELU + final LayerNorm, masked sum, no device, log transform
        "prenorm_gelu_sum": (105, ct.compact_config(
            dropout=0.0, norm_first=True, activation="gelu", final_norm=True, d_model=32,
            heads=2, ffn_dim=64, layers=3, pooling="sum", max_leaves=12,
            embed_dims=[32, 24], decoder_dims=[24, 16]), T("log", 0.0, -8.0, 2.0), True),
        # pre-norm + ReLU without final norm, masked mean, device branch, no transform
        "prenorm_relu_mean_device": (106, ct.compact_config(
            dropout=0.0, norm_first=True, d_model=24, heads=3, ffn_dim=32, layers=2,
            max_leaves=6, embed_dims=[24, 16], device=True, device_dims=[16, 16],
            decoder_dims=[16]), T("none", 0.0, 2e-3, 2e-4), True),
        # feature width 24 (no projection), 1 GELU post-norm layer, flatten over 2 leaves,
        # single-layer embedding (no activation), no decoder hidden layer, PE at 1/4
        "tiny_f24_flatten2": (107, ct.CdmppConfig(
            feature_dim=24, d_model=24, heads=3, ffn_dim=32, layers=1, activation="gelu",
            dropout=0.0, pooling="flatten", max_leaves=2, embed_dims=[16], device=False,
            decoder_dims=[], pe_scale=0.25).validate(), T("boxcox", -0.2, -12.0, 2.5), True),
    }


def randomise(model: ct.CdmppModel, gen: torch.Generator) -> None:
    """Distinct weights in every layer (nn.TransformerEncoder starts all its layers as copies
    of one, so a loader mixing up layers would otherwise go unnoticed), and non-trivial
    LayerNorm affine and attention biases (PyTorch inits them to 1 / 0)."""
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, torch.nn.Linear):
                bound = 1.0 / mod.in_features ** 0.5
                mod.weight.copy_(bound * (2 * torch.rand(mod.weight.shape, generator=gen) - 1))
                if mod.bias is not None:
                    mod.bias.copy_(bound * (2 * torch.rand(mod.bias.shape, generator=gen) - 1))
            if isinstance(mod, torch.nn.MultiheadAttention):
                bound = (6.0 / (4 * mod.embed_dim)) ** 0.5  # xavier over the fused q|k|v
                mod.in_proj_weight.copy_(
                    bound * (2 * torch.rand(mod.in_proj_weight.shape, generator=gen) - 1))
        for mod in model.modules():
            if isinstance(mod, torch.nn.LayerNorm):
                mod.weight.copy_(0.7 + 0.6 * torch.rand(mod.weight.shape, generator=gen))
                mod.bias.copy_(0.1 * torch.randn(mod.bias.shape, generator=gen))
            if isinstance(mod, torch.nn.MultiheadAttention):
                mod.in_proj_bias.copy_(0.1 * torch.randn(mod.in_proj_bias.shape, generator=gen))
                mod.out_proj.bias.copy_(0.1 * torch.randn(mod.out_proj.bias.shape, generator=gen))


def calibrate_batchnorm(model: ct.CdmppModel, x, mask, dev,
                        gen: Optional[torch.Generator] = None) -> None:
    """BatchNorm running statistics from real forward passes (preprocessed inputs); with
    `gen`, then random gamma/beta and a mild perturbation, so folding is exercised with
    realistic, non-identity statistics. Leaves the model in eval mode."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm1d)]
    model.eval()
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None          # cumulative average over the calibration batches
        bn.train()
    with torch.no_grad():
        for s in range(0, x.shape[0], 64):
            model(x[s:s + 64], mask[s:s + 64], None if dev is None else dev[s:s + 64])
        for bn in bns:
            bn.momentum = 0.1
            bn.eval()
            if gen is None:
                continue
            n = bn.num_features
            bn.running_var.mul_(0.8 + 0.4 * torch.rand(n, generator=gen))
            bn.running_mean.add_(0.05 * torch.randn(n, generator=gen) * bn.running_var.sqrt())
            if bn.affine:
                bn.weight.copy_(0.6 + 0.8 * torch.rand(n, generator=gen))
                bn.bias.copy_(0.3 * torch.randn(n, generator=gen))
    model.eval()


def build_fixture(name: str, out_dir: str, programs: int = PROGRAMS) -> dict:
    seed, config, transform, committed = _specs()[name]
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    exact = config.pooling == "flatten"
    prof = rp.random_profile(rng, config.feature_dim)
    model = ct.CdmppModel(config, transform)
    randomise(model, gen)

    calib = [rp.random_program(rng, prof, n, config.device)
             for n in rp.random_leaf_counts(rng, CALIBRATION, config.max_leaves, exact)]
    xc, mc, dc = ct.preprocess(calib, prof.norm_min, prof.norm_max, config,
                               dtype=torch.float32)
    calibrate_batchnorm(model, xc, mc, dc, gen)

    asts = [rp.random_program(rng, prof, n, config.device, pid=f"{name}-{k}")
            for k, n in enumerate(rp.random_leaf_counts(rng, programs, config.max_leaves, exact))]
    x, mask, dev = ct.preprocess(asts, prof.norm_min, prof.norm_max, config)   # float64
    m64 = cv._double_copy(model)
    with torch.no_grad():
        z64 = m64(x, mask, dev)
        s64 = m64.predict_seconds(x, mask, dev)
        z32 = model(x.float(), mask, None if dev is None else dev.float()).double()
        s32 = model.predict_seconds(x.float(), mask, None if dev is None else dev.float()).double()
    if not (torch.isfinite(s64).all() and (s64 > 0).all()):
        raise RuntimeError(f"{name}: output transform gives invalid latencies {s64}")

    card = {"fixture": name, "seed": seed, "note": "random weights, golden parity fixture"}
    ckpt = cv.make_checkpoint(model, prof.norm_min, prof.norm_max, card)
    tensors, metadata = cv.convert(ckpt, selftest=SELFTEST, seed=seed)
    os.makedirs(out_dir, exist_ok=True)
    safetensors_io.save_file(tensors, os.path.join(out_dir, f"{name}.safetensors"), metadata)
    with open(os.path.join(out_dir, f"{name}.inputs.jsonl"), "w") as f:
        for ast in asts:
            f.write(json.dumps(ast, separators=(",", ":")) + "\n")
    with open(os.path.join(out_dir, f"{name}.expected.jsonl"), "w") as f:
        for ast, z, s in zip(asts, z64.tolist(), s64.tolist()):
            f.write(json.dumps({"id": ast["id"], "transformed": z, "seconds": s}) + "\n")

    err_z = float((z32 - z64).abs().max())
    err_s = float(((s32 - s64).abs() / s64.abs()).max())
    return {
        "name": name,
        "committed": committed,
        "model": f"{name}.safetensors",
        "inputs": f"{name}.inputs.jsonl",
        "expected": f"{name}.expected.jsonl",
        "programs": programs,
        "parameters": ct.count_parameters(model),
        "config": config.to_dict(),
        "output_transform": transform.to_dict(),
        "spread_transformed": float(z64.std()),
        "float32_torch_max_abs_err_transformed": err_z,
        "float32_torch_max_rel_err_seconds": err_s,
        # suggested tolerances for a float32 engine: |got - want| <= atol (transformed),
        # |got - want| <= rtol * |want| (seconds)
        "atol_transformed": max(1e-4, 20 * err_z),
        "rtol_seconds": max(1e-4, 20 * err_s),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="CDMPP golden parity fixtures")
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory")
    ap.add_argument("--only", action="append", choices=sorted(_specs()),
                    help="make only these models (repeatable); default: all committed ones")
    ap.add_argument("--programs", type=int, default=PROGRAMS)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    names = args.only or [n for n, spec in _specs().items() if spec[3]]
    entries = []
    for name in names:
        entry = build_fixture(name, args.out, args.programs)
        entries.append(entry)
        print(f"{name}: {entry['parameters']} parameters, "
              f"float32 err {entry['float32_torch_max_abs_err_transformed']:.2e}")
    # merge into an existing manifest: entries of other models stay, ours replace theirs
    path = os.path.join(args.out, "manifest.json")
    old = []
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f).get("models", [])
    made = {e["name"] for e in entries}
    order = list(_specs())
    merged = sorted([e for e in old if e.get("name") not in made] + entries,
                    key=lambda e: order.index(e["name"]) if e["name"] in order else len(order))
    with open(path, "w") as f:
        json.dump({"generator": "converters/make_parity_fixtures.py",
                   "models": merged}, f, indent=1, sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
