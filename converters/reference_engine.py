"""Executable form of converters/README.md: CDMPP inference from a tempo safetensors file
with numpy only, in float64, one program at a time (no padding, no batch).

It reads nothing but the file (tensors + metadata), so it checks that the file and the
README are enough to reproduce the PyTorch reference. The C++ engine implements the same
steps; this module is the oracle for "what exactly does step k compute".
"""
from __future__ import annotations

import json
import math
import os
import sys

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from converters import safetensors_io  # noqa: E402
from converters.cdmpp_torch import positional_encoding, leaf_positions  # noqa: E402


def _erf(x):
    return np.vectorize(math.erf)(x)


class ReferenceEngine:
    def __init__(self, path: str):
        t, meta = safetensors_io.load_file(path)
        if meta.get("tempo.model") != "cdmpp" or meta.get("tempo.format") != "1":
            raise ValueError("not a tempo cdmpp format-1 file")
        self.t = {k: v.astype(np.float64) for k, v in t.items()}
        self.cfg = json.loads(meta["tempo.config"])
        self.transform = json.loads(meta["tempo.output_transform"])
        self.meta = meta

    # step 1-2: normalise, add PE -------------------------------------------------------
    def preprocess(self, ast: dict) -> np.ndarray:
        x = np.asarray(ast["features"], dtype=np.float64)            # (n, F)
        lo, hi = self.t["norm.min"], self.t["norm.max"]
        x = (x - lo) / (hi - lo + 1e-6)
        F = x.shape[1]
        for r, p in enumerate(leaf_positions(ast["tree"], ast["leaf_ids"])):
            x[r] += self.cfg.get("pe_scale", 1.0) * positional_encoding(p, F)
        return x

    # step 3-7 ----------------------------------------------------------------------------
    def forward(self, x: np.ndarray, device=None) -> float:
        c, t = self.cfg, self.t
        d, H = c["d_model"], c["heads"]
        dh = d // H
        eps = c["layer_norm_eps"]
        if "input_proj.weight" in t:
            x = x @ t["input_proj.weight"].T + t["input_proj.bias"]
        n = x.shape[0]

        def ln(v, p):
            mu = v.mean(-1, keepdims=True)
            var = ((v - mu) ** 2).mean(-1, keepdims=True)            # biased variance
            return (v - mu) / np.sqrt(var + eps) * t[p + ".weight"] + t[p + ".bias"]

        def act(v):
            if c["activation"] == "relu":
                return np.maximum(v, 0)
            return 0.5 * v * (1 + _erf(v / math.sqrt(2)))

        def attn(v, p):
            w, b = t[p + ".in_proj_weight"], t[p + ".in_proj_bias"]
            q = v @ w[:d].T + b[:d]
            k = v @ w[d:2 * d].T + b[d:2 * d]
            vv = v @ w[2 * d:].T + b[2 * d:]
            out = np.zeros((n, d))
            for h in range(H):
                s = slice(h * dh, (h + 1) * dh)
                sc = (q[:, s] / math.sqrt(dh)) @ k[:, s].T               # (n, n)
                sc = np.exp(sc - sc.max(-1, keepdims=True))
                sc /= sc.sum(-1, keepdims=True)
                out[:, s] = sc @ vv[:, s]
            return out @ t[p + ".out_proj.weight"].T + t[p + ".out_proj.bias"]

        def ffn(v, p):
            hdn = act(v @ t[p + ".linear1.weight"].T + t[p + ".linear1.bias"])
            return hdn @ t[p + ".linear2.weight"].T + t[p + ".linear2.bias"]

        for i in range(c["layers"]):
            p = f"encoder.layers.{i}"
            if c["norm_first"]:
                x = x + attn(ln(x, p + ".norm1"), p + ".self_attn")
                x = x + ffn(ln(x, p + ".norm2"), p)
            else:
                x = ln(x + attn(x, p + ".self_attn"), p + ".norm1")
                x = ln(x + ffn(x, p), p + ".norm2")
        if c["final_norm"]:
            x = ln(x, "encoder.norm")

        if c["pooling"] == "flatten":
            e = x.reshape(-1)                                           # leaf-major
        elif c["pooling"] == "mean":
            e = x.mean(0)
        else:
            e = x.sum(0)

        def mlp(v, prefix, count, first_relu):
            for j in range(count):
                v = v @ t[f"{prefix}.{j}.linear.weight"].T + t[f"{prefix}.{j}.linear.bias"]
                if first_relu or j > 0:
                    v = np.maximum(v, 0)
            return v

        e = mlp(e, "embed", len(c["embed_dims"]), False)
        if c["device"]:
            g = mlp(np.asarray(device, dtype=np.float64), "device_mlp", len(c["device_dims"]), True)
            s, sh = t["shared_bn.scale"], t["shared_bn.shift"]
            e = (e * s + sh) + (g * s + sh)
        e = mlp(e, "decoder", len(c["decoder_dims"]), True)
        return float(e @ t["head.weight"][0] + t["head.bias"][0])

    def seconds(self, z: float) -> float:
        tr = self.transform
        y = z * tr["scale"] + tr["mean"]
        if tr["kind"] == "boxcox":
            lam = tr["lambda"]
            if lam == 0:
                return math.exp(y)
            base = max(lam * y + 1, 0.0)
            if base == 0.0:
                return 0.0 if lam > 0 else math.inf
            return base ** (1 / lam)
        if tr["kind"] == "log":
            return math.exp(y)
        return y

    def predict(self, ast: dict):
        """(transformed-space prediction, seconds)."""
        z = self.forward(self.preprocess(ast), ast.get("device"))
        return z, self.seconds(z)
