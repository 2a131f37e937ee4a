"""Measured records -> an in-memory `Dataset` of compact ASTs and latencies.

Records (design.md "Dataset record") live in `<data>/<target>/*.jsonl.gz` (multi-member gzip
is fine; a `.jsonl` shard still being written is read too, its unfinished last line skipped;
a `.jsonl` whose `.gz` also exists is skipped, as the lab does). A record without an "ast"
gets one from `tempo lab featurize --target T --data D -o FILE` (the binary is configurable;
its output is cached under the cache directory and joined on `task#sid`).

The `Dataset` is struct-of-arrays: per program the task, target, latency statistics, flops,
device features, and its leaves as rows of one (R, F) float32 matrix (ragged, `offsets`)
with each leaf's tree position. `Dataset.batch` turns a list of program indices into the
model's (x, mask, device) tensors exactly as `converters.cdmpp_torch.preprocess` would.
"""
from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import zlib
from dataclasses import dataclass, field
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch

from converters import cdmpp_torch as ct

FEATURE_SETS = ct.FEATURE_SETS  # columns per `tempo lab featurize --features` set
DEVICE_FEATURES = ct.DEVICE_FEATURES
_STEM_RE = re.compile(r"^(.*)_b[0-9]+_[0-9]+$")


class DataError(RuntimeError):
    pass


def network_of_stem(stem: str) -> str:
    """Workload file stem -> network name ("resnet_50_b1_224" -> "resnet_50"), as the lab."""
    m = _STEM_RE.match(stem)
    return m.group(1) if m else stem


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------
def record_files(target_dir: str) -> List[str]:
    """Record shards of a target directory, sorted: *.jsonl.gz and *.jsonl (a .jsonl whose
    .gz exists is skipped; failures*.jsonl and hidden/temporary files are not records)."""
    if not os.path.isdir(target_dir):
        return []
    names = set(os.listdir(target_dir))
    # the lab's shards are records-*; when present, exactly those (as `tempo lab featurize`
    # reads them, so its output lines follow ours one to one)
    lab = any(n.startswith("records-") for n in names)
    out = []
    for n in sorted(names):
        if n.startswith(".") or n.startswith("failures") or n.endswith(".tmp"):
            continue
        if lab and not n.startswith("records-"):
            continue
        if n.endswith(".jsonl.gz") or (n.endswith(".jsonl") and n + ".gz" not in names):
            out.append(os.path.join(target_dir, n))
    return out


def iter_jsonl(path: str) -> Iterator[Tuple[int, dict]]:
    """(line number, object) per line of a .jsonl or (multi-member) .jsonl.gz file.

    A last line without its newline (a shard being written) is skipped; a gzip stream cut
    short (being written) ends the file with a warning. Any other unparseable line is a
    DataError naming file and line."""
    if path.endswith(".gz"):
        try:
            with gzip.open(path, "rb") as f:
                data = f.read()
        except (EOFError, zlib.error, OSError) as e:
            # read what decompresses before the cut
            data = _read_truncated_gzip(path)
            n_lines = data.count(b"\n")
            log(f"data: {os.path.basename(path)}: gzip stream incomplete ({e}); "
                f"using the {n_lines} complete lines before the cut")
    else:
        with open(path, "rb") as f:
            data = f.read()
    lines = data.split(b"\n")
    # lines[-1] is b"" when the file ends with a newline, else an unfinished line
    if lines and lines[-1].strip():
        log(f"data: {os.path.basename(path)}: unfinished last line skipped")
    for no, raw in enumerate(lines[:-1], start=1):
        if not raw.strip():
            continue
        try:
            yield no, json.loads(raw)
        except ValueError as e:
            raise DataError(f"{os.path.basename(path)}:{no}: not valid JSON ({e})") from None


def _read_truncated_gzip(path: str) -> bytes:
    out = []
    with open(path, "rb") as f:
        raw = f.read()
    while raw:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out.append(d.decompress(raw))
        except zlib.error:
            break
        if not d.eof:
            break
        raw = d.unused_data
    data = b"".join(out)
    cut = data.rfind(b"\n")
    return data[:cut + 1] if cut >= 0 else b""


