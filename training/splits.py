"""The three evaluation splits, fixed by a seed and written down under training/splits/.

- random:       per (task, target), a seeded 80/20 record split (train / test).
- cross-model:  every task occurring in a hold-out network (config: resnet_50, mobilenet_v2,
                resnext_50, bert_base, bert_tiny) is the test set; the rest is training.
- cross-device: train on the records of the train targets, test on the test targets;
                few-shot variants move a fraction (1 %, 5 %) of each test target's records,
                chosen by CDMPP's KMeans procedure, as whole tasks at random or as records
                at random, into training. The methods of one fraction and selection seed are
                judged on the same records: those none of them chose.

A validation set (early stopping) is drawn from training per (task, target), fraction
`val_fraction`. Every draw uses numpy's default_rng([seed, crc32(group key)]) over the group's
records sorted by key, so a group's split does not depend on other groups or file order.
"""
from __future__ import annotations

import gzip
import json
import os
import zlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np

from training import kmeans_sampling as ks
from training.data import Dataset

SPLITS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "splits")


@dataclass
class Split:
    name: str
    seed: int
    params: dict
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    # few-shot variants (cross-device): name -> {"target", "method", "fraction", "finetune", "test"}
    variants: Dict[str, dict] = field(default_factory=dict)

    def counts(self) -> dict:
        out = {"train": int(len(self.train)), "val": int(len(self.val)),
               "test": int(len(self.test))}
        for k, v in self.variants.items():
            out[k] = {"finetune": int(len(v["finetune"])), "test": int(len(v["test"]))}
        return out


def _rng(seed: int, key: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), zlib.crc32(key.encode())])


def _groups(ds: Dataset, idx: np.ndarray) -> Dict[str, np.ndarray]:
    """(task, target) group key -> indices, each sorted by record key."""
    out: Dict[str, List[int]] = {}
    for i in idx:
        g = f"{ds.task_names[ds.task[i]]}@{ds.target_names[ds.target[i]]}"
        out.setdefault(g, []).append(int(i))
    return {g: np.array(sorted(v, key=lambda i: ds.keys[i]), dtype=np.int64)
            for g, v in sorted(out.items())}


