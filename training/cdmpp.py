"""CDMPP training with the reference module converters.cdmpp_torch.CdmppModel.

Target: the mean latency through the output transform (Box-Cox by default, fitted on the
training latencies). Loss: loss_mse * MSE + loss_mape * MAPE, both in the transformed space
(1000 and 1 in the tuned config), plus cmd_weight * CMD_K between the last hidden layer
(the last decoder block's output; the embedding when there is no decoder) of the training
batch and of a batch of target-domain programs (K = 5). Adam, CyclicLR per batch
(lr/10 .. lr*10, no momentum cycling), grad-norm clipping, early stopping on a validation
metric (MAPE in seconds, or RMSE of ln seconds, which does not reward under-prediction; the
best weights are kept), fixed seeds, a progress bar on stderr,
checkpoints (last and best) in the output directory.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import math
import os
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np
import torch

from converters import cdmpp_torch as ct
from converters import convert as cv
from training import metrics as M
from training.data import Dataset, fit_output_transform

SELECTION_METRICS = ("mape", "rmse_log")
DEFAULT_LR = {"paper": 1.68e-5, "compact": 1e-4}


@dataclass
class TrainConfig:
    model: str = "compact"                 # named config: paper | compact
    model_overrides: dict = field(default_factory=dict)
    features: str = "ansor"                # the leaf rows: ansor | ansor+loops (ct.FEATURE_SETS)
    transform: str = "boxcox"              # boxcox | log | none
    loss_mse: float = 1000.0
    loss_mape: float = 1.0
    mape_eps: float = 1e-6                 # MAPE denominator |z| + eps (transformed space)
    cmd_weight: float = 0.0                # alpha; 0 disables the regulariser
    cmd_k: int = 5
    cmd_target_batch: int = 512            # target-domain programs per step
    lr: Optional[float] = None             # None: DEFAULT_LR[model]
    weight_decay: float = 1.3e-3
    batch_size: int = 600
    clr_step_size_up: int = 2000           # CyclicLR half-cycle, in batches
    min_steps_per_epoch: int = 16          # small data: shrink the batch, LR cycle (0: off)
    clip_grad: float = 2.0
    max_epochs: int = 200
    patience: int = 10                     # epochs without validation improvement
    select_on: str = "mape"                # validation metric that picks the kept weights:
                                           #   mape (seconds) | rmse_log (ln seconds)
    max_steps: int = 0                     # 0 = unlimited
    time_limit_s: float = 0                # 0 = unlimited
    eval_batch: int = 2048
    resume: bool = False                   # continue from out_dir/last.pt when it exists
    seed: int = 0
    threads: int = 1
    progress: bool = True

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    def model_config(self, device: bool = False) -> ct.CdmppConfig:
        over = dict(self.model_overrides)
        over.setdefault("device", bool(device))
        over.setdefault("features", self.features)
        over.setdefault("feature_dim", ct.FEATURE_SETS.get(self.features, 164))
        return ct.NAMED_CONFIGS[self.model](**over)

    @property
    def learning_rate(self) -> float:
        return self.lr if self.lr is not None else DEFAULT_LR.get(self.model, 1e-4)


# --------------------------------------------------------------------------------------
# Pieces
# --------------------------------------------------------------------------------------
@dataclass
class Schedule:
    batch_size: int
    steps_per_epoch: int
    clr_step_size_up: int
    patience: int


def fit_schedule(cfg: TrainConfig, n_train: int) -> Schedule:
    """CDMPP's batch (600), LR half-cycle (2000 batches) and patience (epochs) were tuned on
    Tenset, hundreds of batches per epoch. With tens of batches per epoch a half-cycle spans
    dozens of epochs, and early stopping ends the run while CyclicLR is still near its floor.
    With min_steps_per_epoch > 0 the schedule scales to the data: the batch shrinks (not
    below 32) to give at least that many batches per epoch, the half-cycle is at most 8
    epochs, and patience covers at least two full cycles. Tenset-sized data keeps the
    configured values."""
    bs = max(2, int(cfg.batch_size))
    half, patience = max(1, int(cfg.clr_step_size_up)), int(cfg.patience)
    scaled = cfg.min_steps_per_epoch > 0
    if scaled and n_train < bs * cfg.min_steps_per_epoch:
        bs = max(min(bs, 32), n_train // cfg.min_steps_per_epoch)
    # a last batch of one row is dropped (BatchNorm needs two)
    steps = max(1, -(-n_train // bs) - (1 if n_train % bs == 1 else 0))
    if scaled:
        half = min(half, 8 * steps)
        patience = max(patience, -(-4 * half // steps))
    return Schedule(bs, steps, half, patience)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % (2 ** 32))
    torch.manual_seed(seed)


def cmd_loss(x: torch.Tensor, y: torch.Tensor, k: int = 5) -> torch.Tensor:
    """CMD_K(X, Y) = ||E X - E Y||_2 + sum_{j=2..K} ||E (X - E X)^j - E (Y - E Y)^j||_2."""
    mx, my = x.mean(0), y.mean(0)
    out = torch.linalg.norm(mx - my)
    cx, cy = x - mx, y - my
    for j in range(2, k + 1):
        out = out + torch.linalg.norm((cx ** j).mean(0) - (cy ** j).mean(0))
    return out


def last_hidden_module(model: ct.CdmppModel) -> torch.nn.Module:
    if len(model.decoder):
        return model.decoder[-1]
    return model.shared_bn if model.shared_bn is not None else model.embed[-1]


class Progress:
    """A one-line progress bar on stderr: count/total, rate, ETA and a postfix. On a terminal
    it redraws in place (at most 4 times a second); otherwise it prints a line every 30 s."""

    def __init__(self, total: int, desc: str = "", enabled: bool = True, stream=None):
        self.total, self.desc, self.enabled = max(1, int(total)), desc, enabled
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.n, self.t0, self.last = 0, time.time(), 0.0
        self.postfix = ""

    def update(self, n: int = 1, **postfix) -> None:
        self.n += n
        if postfix:
            self.postfix = " ".join(f"{k}={_fmt(v)}" for k, v in postfix.items())
        now = time.time()
        if self.enabled and (now - self.last >= (0.25 if self.tty else 30.0) or self.n == self.total):
            self.last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        el = now - self.t0
        rate = self.n / el if el > 0 else 0.0
        eta = (self.total - self.n) / rate if rate > 0 else float("nan")
        frac = min(1.0, self.n / self.total)
        bar = "#" * int(20 * frac) + "." * (20 - int(20 * frac))
        line = (f"{self.desc} [{bar}] {self.n}/{self.total} {rate:.1f} it/s "
                f"elapsed {_hms(el)} eta {_hms(eta)} {self.postfix}")
        self.stream.write(("\r" + line + "\x1b[K") if self.tty else (line + "\n"))
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw(time.time())
            if self.tty:
                self.stream.write("\n")
            self.stream.flush()


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _hms(s: float) -> str:
    if not math.isfinite(s):
        return "?"
    s = int(s)
    return f"{s // 3600:d}:{s % 3600 // 60:02d}:{s % 60:02d}"


# --------------------------------------------------------------------------------------
# Prediction
# --------------------------------------------------------------------------------------
def model_inputs(model: ct.CdmppModel, ds: Dataset, idx, norm):
    """(x, mask, device) of programs idx as `model` takes them (cdmpp_torch.preprocess)."""
    c = model.config
    return ds.batch(idx, norm[0], norm[1], c.max_leaves if c.pooling == "flatten" else None,
                    c.device, pe_scale=c.pe_scale)


def predict_transformed(model: ct.CdmppModel, ds: Dataset, idx, norm, batch: int = 2048) -> np.ndarray:
    model.eval()
    out = []
    idx = np.asarray(idx, dtype=np.int64)
    with torch.no_grad():
        for s in range(0, len(idx), batch):
            x, mask, dev = model_inputs(model, ds, idx[s:s + batch], norm)
            out.append(model(x, mask, dev).double().numpy())
    return np.concatenate(out) if out else np.zeros(0)


def predict_seconds(model: ct.CdmppModel, ds: Dataset, idx, norm, batch: int = 2048) -> np.ndarray:
    z = predict_transformed(model, ds, idx, norm, batch)
    return model.output_transform.inverse(torch.from_numpy(z)).numpy()


# --------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------
@dataclass
class TrainResult:
    model: ct.CdmppModel
    norm: tuple                     # (min, max) float32 arrays
    transform: ct.OutputTransform
    history: List[dict]
    best_epoch: int
    best_val: float                 # the validation metric cfg.select_on picked the weights on
    select_on: str
    train_time_s: float
    steps: int
    parameters: int
    schedule: dict                  # the batch, LR half-cycle and patience used (fit_schedule)


def train(ds: Dataset, train_idx, val_idx, cfg: TrainConfig, out_dir: Optional[str] = None,
          target_idx=None, device: Optional[bool] = None, init: Optional[TrainResult] = None,
          desc: str = "cdmpp") -> TrainResult:
    """Trains a CdmppModel on ds[train_idx], early-stopping on ds[val_idx].

    target_idx: unlabeled target-domain programs for the CMD regulariser (used when
    cfg.cmd_weight > 0). device: whether the model has the device branch (default: the
    training set spans more than one target). init: continue from this result's weights,
    feature normalisation and transform (fine-tuning)."""
    if cfg.select_on not in SELECTION_METRICS:
        raise ValueError(f"select_on: {cfg.select_on!r} is not one of {SELECTION_METRICS}")
    torch.set_num_threads(max(1, int(cfg.threads)))
    seed_everything(cfg.seed)
    train_idx = np.asarray(train_idx, dtype=np.int64)
    val_idx = np.asarray(val_idx, dtype=np.int64)
    if device is None:
        device = len(np.unique(ds.target[train_idx])) > 1
    if init is not None:
        model = copy.deepcopy(init.model)
        norm, transform = init.norm, init.transform
    else:
        mcfg = cfg.model_config(device=device)
        if mcfg.feature_dim != ds.feature_dim:
            raise ValueError(f"the records' rows have {ds.feature_dim} columns, the model "
                             f"takes {mcfg.feature_dim} (features {cfg.features!r}: load the "
                             f"records with the same feature set)")
        norm = ds.norm_stats(train_idx)
        transform = fit_output_transform(ds.latency[train_idx], cfg.transform)
        model = ct.CdmppModel(mcfg, transform)
        if mcfg.device:
            model.standardise_device(ds.device[train_idx])
    c = model.config
    z_all = np.zeros(len(ds))
    z_all[train_idx] = transform.forward(torch.from_numpy(ds.latency[train_idx])).numpy()
    lr = cfg.learning_rate
    plan = fit_schedule(cfg, len(train_idx))
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.CyclicLR(opt, base_lr=lr / 10, max_lr=lr * 10,
                                              step_size_up=plan.clr_step_size_up,
                                              cycle_momentum=False)
    hidden: Dict[str, torch.Tensor] = {}
    hook = last_hidden_module(model).register_forward_hook(
        lambda m, i, o: hidden.__setitem__("h", o))
    use_cmd = cfg.cmd_weight > 0 and target_idx is not None and len(target_idx) > 1
    target_idx = np.asarray(target_idx if target_idx is not None else [], dtype=np.int64)
    bs, steps_per_epoch = plan.batch_size, plan.steps_per_epoch
    best_state, best_val, best_epoch, bad = None, float("inf"), -1, 0
    history: List[dict] = []
    t0 = time.time()
    steps = 0
    bar = Progress(cfg.max_epochs * steps_per_epoch if not cfg.max_steps else
                   min(cfg.max_steps, cfg.max_epochs * steps_per_epoch), desc, cfg.progress)
    stop = False
    start = 0
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        last = os.path.join(out_dir, "last.pt")
        if cfg.resume and os.path.exists(last):
            st = torch.load(last, map_location="cpu")
            model.load_state_dict(st["state_dict"])
            opt.load_state_dict(st["optimizer"])
            sched.load_state_dict(st["scheduler"])
            history, steps, start = st["history"], st["steps"], st["epoch"] + 1
            best_state, best_val = st["best_state"], st["best_val"]
            best_epoch, bad = st["best_epoch"], st["bad"]
            norm = tuple(np.asarray(v, dtype=np.float32) for v in st["norm"])
            t0 -= history[-1]["time_s"] if history else 0.0
            bar.n = steps
            sys.stderr.write(f"{desc}: resumed after epoch {st['epoch']} ({steps} steps)\n")
            if bad >= plan.patience:
                start = cfg.max_epochs
    for epoch in range(start, cfg.max_epochs):
        model.train()
        # per-epoch generator: a resumed run draws the same batches as an uninterrupted one
        rng = np.random.default_rng([cfg.seed, epoch])
        torch.manual_seed((cfg.seed * 1000003 + epoch) % (2 ** 63))    # dropout masks
        perm = rng.permutation(train_idx)
        losses = []
        for s in range(0, max(1, len(perm) - 1), bs):
            b_idx = perm[s:s + bs]
            if len(b_idx) < 2:       # BatchNorm needs two samples
                continue
            n_b = len(b_idx)
            all_idx = b_idx
            if use_cmd:
                t_n = min(cfg.cmd_target_batch, len(target_idx))
                all_idx = np.concatenate([b_idx, rng.choice(target_idx, t_n, replace=False)])
            x, mask, dev = model_inputs(model, ds, all_idx, norm)
            out = model(x, mask, dev)
            pred = out[:n_b]
            z = torch.from_numpy(z_all[b_idx]).to(pred.dtype)
            loss = cfg.loss_mse * torch.mean((pred - z) ** 2)
            if cfg.loss_mape:
                loss = loss + cfg.loss_mape * torch.mean(torch.abs(pred - z) /
                                                         (torch.abs(z) + cfg.mape_eps))
            cmd_v = None
            if use_cmd:
                h = hidden["h"]
                cmd_v = cmd_loss(h[:n_b], h[n_b:], cfg.cmd_k)
                loss = loss + cfg.cmd_weight * cmd_v
            opt.zero_grad()
            loss.backward()
            if cfg.clip_grad:
                torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_grad)
            opt.step()
            sched.step()
            steps += 1
            losses.append(float(loss))
            post = {"epoch": epoch, "loss": float(loss)}
            if cmd_v is not None:
                post["cmd"] = float(cmd_v)
            if best_val < float("inf"):
                post["best_val_" + cfg.select_on] = best_val
            bar.update(1, **post)
            if (cfg.max_steps and steps >= cfg.max_steps) or \
                    (cfg.time_limit_s and time.time() - t0 > cfg.time_limit_s):
                stop = True
                break
        val_pred = predict_seconds(model, ds, val_idx, norm, cfg.eval_batch) if len(val_idx) else None
        entry = {"epoch": epoch, "steps": steps,
                 "train_loss": float(np.mean(losses)) if losses else None}
        if val_pred is not None:
            entry["val_mape"] = M.mape(ds.latency[val_idx], val_pred)
            entry["val_rmse_log"] = M.rmse_log(ds.latency[val_idx], val_pred)
            score = entry["val_" + cfg.select_on]
        else:
            score = entry["train_loss"] if losses else np.inf
        if not np.isfinite(score):
            score = float("inf")
        entry.update(lr=float(sched.get_last_lr()[0]), time_s=time.time() - t0)
        history.append(entry)
        if score < best_val or best_state is None:
            best_val, best_epoch, bad = score, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad += 1
        if out_dir:
            torch.save({"epoch": epoch, "steps": steps, "state_dict": model.state_dict(),
                        "best_state": best_state, "best_val": best_val,
                        "best_epoch": best_epoch, "bad": bad,
                        "optimizer": opt.state_dict(),
                        # CyclicLR's state holds a WeakMethod that cannot be pickled
                        "scheduler": {k: v for k, v in sched.state_dict().items()
                                      if not k.startswith("_scale_fn")},
                        "history": history, "train_config": dataclasses.asdict(cfg),
                        "model_config": c.to_dict(), "norm": [n.tolist() for n in norm],
                        "output_transform": transform.to_dict()},
                       os.path.join(out_dir, "last.pt"))
        if stop or bad >= plan.patience:
            break
    bar.close()
    hook.remove()
    model.load_state_dict(best_state)
    model.eval()
    res = TrainResult(model=model, norm=norm, transform=transform, history=history,
                      best_epoch=best_epoch, best_val=best_val, select_on=cfg.select_on,
                      train_time_s=time.time() - t0, steps=steps,
                      parameters=ct.count_parameters(model), schedule=dataclasses.asdict(plan))
    if out_dir:
        torch.save(cv.make_checkpoint(model, norm[0], norm[1], {}), os.path.join(out_dir, "best.pt"))
    return res


def export(result: TrainResult, path: str, card: dict, selftest: int = 8) -> dict:
    """Writes the converter checkpoint next to `path` (.pt) and the converted safetensors
    model file (BatchNorm folded, self-test embedded). Returns the file's metadata."""
    from converters import safetensors_io
    ckpt = cv.make_checkpoint(result.model, result.norm[0], result.norm[1], card)
    base = path[:-len(".safetensors")] if path.endswith(".safetensors") else path
    torch.save(ckpt, base + ".pt")
    tensors, meta = cv.convert(ckpt, selftest=selftest)
    safetensors_io.save_file(tensors, base + ".safetensors", meta)
    return meta


def torch_us_per_prediction(model: ct.CdmppModel, ds: Dataset, idx, norm, n: int = 200) -> float:
    """PyTorch (reference module) wall time per program at batch 1, preprocessing excluded."""
    model.eval()
    idx = np.asarray(idx, dtype=np.int64)[:n]
    inputs = [model_inputs(model, ds, idx[i:i + 1], norm) for i in range(len(idx))]
    with torch.no_grad():
        for x, m, d in inputs[:5]:
            model(x, m, d)
        t0 = time.perf_counter()
        for x, m, d in inputs:
            model(x, m, d)
    return (time.perf_counter() - t0) / max(1, len(inputs)) * 1e6
