"""Choosing which target-device samples to measure for fine-tuning (cross-device few-shot).

CDMPP's KMeans procedure (specs/cdmpp.md): KMeans with k = the number of tasks to pick, over
the normalised samples; for each centre, each task's mean distance to it; visit the clusters
largest first and take the nearest task not picked yet. Quality: the CMD between the
selection and the full set (lower = more representative).

tempo's budget is a fraction of the target's samples: k = ceil(budget / mean records per
task) tasks are picked in that order (further rounds over the clusters if the budget is not
reached), their records taken in pick order, the last task's cut at random to the budget.
Two baselines take the same number of samples: whole tasks in a random order (what profiling
tasks without a selection method gives: the like-for-like comparison) and records uniformly
at random (which touches nearly every task).
"""
from __future__ import annotations

import math
from typing import List, Sequence

import numpy as np


def cmd(x: np.ndarray, y: np.ndarray, k: int = 5) -> float:
    """Central moment discrepancy: ||E x - E y||_2 + sum_{j=2..k} ||E (x-Ex)^j - E (y-Ey)^j||_2."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    mx, my = x.mean(axis=0), y.mean(axis=0)
    out = float(np.linalg.norm(mx - my))
    cx, cy = x - mx, y - my
    for j in range(2, k + 1):
        out += float(np.linalg.norm((cx ** j).mean(axis=0) - (cy ** j).mean(axis=0)))
    return out


def program_vectors(rows_mean: np.ndarray, norm_min, norm_max) -> np.ndarray:
    """Min-max normalised per-program vectors (the mean of a program's leaf rows)."""
    lo = np.asarray(norm_min, dtype=np.float64)
    hi = np.asarray(norm_max, dtype=np.float64)
    return (np.asarray(rows_mean, dtype=np.float64) - lo) / (hi - lo + 1e-6)


def kmeans_task_order(x: np.ndarray, task_ids: Sequence[int], k: int, seed: int = 0,
                      max_fit: int = 20000) -> List[int]:
    """Tasks in CDMPP's pick order: KMeans(k) over the samples x; clusters visited largest
    first, each taking its nearest (mean sample distance) unpicked task; repeated rounds
    until every task is ordered. Returns distinct task ids."""
    from sklearn.cluster import KMeans
    x = np.asarray(x, dtype=np.float64)
    task_ids = np.asarray(task_ids)
    tasks = np.unique(task_ids)
    k = max(1, min(int(k), len(x), len(tasks)))
    rng = np.random.default_rng(seed)
    fit = x if len(x) <= max_fit else x[rng.choice(len(x), max_fit, replace=False)]
    km = KMeans(n_clusters=k, n_init=3, random_state=seed).fit(fit)
    centres = km.cluster_centers_
    labels = km.predict(x)
    sizes = np.bincount(labels, minlength=k)
    # mean distance of each task's samples to each centre: (tasks, k)
    sq = (x ** 2).sum(1)[:, None] - 2.0 * x @ centres.T + (centres ** 2).sum(1)[None, :]
    dist = np.sqrt(np.clip(sq, 0.0, None))
    tindex = np.searchsorted(tasks, task_ids)
    mean_d = np.zeros((len(tasks), k))
    np.add.at(mean_d, tindex, dist)
    mean_d /= np.bincount(tindex, minlength=len(tasks))[:, None]
    order = sorted(range(k), key=lambda c: (-sizes[c], c))
    picked: List[int] = []
    taken = np.zeros(len(tasks), dtype=bool)
    while not taken.all():
        for c in order:
            if taken.all():
                break
            d = np.where(taken, np.inf, mean_d[:, c])
            t = int(np.argmin(d))
            taken[t] = True
            picked.append(int(tasks[t]))
    return picked


def clamp_budget(budget: int, n: int) -> int:
    """A budget of at least one sample and at most all n."""
    return int(min(max(budget, 1), n))


def take_tasks(order: Sequence[int], task_ids: Sequence[int], budget: int,
               rng: np.random.Generator) -> np.ndarray:
    """Positions of `budget` samples: every sample of the tasks in `order`, in that order, the
    last task's cut at random to the budget."""
    task_ids = np.asarray(task_ids)
    chosen: List[int] = []
    for t in order:
        need = budget - len(chosen)
        if need <= 0:
            break
        members = np.flatnonzero(task_ids == t)
        if len(members) > need:
            members = np.sort(rng.choice(members, need, replace=False))
        chosen.extend(int(m) for m in members)
    return np.asarray(chosen, dtype=np.int64)


def kmeans_select(x: np.ndarray, task_ids: Sequence[int], budget: int, seed: int = 0) -> np.ndarray:
    """Positions (into x / task_ids) of `budget` samples chosen by CDMPP's KMeans procedure."""
    task_ids = np.asarray(task_ids)
    budget = clamp_budget(budget, len(task_ids))
    n_tasks = len(np.unique(task_ids))
    k = max(1, math.ceil(budget / (len(task_ids) / n_tasks)))
    order = kmeans_task_order(x, task_ids, k, seed)
    return take_tasks(order, task_ids, budget, np.random.default_rng(seed))


def random_task_select(task_ids: Sequence[int], budget: int, seed: int = 0) -> np.ndarray:
    """Positions of `budget` samples taken as whole tasks in a uniformly random order."""
    task_ids = np.asarray(task_ids)
    budget = clamp_budget(budget, len(task_ids))
    rng = np.random.default_rng(seed)
    return take_tasks(rng.permutation(np.unique(task_ids)), task_ids, budget, rng)


def random_select(n: int, budget: int, seed: int = 0) -> np.ndarray:
    """Positions of `budget` samples out of n, uniformly at random (sorted)."""
    budget = clamp_budget(budget, n)
    return np.sort(np.random.default_rng(seed).choice(n, budget, replace=False)).astype(np.int64)


def budget_for(n: int, fraction: float) -> int:
    return max(1, int(math.ceil(fraction * n)))