def _holdout_part(ds: Dataset, idx: np.ndarray, fraction: float, seed: int, salt: str):
    """Per group, round(fraction * n) records (at least one when n >= 2) to the second part."""
    a, b = [], []
    for g, members in _groups(ds, idx).items():
        perm = _rng(seed, salt + g).permutation(members)
        n = len(perm)
        m = int(round(fraction * n))
        if fraction > 0 and n >= 2:
            m = min(max(m, 1), n - 1)
        b.append(perm[:m])
        a.append(perm[m:])
    cat = lambda parts: np.sort(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
    return cat(a), cat(b)


def random_split(ds: Dataset, seed: int = 0, test_fraction: float = 0.2,
                 val_fraction: float = 0.1, targets: Optional[Sequence[str]] = None) -> Split:
    idx = ds.indices_of_targets(targets) if targets else np.arange(len(ds))
    rest, test = _holdout_part(ds, idx, test_fraction, seed, "test:")
    train, val = _holdout_part(ds, rest, val_fraction, seed, "val:")
    return Split("random", seed, {"test_fraction": test_fraction, "val_fraction": val_fraction,
                                  "targets": list(targets or ds.target_names)},
                 train, val, test)


def subsample_groups(ds: Dataset, idx: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """Per (task, target) group, the first round(fraction * n) records (at least one) of a
    seeded permutation: a smaller training set with every task still in it. The permutation
    does not depend on the fraction, so the subsets of one seed are nested."""
    if not 0 < fraction <= 1:
        raise ValueError(f"subsample fraction must be in (0, 1], got {fraction}")
    keep = [_rng(seed, "subsample:" + g).permutation(members)[:max(1, int(round(fraction * len(members))))]
            for g, members in _groups(ds, idx).items()]
    return np.sort(np.concatenate(keep)) if keep else np.zeros(0, np.int64)


def holdout_tasks(ds: Dataset, networks: Sequence[str]) -> List[str]:
    hold = set(networks)
    return sorted(t for t in ds.task_names if hold & set(ds.task_networks.get(t, [])))


def cross_model_split(ds: Dataset, holdout_networks: Sequence[str], seed: int = 0,
                      val_fraction: float = 0.1, targets: Optional[Sequence[str]] = None) -> Split:
    idx = ds.indices_of_targets(targets) if targets else np.arange(len(ds))
    test_tasks = holdout_tasks(ds, holdout_networks)
    tid = [ds.task_names.index(t) for t in test_tasks]
    is_test = np.isin(ds.task[idx], tid)
    test = np.sort(idx[is_test])
    train, val = _holdout_part(ds, idx[~is_test], val_fraction, seed, "val:")
    return Split("cross-model", seed, {"holdout_networks": list(holdout_networks),
                                       "val_fraction": val_fraction,
                                       "targets": list(targets or ds.target_names),
                                       "test_tasks": test_tasks}, train, val, test)


SELECTION_METHODS = ("kmeans", "random-tasks", "random")


def program_vectors(ds: Dataset, idx, norm_min, norm_max) -> np.ndarray:
    """The records' per-program vectors that KMeans clusters and CMD compares: the mean of
    each program's leaf rows, min-max normalised."""
    return ks.program_vectors(ds.pack_sum(idx) / ds.n_leaves[idx][:, None], norm_min, norm_max)


def cross_device_split(ds: Dataset, train_targets: Sequence[str], test_targets: Sequence[str],
                       seed: int = 0, val_fraction: float = 0.1,
                       fractions: Sequence[float] = (0.01, 0.05),
                       methods: Sequence[str] = ("kmeans", "random"),
                       norm=None, selection_seeds: Sequence[int] = (0,)) -> Split:
    """norm: (min, max) feature statistics for the KMeans program vectors (default: those of
    the training records). selection_seeds: each draws every method's selection anew (seed 0
    keeps the draws of a split without it); a variant's test set is the target's records that
    no method chose under the same fraction and selection seed, so that methods compare on
    the same records."""
    unknown = [m for m in methods if m not in SELECTION_METHODS]
    if unknown:
        raise ValueError(f"unknown selection method {unknown[0]!r} (known: {', '.join(SELECTION_METHODS)})")
    if len(set(selection_seeds)) != len(selection_seeds):
        raise ValueError(f"selection seeds must be distinct, got {list(selection_seeds)}")
    src = ds.indices_of_targets(train_targets)
    dst = ds.indices_of_targets(test_targets)
    train, val = _holdout_part(ds, src, val_fraction, seed, "val:")
    split = Split("cross-device", seed, {"train_targets": list(train_targets),
                                         "test_targets": list(test_targets),
                                         "val_fraction": val_fraction,
                                         "fractions": list(fractions), "methods": list(methods),
                                         "selection_seeds": list(selection_seeds)},
                  train, val, np.sort(dst))
    if not fractions or not methods:
        return split
    lo, hi = norm if norm is not None else ds.norm_stats(train)
    for target in test_targets:
        pool = np.sort(ds.indices_of_targets([target]))
        if len(pool) == 0:
            continue
        x = None
        for frac in fractions:
            budget = ks.budget_for(len(pool), frac)
            for sel_seed in selection_seeds:
                chosen_by = {}
                for method in methods:
                    salt = f"{seed}:{target}:{frac}:{method}" + (f":{sel_seed}" if sel_seed else "")
                    tseed = zlib.crc32(salt.encode())
                    if method == "kmeans":
                        if x is None:
                            x = program_vectors(ds, pool, lo, hi)
                        pos = ks.kmeans_select(x, ds.task[pool], budget, seed=tseed % (2 ** 31))
                    elif method == "random-tasks":
                        pos = ks.random_task_select(ds.task[pool], budget, seed=tseed)
                    else:
                        pos = ks.random_select(len(pool), budget, seed=tseed)
                    chosen_by[method] = np.sort(pool[pos])
                rest = np.setdiff1d(pool, np.concatenate(list(chosen_by.values())))
                if len(rest) == 0:
                    raise ValueError(f"the selections at fraction {frac:g} (seed {sel_seed}) take "
                                     f"all {len(pool)} records of {target}: none is left to test on")
                for method, chosen in chosen_by.items():
                    key = f"{target}/{method}/{frac:g}" + (f"/s{sel_seed}" if sel_seed else "")
                    split.variants[key] = {"target": target, "method": method, "fraction": frac,
                                           "selection_seed": int(sel_seed),
                                           "finetune": chosen, "test": rest}
    return split


# --------------------------------------------------------------------------------------
# Writing down
# --------------------------------------------------------------------------------------
def _members(ds: Dataset, idx) -> Dict[str, Dict[str, List[str]]]:
    """{target: {task: [sid, ...]}} for the records idx."""
    out: Dict[str, Dict[str, List[str]]] = {}
    for i in idx:
        key = ds.keys[i]
        task_sid, target = key.rsplit("@", 1)
        task, sid = task_sid.rsplit("#", 1)
        out.setdefault(target, {}).setdefault(task, []).append(sid)
    for t in out.values():
        for v in t.values():
            v.sort()
    return out


def _digest_keys(keys) -> str:
    import hashlib
    h = hashlib.sha256()
    for k in sorted(keys):
        h.update(k.encode() + b"\n")
    return h.hexdigest()[:16]


def _digest(ds: Dataset, idx) -> str:
    return _digest_keys(ds.keys[i] for i in idx)


def program_digest(ds: Dataset, idx) -> str:
    """A digest of the programs (task#sid) of the records idx, whichever target timed them."""
    return _digest_keys(ds.keys[i].rsplit("@", 1)[0] for i in idx)


def write_split(split: Split, ds: Dataset, directory: str = SPLITS_DIR, tag: str = "") -> str:
    """Writes <dir>/<name>[.tag].json (seed, params, counts, task lists, digests) and
    <name>[.tag].members.json.gz (every record of every part). Returns the summary path."""
    os.makedirs(directory, exist_ok=True)
    base = os.path.join(directory, split.name + (f".{tag}" if tag else ""))
    parts = {"train": split.train, "val": split.val, "test": split.test}
    for k, v in split.variants.items():
        parts[f"{k}/finetune"] = v["finetune"]
        parts[f"{k}/test"] = v["test"]
    summary = {
        "name": split.name, "seed": split.seed, "params": split.params,
        "rule": "per (task, target) group: numpy default_rng([seed, crc32(salt + group)]) "
                "permutation of the group's records sorted by key; see training/splits.py",
        "dataset": {"records": len(ds), "fingerprint": ds.fingerprint(),
                    "targets": ds.target_names},
        "counts": split.counts(),
        "digests": {k: _digest(ds, v) for k, v in parts.items()},
        "train_tasks": sorted({ds.task_names[t] for t in ds.task[split.train]}),
        "test_tasks": sorted({ds.task_names[t] for t in ds.task[split.test]}),
        "members_file": os.path.basename(base) + ".members.json.gz",
    }
    with open(base + ".json", "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
        f.write("\n")
    members = {k: _members(ds, v) for k, v in parts.items()}
    # mtime 0: the same split writes the same bytes (a rerun leaves git clean)
    with open(base + ".members.json.gz", "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(json.dumps(members, sort_keys=True).encode())
    return base + ".json"


def read_members(path_json: str) -> Dict[str, set]:
    """part -> set of record keys ("task#sid@target") from a written split."""
    with open(path_json) as f:
        summary = json.load(f)
    with gzip.open(os.path.join(os.path.dirname(path_json), summary["members_file"]), "rt") as f:
        members = json.load(f)
    out = {}
    for part, by_target in members.items():
        out[part] = {f"{task}#{sid}@{target}" for target, tasks in by_target.items()
                     for task, sids in tasks.items() for sid in sids}
    return out
