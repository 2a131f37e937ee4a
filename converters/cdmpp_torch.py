"""CDMPP reference model in PyTorch (stock torch.nn modules only) and its preprocessing.

The model maps a batch of compact ASTs to the predicted latency in the *transformed* space of
the output transform (Box-Cox / log / none); `CdmppModel.predict_seconds` inverts it.

    x (B, L, F)  normalised + positionally encoded leaf features      (see `preprocess`)
    mask (B, L)  True = real leaf, False = padding
    device (B, 8) optional CDMPP device features

    [input_proj]            Linear(F -> d), only when d_model != feature_dim
    encoder                 nn.TransformerEncoder of nn.TransformerEncoderLayer(batch_first)
                            (key-padding mask = ~mask for mean/sum pooling)
    pooling                 flatten: (B, L*d), L fixed; mean/sum: masked over real leaves
    embed                   [Linear+BN] then [Linear+BN+ReLU]...          -> E
    device_mlp, shared_bn   optional: BN0(embed) + BN0(device_mlp(std(device))), BN0
                            affine-free, its statistics taken over both inputs together;
                            std = fixed per-feature standardisation from the training targets
    decoder, head           [Linear+BN+ReLU]... then Linear(-> 1)

converters/README.md states the same math tensor by tensor, after BatchNorm folding.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

import numpy as np
import torch
from torch import nn

DEVICE_FEATURES = 8
DEVICE_STD_FLOOR = 0.01     # CDMPP's device features are scaled to about [0, 2]
ACTIVATIONS = ("relu", "gelu")
POOLINGS = ("flatten", "mean", "sum")
# Feature sets and their row widths (tempo lab featurize --features): Ansor's 164 columns,
# and those followed by tempo's 10 loop-extension columns (include/tempo/program/feature_set.hpp).
FEATURE_SETS = {"ansor": 164, "ansor+loops": 174}
TRANSFORMS = ("boxcox", "log", "none")


class ConfigError(ValueError):
    pass


@dataclass
class CdmppConfig:
    feature_dim: int = 164          # F, width of a leaf's feature row
    d_model: int = 164              # d; an input projection Linear(F->d) exists iff d != F
    heads: int = 4
    ffn_dim: int = 2048
    layers: int = 11
    activation: str = "relu"        # relu | gelu (exact, erf-based)
    norm_first: bool = False        # False: post-norm (paper); True: pre-norm
    final_norm: bool = False        # LayerNorm after the last encoder layer (encoder.norm)
    layer_norm_eps: float = 1e-5
    dropout: float = 0.1            # training only
    pooling: str = "flatten"        # flatten (exactly max_leaves leaves) | mean | sum
    max_leaves: int = 5             # leaf count for flatten, upper limit for mean/sum
    embed_dims: List[int] = field(default_factory=lambda: [716, 985, 985, 985, 69])
    device: bool = True             # device branch present
    device_dims: List[int] = field(default_factory=lambda: [128, 128, 128, 69])
    decoder_dims: List[int] = field(default_factory=lambda: [930, 930, 930])
    bn_eps: float = 1e-5
    pe_scale: float = 1.0           # tree PE amplitude added to the [0, 1] features (paper: 1)
    features: Optional[str] = None  # the rows' columns (FEATURE_SETS); None: not stated

    # -- derived -----------------------------------------------------------------------
    @property
    def input_projection(self) -> bool:
        return self.d_model != self.feature_dim

    @property
    def embed_in(self) -> int:
        return self.d_model * self.max_leaves if self.pooling == "flatten" else self.d_model

    @property
    def embed_out(self) -> int:
        return self.embed_dims[-1]

    def validate(self) -> "CdmppConfig":
        def positive(name):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ConfigError(f"config.{name} must be a positive integer, got {v!r}")

        for name in ("feature_dim", "d_model", "heads", "ffn_dim", "layers", "max_leaves"):
            positive(name)
        if self.d_model % self.heads:
            raise ConfigError(f"config.heads={self.heads} does not divide "
                              f"config.d_model={self.d_model}")
        if self.activation not in ACTIVATIONS:
            raise ConfigError(f"config.activation must be one of {ACTIVATIONS}, "
                              f"got {self.activation!r}")
        if self.pooling not in POOLINGS:
            raise ConfigError(f"config.pooling must be one of {POOLINGS}, got {self.pooling!r}")
        for name in ("norm_first", "final_norm", "device"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"config.{name} must be a boolean")
        for name in ("layer_norm_eps", "bn_eps"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0:
                raise ConfigError(f"config.{name} must be a positive number, got {v!r}")
        if (not isinstance(self.pe_scale, (int, float)) or isinstance(self.pe_scale, bool)
                or not math.isfinite(self.pe_scale) or self.pe_scale < 0):
            raise ConfigError(f"config.pe_scale must be a finite number >= 0, got {self.pe_scale!r}")
        if self.features is not None:
            if self.features not in FEATURE_SETS:
                raise ConfigError(f"config.features must be one of {sorted(FEATURE_SETS)}, "
                                  f"got {self.features!r}")
            if FEATURE_SETS[self.features] != self.feature_dim:
                raise ConfigError(f"config.features={self.features!r} rows have "
                                  f"{FEATURE_SETS[self.features]} columns, config.feature_dim "
                                  f"is {self.feature_dim}")
        if not isinstance(self.dropout, (int, float)) or not 0 <= self.dropout < 1:
            raise ConfigError(f"config.dropout must be in [0, 1), got {self.dropout!r}")
        lists = [("embed_dims", 1), ("decoder_dims", 0)] + ([("device_dims", 1)] if self.device else [])
        for name, at_least in lists:
            v = getattr(self, name)
            if not isinstance(v, list) or len(v) < at_least or not all(
                    isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in v):
                raise ConfigError(f"config.{name} must be a list of >= {at_least} positive "
                                  f"integers, got {v!r}")
        if self.device and self.device_dims[-1] != self.embed_dims[-1]:
            raise ConfigError(f"config.device_dims[-1]={self.device_dims[-1]} must equal "
                              f"config.embed_dims[-1]={self.embed_dims[-1]} (the two "
                              f"embeddings are added)")
        return self

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        if d["features"] is None:  # files that do not state it stay as they were
            del d["features"]
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict) -> "CdmppConfig":
        if not isinstance(d, dict):
            raise ConfigError("config must be a JSON object")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ConfigError(f"config has unknown keys {unknown}")
        cfg = cls(**{k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in d.items()})
        return cfg.validate()


def paper_config(**overrides) -> CdmppConfig:
    """The released tuned CDMPP config (trial 1575), with the cross-device branch."""
    return dataclasses.replace(CdmppConfig(), **overrides).validate()


def compact_config(**overrides) -> CdmppConfig:
    """tempo's fast config: d=64 after a 164->64 projection, 2 layers, masked sum over <=16
    leaves, no tree PE (on tempo's cross-model split both beat CDMPP's mean-with-PE: a
    program's time is closer to a sum over its stores, and the PE, added at full amplitude
    to [0, 1] features, blurs them; training/README.md has the numbers)."""
    cfg = CdmppConfig(feature_dim=164, d_model=64, heads=4, ffn_dim=128, layers=2,
                      activation="relu", norm_first=False, pooling="sum", max_leaves=16,
                      embed_dims=[128, 64], device=False, device_dims=[64, 64],
                      decoder_dims=[64], pe_scale=0.0)
    return dataclasses.replace(cfg, **overrides).validate()


NAMED_CONFIGS = {"paper": paper_config, "compact": compact_config}


# --------------------------------------------------------------------------------------
# Output transform
# --------------------------------------------------------------------------------------
@dataclass
class OutputTransform:
    """Target transform, as sklearn PowerTransformer(method="box-cox", standardize=True) does.

    forward:  y = boxcox(x; lambda) | ln(x) | x ;  z = (y - mean) / scale
    inverse:  y = z * scale + mean ;  x = (lambda*y + 1)^(1/lambda)  (exp(y) if lambda == 0)
                                           | exp(y) | y
    """
    kind: str = "boxcox"
    lmbda: float = 0.0
    mean: float = 0.0
    scale: float = 1.0

    def validate(self) -> "OutputTransform":
        if self.kind not in TRANSFORMS:
            raise ConfigError(f"output_transform.kind must be one of {TRANSFORMS}, "
                              f"got {self.kind!r}")
        for name in ("lmbda", "mean", "scale"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
                raise ConfigError(f"output_transform.{name} must be a finite number")
        if self.scale == 0:
            raise ConfigError("output_transform.scale must be non-zero")
        return self

    def to_dict(self) -> dict:
        d = {"kind": self.kind, "mean": float(self.mean), "scale": float(self.scale)}
        if self.kind == "boxcox":
            d["lambda"] = float(self.lmbda)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "OutputTransform":
        if not isinstance(d, dict) or "kind" not in d:
            raise ConfigError("output_transform must be an object with a 'kind'")
        known = {"kind", "lambda", "mean", "scale"}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"output_transform has unknown keys {unknown}")
        if d["kind"] == "boxcox" and "lambda" not in d:
            raise ConfigError("output_transform of kind boxcox needs 'lambda'")
        return cls(kind=d["kind"], lmbda=d.get("lambda", 0.0), mean=d.get("mean", 0.0),
                   scale=d.get("scale", 1.0)).validate()

    def forward(self, seconds):
        x = torch.as_tensor(seconds)
        if self.kind == "boxcox":
            y = torch.log(x) if self.lmbda == 0 else (x ** self.lmbda - 1) / self.lmbda
        elif self.kind == "log":
            y = torch.log(x)
        else:
            y = x
        return (y - self.mean) / self.scale

    def inverse(self, z):
        """Transformed-space value -> seconds. For Box-Cox a base lambda*y+1 <= 0 (outside
        the transform's range) is clamped to 0, giving 0 s (lambda > 0) or +inf (lambda < 0)."""
        y = torch.as_tensor(z) * self.scale + self.mean
        if self.kind == "boxcox":
            if self.lmbda == 0:
                return torch.exp(y)
            return torch.clamp(self.lmbda * y + 1, min=0) ** (1.0 / self.lmbda)
        if self.kind == "log":
            return torch.exp(y)
        return y


# --------------------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------------------
class MlpBlock(nn.Module):
    """Linear, then BatchNorm1d, then optionally ReLU. Names: linear.*, bn.*"""

    def __init__(self, n_in: int, n_out: int, relu: bool, bn_eps: float):
        super().__init__()
        self.linear = nn.Linear(n_in, n_out)
        self.bn = nn.BatchNorm1d(n_out, eps=bn_eps)
        self.relu = relu

    def forward(self, x):
        x = self.bn(self.linear(x))
        return torch.relu(x) if self.relu else x


def _mlp(n_in: int, dims: Sequence[int], first_relu: bool, bn_eps: float) -> nn.ModuleList:
    blocks, prev = [], n_in
    for i, n in enumerate(dims):
        blocks.append(MlpBlock(prev, n, relu=(first_relu or i > 0), bn_eps=bn_eps))
        prev = n
    return nn.ModuleList(blocks)


class CdmppModel(nn.Module):
    def __init__(self, config: CdmppConfig, output_transform: Optional[OutputTransform] = None):
        super().__init__()
        self.config = config.validate()
        c = config
        self.output_transform = (output_transform or OutputTransform("none")).validate()
        self.input_proj = nn.Linear(c.feature_dim, c.d_model) if c.input_projection else None
        layer = nn.TransformerEncoderLayer(
            d_model=c.d_model, nhead=c.heads, dim_feedforward=c.ffn_dim, dropout=c.dropout,
            activation=c.activation, layer_norm_eps=c.layer_norm_eps, batch_first=True,
            norm_first=c.norm_first)
        final = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps) if c.final_norm else None
        self.encoder = nn.TransformerEncoder(layer, c.layers, norm=final,
                                             enable_nested_tensor=False)
        # embedding ("flatten block"): first Linear+BN without activation, then Linear+BN+ReLU
        self.embed = _mlp(c.embed_in, c.embed_dims, first_relu=False, bn_eps=c.bn_eps)
        if c.device:
            self.device_mlp = _mlp(DEVICE_FEATURES, c.device_dims, first_relu=True,
                                   bn_eps=c.bn_eps)
            self.shared_bn = nn.BatchNorm1d(c.embed_out, eps=c.bn_eps, affine=False)
            # The targets of one machine differ in a few device features by ~1e-3; raw, the
            # first BN would divide those differences by ~sqrt(eps). Identity until
            # standardise_device() sets it from the training targets.
            self.register_buffer("device_shift", torch.zeros(DEVICE_FEATURES))
            self.register_buffer("device_scale", torch.ones(DEVICE_FEATURES))
        else:
            self.device_mlp = None
            self.shared_bn = None
        self.decoder = _mlp(c.embed_out, c.decoder_dims, first_relu=True, bn_eps=c.bn_eps)
        self.head = nn.Linear(c.decoder_dims[-1] if c.decoder_dims else c.embed_out, 1)

    def forward(self, x, mask=None, device=None):
        """x: (B, L, F) preprocessed; mask: (B, L) bool, True = real leaf; device: (B, 8).
        Returns (B,) predictions in the transformed space."""
        c = self.config
        B, L, F = x.shape
        if F != c.feature_dim:
            raise ValueError(f"feature width {F} != config.feature_dim {c.feature_dim}")
        if mask is None:
            mask = torch.ones(B, L, dtype=torch.bool, device=x.device)
        mask = mask.to(torch.bool)
        if c.pooling == "flatten":
            if L != c.max_leaves or not bool(mask.all()):
                raise ValueError(f"flatten pooling needs exactly {c.max_leaves} leaves")
        elif L > c.max_leaves:
            raise ValueError(f"{L} leaves exceed config.max_leaves {c.max_leaves}")
        if not bool(mask.any(dim=1).all()):
            raise ValueError("every program needs at least one leaf")
        h = self.input_proj(x) if self.input_proj is not None else x
        if c.pooling == "flatten":
            h = self.encoder(h)
            pooled = h.reshape(B, L * c.d_model)
        else:
            h = self.encoder(h, src_key_padding_mask=~mask)
            m = mask.to(h.dtype).unsqueeze(-1)
            pooled = (h * m).sum(dim=1)
            if c.pooling == "mean":
                pooled = pooled / m.sum(dim=1)
        e = pooled
        for block in self.embed:
            e = block(e)
        if self.device_mlp is not None:
            if device is None:
                raise ValueError("this model has a device branch: device features required")
            g = (device - self.device_shift) * self.device_scale
            for block in self.device_mlp:
                g = block(g)
            # One batch statistic over both inputs: normalising each in turn would leave
            # running statistics that blend the two and fit neither in eval mode.
            n = self.shared_bn(torch.cat([e, g]))
            e = n[:B] + n[B:]
        for block in self.decoder:
            e = block(e)
        return self.head(e).squeeze(-1)

    def standardise_device(self, features) -> None:
        """Sets the device-feature standardisation from the training targets' features
        (N, 8): mean and 1 / max(std, DEVICE_STD_FLOOR) over the distinct rows, so each
        target counts once. A feature constant over them gets scale 0: the model cannot have
        learned what it does. The floor keeps probe noise small: targets of one machine
        differ by ~0.001 in measured bandwidth, and as a whole standard deviation that
        noise would make a new target's value look far outside the training range."""
        if self.device_mlp is None:
            raise ValueError("this model has no device branch")
        rows = np.unique(np.asarray(features, dtype=np.float64).reshape(-1, DEVICE_FEATURES),
                         axis=0)
        if not len(rows) or not np.isfinite(rows).all():
            raise ValueError("device features: need at least one row of finite numbers")
        mean, std = rows.mean(axis=0), rows.std(axis=0)
        scale = np.where(std > 1e-12, 1.0 / np.maximum(std, DEVICE_STD_FLOOR), 0.0)
        with torch.no_grad():
            self.device_shift.copy_(torch.from_numpy(mean))
            self.device_scale.copy_(torch.from_numpy(scale))

    def predict_seconds(self, x, mask=None, device=None):
        return self.output_transform.inverse(self.forward(x, mask, device))


