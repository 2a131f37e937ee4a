"""CDMPP checkpoint (torch.save'd dict) -> tempo safetensors model file.

    python3 -m converters.convert CHECKPOINT.pt OUT.safetensors [--selftest N] [--seed S]

Checkpoint: {"config": CdmppConfig dict, "state_dict": CdmppModel state_dict,
             "norm": {"min": [F], "max": [F]}, "output_transform": {"kind": ..., ...},
             optional "card": {...}}

BatchNorm (eval mode, running statistics) is folded into the Linear before it, and the
device-feature standardisation into the device branch's first Linear; the shared
affine-free BatchNorm of the device branch follows a ReLU in both branches, so it is kept as an
explicit `shared_bn.scale` / `shared_bn.shift` pair. converters/README.md is the file format.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import torch

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from converters import cdmpp_torch as ct  # noqa: E402
from converters import random_programs as rp  # noqa: E402
from converters import safetensors_io  # noqa: E402

FORMAT_VERSION = "1"
SELFTEST_RTOL = 2e-3
SELFTEST_ATOL = 2e-3


OPTIONAL_TENSORS = ("device_shift", "device_scale")


class ConversionError(ValueError):
    pass


# --------------------------------------------------------------------------------------
# Checkpoint -> model
# --------------------------------------------------------------------------------------
def check_state_dict(model: torch.nn.Module, state_dict: dict) -> None:
    """Raises ConversionError naming every missing, unexpected or mis-shaped tensor."""
    want = model.state_dict()
    problems = []
    for name, t in want.items():
        if name not in state_dict:
            # device_shift/scale came later: a checkpoint without them has the identity
            if name not in OPTIONAL_TENSORS and not name.endswith("num_batches_tracked"):
                problems.append(f"missing tensor '{name}' (shape {list(t.shape)})")
        elif tuple(torch.as_tensor(state_dict[name]).shape) != tuple(t.shape):
            problems.append(f"tensor '{name}' has shape "
                            f"{list(torch.as_tensor(state_dict[name]).shape)}, config needs "
                            f"{list(t.shape)}")
    for name in state_dict:
        if name not in want:
            problems.append(f"unexpected tensor '{name}'")
    for name, t in state_dict.items():
        t = torch.as_tensor(t)
        if name in want and t.is_floating_point() and not bool(torch.isfinite(t).all()):
            problems.append(f"tensor '{name}' has non-finite values")
        if name.endswith("running_var") and name in want and bool((t < 0).any()):
            problems.append(f"tensor '{name}' has negative variances")
    if problems:
        raise ConversionError("checkpoint does not match its config: " + "; ".join(problems))


def load_checkpoint(ckpt: dict):
    """Validated (model in eval mode, norm_min, norm_max, transform, card) from a checkpoint."""
    if not isinstance(ckpt, dict):
        raise ConversionError("checkpoint must be a dict")
    for key in ("config", "state_dict", "norm", "output_transform"):
        if key not in ckpt:
            raise ConversionError(f"checkpoint has no '{key}'")
    try:
        config = ct.CdmppConfig.from_dict(ckpt["config"])
        transform = ct.OutputTransform.from_dict(ckpt["output_transform"])
    except ct.ConfigError as e:
        raise ConversionError(str(e)) from None
    model = ct.CdmppModel(config, transform)
    check_state_dict(model, ckpt["state_dict"])
    model.load_state_dict({k: torch.as_tensor(v) for k, v in ckpt["state_dict"].items()},
                          strict=False)
    model.eval()
    norm = ckpt["norm"]
    if not isinstance(norm, dict) or "min" not in norm or "max" not in norm:
        raise ConversionError("checkpoint 'norm' must hold 'min' and 'max'")
    lo = np.asarray(norm["min"], dtype=np.float32)
    hi = np.asarray(norm["max"], dtype=np.float32)
    for name, v in (("norm.min", lo), ("norm.max", hi)):
        if v.shape != (config.feature_dim,):
            raise ConversionError(f"tensor '{name}' has shape {list(v.shape)}, config needs "
                                  f"[{config.feature_dim}]")
        if not np.isfinite(v).all():
            raise ConversionError(f"tensor '{name}' has non-finite values")
    if (hi < lo).any():
        raise ConversionError(f"norm.max < norm.min at feature {int(np.argmax(hi < lo))}")
    card = ckpt.get("card") or {}
    if not isinstance(card, dict):
        raise ConversionError("checkpoint 'card' must be a dict")
    return model, lo, hi, transform, card


# --------------------------------------------------------------------------------------
# Folding and export
# --------------------------------------------------------------------------------------
def fold_linear_bn(linear: torch.nn.Linear, bn: torch.nn.BatchNorm1d):
    """(W', b') with W' x + b' == bn(linear(x)) in eval mode; computed in float64."""
    w = linear.weight.detach().double()
    b = linear.bias.detach().double()
    mean = bn.running_mean.detach().double()
    var = bn.running_var.detach().double()
    s = 1.0 / torch.sqrt(var + bn.eps)
    if bn.affine:
        s = s * bn.weight.detach().double()
    shift = -mean * s + (bn.bias.detach().double() if bn.affine else 0.0)
    return w * s[:, None], b * s + shift


def bn_scale_shift(bn: torch.nn.BatchNorm1d):
    """(scale, shift) with bn(x) == x * scale + shift in eval mode; float64."""
    s = 1.0 / torch.sqrt(bn.running_var.detach().double() + bn.eps)
    shift = -bn.running_mean.detach().double() * s
    if bn.affine:
        shift = shift * bn.weight.detach().double() + bn.bias.detach().double()
        s = s * bn.weight.detach().double()
    return s, shift


def export_tensors(model: ct.CdmppModel) -> dict:
    """name -> float32 numpy array, BatchNorm folded (see README for the list)."""
    out = {}

    def put(name, t):
        out[name] = t.detach().double().cpu().numpy().astype(np.float32)

    sd = model.state_dict()
    for name, t in sd.items():
        if name.startswith("input_proj.") or name.startswith("encoder.") or name.startswith("head."):
            put(name, t)
    for prefix in ("embed", "device_mlp", "decoder"):
        blocks = getattr(model, prefix)
        if blocks is None:
            continue
        for i, block in enumerate(blocks):
            w, b = fold_linear_bn(block.linear, block.bn)
            if prefix == "device_mlp" and i == 0:
                # W((x - shift) * scale) + b == (W diag(scale)) x + (b - W (shift * scale))
                shift = model.device_shift.detach().double()
                scale = model.device_scale.detach().double()
                w, b = w * scale[None, :], b - w @ (shift * scale)
            put(f"{prefix}.{i}.linear.weight", w)
            put(f"{prefix}.{i}.linear.bias", b)
    if model.shared_bn is not None:
        # Both inputs of the shared BN come out of a ReLU (embed's last block has one unless
        # embed has a single layer; device_mlp's always has), so it cannot be folded into
        # both branches: keep it explicit.
        s, sh = bn_scale_shift(model.shared_bn)
        put("shared_bn.scale", s)
        put("shared_bn.shift", sh)
    return out


def make_selftest(model: ct.CdmppModel, norm_min, norm_max, count: int, seed: int = 0):
    """(tensors, metadata_json): `count` random programs, preprocessed and stored as float32,
    with the float64 model's transformed-space prediction on exactly those float32 inputs."""
    c = model.config
    rng = np.random.default_rng(seed)
    prof = rp.FeatureProfile(kind=np.full(c.feature_dim, 2), lo=np.asarray(norm_min, np.float64),
                             hi=np.asarray(norm_max, np.float64))
    counts = rp.random_leaf_counts(rng, count, c.max_leaves, exact=(c.pooling == "flatten"))
    asts = []
    for n in counts:
        tree, leaf_ids = rp.random_tree(rng, n)
        rows = rng.uniform(prof.lo, prof.hi, size=(n, c.feature_dim))
        ast = {"features": rows.tolist(), "leaf_ids": leaf_ids, "tree": tree}
        if c.device:
            ast["device"] = rp.random_device(rng)
        asts.append(ast)
    x, mask, dev = ct.preprocess(asts, norm_min, norm_max, c, dtype=torch.float64)
    x32 = x.float()
    dev32 = None if dev is None else dev.float()
    m64 = _double_copy(model)
    with torch.no_grad():
        y = m64(x32.double(), mask, None if dev32 is None else dev32.double())
    tensors = {"selftest.input": x32.numpy(),
               "selftest.input_mask": mask.to(torch.float32).numpy(),
               "selftest.output": y.float().numpy()}
    if dev32 is not None:
        tensors["selftest.input_device"] = dev32.numpy()
    meta = {"count": count, "rtol": SELFTEST_RTOL, "atol": SELFTEST_ATOL}
    return tensors, json.dumps(meta, sort_keys=True)


