"""bench/results/cdmpp.md and cdmpp.png from the JSON lines of bench/run_cdmpp_bench.sh.

    /usr/bin/python3 bench/plot_cdmpp.py bench/results/cdmpp.json --md OUT.md --png OUT.png

A cell is the best (lowest) of the run's rounds; each round's value is already the median of
repeated timed blocks. Speed-ups compare tempo xsimd end to end (from the compact AST,
preprocessing included) with PyTorch / TorchScript on preprocessed tensors (preprocessing
excluded), so they understate tempo's model-only advantage.
"""
from __future__ import annotations

import argparse
import json
import os
from collections import defaultdict

ENGINES = [("tempo-xsimd", "tempo xsimd"), ("tempo-eigen", "tempo Eigen"),
           ("pytorch-eager", "PyTorch eager"), ("torchscript", "TorchScript (C++)")]
MODELS = ("compact", "paper")
LIMITS = {"compact_b1_us": 10.0, "compact_b1_vs_eager": 20.0, "compact_b1_vs_script": 10.0,
          "paper_b512_pct_peak": 70.0, "paper_b1_vs_bound": 1.5}


def load(path):
    lines = [json.loads(l) for l in open(path) if l.strip()]
    best = defaultdict(dict)           # (engine, model, batch) -> {"us": min, "us_model": min}
    flops, weight_bytes, metas, probes = {}, {}, defaultdict(list), []
    run, skipped = {}, []
    for d in lines:
        kind = d.get("kind")
        if kind == "result":
            key = (d["engine"], d["model"], d["batch"])
            for k in ("us", "us_model"):
                if k in d:
                    best[key][k] = min(best[key].get(k, float("inf")), d[k])
            if "flops" in d:
                flops[d["model"]] = d["flops"]
        elif kind == "model":
            flops[d["model"]] = d["flops"]
            weight_bytes[d["model"]] = d["weight_bytes"]
        elif kind == "meta":
            metas[d["engine"]].append(d)
        elif kind == "coretype":
            probes.append(d)
        elif kind == "run":
            run = d
        elif kind == "skipped":
            skipped.append(d)
    machine = [m for m in metas.get("tempo-xsimd", []) if "read_bandwidth_gbs" in m]
    peak = max((m["peak_gflops"] for m in machine), default=None)
    bandwidth = max((m["read_bandwidth_gbs"] for m in machine), default=None)
    return dict(best=best, flops=flops, weight_bytes=weight_bytes, metas=metas, probes=probes,
                run=run, skipped=skipped, peak=peak, bandwidth=bandwidth,
                cpu=machine[0]["cpu"] if machine else "unknown CPU",
                simd_bits=machine[0].get("simd_bits") if machine else None)


def fmt(v, digits=3):
    if v is None:
        return "—"
    if v >= 100:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"


def cpu_description():
    family = model = None
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("cpu family") and family is None:
                family = int(line.split(":")[1])
            if line.startswith("model") and not line.startswith("model name") and model is None:
                model = int(line.split(":")[1])
    except OSError:
        pass
    zen = {(25, 1): "Zen 3 (Milan)", (25, 0x11): "Zen 4 (Genoa)", (23, 0x31): "Zen 2 (Rome)"}
    return zen.get((family, model), f"family {family} model {model}")


QUIET_BUSY = 0.05  # the other CPUs' busy share above which a run is a trial


def is_busy(run):
    """A run is a trial when the CPUs other than the timing one were busy (older runs without
    that record: a load average above half the CPUs)."""
    if "others_busy" in run:
        return run["others_busy"] > QUIET_BUSY
    cpus = run.get("cpus") or os.cpu_count()
    loads = (run.get("load_before", "") + " " + run.get("load_after", "")).split()
    return any(float(x) > 0.5 * cpus for x in loads if x.replace(".", "", 1).isdigit())


def busy_text(run):
    if "others_busy" in run:
        return (f"the CPUs other than the timing one were {100 * run['others_busy']:.1f}% busy "
                f"during the timed part")
    return f"load average before `{run.get('load_before')}`, after `{run.get('load_after')}`"