# --------------------------------------------------------------------------------------
# Preprocessing
# --------------------------------------------------------------------------------------
NORM_EPS = 1e-6


def positional_encoding(p: int, d: int) -> np.ndarray:
    """CDMPP tree PE for position p (index of the leaf's id in the serialized tree, -1 markers
    counted), width d. For even i: PE[i] = sin(p / 10000^(2i/d)), PE[i+1] = cos(p /
    10000^(2(i+1)/d)). Note 2i/d with i the raw even index (not Vaswani's i/d)."""
    pe = np.zeros(d, dtype=np.float64)
    for i in range(0, d, 2):
        pe[i] = math.sin(p / 10000.0 ** (2.0 * i / d))
        if i + 1 < d:
            pe[i + 1] = math.cos(p / 10000.0 ** (2.0 * (i + 1) / d))
    return pe


def leaf_positions(tree: Sequence[int], leaf_ids: Sequence[int]) -> List[int]:
    tree = list(tree)
    return [tree.index(int(n)) for n in leaf_ids]


def normalise(features, norm_min, norm_max) -> np.ndarray:
    """(x - min) / (max - min + 1e-6), per feature column, in float64."""
    x = np.asarray(features, dtype=np.float64)
    lo = np.asarray(norm_min, dtype=np.float64)
    hi = np.asarray(norm_max, dtype=np.float64)
    return (x - lo) / (hi - lo + NORM_EPS)


