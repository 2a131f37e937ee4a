"""SYNTHETIC dataset for tests only: fake tasks, networks and targets in the record schema.

Never write this under data/: tests put it in a temporary directory. Programs are random
compact ASTs (converters/random_programs.py); each latency is a known noisy function of the
features, the task and the target, so models have something learnable.
"""
from __future__ import annotations

import gzip
import json
import math
import os
from typing import Dict, List, Sequence

import numpy as np

from converters import random_programs as rp

SYNTHETIC_TARGETS = ("synthetic-a.avx2.t1", "synthetic-a.sse2.t1", "synthetic-a.sse42.t1",
                     "synthetic-a.avx2.t2")
# fake tasks belong to these workload stems; resnet_50 / bert_tiny are hold-out networks
SYNTHETIC_STEMS = ("resnet_50_b1_224", "bert_tiny_b1_128", "vgg_16_b1_224", "dcgan_b1_64",
                   "densenet_121_b1_224", "inception_v3_b1_299")


def _device(rng, k: int) -> List[float]:
    return [1.0, 1.0 + 0.1 * k, 0.5, 0.9, 0.4, 0.6 + 0.05 * k, 0.7, 0.1 * (k + 1)]


def write_synthetic_data(root: str, n_tasks: int = 12, per_task: int = 30,
                         targets: Sequence[str] = SYNTHETIC_TARGETS, seed: int = 0,
                         noisy_fraction: float = 0.1, with_ast: bool = True) -> Dict[str, object]:
    """Writes root/targets/<t>.json and root/<t>/records-*.jsonl.gz (two gzip members) plus a
    plain records-*.jsonl shard with an unfinished last line. Returns a summary."""
    rng = np.random.default_rng(seed)
    prof = rp.random_profile(rng, 164)
    w = np.zeros(164)
    active = rng.choice(np.flatnonzero(prof.kind >= 2), size=12, replace=False)
    w[active] = rng.normal(0, 1, size=12)
    span = np.where(prof.hi > prof.lo, prof.hi - prof.lo, 1.0)
    tasks = []
    for t in range(n_tasks):
        stems = {SYNTHETIC_STEMS[t % len(SYNTHETIC_STEMS)]: 1 + t % 3}
        if t % 5 == 4:
            stems[SYNTHETIC_STEMS[(t + 2) % len(SYNTHETIC_STEMS)]] = 1
        tasks.append({"key": f"synthetic_op(i={t})", "op": f"synthetic_op{t % 3}",
                      "networks": stems, "leaves": int(1 + t % 5), "bias": rng.normal(0, 1.0),
                      "flops": float(10 ** rng.uniform(5, 9))})
    programs = []
    for t, task in enumerate(tasks):
        for j in range(per_task):
            ast = rp.random_program(rng, prof, task["leaves"], device=False)
            x = (np.asarray(ast["features"]) - prof.lo) / span
            s = float(np.mean(x @ w))
            programs.append((t, f"s{t:03d}{j:04d}", ast, s))
    for path in (os.path.join(root, "targets"),):
        os.makedirs(path, exist_ok=True)
    for k, target in enumerate(targets):
        dev = _device(rng, k)
        with open(os.path.join(root, "targets", f"{target}.json"), "w") as f:
            json.dump({"id": target, "synthetic": True, "cdmpp_device_features": dev}, f)
        lines = []
        for n, (t, sid, ast, s) in enumerate(programs):
            task = tasks[t]
            mean = math.exp(-9.0 + 0.8 * s + task["bias"] + 0.3 * k * math.tanh(s))
            cv = float(rng.uniform(0.015, 0.05)) if rng.random() < noisy_fraction else \
                float(rng.uniform(0.0, 0.008))
            mean *= float(np.exp(rng.normal(0, 0.02)))
            rec = {"task": task["key"], "op": task["op"], "shape": {"i": t},
                   "networks": task["networks"], "target": target, "sid": sid,
                   "schedule": {"synthetic": sid}, "flops": task["flops"],
                   "latency_s": {"mean": mean, "std": cv * mean, "min": mean * (1 - cv),
                                 "repeats": 5, "costs": [mean] * 5},
                   "measured_at": f"2026-01-{1 + k:02d}T{n % 24:02d}:00:00Z"}
            if with_ast:
                rec["ast"] = ast
            lines.append(json.dumps(rec))
        d = os.path.join(root, target)
        os.makedirs(d, exist_ok=True)
        cut1, cut2 = len(lines) // 3, (2 * len(lines)) // 3
        with open(os.path.join(d, "records-1-0000.jsonl.gz"), "wb") as f:
            # two gzip members in one file
            f.write(gzip.compress(("\n".join(lines[:cut1]) + "\n").encode()))
            f.write(gzip.compress(("\n".join(lines[cut1:cut2]) + "\n").encode()))
        with open(os.path.join(d, "records-1-0001.jsonl"), "w") as f:
            f.write("\n".join(lines[cut2:]) + "\n")
            f.write('{"task": "unfinished')   # a shard being written
        with open(os.path.join(d, "failures.jsonl"), "w") as f:
            f.write('{"task": "x", "error": "timeout"}\n')
    return {"tasks": [t["key"] for t in tasks], "targets": list(targets),
            "programs": len(programs), "records": len(programs) * len(targets)}