def _double_copy(model: ct.CdmppModel) -> ct.CdmppModel:
    m = ct.CdmppModel(model.config, model.output_transform)
    m.load_state_dict(model.state_dict())
    return m.double().eval()


def convert(ckpt: dict, selftest: int = 0, seed: int = 0):
    """Checkpoint dict -> (tensors: name -> np.ndarray, metadata: str -> str)."""
    model, lo, hi, transform, card = load_checkpoint(ckpt)
    tensors = export_tensors(model)
    tensors["norm.min"] = lo
    tensors["norm.max"] = hi
    metadata = {
        "tempo.format": FORMAT_VERSION,
        "tempo.model": "cdmpp",
        "tempo.config": model.config.to_json(),
        "tempo.output_transform": json.dumps(transform.to_dict(), sort_keys=True),
        "tempo.card": json.dumps(card, sort_keys=True),
    }
    if selftest:
        st, meta = make_selftest(model, lo, hi, selftest, seed)
        tensors.update(st)
        metadata["tempo.selftest"] = meta
    return tensors, metadata


def make_checkpoint(model: ct.CdmppModel, norm_min, norm_max, card=None) -> dict:
    """The checkpoint dict the converter reads, from a model in memory."""
    return {"config": model.config.to_dict(),
            "state_dict": {k: v.detach().clone() for k, v in model.state_dict().items()},
            "norm": {"min": [float(v) for v in norm_min], "max": [float(v) for v in norm_max]},
            "output_transform": model.output_transform.to_dict(),
            "card": dict(card or {})}


def convert_file(src: str, dst: str, selftest: int = 0, seed: int = 0) -> dict:
    ckpt = torch.load(src, map_location="cpu")
    tensors, metadata = convert(ckpt, selftest=selftest, seed=seed)
    safetensors_io.save_file(tensors, dst, metadata)
    return metadata


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("out")
    ap.add_argument("--selftest", type=int, default=0, metavar="N",
                    help="store N random preprocessed programs and their predictions")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    try:
        meta = convert_file(args.checkpoint, args.out, args.selftest, args.seed)
    except (ConversionError, ValueError) as e:
        print(f"convert: {e}", file=sys.stderr)
        return 1
    cfg = json.loads(meta["tempo.config"])
    print(f"wrote {args.out}: cdmpp d={cfg['d_model']} layers={cfg['layers']} "
          f"pooling={cfg['pooling']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
