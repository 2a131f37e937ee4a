"""Accuracy metrics: MAPE (seconds), RMSE of log latency, per-task Kendall tau, top-k scores.

- mape:        mean |pred - true| / true, over records (seconds; a fraction, x100 for %)
- rmse_log:    sqrt(mean (ln pred - ln true)^2) (natural log; pred clipped at 1e-30 s)
- kendall_tau: tau-b (ties in either ranking handled), per task, then the mean over tasks
               with at least 2 records and not all-tied
- top-k score: per task, (true best latency) / (best true latency among the k programs
               predicted fastest); 1.0 = the model's choice is the optimum, lower is worse.
               (The reciprocal of "chosen latency over best", so higher is better, as Tenset.)
               Averaged over tasks with at least 2k test records (with k or fewer the
               model's k picks include the best, and with a few more they nearly always do:
               a score near 1 that says little); None when no task has that many.
               `top{k}_tasks` says how many tasks the average is over.

Ranking metrics take any `rank_key` where smaller = predicted faster (predicted seconds, or
minus a throughput score).
"""
from __future__ import annotations

from typing import Dict, Optional, Sequence

import numpy as np


def mape(true_s, pred_s) -> float:
    t = np.asarray(true_s, dtype=np.float64)
    p = np.asarray(pred_s, dtype=np.float64)
    return float(np.mean(np.abs(p - t) / t))


def rmse_log(true_s, pred_s) -> float:
    t = np.asarray(true_s, dtype=np.float64)
    p = np.clip(np.asarray(pred_s, dtype=np.float64), 1e-30, None)
    return float(np.sqrt(np.mean((np.log(p) - np.log(t)) ** 2)))


def kendall_tau(a, b, chunk: int = 2048) -> float:
    """Kendall's tau-b between two sequences (NaN when either is constant or n < 2).
    O(n^2) over pairs, vectorised in row chunks."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    n = len(a)
    if n < 2:
        return float("nan")
    conc = 0.0
    tie_a = tie_b = 0  # pairs tied in a (resp. b)
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        da = np.sign(a[s:e, None] - a[None, :])
        db = np.sign(b[s:e, None] - b[None, :])
        # only pairs (i, j) with j > i
        upper = np.arange(s, e)[:, None] < np.arange(n)[None, :]
        conc += float((da * db)[upper].sum())
        tie_a += int(((da == 0) & upper).sum())
        tie_b += int(((db == 0) & upper).sum())
    n0 = n * (n - 1) / 2
    denom = np.sqrt((n0 - tie_a) * (n0 - tie_b))
    return float(conc / denom) if denom > 0 else float("nan")


def top_k_score(true_s, rank_key, k: int) -> float:
    t = np.asarray(true_s, dtype=np.float64)
    order = np.argsort(np.asarray(rank_key, dtype=np.float64), kind="stable")
    return float(t.min() / t[order[:k]].min())


def per_task(values_fn, true_s, key, task_ids, min_records: int = 2) -> Dict[int, float]:
    out = {}
    task_ids = np.asarray(task_ids)
    for t in np.unique(task_ids):
        m = task_ids == t
        if m.sum() >= min_records:
            out[int(t)] = values_fn(np.asarray(true_s)[m], np.asarray(key)[m])
    return out


def evaluate(true_s, task_ids, pred_s=None, rank_key=None) -> Dict[str, Optional[float]]:
    """All metrics for one model on one test set. pred_s: predicted seconds (MAPE, RMSE and,
    when rank_key is None, the ranking); rank_key: smaller = faster (ranking only)."""
    true_s = np.asarray(true_s, dtype=np.float64)
    task_ids = np.asarray(task_ids)
    out: Dict[str, Optional[float]] = {"records": int(len(true_s)),
                                       "tasks": int(len(np.unique(task_ids)))}
    if pred_s is not None:
        pred_s = np.asarray(pred_s, dtype=np.float64)
        out["mape"] = mape(true_s, pred_s)
        out["rmse_log"] = rmse_log(true_s, pred_s)
    else:
        out["mape"] = out["rmse_log"] = None
    key = rank_key if rank_key is not None else pred_s
    taus = per_task(kendall_tau, true_s, key, task_ids)
    taus = [v for v in taus.values() if np.isfinite(v)]
    out["kendall_tau"] = float(np.mean(taus)) if taus else None
    for k in (1, 5):
        s = per_task(lambda t, r: top_k_score(t, r, k), true_s, key, task_ids,
                     min_records=2 * k)
        out[f"top{k}"] = float(np.mean(list(s.values()))) if s else None
        out[f"top{k}_tasks"] = len(s)
    return out


def power_law_fit(records: Sequence[float], error: Sequence[float]) -> Dict[str, float]:
    """Least squares of ln(error) on ln(records): error ≈ scale · records^(−exponent).
    A learning curve's fit; without a floor it is the optimistic extrapolation (any noise
    floor flattens the real curve), so the records it asks for a goal are a lower bound."""
    n = np.asarray(records, dtype=np.float64)
    e = np.asarray(error, dtype=np.float64)
    if len(n) < 2 or len(np.unique(n)) < 2 or np.any(n <= 0) or np.any(e <= 0):
        raise ValueError("power_law_fit needs >= 2 distinct positive record counts and "
                         f"positive errors, got records {n.tolist()} and errors {e.tolist()}")
    slope, intercept = np.polyfit(np.log(n), np.log(e), 1)
    return {"scale": float(np.exp(intercept)), "exponent": float(-slope)}


def records_to_reach(fit: Dict[str, float], goal: float) -> Optional[float]:
    """Records at which the fitted power law reaches `goal` (None if it never falls)."""
    if fit["exponent"] <= 0:
        return None
    return float((fit["scale"] / goal) ** (1.0 / fit["exponent"]))
