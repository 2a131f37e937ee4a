"""Move a target's records (and failures) measured in a time window to another target.

For records filed under the wrong target, e.g. timed on a CPU other than the one the target
was probed on (data/README.md, "Devices"). Nothing is lost: each record moves whole, with its
"target" field rewritten; a chunk keeps its file name in the new target's folder. The new
chunk is written before the old one is rewritten, so an interrupted run can only leave a
record in both places (then run it again: it refuses to overwrite, and says where).

    /usr/bin/python3 -m tools.lab.move_records --from epyc-zen3.avx2.t1 \
        --to epyc-zen5.avx2.t1 --since 2026-12-03T11:00:00Z [--until T] [--dry-run]
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
from typing import List, Optional, Tuple

UTC_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


class MoveError(Exception):
    pass


def _read_lines(path: str) -> List[str]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line for line in f.read().split("\n") if line.strip()]


def _write_lines(path: str, lines: List[str]) -> None:
    tmp = path + ".move.tmp"
    text = "".join(line + "\n" for line in lines)
    if path.endswith(".gz"):
        with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
            f.write(text.encode("utf-8"))
    else:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    os.replace(tmp, path)


def _partition(path: str, lines: List[str], since: str, until: Optional[str],
               to: str) -> Tuple[List[str], List[str]]:
    keep, move = [], []
    for n, line in enumerate(lines, 1):
        try:
            rec = json.loads(line)
            at = rec["measured_at"]
        except (ValueError, KeyError, TypeError) as e:
            raise MoveError(f"{path}:{n}: not a record with measured_at ({e})") from None
        if not isinstance(at, str) or not UTC_TIME.match(at):
            raise MoveError(f"{path}:{n}: measured_at {at!r} is not YYYY-MM-DDTHH:MM:SSZ")
        if at >= since and (until is None or at < until):
            rec["target"] = to
            move.append(json.dumps(rec, ensure_ascii=False, separators=(",", ":")))
        else:
            keep.append(line)
    return keep, move


def move_records(data: str, src: str, dst: str, since: str, until: Optional[str] = None,
                 dry_run: bool = False) -> dict:
    """Moves; returns {"records": n, "failures": n, "chunks": [names touched]}."""
    for name, t in (("--since", since), ("--until", until)):
        if t is not None and not UTC_TIME.match(t):
            raise MoveError(f"{name}: expected YYYY-MM-DDTHH:MM:SSZ, got {t!r}")
    if src == dst:
        raise MoveError("--from and --to name the same target")
    src_dir, dst_dir = os.path.join(data, src), os.path.join(data, dst)
    if not os.path.isdir(src_dir):
        raise MoveError(f"{src_dir}: no such target folder")
    if not os.path.isfile(os.path.join(data, "targets", dst + ".json")):
        raise MoveError(f"{os.path.join(data, 'targets', dst + '.json')}: no such target: "
                        "probe it with `tempo lab target` first")
    names = sorted(n for n in os.listdir(src_dir)
                   if n.startswith("records-") and n.endswith(".jsonl.gz"))
    if any(n.startswith("records-") and n.endswith(".jsonl") for n in os.listdir(src_dir)):
        raise MoveError(f"{src_dir}: holds an open chunk: stop the measurement first")
    plan = []
    for n in names:
        path = os.path.join(src_dir, n)
        keep, move = _partition(path, _read_lines(path), since, until, dst)
        if move:
            target_path = os.path.join(dst_dir, n)
            if os.path.exists(target_path):
                raise MoveError(f"{target_path}: exists; a chunk of that name was moved or "
                                "measured there before: compare it with "
                                f"{path} and remove the copy")
            plan.append((path, target_path, keep, move))
    fail_src = os.path.join(src_dir, "failures.jsonl")
    fail_plan = None
    if os.path.exists(fail_src):
        keep, move = _partition(fail_src, _read_lines(fail_src), since, until, dst)
        if move:
            fail_plan = (fail_src, os.path.join(dst_dir, "failures.jsonl"), keep, move)
    out = {"records": sum(len(p[3]) for p in plan),
           "failures": len(fail_plan[3]) if fail_plan else 0,
           "chunks": [os.path.basename(p[0]) for p in plan]}
    if dry_run:
        return out
    os.makedirs(dst_dir, exist_ok=True)
    for path, target_path, keep, move in plan:
        _write_lines(target_path, move)
        if keep:
            _write_lines(path, keep)
        else:
            os.remove(path)
    if fail_plan:
        path, target_path, keep, move = fail_plan
        existing = _read_lines(target_path) if os.path.exists(target_path) else []
        _write_lines(target_path, existing + move)
        _write_lines(path, keep)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="data")
    ap.add_argument("--from", dest="src", required=True, help="target id the records are under")
    ap.add_argument("--to", dest="dst", required=True, help="target id they belong to")
    ap.add_argument("--since", required=True, help="first measured_at moved (UTC, inclusive)")
    ap.add_argument("--until", help="measured_at before this stays (UTC, exclusive)")
    ap.add_argument("--dry-run", action="store_true", help="count, change nothing")
    a = ap.parse_args(argv)
    try:
        r = move_records(a.data, a.src, a.dst, a.since, a.until, a.dry_run)
    except MoveError as e:
        print(f"move_records: {e}", file=sys.stderr)
        return 2
    verb = "would move" if a.dry_run else "moved"
    print(f"{a.src} -> {a.dst}: {verb} {r['records']} records from {len(r['chunks'])} chunks "
          f"and {r['failures']} failures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
