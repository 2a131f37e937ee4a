"""Seeded random compact ASTs (design.md schema) for self-tests and golden fixtures.

Trees look like lowered loop nests: nested loop/attr nodes of varied depth and fan-out with
buffer-store leaves (the featured leaves, in pre-order), now and then a featureless leaf
node (an attribute statement with no node below it). Feature values are float32-exact and
short in decimal (multiples of 1/8), so JSON stays small and parses back bit-exactly.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import numpy as np

DEVICE_FEATURES = 8
_Q = 8.0  # feature quantum: values are multiples of 1/8


@dataclass
class FeatureProfile:
    """Per-column kind and training-set min/max (float32-exact)."""
    kind: np.ndarray      # 0 constant, 1 binary, 2 continuous, 3 mostly-zero continuous
    lo: np.ndarray
    hi: np.ndarray

    @property
    def norm_min(self) -> np.ndarray:
        return self.lo.astype(np.float32)

    @property
    def norm_max(self) -> np.ndarray:
        return self.hi.astype(np.float32)


def random_profile(rng: np.random.Generator, width: int) -> FeatureProfile:
    kind = rng.choice(4, size=width, p=[0.10, 0.25, 0.35, 0.30])
    lo = np.zeros(width)
    hi = np.zeros(width)
    for j in range(width):
        if kind[j] == 0:       # constant over the training set (max == min), often 0
            lo[j] = hi[j] = 0.0 if rng.random() < 0.7 else np.round(rng.uniform(0, 8) * _Q) / _Q
        elif kind[j] == 1:
            lo[j], hi[j] = 0.0, 1.0
        else:
            hi[j] = np.round(rng.uniform(1, 40) * _Q) / _Q
            lo[j] = 0.0 if rng.random() < 0.85 else -np.round(rng.uniform(0, hi[j] / 2) * _Q) / _Q
    return FeatureProfile(kind, lo, hi)


def random_rows(rng: np.random.Generator, prof: FeatureProfile, n: int,
                out_of_range: float = 0.03) -> np.ndarray:
    """n feature rows following `prof`; a few continuous values fall outside [lo, hi]."""
    width = len(prof.kind)
    rows = np.zeros((n, width))
    for j in range(width):
        k, lo, hi = prof.kind[j], prof.lo[j], prof.hi[j]
        if k == 0:
            v = np.full(n, lo)
        elif k == 1:
            v = (rng.random(n) < 0.4).astype(float)
        else:
            v = rng.uniform(lo, hi, n)
            if k == 3:
                v[rng.random(n) < 0.7] = 0.0
            wild = rng.random(n) < out_of_range
            v[wild] = rng.uniform(lo - 0.1 * (hi - lo), hi * 1.2, int(wild.sum()))
            v = np.round(v * _Q) / _Q
        rows[:, j] = v
    return rows


def _num(v: float):
    """int when integral (shorter JSON), else the float itself (float32-exact)."""
    v = float(v)
    return int(v) if v.is_integer() else v


class _Node:
    __slots__ = ("children", "store")

    def __init__(self, store: bool = False):
        self.children: List["_Node"] = []
        self.store = store


def _split(rng, n: int) -> List[int]:
    m = int(rng.integers(1, min(n, 4) + 1))
    cuts = sorted(rng.choice(np.arange(1, n), size=m - 1, replace=False)) if m > 1 else []
    edges = [0] + list(cuts) + [n]
    return [edges[i + 1] - edges[i] for i in range(m)]


def _subtree(rng, n: int, depth: int, max_depth: int) -> _Node:
    if n == 1 and (depth >= max_depth or rng.random() < 0.35):
        return _Node(store=True)
    node = _Node()
    if depth >= max_depth:
        node.children = [_Node(store=True) for _ in range(n)]
    else:
        node.children = [_subtree(rng, k, depth + 1, max_depth) for k in _split(rng, n)]
    if rng.random() < 0.06:  # featureless leaf (e.g. an attribute with nothing below)
        node.children.insert(int(rng.integers(0, len(node.children) + 1)), _Node())
    return node


def random_tree(rng: np.random.Generator, n_leaves: int):
    """Returns (tree, leaf_ids): CDMPP serialization and the featured leaves' pre-order ids."""
    max_depth = int(rng.integers(1, 9))
    root = _Node()
    root.children = [_subtree(rng, k, 1, max_depth) for k in _split(rng, n_leaves)]
    tree, leaf_ids, counter = [], [], [0]

    def walk(node):
        nid = counter[0]
        counter[0] += 1
        tree.append(nid)
        if node.store:
            leaf_ids.append(nid)
        for ch in node.children:
            walk(ch)
        tree.append(-1)

    walk(root)
    assert len(leaf_ids) == n_leaves
    return tree, leaf_ids


def random_device(rng: np.random.Generator) -> List[float]:
    """CDMPP's 8 device features for a plausible random CPU/GPU, rounded to 1/1024."""
    clock = rng.uniform(1200, 3800)
    mem_gb = 2.0 ** rng.integers(3, 10)
    l3_kb = 2.0 ** rng.integers(6, 18)
    l2_mb = 2.0 ** rng.integers(0, 7)
    l1_kb = 2.0 ** rng.integers(5, 12)
    bw = rng.uniform(20, 2000)
    tflops = rng.uniform(0.1, 20)
    f = [1.0, clock / 2000, np.log2(mem_gb) / np.log2(64), np.log2(l3_kb) / np.log2(256),
         np.log2(l2_mb) / np.log2(64), np.log2(l1_kb) / np.log2(256),
         np.log2(bw) / np.log2(2048), tflops / 12]
    return [float(np.round(v * 1024) / 1024) for v in f]


def random_program(rng: np.random.Generator, prof: FeatureProfile, n_leaves: int,
                   device: bool = False, pid: Optional[str] = None) -> dict:
    tree, leaf_ids = random_tree(rng, n_leaves)
    rows = random_rows(rng, prof, n_leaves)
    ast = {"features": [[_num(v) for v in r] for r in rows], "leaf_ids": leaf_ids,
           "tree": tree}
    if device:
        ast["device"] = random_device(rng)
    if pid is not None:
        ast["id"] = pid
    return ast


def random_leaf_counts(rng: np.random.Generator, n: int, max_leaves: int,
                       exact: bool) -> List[int]:
    """Varied counts in [1, max_leaves], skewed small, always including 1 and the maximum."""
    if exact:
        return [max_leaves] * n
    counts = [min(max_leaves, 1 + int(rng.geometric(0.3)) - 1) for _ in range(n)]
    counts[0] = 1
    if n > 1:
        counts[1] = max_leaves
    if n > 2:
        counts[2] = min(2, max_leaves)
    return counts