def write_md(r, path, png_name):
    best, flops, peak, bw = r["best"], r["flops"], r["peak"], r["bandwidth"]
    run = r["run"]
    batches = sorted({k[2] for k in best})

    def us(engine, model, batch, key="us"):
        return best.get((engine, model, batch), {}).get(key)

    load_before, load_after = run.get("load_before", "?"), run.get("load_after", "?")
    cpus = run.get("cpus") or os.cpu_count()
    busy = is_busy(run)
    L = []
    L.append("# CDMPP prediction latency: tempo vs PyTorch vs TorchScript\n")
    if busy:
        L.append(f"> **TRIAL RUN on a shared, busy machine** ({busy_text(run)}): the numbers are "
                 f"noisy — the measured peak and bandwidth too — and must not be used to judge "
                 f"the acceptance criteria. Re-run `bench/run_cdmpp_bench.sh` on a quiet machine.\n")
    L.append(f"Machine: {r['cpu']} ({cpu_description()}), {cpus} CPUs, "
             f"{r['simd_bits']}-bit vectors as compiled; one thread everywhere. "
             f"Run {run.get('date', '?')}, load average before `{load_before}`, after `{load_after}`"
             + (f"; every timed command pinned to CPU {run['pinned_cpu']}, the other CPUs "
                f"{100 * run['others_busy']:.1f}% busy meanwhile" if "others_busy" in run else "")
             + ".  ")
    L.append(f"Measured single-core FP32 peak (FMA, best of 3): **{fmt(peak)} GFLOP/s**; "
             f"sustained single-thread streaming read bandwidth (1 GiB, best of the run's "
             f"measurements): **{fmt(bw)} GB/s**.  ")
    ct = run.get("coretype", "?")
    eager_meta = (r["metas"].get("pytorch-eager") or [{}])[0]
    blas = eager_meta.get("blas", {})
    L.append(f"PyTorch {eager_meta.get('torch', '?')} (Debian) on "
             f"{blas.get('openblas_config', ', '.join(blas.get('libraries', [])) or '?')}, "
             f"kernel `{blas.get('openblas_corename', '?')}` "
             f"(`OPENBLAS_CORETYPE={ct if ct != 'auto' else '<autodetect>'}` chosen by the probe below, "
             f"`OPENBLAS_NUM_THREADS=1`, for the torch commands alone), "
             f"`torch.set_num_threads(1)`, eval, `no_grad`. TorchScript: the traced and frozen "
             f"model run by libtorch from C++ (`at::set_num_threads(1)`, InferenceMode), same "
             f"BLAS setup.\n")
    L.append(f"Each cell: µs per prediction, best of {run.get('rounds', '?')} interleaved rounds, "
             f"each the median of {run.get('repeats', '?')} timed blocks (≥ 20 ms). Programs have "
             f"exactly 5 leaves (`compact` runs them unpadded, L = 5); batch b = the first b of 512 "
             f"random programs.\n")
    L.append("**What is timed.** tempo: `CdmppModel::predict` from `CompactAst`s — validation, "
             "normalisation + tree positional encoding, model, output transform; *model only* = "
             "the same model on the preprocessed rows (what the torch engines get; it includes "
             "copying those rows into the model's buffer, which it overwrites: ~0.1 µs at batch 1). "
             "PyTorch and "
             "TorchScript: the model's forward on already-preprocessed tensors "
             "(preprocessing excluded). Speed-ups use tempo xsimd end to end.\n")
    L.append("## µs per prediction\n")
    L.append("| model | batch | tempo xsimd | (model only) | tempo Eigen | (model only) | "
             "PyTorch eager | TorchScript | xsimd vs eager | xsimd vs TorchScript | xsimd vs Eigen |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for m in MODELS:
        for b in batches:
            x, xm = us("tempo-xsimd", m, b), us("tempo-xsimd", m, b, "us_model")
            e, em = us("tempo-eigen", m, b), us("tempo-eigen", m, b, "us_model")
            p, t = us("pytorch-eager", m, b), us("torchscript", m, b)
            ratio = lambda a, c: f"{a / c:.1f}×" if a and c else "—"
            L.append(f"| {m} | {b} | {fmt(x)} | {fmt(xm)} | {fmt(e)} | {fmt(em)} | {fmt(p)} | "
                     f"{fmt(t)} | {ratio(p, x)} | {ratio(t, x)} | {ratio(e, x)} |")
    L.append("")
    L.append("## Throughput\n")
    L.append("FLOPs of one prediction (5 leaves): every GEMM plus the attention products "
             "(layer norms, softmax, activations not counted): " +
             ", ".join(f"`{m}` {flops[m] / 1e6:.3g} MFLOP" for m in MODELS if m in flops) +
             ". tempo columns use its model-only time.\n")
    L.append("| model | batch | tempo xsimd GFLOP/s | % peak | tempo Eigen GFLOP/s | % peak | "
             "PyTorch eager GFLOP/s | % peak | TorchScript GFLOP/s | % peak |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for m in MODELS:
        for b in batches:
            cells = []
            for eng, key in (("tempo-xsimd", "us_model"), ("tempo-eigen", "us_model"),
                             ("pytorch-eager", "us"), ("torchscript", "us")):
                t = us(eng, m, b, key)
                g = flops[m] / (t * 1e-6) * 1e-9 if t and m in flops else None
                cells += [fmt(g), f"{100 * g / peak:.0f}%" if g and peak else "—"]
            L.append(f"| {m} | {b} | " + " | ".join(cells) + " |")
    L.append("")
    wb = r["weight_bytes"].get("paper")
    if wb and bw:
        bound_us = wb / (bw * 1e9) * 1e6
        L.append("## `paper` at batch 1: memory-bandwidth bound\n")
        L.append(f"A batch-1 prediction reads every weight once: {wb / 1e6:.1f} MB "
                 f"({wb / 4 / 1e6:.2f}M float32 parameters after BatchNorm folding) ≫ the L3, so "
                 f"it cannot beat {wb / 1e6:.1f} MB / {fmt(bw)} GB/s = **{fmt(bound_us)} µs**.\n")
        L.append("| engine | µs | × bound |")
        L.append("|---|---:|---:|")
        for eng, label in ENGINES:
            for key, suffix in (("us", ""), ("us_model", " (model only)")):
                t = us(eng, "paper", 1, key)
                if t:
                    L.append(f"| {label}{suffix} | {fmt(t)} | {t / bound_us:.2f} |")
        L.append("")
    # acceptance
    L.append("## Acceptance criteria" + (" (trial values — not a verdict)" if busy else "") + "\n")
    c1 = us("tempo-xsimd", "compact", 1)
    pe1, ts1 = us("pytorch-eager", "compact", 1), us("torchscript", "compact", 1)
    p512 = us("tempo-xsimd", "paper", 512, "us_model")
    p512_full = us("tempo-xsimd", "paper", 512)
    pe512 = us("pytorch-eager", "paper", 512)
    p1 = us("tempo-xsimd", "paper", 1)
    rows = []
    if c1:
        rows.append(("`compact` batch 1 ≤ 10 µs", f"{fmt(c1)} µs", c1 <= LIMITS["compact_b1_us"]))
    if c1 and pe1:
        rows.append(("`compact` batch 1 ≥ 20× PyTorch eager", f"{pe1 / c1:.1f}×", pe1 / c1 >= 20))
    if c1 and ts1:
        rows.append(("`compact` batch 1 ≥ 10× TorchScript", f"{ts1 / c1:.1f}×", ts1 / c1 >= 10))
    if p512 and peak:
        pct = 100 * flops["paper"] / (p512 * 1e-6) * 1e-9 / peak
        rows.append(("`paper` batch 512 ≥ 70% of peak (model only)", f"{pct:.0f}%", pct >= 70))
    if p512_full and pe512:
        rows.append(("`paper` batch 512 faster than PyTorch (OpenBLAS)",
                     f"{pe512 / p512_full:.2f}×", pe512 > p512_full))
    if p1 and wb and bw:
        ratio = p1 / (wb / (bw * 1e9) * 1e6)
        rows.append(("`paper` batch 1 within 1.5× of the bandwidth bound", f"{ratio:.2f}×", ratio <= 1.5))
    L.append("| criterion | this run | met |")
    L.append("|---|---:|:---:|")
    for name, val, ok in rows:
        L.append(f"| {name} | {val} | {'yes' if ok else 'no'} |")
    L.append("")
    if c1 and peak and "compact" in flops:
        floor_us = flops["compact"] / (peak * 1e9) * 1e6
        L.append(f"Arithmetic floor: `compact`'s {flops['compact'] / 1e6:.3g} MFLOP per prediction "
                 f"take {fmt(floor_us)} µs at 100% of the measured peak, so 10 µs at batch 1 "
                 f"(5 rows per GEMM) asks for {100 * floor_us / 10:.0f}% of peak end to end; "
                 f"this run's model-only {fmt(us('tempo-xsimd', 'compact', 1, 'us_model'))} µs is "
                 f"{100 * floor_us / us('tempo-xsimd', 'compact', 1, 'us_model'):.0f}% of peak "
                 "(end to end, the engine skips zero input features, so it does slightly less "
                 "work than the dense count).\n")
    # probe
    if r["probes"]:
        L.append("## OPENBLAS_CORETYPE probe\n")
        L.append("sgemm GFLOP/s through `torch.nn.functional.linear` on the paper model's shapes "
                 "(M×N×K), one thread, best of the probe's rounds; the fastest geometric mean wins.\n")
        table = defaultdict(dict)
        failed = set()
        for p in r["probes"]:
            if p.get("failed"):
                failed.add(p["coretype"])
                continue
            for k, v in p["probe"].items():
                if k.startswith("gflops_"):
                    table[p["coretype"]][k] = max(table[p["coretype"]].get(k, 0), v)
            table[p["coretype"]]["kernel"] = p["probe"]["blas"].get("openblas_corename", "?")
        shapes = sorted({k for v in table.values() for k in v if k.startswith("gflops_")})
        L.append("| OPENBLAS_CORETYPE | kernel | " + " | ".join(s[7:] for s in shapes) + " |")
        L.append("|---|---|" + "---:|" * len(shapes))
        for ctype, v in table.items():
            mark = " **(used)**" if ctype == ct else ""
            L.append(f"| {ctype}{mark} | {v['kernel']} | " +
                     " | ".join(fmt(v.get(s)) for s in shapes) + " |")
        for ctype in sorted(failed - set(table)):
            L.append(f"| {ctype} | — (illegal instruction: not supported by this CPU) |" +
                     " — |" * len(shapes))
        L.append("")
    for s in r["skipped"]:
        L.append(f"*{s['engine']} skipped: {s['reason']}*\n")
    L.append(f"![µs per prediction]({png_name})\n")
    L.append("## Reproduce\n")
    L.append("```\nbench/run_cdmpp_bench.sh            # deps (tools/install-deps.sh --bench), build, "
             "models, all engines, this page\nbench/run_cdmpp_bench.sh --models DIR --rounds 5   "
             "# reuse bench/make_bench_models.py --out DIR\n```\n")
    L.append("Files: `bench/make_bench_models.py` (seeded random `paper`/`compact` models, converted; "
             "512 random 5-leaf programs; preprocessed inputs; TorchScript), `bench/bench_cdmpp.cpp` "
             "(tempo; built as `bench_cdmpp` and `bench_cdmpp_eigen`), `bench/bench_cdmpp_libtorch.cpp`, "
             "`bench/bench_cdmpp_torch.py`, `bench/plot_cdmpp.py`; raw JSON lines in "
             "`bench/results/cdmpp.json`.")
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


def write_png(r, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    best = r["best"]
    batches = sorted({k[2] for k in best})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    width = 0.2
    colors = ["#1f77b4", "#7fb3e0", "#d62728", "#ff9f40"]
    for ax, m in zip(axes, MODELS):
        for i, ((eng, label), col) in enumerate(zip(ENGINES, colors)):
            vals = [best.get((eng, m, b), {}).get("us") for b in batches]
            xs = [j + (i - 1.5) * width for j in range(len(batches))]
            bars = ax.bar([x for x, v in zip(xs, vals) if v], [v for v in vals if v], width,
                          label=label, color=col)
            for bar in bars:
                v = bar.get_height()
                ax.annotate(f"{v:,.0f}" if v >= 100 else f"{v:.3g}",
                            (bar.get_x() + bar.get_width() / 2, v), textcoords="offset points",
                            xytext=(0, 2), ha="center", va="bottom", fontsize=6, rotation=90)
        ax.set_yscale("log")
        ax.margins(y=0.25)
        ax.set_xticks(range(len(batches)))
        ax.set_xticklabels([f"batch {b}" for b in batches])
        ax.set_title(f"{m}")
        ax.set_ylabel("µs per prediction (log)")
        ax.grid(axis="y", which="both", alpha=0.3)
        if m == "paper" and r["bandwidth"] and r["weight_bytes"].get("paper"):
            bound = r["weight_bytes"]["paper"] / (r["bandwidth"] * 1e9) * 1e6
            ax.plot([-0.45, 0.45], [bound, bound], "k--", lw=1)
            ax.annotate("bandwidth bound", (0.0, bound), textcoords="offset points",
                        xytext=(0, -12), ha="center", fontsize=8)
    axes[0].legend(fontsize=8)
    busy = "  [TRIAL, busy machine]" if not r["run"] or is_busy(r["run"]) else ""
    fig.suptitle(f"CDMPP prediction, one thread, {r['cpu']}{busy}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results")
    ap.add_argument("--md", required=True)
    ap.add_argument("--png", required=True)
    args = ap.parse_args(argv)
    r = load(args.results)
    write_md(r, args.md, os.path.basename(args.png))
    write_png(r, args.png)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
