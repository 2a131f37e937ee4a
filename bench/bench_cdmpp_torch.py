"""PyTorch eager timings of the CDMPP benchmark models (bench/make_bench_models.py's files).

    /usr/bin/python3 bench/bench_cdmpp_torch.py --models DIR [--only NAME] [--batches 1,16,512]
    /usr/bin/python3 bench/bench_cdmpp_torch.py --probe          # BLAS kernel + sgemm GFLOP/s

One thread (torch.set_num_threads(1)), eval mode, torch.no_grad(), the unfolded model of
NAME.checkpoint.pt (the same weights tempo runs after BatchNorm folding). Inputs are the
already-preprocessed tensors of NAME.inputs.safetensors: preprocessing (normalisation + tree
positional encoding from the raw compact AST) is NOT timed here, while tempo's "us" includes it
(its "us_model" does not). Each time is the median of repeated timed blocks (>= 20 ms each).

Prints JSON lines like bench_cdmpp: a "meta" line naming the BLAS library and OpenBLAS kernel
actually loaded, then one "result" per model and batch. BLAS selection is the caller's: see
bench/run_cdmpp_bench.sh (LD_LIBRARY_PATH to OpenBLAS, OPENBLAS_CORETYPE, OPENBLAS_NUM_THREADS).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from converters import convert as cv  # noqa: E402
from converters import safetensors_io  # noqa: E402


def median_seconds(fn, repeats=7, min_block_s=0.02):
    """Median seconds per call over `repeats` blocks, each >= min_block_s; one warm-up call."""
    fn()
    calls = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        s = time.perf_counter() - t0
        if s >= min_block_s:
            break
        calls = calls * 10 if s <= 0 else max(calls + 1, int(calls * 1.2 * min_block_s / s))
    per_call = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        per_call.append((time.perf_counter() - t0) / calls)
    return statistics.median(per_call)


def blas_info() -> dict:
    """The BLAS/LAPACK libraries this process mapped, and OpenBLAS's own view of itself."""
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            base = os.path.basename(path)
            if any(k in base for k in ("blas", "lapack", "mkl", "dnnl")):
                libs.add(os.path.realpath(path))
    info = {"libraries": sorted(os.path.basename(p) + " <- " + os.path.basename(os.path.dirname(p))
                                for p in libs)}
    for path in sorted(libs):
        try:
            lib = ctypes.CDLL(path)
            get_config = lib.openblas_get_config
        except (OSError, AttributeError):
            continue
        get_config.restype = ctypes.c_char_p
        info["openblas_config"] = get_config().decode()
        try:
            lib.openblas_get_corename.restype = ctypes.c_char_p
            info["openblas_corename"] = lib.openblas_get_corename().decode()
            info["openblas_threads"] = int(lib.openblas_get_num_threads())
        except AttributeError:
            pass
        break
    info["env"] = {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS",
                                                  "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS")}
    return info


def probe() -> None:
    """sgemm GFLOP/s on the paper model's feed-forward shapes (F.linear = addmm -> BLAS)."""
    out = {"kind": "probe", "blas": blas_info()}
    with torch.no_grad():
        for m, n, k in ((2560, 2048, 164), (2560, 164, 2048), (5, 2048, 164)):
            x, w, b = torch.randn(m, k), torch.randn(n, k), torch.randn(n)
            s = median_seconds(lambda: torch.nn.functional.linear(x, w, b), repeats=5)
            out[f"gflops_{m}x{n}x{k}"] = 2 * m * n * k / s * 1e-9
    print(json.dumps(out), flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="PyTorch eager CDMPP timings")
    ap.add_argument("--models", help="directory of bench/make_bench_models.py")
    ap.add_argument("--only", action="append", choices=("compact", "paper"))
    ap.add_argument("--batches", default="1,16,512")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--probe", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    if args.probe:
        probe()
        return 0
    if not args.models:
        ap.error("--models DIR is required")
    print(json.dumps({"kind": "meta", "engine": "pytorch-eager", "torch": torch.__version__,
                      "threads": torch.get_num_threads(), "blas": blas_info()}), flush=True)
    batches = [int(b) for b in args.batches.split(",")]
    for name in args.only or ("compact", "paper"):
        base = os.path.join(args.models, name)
        model = cv.load_checkpoint(torch.load(base + ".checkpoint.pt"))[0].eval()
        inputs, _ = safetensors_io.load_file(base + ".inputs.safetensors")
        x = torch.from_numpy(inputs["x"].copy())
        mask = torch.from_numpy(inputs["mask"].copy()).to(torch.bool)
        dev = torch.from_numpy(inputs["device"].copy()) if "device" in inputs else None
        for B in batches:
            xb, mb = x[:B].contiguous(), mask[:B].contiguous()
            db = None if dev is None else dev[:B].contiguous()
            with torch.no_grad():
                z = model(xb, mb, db)
                s = median_seconds(lambda: model(xb, mb, db), repeats=args.repeats) / B
            print(json.dumps({"kind": "result", "engine": "pytorch-eager", "model": name,
                              "batch": B, "us": s * 1e6, "z0": float(z[0])}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
