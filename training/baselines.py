"""Baselines on the same records and splits as CDMPP.

Ansor / Tenset XGBoost, "pack-sum": every buffer-store leaf (its 164 features) gets its own
tree-ensemble score and a program's prediction is the sum over its leaves. The objective is
squared error on that sum (gradient of a program's error given to each of its rows; hessian
= the program's weight). Hyperparameters (specs/cdmpp.md): max_depth 10, eta 0.2, gamma
0.001, min_child_weight 0, up to 10000 rounds, early stop after 50 rounds without a better
validation pack-sum RMSE. Two targets:
  - "throughput": Ansor's own, min_latency(task) / latency per task (1 = the task's best;
    min over the training records), records weighted by that label; ranking only.
  - "log": ln(latency seconds), centred on the training mean; gives seconds (MAPE).

TVM MetaSchedule's MLP ("segment sum"): per leaf Linear(F->256)+ReLU+Linear(256->256)+ReLU,
sum over the program's leaves, two residual blocks x + ReLU(Linear(256->256)(x)), then
Linear(256->1); ~240k parameters at F = 164 (242k at MetaSchedule's 172). Trained here on
standardised ln(latency) with MSE (MetaSchedule itself trains a ranking loss), Adam
(lr 7e-4), grad-norm clip 0.5, early stopping on validation RMSE of log latency.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np
import torch
from torch import nn

from training.cdmpp import Progress, seed_everything
from training.data import Dataset, _ragged_index

XGB_DEFAULTS = {"max_depth": 10, "eta": 0.2, "gamma": 0.001, "min_child_weight": 0,
                "num_boost_round": 10000, "early_stopping_rounds": 50}


def _rows_and_segments(ds: Dataset, idx):
    idx = np.asarray(idx, dtype=np.int64)
    n = ds.n_leaves[idx]
    rows = ds.rows[_ragged_index(ds.offsets[idx], n)]
    seg = np.repeat(np.arange(len(idx)), n)
    return rows, seg


def throughput_labels(ds: Dataset, idx) -> np.ndarray:
    """Ansor's label: per (task, target) min latency / latency, over the records idx."""
    idx = np.asarray(idx, dtype=np.int64)
    lat = ds.latency[idx]
    group = ds.task[idx] * (len(ds.target_names) + 1) + ds.target[idx]
    best = {}
    for g, l in zip(group, lat):
        best[g] = min(best.get(g, np.inf), l)
    return np.array([best[g] / l for g, l in zip(group, lat)])


@dataclass
class XgbModel:
    booster: object
    target: str                 # throughput | log
    offset: float
    best_iteration: int
    train_time_s: float
    rounds: int

    def predict_raw(self, ds: Dataset, idx) -> np.ndarray:
        import xgboost as xgb
        rows, seg = _rows_and_segments(ds, idx)
        p = self.booster.predict(xgb.DMatrix(rows), iteration_range=(0, self.best_iteration + 1))
        return np.bincount(seg, weights=p, minlength=len(idx)) + self.offset

    def predict_seconds(self, ds: Dataset, idx) -> Optional[np.ndarray]:
        if self.target != "log":
            return None
        return np.exp(self.predict_raw(ds, idx))

    def rank_key(self, ds: Dataset, idx) -> np.ndarray:
        """Smaller = predicted faster."""
        raw = self.predict_raw(ds, idx)
        return -raw if self.target == "throughput" else raw

    @property
    def parameters(self) -> int:
        """Tree nodes (leaves and splits) of the used rounds."""
        dump = self.booster.get_dump()[: self.best_iteration + 1]
        return int(sum(d.count("\n") for d in dump))


def train_xgboost(ds: Dataset, train_idx, val_idx, target: str = "log", params: Optional[dict] = None,
                  threads: int = 1, seed: int = 0, progress: bool = True) -> XgbModel:
    import xgboost as xgb
    p = dict(XGB_DEFAULTS)
    p.update(params or {})
    rounds, early = int(p.pop("num_boost_round")), int(p.pop("early_stopping_rounds"))
    train_idx = np.asarray(train_idx, dtype=np.int64)
    val_idx = np.asarray(val_idx, dtype=np.int64)
    if target == "throughput":
        y_tr, y_va = throughput_labels(ds, train_idx), throughput_labels(ds, val_idx)
        w_tr, w_va = y_tr, y_va
        offset = 0.0
    elif target == "log":
        y_tr, y_va = np.log(ds.latency[train_idx]), np.log(ds.latency[val_idx])
        offset = float(y_tr.mean())
        y_tr, y_va = y_tr - offset, y_va - offset
        w_tr, w_va = np.ones_like(y_tr), np.ones_like(y_va)
    else:
        raise ValueError(f"unknown xgboost target {target!r}")
    r_tr, s_tr = _rows_and_segments(ds, train_idx)
    r_va, s_va = _rows_and_segments(ds, val_idx)
    dtrain, dval = xgb.DMatrix(r_tr), xgb.DMatrix(r_va)

    def objective(preds, _dm):
        total = np.bincount(s_tr, weights=preds, minlength=len(train_idx))
        resid = total - y_tr
        return (w_tr * resid)[s_tr], w_tr[s_tr]

    def metric(preds, dm):
        if dm is dval or preds.shape[0] == len(s_va):
            total = np.bincount(s_va, weights=preds, minlength=len(val_idx))
            return "pack_rmse", float(np.sqrt(np.mean((total - y_va) ** 2)))
        total = np.bincount(s_tr, weights=preds, minlength=len(train_idx))
        return "pack_rmse", float(np.sqrt(np.mean((total - y_tr) ** 2)))

    booster_params = {"max_depth": p["max_depth"], "eta": p["eta"], "gamma": p["gamma"],
                      "min_child_weight": p["min_child_weight"], "nthread": int(threads),
                      "seed": int(seed), "verbosity": 0, "disable_default_eval_metric": 1,
                      "base_score": 0.0}
    bar = Progress(rounds, f"xgboost[{target}]", progress)

    class _Cb(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            v = evals_log.get("val", {}).get("pack_rmse", [float("nan")])[-1]
            bar.update(1, val_rmse=float(v))
            return False

    t0 = time.time()
    booster = xgb.train(booster_params, dtrain, num_boost_round=rounds, obj=objective,
                        custom_metric=metric, evals=[(dval, "val")],
                        early_stopping_rounds=early, verbose_eval=False, callbacks=[_Cb()])
    bar.close()
    best = int(getattr(booster, "best_iteration", booster.num_boosted_rounds() - 1))
    return XgbModel(booster, target, offset, best, time.time() - t0, booster.num_boosted_rounds())


# --------------------------------------------------------------------------------------
# MetaSchedule MLP
# --------------------------------------------------------------------------------------
class SegmentSumMlp(nn.Module):
    def __init__(self, feature_dim: int = 164, hidden: int = 256):
        super().__init__()
        self.extract0 = nn.Linear(feature_dim, hidden)
        self.extract1 = nn.Linear(hidden, hidden)
        self.res0 = nn.Linear(hidden, hidden)
        self.res1 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, 1)

    def forward(self, rows: torch.Tensor, seg: torch.Tensor, n_programs: int) -> torch.Tensor:
        h = torch.relu(self.extract1(torch.relu(self.extract0(rows))))
        s = torch.zeros(n_programs, h.shape[1], dtype=h.dtype).index_add_(0, seg, h)
        s = s + torch.relu(self.res0(s))
        s = s + torch.relu(self.res1(s))
        return self.head(s).squeeze(-1)


