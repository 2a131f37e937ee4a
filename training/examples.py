"""Writes the README's example programs: measured records from a split's test part, with
their compact ASTs, spread over the latency range (one per operator while there are more).

    python3 -m training.examples [--split training/splits/random.epyc-zen5.avx512.t1.json]
        [-n 8] [--out data/examples/programs.jsonl] [--data data] [--tempo PATH] [--device]
        [--features ansor|ansor+loops]

Each line is the dataset record (design.md) plus "ast" (from `tempo lab featurize`) and an
"id", so `tempo predict MODEL FILE` prints the prediction next to the measured latency; the
programs were never seen in training by a model trained on that split.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

from training import data as D
from training import splits as S

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pick(records: list, n: int) -> list:
    """n records at evenly spaced latency quantiles; among the candidates nearest each
    quantile, an operator not chosen yet when there is one."""
    records = sorted(records, key=lambda r: r["latency_s"]["mean"])
    chosen, ops = [], set()
    for q in np.linspace(0, 1, n):
        centre = int(round(q * (len(records) - 1)))
        window = records[max(0, centre - 10):centre + 11]
        window = [r for r in window if r not in chosen] or [r for r in records if r not in chosen]
        fresh = [r for r in window if r["op"] not in ops]
        r = min(fresh or window, key=lambda r: abs(records.index(r) - centre))
        chosen.append(r)
        ops.add(r["op"])
    return chosen


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", default=os.path.join(S.SPLITS_DIR, "random.epyc-zen5.avx512.t1.json"))
    ap.add_argument("-n", type=int, default=8)
    ap.add_argument("--out", default=os.path.join(ROOT, "data", "examples", "programs.jsonl"))
    ap.add_argument("--data", default=os.path.join(ROOT, "data"))
    ap.add_argument("--tempo", default=None, help="tempo binary (default: $TEMPO_BIN, build dirs)")
    ap.add_argument("--features", default="ansor+loops", choices=sorted(D.FEATURE_SETS),
                    help="the ASTs' columns: the feature set of the model that will read them")
    ap.add_argument("--device", action="store_true",
                    help="keep the target's device features in the ASTs (models with the device "
                         "branch need them; the others refuse them)")
    args = ap.parse_args(argv)

    test = S.read_members(args.split)["test"]
    targets = sorted({key.rsplit("@", 1)[1] for key in test})
    candidates = []
    for target in targets:
        files = D.record_files(os.path.join(args.data, target))
        asts = D.featurize_target(args.data, target, args.tempo,
                                  os.path.join(ROOT, "training", "cache"), args.features)
        records = [rec for f in files for _, rec in D.iter_jsonl(f)]
        if len(asts) != len(records):
            raise D.DataError(f"{target}: {len(records)} records but {len(asts)} compact ASTs")
        latest = D.latest_timings(files)  # a re-timed program's earlier records are stale
        for k, (rec, ast) in enumerate(zip(records, asts)):
            if k in latest and f"{rec['task']}#{rec['sid']}@{target}" in test:
                if not args.device:
                    ast = {k: v for k, v in ast.items() if k != "device"}
                rec = dict(rec, ast=ast, id=f"{rec['task']}#{rec['sid']}@{target}")
                candidates.append(rec)
    if len(candidates) < args.n:
        print(f"examples: only {len(candidates)} test records in {args.split}", file=sys.stderr)
        return 1
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        for rec in pick(candidates, args.n):
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")
    print(f"examples: {args.n} of {len(candidates)} test records of {os.path.basename(args.split)} "
          f"-> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