def load_target_info(data_dir: str, target: str) -> dict:
    path = os.path.join(data_dir, "targets", f"{target}.json")
    if not os.path.exists(path):
        raise DataError(f"target description {path} not found (run `tempo lab target` for "
                        f"{target})")
    with open(path) as f:
        info = json.load(f)
    dev = info.get("cdmpp_device_features") or info.get("device_features")
    if not isinstance(dev, list) or len(dev) != DEVICE_FEATURES:
        raise DataError(f"{path}: 'cdmpp_device_features' must hold {DEVICE_FEATURES} numbers")
    info["_device"] = [float(v) for v in dev]
    return info


# --------------------------------------------------------------------------------------
# tempo lab featurize
# --------------------------------------------------------------------------------------
DEFAULT_TEMPO_BINARIES = ("build/tools/tempo", "build/release/tools/tempo")


def has_lab(binary: str) -> bool:
    """Whether `binary` has the dataset commands (`tempo lab featurize`)."""
    try:
        return subprocess.run([binary, "lab", "featurize", "--help"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def find_tempo_binary(configured: Optional[str] = None, need_lab: bool = False) -> Optional[str]:
    """The `tempo` executable: the configured path, else $TEMPO_BIN, else the usual build
    dirs (relative to the current directory, then to the repository root); with need_lab,
    the first one that has `lab featurize`."""
    if configured:
        return configured if os.path.isfile(configured) else None
    cands = []
    if os.environ.get("TEMPO_BIN"):
        cands.append(os.environ["TEMPO_BIN"])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for rel in DEFAULT_TEMPO_BINARIES:
        cands += [rel, os.path.join(root, rel)]
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK) and (not need_lab or has_lab(c)):
            return c
    return None


def _files_signature(files: Sequence[str]) -> str:
    h = hashlib.sha256()
    for p in files:
        st = os.stat(p)
        h.update(f"{os.path.basename(p)}:{st.st_size}:{int(st.st_mtime)}\n".encode())
    return h.hexdigest()[:16]


def featurize_target(data_dir: str, target: str, tempo_binary: Optional[str],
                     cache_dir: Optional[str], feature_set: str = "ansor") -> List[dict]:
    """Runs `tempo lab featurize` for a target; returns its compact ASTs in record order (one
    per record line of record_files(), ids "task#sid" with the sid of the replayed program).
    feature_set: "ansor" (164 columns) or "ansor+loops" (+ tempo's loop extension). The
    output is cached per (feature set, files, sizes, mtimes) signature."""
    binary = find_tempo_binary(tempo_binary, need_lab=True)
    if binary is None:
        where = tempo_binary or "$TEMPO_BIN, " + ", ".join(DEFAULT_TEMPO_BINARIES)
        raise DataError(f"records of target {target} carry no 'ast' and the tempo binary was "
                        f"not found ({where}); build it (cmake --build build) or pass "
                        f"--tempo PATH")
    files = record_files(os.path.join(data_dir, target))
    sig = _files_signature(files)
    out = None
    if cache_dir:
        os.makedirs(cache_dir, exist_ok=True)
        suffix = "" if feature_set == "ansor" else "." + feature_set.replace("+", "-")
        out = os.path.join(cache_dir, f"{target}.{sig}{suffix}.ast.jsonl")
    if out is None:
        import tempfile
        out = os.path.join(tempfile.mkdtemp(prefix="tempo-featurize-"), f"{target}.ast.jsonl")
    if not os.path.exists(out):
        # Per-process name: two runs featurizing the same target must not share a file.
        tmp = f"{out}.{os.getpid()}.tmp"
        cmd = [binary, "lab", "featurize", "--target", target, "--data", data_dir, "-o", tmp,
               "--features", feature_set]
        log("data: " + " ".join(cmd))
        try:
            rc = subprocess.run(cmd).returncode
            if rc not in (0, 1):
                raise DataError(f"`{' '.join(cmd)}` failed with status {rc}")
            if not os.path.exists(tmp):
                raise DataError(f"`{' '.join(cmd)}` exited with status {rc} but wrote no {tmp}")
            if rc == 1:
                log(f"data: featurize reported replay mismatches for {target} (lowering "
                    f"changed since measurement); those features may not describe the "
                    f"measured program")
            os.replace(tmp, out)
        finally:
            # A failed or interrupted featurize leaves no partial file in the cache.
            if os.path.exists(tmp):
                os.remove(tmp)
    return [obj for _, obj in iter_jsonl(out)]


# --------------------------------------------------------------------------------------
# Dataset
# --------------------------------------------------------------------------------------
@dataclass
class Dataset:
    """Programs as parallel arrays. Index arrays (splits) refer to positions in these."""
    keys: List[str]                       # "task#sid@target", unique
    task_names: List[str]                 # distinct tasks
    task: np.ndarray                      # (N,) int -> task_names
    target_names: List[str]
    target: np.ndarray                    # (N,) int -> target_names
    latency: np.ndarray                   # (N,) mean seconds
    latency_std: np.ndarray               # (N,)
    latency_min: np.ndarray               # (N,)
    flops: np.ndarray                     # (N,)
    device: np.ndarray                    # (N, 8) CDMPP device features of the record's target
    measured_at: np.ndarray               # (N,) str: UTC time of the timing used ('' if absent)
    rows: np.ndarray                      # (R, F) float32 leaf features (raw, slog'd)
    positions: np.ndarray                 # (R,) int32 leaf position in the serialized tree
    offsets: np.ndarray                   # (N+1,) int64; program i = rows[offsets[i]:offsets[i+1]]
    leaf_ids: np.ndarray                  # (R,) int32 pre-order node id of each leaf
    trees: np.ndarray                     # (T,) int32 serialized trees, concatenated
    tree_offsets: np.ndarray              # (N+1,) int64
    task_networks: Dict[str, List[str]] = field(default_factory=dict)  # task -> network names
    task_ops: Dict[str, str] = field(default_factory=dict)
    stats: dict = field(default_factory=dict)   # loading / filtering counts
    _pe: Optional[np.ndarray] = None

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def n_leaves(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def feature_dim(self) -> int:
        return self.rows.shape[1]

    # -- selection ---------------------------------------------------------------------
    def first_columns(self, width: int) -> "Dataset":
        """The same programs with each leaf row cut to its first `width` columns (e.g.
        Ansor's 164 of an ansor+loops dataset, for the baselines as TVM runs them)."""
        if width == self.feature_dim:
            return self
        if not 0 < width < self.feature_dim:
            raise DataError(f"cannot cut {self.feature_dim}-column rows to {width}")
        return dataclasses.replace(self, rows=np.ascontiguousarray(self.rows[:, :width]),
                                   _pe=None)

    def subset(self, idx) -> "Dataset":
        idx = np.asarray(idx, dtype=np.int64)
        n = self.n_leaves[idx]
        tl = np.diff(self.tree_offsets)[idx]
        src = _ragged_index(self.offsets[idx], n)
        used_tasks = sorted(set(int(t) for t in self.task[idx]))
        tmap = {old: new for new, old in enumerate(used_tasks)}
        names = [self.task_names[t] for t in used_tasks]
        return Dataset(
            keys=[self.keys[i] for i in idx], task_names=names,
            task=np.array([tmap[int(t)] for t in self.task[idx]], dtype=np.int64),
            target_names=list(self.target_names), target=self.target[idx].copy(),
            latency=self.latency[idx].copy(), latency_std=self.latency_std[idx].copy(),
            latency_min=self.latency_min[idx].copy(), flops=self.flops[idx].copy(),
            device=self.device[idx].copy(), measured_at=self.measured_at[idx].copy(),
            rows=self.rows[src], positions=self.positions[src],
            offsets=np.concatenate([[0], np.cumsum(n)]).astype(np.int64),
            leaf_ids=self.leaf_ids[src],
            trees=self.trees[_ragged_index(self.tree_offsets[idx], tl)],
            tree_offsets=np.concatenate([[0], np.cumsum(tl)]).astype(np.int64),
            task_networks={t: self.task_networks.get(t, []) for t in names},
            task_ops={t: self.task_ops.get(t, "") for t in names}, stats=dict(self.stats))

    def tasks_of(self, idx) -> np.ndarray:
        return self.task[np.asarray(idx, dtype=np.int64)]

    def indices_of_targets(self, targets: Iterable[str]) -> np.ndarray:
        want = [self.target_names.index(t) for t in targets if t in self.target_names]
        return np.flatnonzero(np.isin(self.target, want))

    # -- features ----------------------------------------------------------------------
    def leaf_rows(self, idx) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        return self.rows[_ragged_index(self.offsets[idx], self.n_leaves[idx])]

    def norm_stats(self, idx) -> Tuple[np.ndarray, np.ndarray]:
        """Per-feature min and max over the leaves of programs `idx` (the training set)."""
        r = self.leaf_rows(idx)
        if len(r) == 0:
            raise DataError("no leaves to compute feature min/max from")
        return r.min(axis=0).astype(np.float32), r.max(axis=0).astype(np.float32)

    def pack_sum(self, idx) -> np.ndarray:
        """(len(idx), F): per-program sum of its leaf rows (Ansor's pack-sum input)."""
        idx = np.asarray(idx, dtype=np.int64)
        n = self.n_leaves[idx]
        src = _ragged_index(self.offsets[idx], n)
        seg = np.repeat(np.arange(len(idx)), n)
        out = np.zeros((len(idx), self.feature_dim), dtype=np.float64)
        np.add.at(out, seg, self.rows[src])
        return out

    def pe_table(self, max_pos: int) -> np.ndarray:
        if self._pe is None or len(self._pe) <= max_pos:
            n = max(max_pos + 1, 64 if self._pe is None else 2 * len(self._pe))
            self._pe = positional_table(n, self.feature_dim)
        return self._pe

    def batch(self, idx, norm_min, norm_max, max_leaves: Optional[int] = None,
              device: bool = False, dtype=torch.float32, pe_scale: float = 1.0):
        """(x (B, L, F), mask (B, L) bool, device (B, 8) or None) for programs `idx`, equal to
        cdmpp_torch.preprocess (normalise, + pe_scale × tree PE). L = max_leaves when given
        (flatten), else the batch's largest leaf count."""
        idx = np.asarray(idx, dtype=np.int64)
        n = self.n_leaves[idx]
        L = int(max_leaves) if max_leaves else int(n.max())
        if int(n.max()) > L:
            raise ValueError(f"a program has {int(n.max())} leaves > {L}")
        src = _ragged_index(self.offsets[idx], n)
        b = np.repeat(np.arange(len(idx)), n)
        r = np.arange(len(src)) - np.repeat(np.cumsum(n) - n, n)
        lo = np.asarray(norm_min, dtype=np.float64)
        hi = np.asarray(norm_max, dtype=np.float64)
        pos = self.positions[src]
        pe = self.pe_table(int(pos.max()) if len(pos) else 0)
        vals = (self.rows[src].astype(np.float64) - lo) / (hi - lo + ct.NORM_EPS) + pe_scale * pe[pos]
        x = np.zeros((len(idx), L, self.feature_dim), dtype=np.float32)
        x[b, r] = vals
        mask = np.zeros((len(idx), L), dtype=bool)
        mask[b, r] = True
        dev = torch.tensor(self.device[idx], dtype=dtype) if device else None
        return torch.tensor(x, dtype=dtype), torch.from_numpy(mask), dev

    def ast(self, i: int, with_device: bool = False) -> dict:
        """Program i as a design.md compact AST (features, leaf_ids, tree, id[, device])."""
        a, b = self.offsets[i], self.offsets[i + 1]
        rows = self.rows[a:b]
        tree = self.trees[self.tree_offsets[i]:self.tree_offsets[i + 1]]
        out = {"features": rows.astype(np.float64).tolist(),
               "leaf_ids": [int(v) for v in self.leaf_ids[a:b]],
               "tree": [int(v) for v in tree], "id": self.keys[i]}
        if with_device:
            out["device"] = self.device[i].astype(np.float64).tolist()
        return out

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for k in sorted(self.keys):
            h.update(k.encode() + b"\n")
        return h.hexdigest()[:16]


def _ragged_index(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    base = np.repeat(np.asarray(starts, dtype=np.int64) - (np.cumsum(counts) - counts), counts)
    return base + np.arange(total, dtype=np.int64)


def positional_table(n: int, d: int) -> np.ndarray:
    """PE(p) for p = 0..n-1 (rows), the CDMPP tree encoding of cdmpp_torch.positional_encoding."""
    p = np.arange(n, dtype=np.float64)[:, None]
    i = np.arange(d, dtype=np.float64)[None, :]
    even = (np.arange(d) % 2 == 0)[None, :]
    arg = p / 10000.0 ** (2.0 * i / d)
    return np.where(even, np.sin(arg), np.cos(arg))


# --------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------
def _parse_ast(ast: dict, where: str) -> Tuple[np.ndarray, List[int], List[int], List[int]]:
    feats = np.asarray(ast["features"], dtype=np.float32)
    ids = [int(v) for v in ast["leaf_ids"]]
    tree = [int(v) for v in ast["tree"]]
    if feats.ndim != 2 or feats.shape[0] != len(ids) or feats.shape[0] == 0:
        raise DataError(f"{where}: 'ast.features' must be one row per leaf id")
    if not np.isfinite(feats).all():
        raise DataError(f"{where}: 'ast.features' has non-finite values")
    index = {n: i for i, n in enumerate(tree) if n >= 0}
    try:
        pos = [index[n] for n in ids]
    except KeyError as e:
        raise DataError(f"{where}: leaf id {e} not in 'ast.tree'") from None
    return feats, pos, ids, tree


def noise_of(latency_s: dict, stat: str = "std") -> float:
    """A record's relative measurement noise: std/mean, or MAD/median of its costs."""
    mean, std = float(latency_s["mean"]), float(latency_s.get("std", 0.0))
    if stat == "mad":
        costs = latency_s.get("costs")
        if costs:
            c = np.asarray(costs, dtype=np.float64)
            med = float(np.median(c))
            if med > 0:
                return float(np.median(np.abs(c - med)) / med)
    elif stat != "std":
        raise ValueError(f"noise_stat must be 'std' or 'mad', got {stat!r}")
    return std / mean


def record_sid(r: dict) -> str:
    """The record's schedule id (the lab writes `sid`; otherwise a hash of the schedule)."""
    return r.get("sid") or hashlib.sha1(
        json.dumps(r.get("schedule"), sort_keys=True).encode()).hexdigest()[:16]


def latest_timings(files: Sequence[str]) -> set:
    """Line indices (over `files`, in order) of each program's latest timing: a program
    re-timed by `tempo lab measure --retime-before` has several records; the one with the
    largest measured_at wins (the later line on a tie), as the lab's own readers do."""
    latest: Dict[str, Tuple[str, int]] = {}
    keep = set()
    k = -1
    for path in files:
        for _, r in iter_jsonl(path):
            k += 1
            if not isinstance(r, dict):     # the loader reports it, naming file and line
                keep.add(k)
                continue
            key = f"{r.get('task')}#{record_sid(r)}"
            t = str(r.get("measured_at", ""))
            if key not in latest or t >= latest[key][0]:
                latest[key] = (t, k)
    return keep | {line for _, line in latest.values()}


def load_records(data_dir: str, targets: Sequence[str], tempo_binary: Optional[str] = None,
                 cache_dir: Optional[str] = None, noise_max_cv: Optional[float] = 0.01,
                 min_records_per_task: int = 0, max_leaves: Optional[int] = None,
                 exact_leaves: Optional[int] = None, limit: int = 0,
                 noise_stat: str = "std", feature_set: str = "ansor") -> Dataset:
    """Loads, filters and joins the records of `targets` into one Dataset.

    Filters (counted in Dataset.stats): non-positive or non-finite latency; noise >
    noise_max_cv (CDMPP: std/mean > 0.01; None disables), with noise_stat "std" = std/mean
    (CDMPP) or "mad" = median |cost - median| / median over latency_s.costs (robust to a few
    disturbed repeats; std/mean when a record has no costs); leaf count > max_leaves or != exact_leaves
    (the model's limit); then tasks with fewer than min_records_per_task records (per target).
    A program timed more than once counts with its latest timing (`latest_timings`); other
    duplicate (task, sid, target) keys keep the first record. feature_set: the columns of
    records featurized here (`featurize_target`); stored ASTs are used as they are."""
    if feature_set not in FEATURE_SETS:
        raise DataError(f"unknown feature set {feature_set!r} (known: {', '.join(FEATURE_SETS)})")
    width = FEATURE_SETS[feature_set]
    keys, tasks, tgts, lat, lstd, lmin, flops, devs, when = [], [], [], [], [], [], [], [], []
    feat_chunks, pos_chunks, counts, id_chunks, tree_chunks = [], [], [], [], []
    task_networks, task_ops = {}, {}
    stats = {"read": 0, "dropped_bad_latency": 0, "dropped_noisy": 0, "dropped_leaves": 0,
             "dropped_duplicate": 0, "dropped_small_task": 0, "superseded_by_retiming": 0,
             "featurized": 0, "per_target": {}}
    seen = set()
    for target in targets:
        info = load_target_info(data_dir, target)
        files = record_files(os.path.join(data_dir, target))
        if not files:
            raise DataError(f"no record files under {os.path.join(data_dir, target)}")
        featurized, by_id = None, None
        current = latest_timings(files)
        n_target = 0
        line_k = -1      # record line index over the target's files (featurize's order)
        for path in files:
            for no, r in iter_jsonl(path):
                where = f"{os.path.basename(path)}:{no}"
                stats["read"] += 1
                line_k += 1
                if line_k not in current:
                    stats["superseded_by_retiming"] += 1
                    continue
                try:
                    task = r["task"]
                    sid = record_sid(r)
                    ls = r["latency_s"]
                    mean, std = float(ls["mean"]), float(ls.get("std", 0.0))
                except (KeyError, TypeError, ValueError) as e:
                    raise DataError(f"{where}: record field missing or malformed ({e})") from None
                if not (math.isfinite(mean) and mean > 0 and math.isfinite(std)):
                    stats["dropped_bad_latency"] += 1
                    continue
                if noise_max_cv is not None and noise_of(ls, noise_stat) > noise_max_cv:
                    stats["dropped_noisy"] += 1
                    continue
                key = f"{task}#{sid}@{target}"
                if key in seen:
                    stats["dropped_duplicate"] += 1
                    continue
                ast = r.get("ast")
                if ast is None:
                    if featurized is None:
                        featurized = featurize_target(data_dir, target, tempo_binary, cache_dir,
                                                      feature_set)
                        by_id = {a.get("id", ""): a for a in featurized}
                    ast = by_id.get(f"{task}#{sid}")
                    if ast is None and line_k < len(featurized) and \
                            str(featurized[line_k].get("id", "")).rsplit("#", 1)[0] == task:
                        # replayed sid differs (lowering changed since measurement): the
                        # featurize output follows the record lines one to one
                        ast = featurized[line_k]
                        stats["featurized_by_order"] = stats.get("featurized_by_order", 0) + 1
                    if ast is None:
                        raise DataError(f"{where}: no 'ast' and `tempo lab featurize` produced "
                                        f"none for {task}#{sid}")
                    stats["featurized"] += 1
                feats, pos, ids, tree = _parse_ast(ast, where)
                if feats.shape[1] != width:
                    raise DataError(f"{where}: 'ast.features' rows have {feats.shape[1]} "
                                    f"values, expected {width} (feature set {feature_set})")
                n = feats.shape[0]
                if (max_leaves and n > max_leaves) or (exact_leaves and n != exact_leaves):
                    stats["dropped_leaves"] += 1
                    continue
                seen.add(key)
                keys.append(key)
                tasks.append(task)
                tgts.append(target)
                lat.append(mean)
                lstd.append(std)
                lmin.append(float(ls.get("min", mean)))
                flops.append(float(r.get("flops", ast.get("flops", 0.0)) or 0.0))
                devs.append(info["_device"])
                when.append(str(r.get("measured_at", "")))
                feat_chunks.append(feats)
                pos_chunks.append(np.asarray(pos, dtype=np.int32))
                id_chunks.append(np.asarray(ids, dtype=np.int32))
                tree_chunks.append(np.asarray(tree, dtype=np.int32))
                counts.append(n)
                nets = task_networks.setdefault(task, [])
                for stem in (r.get("networks") or {}):
                    net = network_of_stem(stem)
                    if net not in nets:
                        nets.append(net)
                task_ops.setdefault(task, r.get("op", ""))
                n_target += 1
                if limit and n_target >= limit:
                    break
            if limit and n_target >= limit:
                break
        stats["per_target"][target] = n_target
    if not keys:
        raise DataError(f"no usable records for targets {list(targets)} under {data_dir} "
                        f"(stats: {stats})")
    task_names = sorted(set(tasks))
    tmap = {t: i for i, t in enumerate(task_names)}
    target_names = list(targets)
    ds = Dataset(
        keys=keys, task_names=task_names, task=np.array([tmap[t] for t in tasks], np.int64),
        target_names=target_names,
        target=np.array([target_names.index(t) for t in tgts], np.int64),
        latency=np.array(lat), latency_std=np.array(lstd), latency_min=np.array(lmin),
        flops=np.array(flops), device=np.array(devs, dtype=np.float32),
        measured_at=np.array(when, dtype=object),
        rows=np.concatenate(feat_chunks).astype(np.float32),
        positions=np.concatenate(pos_chunks).astype(np.int32),
        offsets=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        leaf_ids=np.concatenate(id_chunks).astype(np.int32),
        trees=np.concatenate(tree_chunks).astype(np.int32),
        tree_offsets=np.concatenate([[0], np.cumsum([len(t) for t in tree_chunks])]).astype(np.int64),
        task_networks=task_networks, task_ops=task_ops, stats=stats)
    if min_records_per_task > 1:
        pair = ds.task * len(target_names) + ds.target
        uniq, inv, cnt = np.unique(pair, return_inverse=True, return_counts=True)
        keep = np.flatnonzero(cnt[inv] >= min_records_per_task)
        stats["dropped_small_task"] = int(len(ds) - len(keep))
        if len(keep) < len(ds):
            ds = ds.subset(keep)
    stats["kept"] = len(ds)
    ds.stats = stats
    kept_frac = len(ds) / max(1, stats["read"])
    log(f"data: {stats['read']} records read from {list(targets)}, {len(ds)} kept "
        f"({100 * kept_frac:.1f}%): {stats['dropped_noisy']} noisy ({noise_stat} > {noise_max_cv}), "
        f"{stats['dropped_bad_latency']} bad latency, {stats['dropped_leaves']} over the leaf "
        f"limit, {stats['dropped_small_task']} in tasks with < {max(1, min_records_per_task)} "
        f"records, {stats['superseded_by_retiming']} earlier timings of re-timed programs")
    if stats["read"] and stats["dropped_noisy"] > 0.5 * stats["read"]:
        log(f"data: WARNING more than half the records are noisier than std/mean "
            f"{noise_max_cv}; consider --noise-max-cv")
    return ds


# --------------------------------------------------------------------------------------
# Target transform
# --------------------------------------------------------------------------------------
def fit_output_transform(latency_s, kind: str = "boxcox") -> ct.OutputTransform:
    """Fits the target transform on training latencies (seconds).

    boxcox: sklearn PowerTransformer(method="box-cox", standardize=True) -> lambda, mean,
    scale; log: ln(x) standardised; none: x standardised."""
    x = np.asarray(latency_s, dtype=np.float64).reshape(-1, 1)
    if kind == "boxcox":
        from sklearn.preprocessing import PowerTransformer
        pt = PowerTransformer(method="box-cox", standardize=True).fit(x)
        return ct.OutputTransform("boxcox", float(pt.lambdas_[0]), float(pt._scaler.mean_[0]),
                                  float(pt._scaler.scale_[0])).validate()
    y = np.log(x) if kind == "log" else x
    scale = float(y.std()) or 1.0
    return ct.OutputTransform(kind, 0.0, float(y.mean()), scale).validate()