@dataclass
class MlpModel:
    net: SegmentSumMlp
    mean: float
    scale: float
    train_time_s: float
    best_epoch: int
    history: List[dict] = field(default_factory=list)

    def predict_seconds(self, ds: Dataset, idx, batch: int = 4096) -> np.ndarray:
        self.net.eval()
        idx = np.asarray(idx, dtype=np.int64)
        out = []
        with torch.no_grad():
            for s in range(0, len(idx), batch):
                part = idx[s:s + batch]
                rows, seg = _rows_and_segments(ds, part)
                z = self.net(torch.from_numpy(rows), torch.from_numpy(seg), len(part))
                out.append(z.double().numpy())
        z = np.concatenate(out) if out else np.zeros(0)
        return np.exp(z * self.scale + self.mean)

    @property
    def parameters(self) -> int:
        return sum(p.numel() for p in self.net.parameters())


def train_mlp(ds: Dataset, train_idx, val_idx, hidden: int = 256, lr: float = 7e-4,
              weight_decay: float = 1e-6, batch_size: int = 512, max_epochs: int = 200,
              patience: int = 10, clip_grad: float = 0.5, seed: int = 0, threads: int = 1,
              max_steps: int = 0, progress: bool = True) -> MlpModel:
    torch.set_num_threads(max(1, int(threads)))
    seed_everything(seed)
    train_idx = np.asarray(train_idx, dtype=np.int64)
    val_idx = np.asarray(val_idx, dtype=np.int64)
    y = np.log(ds.latency[train_idx])
    mean, scale = float(y.mean()), float(y.std()) or 1.0
    z_all = np.zeros(len(ds))
    z_all[train_idx] = (y - mean) / scale
    net = SegmentSumMlp(ds.feature_dim, hidden)
    opt = torch.optim.Adam(net.parameters(), lr=lr, weight_decay=weight_decay)
    rng = np.random.default_rng(seed)
    per_epoch = max(1, int(np.ceil(len(train_idx) / batch_size)))
    bar = Progress(max_epochs * per_epoch if not max_steps else min(max_steps, max_epochs * per_epoch),
                   "mlp", progress)
    model = MlpModel(net, mean, scale, 0.0, -1)
    best, best_state, bad, steps = float("inf"), None, 0, 0
    t0 = time.time()
    for epoch in range(max_epochs):
        net.train()
        perm = rng.permutation(train_idx)
        for s in range(0, len(perm), batch_size):
            part = perm[s:s + batch_size]
            rows, seg = _rows_and_segments(ds, part)
            pred = net(torch.from_numpy(rows), torch.from_numpy(seg), len(part))
            loss = torch.mean((pred - torch.from_numpy(z_all[part]).float()) ** 2)
            opt.zero_grad()
            loss.backward()
            if clip_grad:
                nn.utils.clip_grad_norm_(net.parameters(), clip_grad)
            opt.step()
            steps += 1
            bar.update(1, epoch=epoch, loss=float(loss))
            if max_steps and steps >= max_steps:
                break
        pv = model.predict_seconds(ds, val_idx)
        v = float(np.sqrt(np.mean((np.log(pv) - np.log(ds.latency[val_idx])) ** 2))) if len(val_idx) else 0.0
        model.history.append({"epoch": epoch, "val_rmse_log": v})
        if v < best or best_state is None:
            best, best_state, bad, model.best_epoch = v, copy.deepcopy(net.state_dict()), 0, epoch
        else:
            bad += 1
        if bad >= patience or (max_steps and steps >= max_steps):
            break
    bar.close()
    net.load_state_dict(best_state)
    model.train_time_s = time.time() - t0
    return model