def validate_ast(ast: dict, feature_dim: int, max_leaves: int, exact: bool = False,
                 where: str = "") -> None:
    """Checks a compact-AST dict against design.md's contract; raises ValueError naming it."""
    pre = f"{where}: " if where else ""
    for key in ("features", "leaf_ids", "tree"):
        if key not in ast:
            raise ValueError(f"{pre}field '{key}' missing")
    feats, ids, tree = ast["features"], list(ast["leaf_ids"]), list(ast["tree"])
    if len(feats) != len(ids):
        raise ValueError(f"{pre}field 'features': {len(feats)} rows for {len(ids)} leaf_ids")
    if not ids:
        raise ValueError(f"{pre}field 'leaf_ids': no leaves")
    if len(ids) > max_leaves or (exact and len(ids) != max_leaves):
        raise ValueError(f"{pre}field 'leaf_ids': {len(ids)} leaves, model takes "
                         f"{'exactly' if exact else 'at most'} {max_leaves}")
    for row in feats:
        if len(row) != feature_dim or not all(math.isfinite(float(v)) for v in row):
            raise ValueError(f"{pre}field 'features': rows must be {feature_dim} finite numbers")
    # tree: balanced, ids unique, leaves are leaves
    depth, seen, children = 0, set(), {}
    stack = []
    for t in tree:
        if t == -1:
            if not stack:
                raise ValueError(f"{pre}field 'tree': unbalanced -1")
            stack.pop()
        else:
            if t < 0 or t in seen:
                raise ValueError(f"{pre}field 'tree': bad or repeated node id {t}")
            seen.add(t)
            if stack:
                children[stack[-1]] = children.get(stack[-1], 0) + 1
            elif seen != {t}:
                raise ValueError(f"{pre}field 'tree': more than one root")
            stack.append(t)
    if stack or not tree:
        raise ValueError(f"{pre}field 'tree': unbalanced")
    if len(set(ids)) != len(ids):
        raise ValueError(f"{pre}field 'leaf_ids': repeated id")
    for n in ids:
        if n not in seen or children.get(n, 0):
            raise ValueError(f"{pre}field 'leaf_ids': {n} is not a leaf of the tree")
    dev = ast.get("device")
    if dev is not None and (len(dev) != DEVICE_FEATURES or
                            not all(math.isfinite(float(v)) for v in dev)):
        raise ValueError(f"{pre}field 'device': needs {DEVICE_FEATURES} finite numbers")


