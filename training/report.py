"""Accuracy report: one JSON per split, a table per split in accuracy.md, a scatter PNG per model.

    results dir (default bench/results):
      accuracy.<split>.json          rows of one experiment run (written by training.run)
      accuracy/<split>-<model>.png   predicted vs measured latency, log-log
      accuracy/learning-curve-<target>.png   test MAPE against training records
      accuracy.md                    regenerated from every accuracy.*.json present

`python3 -m training.report [DIR]` regenerates accuracy.md from the JSON files.
"""
from __future__ import annotations

import copy
import glob
import json
import os
import re
import sys
from typing import Dict, List, Optional

import numpy as np

from training import metrics as M

SPLIT_ORDER = ["random", "cross-model", "cross-device", "same-programs", "learning-curve", "evaluate"]
SPLIT_TEXT = {
    "random": "Per (task, target) 80/20 record split; each target's model is trained on its own records.",
    "cross-model": "Every task that occurs in a hold-out network is the test set; all other tasks train.",
    "cross-device": "Train on the train targets' records, test on other targets: zero-shot (device "
                    "features only) and with a fraction of the test target's records added to "
                    "training, chosen by CDMPP's KMeans procedure (whole tasks), as whole tasks "
                    "at random, or as records at random. The lab times the "
                    "same programs on every target (`--programs-from`), so most test programs "
                    "were also timed on a training target: a model without device input that "
                    "recalls a program's latency there does well when the targets differ little. "
                    "Recall rows use no model: a test program's latency on a training target "
                    "of the test target's CPU, times the median ratio of the two targets over "
                    "the selected records both timed (targets tried in the order of their "
                    "MAPE over those records), on the test programs such a target timed: "
                    "what the selected records add to the lab's existing measurements.",
    "same-programs": "Two targets that timed the same programs (here two compile modes): per "
                     "seed, one split of the programs both hold, used for both targets; each "
                     "model is trained on each target's latencies, so the two rows of a seed "
                     "differ only in what the targets measured.",
    "learning-curve": "One target's split with the same validation and test records, trained "
                      "on a fraction of each training task's records (at least one; the subsets "
                      "of a seed are nested): how the test error falls as tasks fill. The power "
                      "law is fitted to the mean MAPE over seeds at each fraction; it has no "
                      "floor, so the training records it asks for the goal are a lower bound "
                      "(label noise and the features' blind spots flatten the real curve).",
    "evaluate": "No training: the shipped models (weights/, as converted files) predict a "
                "target's records through the engine (`tempo predict`), on every program and "
                "on the programs outside the model's training split (the train and validation "
                "parts of the split file its card names, on any target; a model without "
                "that row holds every program of the target in those parts). A model without "
                "device input predicts the CPU it was trained on. Recall rows: a program's "
                "latency on another target × the two targets' median latency ratio over the "
                "programs both timed, which reads the test labels (an optimistic bound for "
                "carrying measurements from one CPU to another).",
}


def slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_")