def preprocess_ast(ast: dict, norm_min, norm_max, pe_scale: float = 1.0) -> np.ndarray:
    """One program's (n_leaf, F) encoder input in float64: min-max normalise, add
    pe_scale × tree PE."""
    x = normalise(ast["features"], norm_min, norm_max)
    d = x.shape[1]
    pe = np.stack([positional_encoding(p, d) for p in leaf_positions(ast["tree"], ast["leaf_ids"])])
    return x + pe_scale * pe


def preprocess(asts: Sequence[dict], norm_min, norm_max, config: CdmppConfig,
               dtype=torch.float64, validate: bool = True):
    """List of compact-AST dicts -> (x (B, L, F), mask (B, L) bool, device (B, 8) or None).

    L = config.max_leaves (padded with zero rows, mask False). Device is returned only when
    the config has a device branch (then every AST must carry one)."""
    c = config
    B, L, F = len(asts), c.max_leaves, c.feature_dim
    x = np.zeros((B, L, F), dtype=np.float64)
    mask = np.zeros((B, L), dtype=bool)
    dev = np.zeros((B, DEVICE_FEATURES), dtype=np.float64) if c.device else None
    for b, ast in enumerate(asts):
        if validate:
            validate_ast(ast, F, L, exact=(c.pooling == "flatten"), where=f"program {b}")
        rows = preprocess_ast(ast, norm_min, norm_max, c.pe_scale)
        x[b, :len(rows)] = rows
        mask[b, :len(rows)] = True
        if c.device:
            if ast.get("device") is None:
                raise ValueError(f"program {b}: field 'device' missing (model has a device branch)")
            dev[b] = np.asarray(ast["device"], dtype=np.float64)
    return (torch.tensor(x, dtype=dtype), torch.tensor(mask),
            None if dev is None else torch.tensor(dev, dtype=dtype))


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