def scatter_png(path: str, true_s, pred_s, title: str, max_points: int = 20000, seed: int = 0) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = np.asarray(true_s, dtype=np.float64)
    p = np.asarray(pred_s, dtype=np.float64)
    ok = np.isfinite(p) & (p > 0)
    t, p = t[ok], p[ok]
    if len(t) > max_points:
        sel = np.random.default_rng(seed).choice(len(t), max_points, replace=False)
        t, p = t[sel], p[sel]
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig, ax = plt.subplots(figsize=(4.2, 4.2), dpi=110)
    ax.scatter(t, p, s=3, alpha=0.35, linewidths=0)
    if len(t):
        lo, hi = min(t.min(), p.min()), max(t.max(), p.max())
        ax.plot([lo, hi], [lo, hi], color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured latency (s)")
    ax.set_ylabel("predicted latency (s)")
    ax.set_title(title, fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _f(v, pct=False, digits=3):
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "–"
    if pct:
        return f"{100 * v:.1f}%"
    if isinstance(v, int):
        return f"{v:,}"
    return f"{v:.{digits}f}"


def _time(s):
    if s is None:
        return "–"
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.1f} h"


def _topk(m: dict, k: int) -> str:
    """The top-k score with the number of tasks it averages (those with ≥ 2k test records)."""
    n = m.get(f"top{k}_tasks")
    return _f(m.get(f"top{k}")) + (f" ({n} tasks)" if n and m.get(f"top{k}") is not None else "")


def table(result: dict) -> List[str]:
    head = ["model", "test set", "records", "tasks", "MAPE", "RMSE ln", "Kendall τ", "top-1",
            "top-5", "train time", "params", "µs/pred (tempo)", "µs/pred (torch)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in result["rows"]:
        if not r.get("in_table", True):
            continue
        m = r["metrics"]
        us = r.get("us_per_prediction_tempo")
        lines.append("| " + " | ".join([
            r["model"], r.get("test_set", "test"), _f(m.get("records")), _f(m.get("tasks")),
            _f(m.get("mape"), pct=True), _f(m.get("rmse_log")), _f(m.get("kendall_tau")),
            _f(m.get("top1")), _topk(m, 5), _time(r.get("train_time_s")),
            _f(r.get("parameters")), _f(us, digits=1) if us else "–",
            _f(r.get("us_per_prediction_torch"), digits=1) if r.get("us_per_prediction_torch") else "–",
        ]) + " |")
    return lines


def _mean_sd(values: List[float], pct: bool = False) -> str:
    v = np.asarray([x for x in values if x is not None], dtype=np.float64)
    v = v[np.isfinite(v)]
    if not len(v):
        return "–"
    k = 100 if pct else 1
    mean = f"{k * v.mean():.1f}%" if pct else f"{v.mean():.3f}"
    if len(v) < 2:
        return mean
    return mean + (f" ± {k * v.std(ddof=1):.1f}" if pct else f" ± {v.std(ddof=1):.3f}")


def selection_table(result: dict) -> List[str]:
    """Cross-device few-shot: the selection methods compared over their selection seeds. Each
    seed's methods are judged on the same records (those none of them chose); the zero-shot
    column is the model before fine-tuning on those records."""
    tuned = [r for r in result["rows"] if r.get("selection") and "selection_seed" in r]
    if not tuned:
        return []
    zero = {(r["target"], r["fraction"], r["selection_seed"]): r["metrics"]["mape"]
            for r in result["rows"] if "selection_seed" in r and not r.get("selection")}
    recall = {(r["target"], r["fraction"], r["recall_selection"], r["recall_seed"]): r["metrics"]["mape"]
              for r in result["rows"] if "recall_seed" in r}
    groups = {}
    for r in tuned:
        groups.setdefault((r["target"], r["fraction"], r["selection"]), []).append(r)
    head = ["target", "fraction", "selection", "seeds", "records (tasks) chosen",
            "MAPE (mean ± sd)", "MAPE per seed", "Kendall τ", "zero-shot MAPE, same records"]
    if recall:
        head.append("recall MAPE")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (target, frac, method), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        rs = sorted(rs, key=lambda r: r["selection_seed"])
        lines.append("| " + " | ".join([
            target, f"{100 * frac:g}%", method, str(len(rs)),
            ", ".join(f"{r.get('finetune_records', '?')} ({r.get('finetune_tasks', '?')})" for r in rs),
            _mean_sd([r["metrics"]["mape"] for r in rs], pct=True),
            ", ".join(_f(r["metrics"]["mape"], pct=True) for r in rs),
            _mean_sd([r["metrics"]["kendall_tau"] for r in rs]),
            _mean_sd([zero.get((target, frac, r["selection_seed"])) for r in rs], pct=True),
        ] + ([_mean_sd([recall.get((target, frac, method, r["selection_seed"])) for r in rs], pct=True)]
             if recall else [])) + " |")
    return ["Fine-tuning selections compared (CDMPP, fine-tuned): each selection seed draws "
            "every method anew, and its methods are judged on the same records, the test "
            "target's records none of them chose; mean ± sample sd over the seeds." +
            (" Recall MAPE: the recall rows' predictor with the ratios from that method's "
             "selection, on those records' programs that a training target of the test "
             "target's CPU timed." if recall else ""), ""] + lines + [""]


def pair_table(result: dict) -> List[str]:
    """same-programs: per model and seed, the two targets' metrics side by side, then the mean
    over seeds."""
    rows = [r for r in result["rows"] if "pair_target" in r]
    if not rows:
        return []
    targets = list(dict.fromkeys(r["pair_target"] for r in rows))
    metrics = (("MAPE", "mape", True), ("RMSE ln", "rmse_log", False), ("Kendall τ", "kendall_tau", False))
    head = ["model", "seed"] + [f"{label}: {t}" for label, _, _ in metrics for t in targets]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    cell = {(r["model"], r["pair_seed"], r["pair_target"]): r["metrics"] for r in rows}
    for model in dict.fromkeys(r["model"] for r in rows):
        seeds = sorted({s for m, s, _ in cell if m == model})
        for seed in seeds + ["mean ± sd"]:
            values = []
            for _, key, pct in metrics:
                for t in targets:
                    if seed == "mean ± sd":
                        values.append(_mean_sd([cell.get((model, s, t), {}).get(key) for s in seeds], pct))
                    else:
                        values.append(_f(cell.get((model, seed, t), {}).get(key), pct=pct))
            lines.append("| " + " | ".join([model, str(seed)] + values) + " |")
    return ["The same test programs, the two targets side by side:", ""] + lines + [""]


def curve_points(rows: List[dict]) -> Dict[str, List[dict]]:
    """learning-curve: per model, one point per training fraction, over its seeds."""
    groups: Dict[str, Dict[float, List[dict]]] = {}
    for r in rows:
        if "curve_fraction" in r:
            groups.setdefault(r["model"], {}).setdefault(r["curve_fraction"], []).append(r)
    out = {}
    for model, by_fraction in groups.items():
        out[model] = [{"fraction": f, "seeds": len(rs),
                       "train_records": float(np.mean([r["train_records"] for r in rs])),
                       "train_tasks": rs[0]["train_tasks"],
                       "mape": [r["metrics"]["mape"] for r in rs],
                       "rmse_log": [r["metrics"]["rmse_log"] for r in rs],
                       "kendall_tau": [r["metrics"]["kendall_tau"] for r in rs]}
                      for f, rs in sorted(by_fraction.items())]
    return out


def curve_fit(points: List[dict], goal: float) -> Optional[dict]:
    """The power law through a model's points and the training records it asks for `goal`."""
    ok = [p for p in points if p["mape"] and all(m is not None for m in p["mape"])]
    if len(ok) < 2:
        return None
    fit = M.power_law_fit([p["train_records"] for p in ok], [np.mean(p["mape"]) for p in ok])
    fit["records_for_goal"] = M.records_to_reach(fit, goal)
    return fit


def curve_table(result: dict) -> List[str]:
    curve = result.get("learning_curve")
    points = curve_points(result["rows"])
    if not curve or not points:
        return []
    goal, full = curve["goal_mape"], curve["full_train_records"]
    head = ["model", "fraction of each task's training records", "training records (tasks)",
            "seeds", "MAPE (mean ± sd)", "RMSE ln", "Kendall τ"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    fits = []
    for model, pts in points.items():
        for p in pts:
            lines.append("| " + " | ".join([
                model, f"{p['fraction']:g}", f"{p['train_records']:,.0f} ({p['train_tasks']})",
                str(p["seeds"]), _mean_sd(p["mape"], pct=True), _mean_sd(p["rmse_log"]),
                _mean_sd(p["kendall_tau"])]) + " |")
        fit = curve_fit(pts, goal)
        if fit:
            need = fit["records_for_goal"]
            fits.append(f"{model}: MAPE ≈ {fit['scale']:.3g} · N^−{fit['exponent']:.3f}, " +
                        (f"{100 * goal:g}% at N ≈ {need:,.3g} training records "
                         f"({need / full:,.3g}× the full split's {full:,})" if need else
                         f"does not fall with N: {100 * goal:g}% is not reached"))
    out = ["Learning curve (" + curve["split"] + " split of " + curve["target"] + "; power law "
           "over the fractions' mean MAPE, N = training records):", ""] + lines + [""]
    out += ["Fits: " + "; ".join(fits) + "." if fits else "", ""]
    if curve.get("plot"):
        out += [f"![learning curve]({curve['plot']})", ""]
    return out


def curve_png(path: str, rows: List[dict], curve: dict) -> str:
    """MAPE against training records (log-log): each run, the seed means, each model's
    power law drawn out to the goal, and the goal."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    goal = curve["goal_mape"]
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig, ax = plt.subplots(figsize=(5.6, 4.0), dpi=110)
    for (model, pts), color in zip(curve_points(rows).items(), ("C0", "C1", "C2", "C3")):
        n = np.array([p["train_records"] for p in pts])
        mean = np.array([np.mean(p["mape"]) for p in pts])
        for r in rows:
            if r.get("model") == model and "curve_fraction" in r:
                ax.scatter(r["train_records"], 100 * r["metrics"]["mape"], s=9, color=color, alpha=0.4)
        ax.plot(n, 100 * mean, "o-", color=color, label=model)
        fit = curve_fit(pts, goal)
        if fit:
            far = min(fit["records_for_goal"] or n.max() * 100, n.max() * 1e4)
            x = np.geomspace(n.min(), max(far, n.max()), 100)
            ax.plot(x, 100 * fit["scale"] * x ** -fit["exponent"], "--", color=color, lw=0.9,
                    label=f"{model} fit: N^−{fit['exponent']:.2f}")
    ax.axhline(100 * goal, color="k", lw=0.8, ls=":", label=f"goal {100 * goal:g}%")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training records")
    ax.set_ylabel("test MAPE (%)")
    ax.set_title(f"learning curve: {curve['split']} split of {curve['target']}", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def render(results: List[dict]) -> str:
    out = ["# Accuracy of tempo's cost models", "",
           "Generated by `python3 -m training.run <split>` (training/README.md); do not edit by hand.",
           "MAPE on seconds; RMSE of ln(latency); Kendall τ (tau-b) per task, averaged over tasks; "
           "top-k score per task = best measured latency / best measured latency among the k "
           "programs predicted fastest (1 = optimal), averaged over the tasks with at least 2k "
           "test records (their number in brackets for top-5). XGBoost on Ansor's throughput "
           "target ranks only (no seconds). µs/pred (tempo): the engine's time per program at "
           "batch 1 (`tempo predict --batch 1 --timing`: feature normalisation "
           "included, JSON parsing not; the run's JSON also has the whole command's time per "
           "program, `us_per_prediction_tempo_cli`); (torch): the PyTorch reference at batch 1 "
           "without preprocessing.", ""]
    order = {s: i for i, s in enumerate(SPLIT_ORDER)}
    for res in sorted(results, key=lambda r: (order.get(r["split"], 99), r["split"])):
        out += [f"## {res['split']}", "", SPLIT_TEXT.get(res["split"], ""), ""]
        d = res.get("data", {})
        runs = {v.get("date") for v in (res.get("per_target") or {}).values()}
        if len(runs) > 1:  # targets trained in different runs: say which ran when
            targets = ", ".join(f"{t} ({v.get('records', '?')} records, run {v.get('date', '?')})"
                                for t, v in res["per_target"].items())
            run_text = ""
        else:
            targets = ", ".join(d.get("targets", []))
            run_text = f"; run {res.get('date', '?')}"
        seeds = res.get("seeds") or [res.get("seed")]
        seed_text = f"seed{'s' if len(seeds) > 1 else ''} {', '.join(str(s) for s in seeds)}"
        if res["split"] == "evaluate":  # nothing trained: the models bring split and features
            split_text = f"the models' split files `{res.get('split_file', '?')}`"
            features = "each model's own"
        else:
            split_text = f"split file `{res.get('split_file', '?')}` ({seed_text})"
            features = (f"CDMPP `{(res.get('cdmpp') or {}).get('features', 'ansor')}`, the "
                        f"baselines Ansor's 164 columns")
        out.append(f"Data: targets {targets}; {d.get('records') or '?'} "
                   f"records after filters (noise {'MAD/median' if d.get('noise_stat') == 'mad' else 'std/mean'} "
                   f"≤ {d.get('noise_max_cv')}); {split_text}{run_text}. Features: {features}.")
        spans = {k: v for k, v in (res.get("measured") or {}).items() if v}
        if spans:
            out.append("Measured (UTC; the host's speed drifts by tens of percent over hours, so "
                       "parts timed at different times differ by more than the programs do): " +
                       "; ".join(f"{k} records {v[0]} … {v[1]}" for k, v in spans.items()) + ".")
        out.append("")
        out += table(res)
        out.append("")
        out += selection_table(res)
        out += pair_table(res)
        out += curve_table(res)
        pngs = [r for r in res["rows"] if r.get("scatter")]
        if pngs:
            out.append("Predicted vs measured: " + ", ".join(
                f"[{r['model']} ({r.get('test_set', 'test')})]({r['scatter']})" for r in pngs))
            out.append("")
    return "\n".join(out) + "\n"


def keep_other_targets(result: dict, previous: Optional[dict]) -> dict:
    """A per-target split (random, cross-model: one model per target) run on some of its
    targets (`--targets X`) replaces those targets' rows; the previous result's other targets
    keep their rows, records, split file, run date (`per_target`) and measurement spans (named
    "<target> <part>"). A row's target is its `target` field, else its test set."""
    ran = result.get("per_target")
    if not ran or not previous or previous.get("split") != result["split"]:
        return result
    before = previous.get("per_target") or {}
    kept = [t for t in previous.get("data", {}).get("targets", []) if t not in ran]
    if not kept:
        return result
    out = copy.deepcopy(result)
    per_target = {t: dict(before.get(t, {}), date=before.get(t, {}).get("date", previous.get("date")))
                  for t in kept}
    per_target.update(out["per_target"])
    out["per_target"] = per_target
    out["rows"] = [r for r in previous["rows"] if r.get("target", r.get("test_set")) in kept] + out["rows"]
    spans = {k: v for k, v in (previous.get("measured") or {}).items() if k.split(" ")[0] in kept}
    out["measured"] = dict(spans, **(out.get("measured") or {}))
    out["data"]["targets"] = list(per_target)
    records = [v.get("records") for v in per_target.values()]
    out["data"]["records"] = sum(records) if None not in records else None
    out["split_file"] = ", ".join(v["split_file"] for v in per_target.values() if v.get("split_file"))
    return out


def write_result(result: dict, results_dir: str) -> str:
    """Stores one experiment's result JSON (merged with the previous one by
    keep_other_targets), removes the split's scatter plots that its rows no longer name (a
    renamed test set would leave them behind) and regenerates accuracy.md. Returns the md
    path."""
    os.makedirs(results_dir, exist_ok=True)
    path = os.path.join(results_dir, f"accuracy.{result['split']}.json")
    previous = None
    if os.path.exists(path):
        with open(path) as f:
            previous = json.load(f)
    result = keep_other_targets(result, previous)
    with open(path, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")
    named = {os.path.basename(r["scatter"]) for r in result["rows"] if r.get("scatter")}
    if (result.get("learning_curve") or {}).get("plot"):
        named.add(os.path.basename(result["learning_curve"]["plot"]))
    for png in glob.glob(os.path.join(results_dir, "accuracy", f"{result['split']}-*.png")):
        if os.path.basename(png) not in named:
            os.remove(png)
    return regenerate(results_dir)


def regenerate(results_dir: str) -> str:
    results = []
    for p in sorted(glob.glob(os.path.join(results_dir, "accuracy.*.json"))):
        with open(p) as f:
            results.append(json.load(f))
    path = os.path.join(results_dir, "accuracy.md")
    with open(path, "w") as f:
        f.write(render(results))
    return path


def _parity(card: dict) -> str:
    rel, n = card.get("tempo_parity_max_rel"), card.get("tempo_parity_programs")
    if rel is None:
        return "–"
    return f"{rel:.1e}" + (f" over {n:,} programs" if n else "")


def _data_cell(d: dict) -> str:
    """The weights index's data column: training targets, held-out targets when a split has
    them (the record count covers both), the noise filter."""
    tt = d.get("test_targets") or []
    return (f"{', '.join(d.get('targets', []))}" + (f"; test: {', '.join(tt)}" if tt else "")
            + f": {d.get('records', '?')} records "
            f"(noise {d.get('noise_stat', 'std')} ≤ {d.get('noise_max_cv', '?')})")


def _config_cell(card: dict) -> str:
    """The named config and the feature set of its leaf rows (cards from before feature sets
    name none: those models read Ansor's 164 columns)."""
    features = ((card.get("training") or {}).get("hyperparameters") or {}).get("features")
    return f"{card.get('config_name', '?')} ({features or 'ansor'})"


def write_weights_index(weights_dir: str) -> str:
    """weights/README.md: one row per shipped model, from its card (written by --ship)."""
    cards = []
    for p in sorted(glob.glob(os.path.join(weights_dir, "*.card.json"))):
        with open(p) as f:
            cards.append(json.load(f))
    head = ["file", "config", "data", "split (seed)", "train / val / test", "test set", "MAPE",
            "RMSE ln", "Kendall τ", "top-1", "µs/pred (tempo)", "tempo vs PyTorch", "params",
            "trained"]
    lines = ["# Shipped models", "",
             "Written by `python3 -m training.run <split> --ship weights` (training/README.md); "
             "do not edit by hand. Each `<name>.safetensors` is a converted CDMPP model "
             "(converters/README.md) with its self-test and its card embedded (`tempo.card`); "
             "`<name>.card.json` is the same card: data, filters, split, metrics on the held-out "
             "records, training time and settings; a model tested on several sets has a row per set. "
             "Metrics are defined in "
             "bench/results/accuracy.md. tempo vs PyTorch: the largest relative difference "
             "between the engine's and PyTorch's seconds over the test programs checked.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in cards:
        d, sp = c.get("data", {}), c.get("split", {})
        counts = sp.get("counts", {})
        for test_set, m in sorted(c.get("metrics", {}).items()):
            lines.append("| " + " | ".join([
                f"`{c['model']}.safetensors`", _config_cell(c),
                _data_cell(d),
                f"{sp.get('name', '?')} ({sp.get('seed', '?')})",
                f"{counts.get('train', '?')} / {counts.get('val', '?')} / {counts.get('test', '?')}",
                test_set, _f(m.get("mape"), pct=True), _f(m.get("rmse_log")), _f(m.get("kendall_tau")),
                _f(m.get("top1")), _f(c.get("us_per_prediction_tempo"), digits=1),
                _parity(c), _f(c.get("parameters")), c.get("date", "?")[:10]]) + " |")
    path = os.path.join(weights_dir, "README.md")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


if __name__ == "__main__":
    print(regenerate(sys.argv[1] if len(sys.argv) > 1 else os.path.join("bench", "results")))
