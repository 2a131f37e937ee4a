"""One command per experiment: load records, split, train CDMPP and the baselines, evaluate,
write the split, the report rows, scatter plots and (with --ship) the converted weights.

    python3 -m training.run random|cross-model|cross-device|same-programs|learning-curve|evaluate
        [--quick] [--data DIR] [--out DIR] [--config FILE] [--seed N] [--model compact|paper]
        [--targets T ...] [--models FILE|DIR ...] [--tempo PATH] [--threads N]
        [--noise-max-cv X] [--noise-stat std|mad] [--set KEY=JSON ...] [--report DIR | --no-report] [--ship DIR]
        [--splits-dir DIR] [--skip-baselines] [--splits-only] [--resume] [--no-progress]
        [--blas openblas|system]

--quick: a smoke run (a few steps of a small model, few boosting rounds); its splits and
report go under --out, never into training/splits or bench/results.
evaluate trains nothing: it runs the shipped models (weights/) through `tempo predict` on the
records of other targets.
See training/README.md for the splits, hyperparameters and outputs.
"""
from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch

from training import baselines as B
from training import cdmpp as C
from training import kmeans_sampling as ks
from training import metrics as M
from training import report as R
from training import splits as S
from training.data import (FEATURE_SETS, DataError, Dataset, find_tempo_binary, load_records,
                           load_target_info, log)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_CONFIG = os.path.join(HERE, "config.json")
EXPERIMENTS = ("random", "cross-model", "cross-device", "same-programs", "learning-curve",
               "evaluate")

QUICK = {
    "cdmpp": {"model_overrides": {"d_model": 32, "ffn_dim": 32, "layers": 1, "embed_dims": [32, 16],
                                  "device_dims": [16, 16], "decoder_dims": [16], "dropout": 0.0},
              "batch_size": 64, "max_epochs": 2, "max_steps": 12, "cmd_target_batch": 64,
              "lr": 1e-3, "clr_step_size_up": 10, "patience": 2},
    "xgboost": {"num_boost_round": 15, "early_stopping_rounds": 5, "max_depth": 4},
    "mlp": {"max_epochs": 2, "patience": 2, "hidden": 32},
    "cross_device": {"finetune_epochs": 1},
}


# --------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------
def repo_path(path: str) -> str:
    """How reports name a file: relative to the repository, else by its name alone (a report
    never names a directory of the machine it ran on)."""
    return os.path.relpath(path, ROOT) if path.startswith(ROOT) else os.path.basename(path)


def deep_update(base: dict, over: dict) -> dict:
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict) and k != "model_overrides":
            deep_update(base[k], v)
        else:
            base[k] = copy.deepcopy(v)
    return base


def set_key(cfg: dict, dotted: str, value: str) -> None:
    """--set cdmpp.lr=1e-4 / cross_device.fractions=[0.01] (value parsed as JSON if it can be)."""
    try:
        v = json.loads(value)
    except ValueError:
        v = value
    node = cfg
    parts = dotted.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = v


def load_config(args) -> dict:
    with open(args.config) as f:
        cfg = json.load(f)
    if args.quick:
        deep_update(cfg, QUICK)
    for key, attr in (("data", "data"), ("seed", "seed"), ("threads", "threads"),
                      ("tempo_binary", "tempo"), ("noise_max_cv", "noise_max_cv"),
                      ("noise_stat", "noise_stat")):
        v = getattr(args, attr)
        if v is not None:
            cfg[key] = v
    if args.model:
        cfg["cdmpp"]["model"] = args.model
    if getattr(args, "resume", False):
        cfg["cdmpp"]["resume"] = True
    for s in args.set or []:
        if "=" not in s:
            raise SystemExit(f"--set expects KEY=VALUE, got {s!r}")
        k, v = s.split("=", 1)
        set_key(cfg, k, v)
    if cfg.get("noise_max_cv") is not None and cfg["noise_max_cv"] < 0:
        cfg["noise_max_cv"] = None
    return cfg


def train_config(cfg: dict, **over) -> C.TrainConfig:
    d = dict(cfg["cdmpp"])
    d.update(seed=cfg["seed"], threads=cfg["threads"], progress=cfg.get("progress", True))
    d.update(over)
    return C.TrainConfig.from_dict(d)


def apply_split_cdmpp(cfg: dict, section: str) -> None:
    """A split's own CDMPP settings (`<section>.cdmpp`) over the shared `cdmpp` section, so
    that the run, its cards and its result record the values it trained with; model_overrides
    merge key by key."""
    base = cfg["cdmpp"]
    for k, v in (cfg.get(section, {}).get("cdmpp") or {}).items():
        if k == "model_overrides":
            base[k] = dict(base.get(k) or {}, **v)
        else:
            base[k] = copy.deepcopy(v)


def load_dataset(cfg: dict, targets: List[str], out_dir: str) -> Dataset:
    tc = train_config(cfg)
    mc = tc.model_config()
    flatten = mc.pooling == "flatten"
    return load_records(cfg["data"], targets, tempo_binary=cfg.get("tempo_binary") or None,
                        cache_dir=os.path.join(HERE, "cache"), noise_max_cv=cfg["noise_max_cv"],
                        min_records_per_task=int(cfg.get("min_records_per_task", 0)),
                        noise_stat=cfg.get("noise_stat", "std"), feature_set=tc.features,
                        max_leaves=None if flatten else mc.max_leaves,
                        exact_leaves=mc.max_leaves if flatten else None)


def is_synthetic(cfg: dict, targets: List[str]) -> bool:
    return any(load_target_info(cfg["data"], t).get("synthetic") for t in targets)


# --------------------------------------------------------------------------------------
# Evaluation helpers
# --------------------------------------------------------------------------------------
class Runner:
    def __init__(self, cfg: dict, args, experiment: str):
        self.cfg, self.args, self.experiment = cfg, args, experiment
        model = cfg["cdmpp"]["model"]
        self.out = args.out or os.path.join(HERE, "runs", f"{experiment}-{model}")
        os.makedirs(self.out, exist_ok=True)
        self.plots = os.path.join(self.report_dir or self.out, "accuracy")
        self.rows: List[dict] = []
        self.exports: List[dict] = []
        self.tempo = find_tempo_binary(cfg.get("tempo_binary") or None)  # for `tempo predict`

    @property
    def report_dir(self) -> Optional[str]:
        if self.args.no_report:
            return None
        if self.args.report:
            return self.args.report
        return os.path.join(self.out, "report") if self.args.quick else os.path.join(ROOT, "bench", "results")

    @property
    def splits_dir(self) -> str:
        if self.args.splits_dir:
            return self.args.splits_dir
        return os.path.join(self.out, "splits") if self.args.quick else S.SPLITS_DIR

    def row(self, model: str, test_set: str, ds: Dataset, idx, pred_s=None, rank_key=None,
            train_time_s=None, parameters=None, extra=None, plot: bool = True) -> dict:
        idx = np.asarray(idx, dtype=np.int64)
        m = M.evaluate(ds.latency[idx], ds.task[idx], pred_s=pred_s, rank_key=rank_key)
        r = {"model": model, "test_set": test_set, "metrics": m, "train_time_s": train_time_s,
             "parameters": parameters}
        if pred_s is not None and self.plots and plot:
            name = R.slug(f"{self.experiment}-{model}-{test_set}") + ".png"
            R.scatter_png(os.path.join(self.plots, name), ds.latency[idx], pred_s,
                          f"{model} ({self.experiment})\n{test_set}; MAPE {100 * m['mape']:.1f}%")
            r["scatter"] = "accuracy/" + name
        r.update(extra or {})
        self.rows.append(r)
        mape = "–" if m["mape"] is None else f"{100 * m['mape']:.2f}%"
        log(f"eval {model} on {test_set}: n={m['records']} MAPE {mape} tau "
            f"{m['kendall_tau'] if m['kendall_tau'] is None else round(m['kendall_tau'], 3)} "
            f"top1 {m['top1']:.3f}")
        return r

    def baselines(self, ds: Dataset, train, val, tests: Dict[str, np.ndarray], tag: str = "",
                  xgboost_targets=("log", "throughput"), mlp: bool = True,
                  extra: Optional[dict] = None, plot: bool = True) -> None:
        if self.args.skip_baselines:
            return
        cfg = self.cfg
        prog = cfg.get("progress", True)
        ds = ds.first_columns(FEATURE_SETS["ansor"])  # TVM's cost models read Ansor's features
        for target in xgboost_targets:
            xm = B.train_xgboost(ds, train, val, target=target, params=cfg["xgboost"],
                                 threads=cfg["threads"], seed=cfg["seed"], progress=prog)
            for name, idx in tests.items():
                self.row(f"xgboost-{target}{tag}", name, ds, idx, pred_s=xm.predict_seconds(ds, idx),
                         rank_key=xm.rank_key(ds, idx), train_time_s=xm.train_time_s,
                         parameters=xm.parameters,
                         extra=dict(extra or {}, rounds=xm.best_iteration + 1), plot=plot)
        if not mlp:
            return
        mc = cfg["mlp"]
        mm = B.train_mlp(ds, train, val, hidden=mc["hidden"], lr=mc["lr"],
                         weight_decay=mc["weight_decay"], batch_size=mc["batch_size"],
                         max_epochs=mc["max_epochs"], patience=mc["patience"],
                         clip_grad=mc["clip_grad"], seed=cfg["seed"], threads=cfg["threads"],
                         max_steps=20 if self.args.quick else 0, progress=prog)
        for name, idx in tests.items():
            self.row(f"mlp-segsum{tag}", name, ds, idx, pred_s=mm.predict_seconds(ds, idx),
                     train_time_s=mm.train_time_s, parameters=mm.parameters, extra=extra, plot=plot)

    def cdmpp_rows(self, res: C.TrainResult, name: str, ds: Dataset, tests: Dict[str, np.ndarray],
                   extra=None, plot: bool = True) -> Dict[str, dict]:
        out = {}
        for tname, idx in tests.items():
            pred = C.predict_seconds(res.model, ds, idx, res.norm)
            out[tname] = self.row(name, tname, ds, idx, pred_s=pred, train_time_s=res.train_time_s,
                                  parameters=res.parameters,
                                  extra=dict(extra or {}, best_epoch=res.best_epoch, steps=res.steps,
                                             schedule=res.schedule), plot=plot)
        return out

    def export(self, res: C.TrainResult, name: str, ds: Dataset, split: S.Split, split_file: str,
               test_rows: Dict[str, dict], test_idx, synthetic: bool) -> str:
        """Converts through converters/convert.py into OUT/models/<name>.safetensors, measures
        µs/prediction (torch; tempo when the binary exists), copies to --ship DIR."""
        tc = train_config(self.cfg)
        train_targets = sorted({ds.target_names[t] for t in ds.target[split.train]})
        card = {
            "model": name, "family": "cdmpp", "config_name": tc.model,
            # records counts every target loaded, the held-out ones of a cross-device split too
            "data": {"targets": train_targets,
                     "test_targets": sorted({ds.target_names[t] for t in ds.target[test_idx]}
                                            - set(train_targets)),
                     "records": int(len(ds)), "fingerprint": ds.fingerprint(),
                     "noise_max_cv": self.cfg["noise_max_cv"],
                     "noise_stat": self.cfg.get("noise_stat", "std"), "synthetic": bool(synthetic),
                     "filters": {k: v for k, v in ds.stats.items() if k != "per_target"}},
            "split": {"name": split.name, "seed": split.seed, "file": repo_path(split_file),
                      "counts": split.counts()},
            "metrics": {k: v["metrics"] for k, v in test_rows.items()},
            "training": {"time_s": round(res.train_time_s, 1), "steps": res.steps,
                         "best_epoch": res.best_epoch,
                         "selected_on": {"metric": "val_" + res.select_on, "value": res.best_val},
                         "schedule": res.schedule, "threads": tc.threads, "blas": self.cfg.get("blas"),
                         "learning_rate": tc.learning_rate, "hyperparameters": {
                             k: v for k, v in self.cfg["cdmpp"].items()}},
            "parameters": res.parameters,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        us_torch = C.torch_us_per_prediction(res.model, ds, test_idx, res.norm,
                                             n=20 if self.args.quick else 200)
        card["us_per_prediction_torch"] = round(us_torch, 1)
        models = os.path.join(self.out, "models")
        os.makedirs(models, exist_ok=True)
        path = os.path.join(models, f"{name}.safetensors")
        C.export(res, path, card)
        tempo = tempo_timing(self.tempo, path, res, ds, test_idx, n=50 if self.args.quick else None)
        if tempo:
            if tempo["us_model"] is not None:
                card["us_per_prediction_tempo"] = round(tempo["us_model"], 2)
            card["us_per_prediction_tempo_cli"] = round(tempo["us_cli"], 2)
            card["tempo_parity_max_rel"] = tempo["max_rel"]
            card["tempo_parity_programs"] = tempo["programs"]
            C.export(res, path, card)      # re-export with the timing in the card
        for r in test_rows.values():
            for k in ("us_per_prediction_torch", "us_per_prediction_tempo",
                      "us_per_prediction_tempo_cli"):
                if k in card:
                    r[k] = card[k]
        with open(os.path.join(models, f"{name}.card.json"), "w") as f:
            json.dump(card, f, indent=1, sort_keys=True)
            f.write("\n")
        if self.args.ship:
            if synthetic:
                log("ship: refusing to ship a model trained on synthetic data")
            else:
                os.makedirs(self.args.ship, exist_ok=True)
                for ext in (".safetensors", ".card.json"):
                    shutil.copy(os.path.join(models, name + ext), os.path.join(self.args.ship, name + ext))
                log(f"ship: {os.path.join(self.args.ship, name + '.safetensors')}, "
                    f"{R.write_weights_index(self.args.ship)}")
        self.exports.append({"name": name, "path": path, "card": card})
        return path

    def finish(self, ds: Dataset, targets: List[str], split_files: List[str], synthetic: bool,
               records: Optional[int] = None, measured: Optional[Dict[str, Optional[List[str]]]] = None,
               per_target: Optional[Dict[str, dict]] = None,
               seeds: Optional[List[int]] = None, extra: Optional[dict] = None) -> dict:
        """measured: the measurement span (`measured_span`) of named parts (training, test),
        which the report shows: records of one part timed in another host state than the
        other's bias the result.
        per_target: a split with one model per target (random, cross-model): each target's
        records and split file, so that a run on some targets keeps the others' rows in the
        report.
        seeds: the split seeds of an experiment that draws one split per seed (else the
        config's seed).
        extra: an experiment's own top-level fields (learning-curve: `learning_curve`)."""
        date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        result = {"split": self.experiment, "seed": self.cfg["seed"],
                  "date": date,
                  "data": {"targets": targets, "records": int(records if records is not None else len(ds)),
                           "noise_max_cv": self.cfg["noise_max_cv"],
                           "noise_stat": self.cfg.get("noise_stat", "std"), "synthetic": synthetic,
                           "stats": ds.stats},
                  "split_file": ", ".join(repo_path(p) for p in split_files),
                  "cdmpp": self.cfg["cdmpp"], "xgboost": self.cfg["xgboost"], "mlp": self.cfg["mlp"],
                  "blas": self.cfg.get("blas"), "threads": self.cfg["threads"],
                  "quick": bool(self.args.quick), "rows": self.rows,
                  "measured": dict(measured or {})}
        if seeds:
            result["seeds"] = list(seeds)
        result.update(extra or {})
        if per_target:
            result["per_target"] = {t: dict(v, date=date) for t, v in per_target.items()}
        with open(os.path.join(self.out, "result.json"), "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
        if self.report_dir:
            if synthetic and not self.args.quick and self.report_dir == os.path.join(ROOT, "bench", "results"):
                log("report: synthetic data is never written to bench/results (use --report DIR)")
            else:
                log(f"report: {R.write_result(result, self.report_dir)}")
        return result


def measured_span(ds: Dataset, idx) -> Optional[List[str]]:
    """[first, last] measurement time of the records idx (None when they carry none)."""
    when = sorted(t for t in ds.measured_at[np.asarray(idx, dtype=np.int64)] if t)
    return [when[0], when[-1]] if when else None


def write_asts(path: str, ds: Dataset, idx, with_device: bool) -> None:
    """Programs idx as `tempo predict` input: one compact AST per line."""
    with open(path, "w") as f:
        for i in idx:
            f.write(json.dumps(ds.ast(int(i), with_device=with_device)) + "\n")


def predict_lines(stdout: str) -> List[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def tempo_timing(binary: Optional[str], model_path: str, res: C.TrainResult, ds: Dataset, idx,
                 n: Optional[int] = None) -> Optional[dict]:
    """µs per program of `tempo predict --batch 1`: in the model alone (its --timing report,
    warm-up excluded) and for the whole command (N programs minus 1 program, so loading is
    excluded; JSON parsing included); and the largest relative difference to PyTorch over the
    first n programs of idx (all of them by default: the whole test split)."""
    if not binary:
        return None
    idx = np.asarray(idx, dtype=np.int64)[:n]
    if len(idx) < 2:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        many, one = os.path.join(tmp, "many.jsonl"), os.path.join(tmp, "one.jsonl")
        write_asts(many, ds, idx, with_device=res.model.config.device)
        write_asts(one, ds, idx[:1], with_device=res.model.config.device)

        def run(path):
            t0 = time.perf_counter()
            p = subprocess.run([binary, "predict", model_path, path, "--batch", "1", "--timing"],
                               capture_output=True, text=True)
            return time.perf_counter() - t0, p

        try:
            run(one)
            t1, _ = run(one)
            tn, p = run(many)
        except OSError as e:
            log(f"tempo timing skipped: {e}")
            return None
        if p.returncode != 0:
            log(f"tempo predict failed ({p.returncode}): {p.stderr.strip()[:300]}")
            return None
        got = np.array([o["seconds"] for o in predict_lines(p.stdout)])
        want = C.predict_seconds(res.model, ds, idx, res.norm)
        max_rel = float(np.max(np.abs(got - want) / np.abs(want))) if len(got) == len(want) else None
        timing = re.search(r"timing: ([0-9.eE+-]+) us per program", p.stderr)
        return {"us_model": float(timing.group(1)) if timing else None,
                "us_cli": max(0.0, tn - t1) / (len(idx) - 1) * 1e6, "max_rel": max_rel,
                "programs": int(len(idx))}


# --------------------------------------------------------------------------------------
# Experiments
# --------------------------------------------------------------------------------------
def model_name(cfg: dict, *parts: str) -> str:
    return "-".join(["cdmpp", cfg["cdmpp"]["model"]] + [p for p in parts if p])


def per_target_models(rn: Runner, cfg: dict, targets: List[str], section: dict, split_of,
                      test_name, name_part: str = "") -> dict:
    """random and cross-model: one model per target, trained and tested on a split of that
    target's own records (split_of(ds) -> Split; test_name(target) names its test set). A
    run on some targets (--targets) keeps the others' rows in the report; of several targets
    one without usable records is skipped."""
    split_files, per_target, spans, synthetic, last_ds = [], {}, {}, False, None
    for target in targets:
        try:
            ds = load_dataset(cfg, [target], rn.out)
        except DataError as e:
            if len(targets) == 1:
                raise
            log(f"{rn.experiment}: skipping target {target}: {e}")
            continue
        split = split_of(ds)
        if not len(split.test) or not len(split.train):
            shown = {k: v for k, v in split.params.items() if k != "test_tasks"}
            raise SystemExit(f"{rn.experiment}: {target}: empty train or test set "
                             f"(counts {split.counts()}; split {shown})")
        synthetic = synthetic or is_synthetic(cfg, [target])
        sf = S.write_split(split, ds, rn.splits_dir, tag=target)
        split_files.append(sf)
        per_target[target] = {"records": len(ds), "split_file": repo_path(sf)}
        last_ds = ds
        if rn.args.splits_only:
            log(f"split {sf}: {split.counts()}")
            continue
        tc = train_config(cfg, cmd_weight=section.get("cmd_weight", 0.0))
        name = model_name(cfg, name_part, target)
        # CMD target domain: the (unlabelled) test programs
        res = C.train(ds, split.train, split.val, tc, out_dir=os.path.join(rn.out, "ckpt", name),
                      target_idx=split.test, device=False, desc=name)
        tests = {test_name(target): split.test}
        rows = rn.cdmpp_rows(res, model_name(cfg), ds, tests, extra={"target": target})
        rn.export(res, name, ds, split, sf, rows, split.test, synthetic)
        rn.baselines(ds, split.train, split.val, tests, extra={"target": target})
        spans[f"{target} training"] = measured_span(ds, np.concatenate([split.train, split.val]))
        spans[f"{target} test"] = measured_span(ds, split.test)
    if rn.args.splits_only:
        return {}
    if last_ds is None:
        raise SystemExit(f"{rn.experiment}: no usable records for any of {targets}")
    records = sum(v["records"] for v in per_target.values())
    return rn.finish(last_ds, list(per_target), split_files, synthetic, records=records,
                     measured=spans, per_target=per_target)


def exp_random(cfg: dict, args) -> dict:
    rc = cfg["random"]
    return per_target_models(
        Runner(cfg, args, "random"), cfg, list(args.targets or rc["targets"]), rc,
        lambda ds: S.random_split(ds, cfg["seed"], rc["test_fraction"], cfg["val_fraction"]),
        test_name=lambda target: target)


def exp_cross_model(cfg: dict, args) -> dict:
    mc = cfg["cross_model"]
    return per_target_models(
        Runner(cfg, args, "cross-model"), cfg, list(args.targets or mc["targets"]), mc,
        lambda ds: S.cross_model_split(ds, mc["holdout_networks"], cfg["seed"], cfg["val_fraction"]),
        test_name=lambda target: f"{target}, held-out tasks", name_part="cross-model")


def exp_cross_device(cfg: dict, args) -> dict:
    rn = Runner(cfg, args, "cross-device")
    dc = cfg["cross_device"]
    apply_split_cdmpp(cfg, "cross_device")
    train_t, test_t = list(dc["train_targets"]), list(dc["test_targets"])
    if args.targets:
        raise SystemExit("cross-device: set the targets with --set cross_device.train_targets=[...] "
                         "and cross_device.test_targets=[...]")
    targets = train_t + test_t
    ds = load_dataset(cfg, targets, rn.out)
    synthetic = is_synthetic(cfg, targets)
    split = S.cross_device_split(ds, train_t, test_t, cfg["seed"], cfg["val_fraction"],
                                 dc["fractions"], dc["selections"],
                                 selection_seeds=dc.get("selection_seeds") or [0])
    sf = S.write_split(split, ds, rn.splits_dir)
    if args.splits_only:
        log(f"split {sf}: {split.counts()}")
    lo, hi = ds.norm_stats(split.train)
    for k, v in split.variants.items():
        sel = v["finetune"]
        v["cmd_to_pool"] = ks.cmd(S.program_vectors(ds, sel, lo, hi),
                                  S.program_vectors(ds, v["test"], lo, hi))
        log(f"selection {k}: {len(sel)} records, {len(np.unique(ds.task[sel]))} tasks, "
            f"CMD to the rest {v['cmd_to_pool']:.4f}")
    if args.splits_only:
        return {}
    tc = train_config(cfg, cmd_weight=dc.get("cmd_weight", 0.0))
    name = model_name(cfg, "cross-device")
    res = C.train(ds, split.train, split.val, tc, out_dir=os.path.join(rn.out, "ckpt", name),
                  target_idx=split.test, device=True, desc=name)
    zero_tests = {f"{t} (all, zero-shot)": ds.indices_of_targets([t]) for t in test_t}
    rows = rn.cdmpp_rows(res, model_name(cfg, "device"), ds, zero_tests)
    rn.export(res, name, ds, split, sf, rows, split.test, synthetic)
    rn.baselines(ds, split.train, split.val, zero_tests)
    ft_cfg = train_config(cfg, cmd_weight=dc.get("cmd_weight", 0.0),
                          max_epochs=int(dc.get("finetune_epochs", 5)), patience=10 ** 6)
    seeds = split.params["selection_seeds"]
    # the training targets on each test target's CPU, for the few-shot recall rows
    device = {t: load_target_info(cfg["data"], t).get("device") or t.split(".")[0] for t in targets}
    sources = {t: [s for s in train_t if device[s] == device[t]] for t in test_t}
    zero_shot_done = set()
    for key, v in split.variants.items():
        # the first selection seed's rows make the table (with plots and baselines); every
        # seed's CDMPP rows feed the report's comparison of the selection methods
        first = v["selection_seed"] == seeds[0]
        at = f"{100 * v['fraction']:g}%" + (f", seed {v['selection_seed']}" if len(seeds) > 1 else "")
        common = {"target": v["target"], "fraction": v["fraction"],
                  "selection_seed": v["selection_seed"], "in_table": first}
        rest = (v["target"], v["fraction"], v["selection_seed"])
        if rest not in zero_shot_done:
            # zero-shot on exactly the records the fine-tuned variants are judged on
            zero_shot_done.add(rest)
            rn.cdmpp_rows(res, model_name(cfg, "device", "zero-shot"), ds,
                          {f"{v['target']} (not selected at {at})": v["test"]}, extra=common,
                          plot=first)
        label = f"{v['target']} ({v['method']} {at})"
        ft_train = finetune_set(split.train, v["finetune"], dc.get("finetune_target_share", 0.0))
        ft = C.train(ds, ft_train, v["finetune"], ft_cfg, out_dir=None, target_idx=v["test"],
                     device=True, init=res, desc=f"finetune {key}")
        ft.train_time_s += res.train_time_s
        rn.cdmpp_rows(ft, model_name(cfg, "device", "fine-tuned"), ds, {label: v["test"]},
                      extra=dict(common, selection=v["method"],
                                 finetune_records=int(len(v["finetune"])),
                                 finetune_tasks=int(len(np.unique(ds.task[v["finetune"]]))),
                                 selection_cmd=v["cmd_to_pool"]), plot=first)
        if first and dc.get("baselines_per_variant", True):
            rn.baselines(ds, finetune_set(split.train, v["finetune"], 0.0), split.val,
                         {label: v["test"]}, tag="+target")
        idx, pred, fitted = few_shot_recall(ds, v["finetune"], v["test"], sources[v["target"]])
        if len(idx):
            # no selection fields: the selection table reads these rows as their own column
            rn.row("recall " + ", ".join(f"{s} × {r:.3f}" for s, r in fitted),
                   f"{label}, programs a training target of its CPU timed", ds, idx, pred_s=pred,
                   extra={"target": v["target"], "fraction": v["fraction"], "in_table": first,
                          "recall_selection": v["method"], "recall_seed": v["selection_seed"],
                          "recall_from": [s for s, _ in fitted],
                          "ratios": [r for _, r in fitted]}, plot=False)
    return rn.finish(ds, targets, [sf], synthetic,
                     measured={"training": measured_span(ds, np.concatenate([split.train, split.val])),
                               "test": measured_span(ds, split.test)})


def named_split(cfg: dict, ds: Dataset, name: str, seed: int, test_fraction: float,
                experiment: str) -> Tuple[S.Split, float]:
    """A random or cross-model split of ds by name, with the CMD weight of that split's own
    experiment (0 for random)."""
    if name == "cross-model":
        return (S.cross_model_split(ds, cfg["cross_model"]["holdout_networks"], seed,
                                    cfg["val_fraction"]), cfg["cross_model"]["cmd_weight"])
    if name == "random":
        return S.random_split(ds, seed, test_fraction, cfg["val_fraction"]), 0.0
    raise SystemExit(f"{experiment}: split must be random or cross-model, got {name!r}")


def exp_same_programs(cfg: dict, args) -> dict:
    """Two targets that timed the same programs (e.g. one compile mode against another):
    one split of the programs both hold, per seed, used for both targets, and a model of each
    kind trained on each target's latencies. What differs between the two rows of a seed is
    only what the targets measured."""
    rn = Runner(cfg, args, "same-programs")
    pc = cfg["same_programs"]
    targets = list(args.targets or pc["targets"])
    if len(targets) != 2 or targets[0] == targets[1]:
        raise SystemExit(f"same-programs: takes two different targets, got {targets}")
    ds = load_dataset(cfg, targets, rn.out)
    where = [{} for _ in targets]  # program ("task#sid") -> record index, per target
    for i, key in enumerate(ds.keys):
        program, target = key.rsplit("@", 1)
        where[targets.index(target)][program] = i
    common = sorted(set(where[0]) & set(where[1]))
    if not common:
        raise SystemExit(f"same-programs: {targets[0]} and {targets[1]} hold no program in common "
                         f"after the filters ({len(where[0])} and {len(where[1])} records)")
    aligned = [np.array([w[p] for p in common], dtype=np.int64) for w in where]
    first = ds.subset(aligned[0])  # the split is drawn over one target's records
    synthetic = is_synthetic(cfg, targets)
    seeds = [args.seed] if args.seed is not None else list(pc["seeds"])
    split_files = []
    for seed in seeds:
        split, cmd_weight = named_split(cfg, first, pc["split"], seed, pc["test_fraction"],
                                        "same-programs")
        split_files.append(S.write_split(split, first, rn.splits_dir,
                                         tag=f"same-programs.seed{seed}.{targets[0]}"))
        log(f"same-programs seed {seed}: {len(common)} programs, {split.counts()}")
        if args.splits_only:
            continue
        for target, index in zip(targets, aligned):
            part = {k: index[getattr(split, k)] for k in ("train", "val", "test")}
            tc = train_config(cfg, cmd_weight=cmd_weight, seed=seed)
            name = model_name(cfg, "same-programs", target, f"seed{seed}")
            res = C.train(ds, part["train"], part["val"], tc,
                          out_dir=os.path.join(rn.out, "ckpt", name), target_idx=part["test"],
                          device=False, desc=name)
            test_set = f"{target}, seed {seed}"
            pair = {"pair_target": target, "pair_seed": seed,
                    "test_programs": S.program_digest(ds, part["test"])}
            plot = seed == seeds[0]  # one seed's scatter plots say what the others would
            rn.cdmpp_rows(res, model_name(cfg), ds, {test_set: part["test"]}, extra=pair,
                          plot=plot)
            rn.baselines(ds, part["train"], part["val"], {test_set: part["test"]},
                         xgboost_targets=("log",), mlp=False, extra=pair, plot=plot)
    if args.splits_only:
        return {}
    spans = {t: measured_span(ds, a) for t, a in zip(targets, aligned)}
    return rn.finish(ds, targets, split_files, synthetic, records=2 * len(common), measured=spans,
                     seeds=seeds)


def exp_learning_curve(cfg: dict, args) -> dict:
    """One target's cross-model (or random) split, trained on per-task subsamples of its
    training records (`learning_curve.fractions`, nested per seed; validation and test
    unchanged): how the test error falls with data, and how many training records a power
    law fitted to that fall asks for the goal (`learning_curve.goal_mape`)."""
    rn = Runner(cfg, args, "learning-curve")
    lc = cfg["learning_curve"]
    targets = list(args.targets or [lc["target"]])
    if len(targets) != 1:
        raise SystemExit(f"learning-curve: takes one target, got {targets}")
    target = targets[0]
    fractions = sorted(set(float(f) for f in lc["fractions"]))
    if len(fractions) < 2 or not all(0 < f <= 1 for f in fractions):
        raise SystemExit(f"learning-curve: fractions must be >= 2 values in (0, 1], got {lc['fractions']}")
    ds = load_dataset(cfg, [target], rn.out)
    split, cmd_weight = named_split(cfg, ds, lc["split"], cfg["seed"],
                                    cfg["random"]["test_fraction"], "learning-curve")
    test_set = f"{target}, held-out tasks" if lc["split"] == "cross-model" else target
    if not len(split.test) or not len(split.train):
        raise SystemExit(f"learning-curve: {target}: empty train or test set ({split.counts()})")
    sf = S.write_split(split, ds, rn.splits_dir, tag=target)  # the split's own file, unchanged
    log(f"learning-curve {target}: {lc['split']} split {split.counts()}, fractions {fractions}")
    if args.splits_only:
        return {}
    seeds = [args.seed] if args.seed is not None else list(lc["seeds"])
    runs = [(f, seed) for f in fractions for seed in (seeds if f < 1 else [None])]
    for fraction, seed in runs:
        train = split.train if seed is None else S.subsample_groups(ds, split.train, fraction, seed)
        part = f"f{fraction:g}" + ("" if seed is None else f"-seed{seed}")
        extra = {"target": target, "curve_fraction": fraction, "curve_seed": seed,
                 "train_records": int(len(train)),
                 "train_tasks": int(len(np.unique(ds.task[train])))}
        log(f"learning-curve {part}: {len(train)} training records of {extra['train_tasks']} tasks")
        name = model_name(cfg, "learning-curve", target, part)
        res = C.train(ds, train, split.val, train_config(cfg, cmd_weight=cmd_weight),
                      out_dir=os.path.join(rn.out, "ckpt", name), target_idx=split.test,
                      device=False, desc=name)
        tests = {f"{test_set}, {len(train):,} training records": split.test}
        rn.cdmpp_rows(res, model_name(cfg), ds, tests, extra=extra, plot=False)
        rn.baselines(ds, train, split.val, tests, xgboost_targets=("log",), mlp=False,
                     extra=extra, plot=False)
    spans = {"training": measured_span(ds, np.concatenate([split.train, split.val])),
             "test": measured_span(ds, split.test)}
    curve = {"target": target, "split": lc["split"], "goal_mape": float(lc["goal_mape"]),
             "full_train_records": int(len(split.train))}
    if rn.plots:
        path = os.path.join(rn.plots, R.slug(f"learning-curve-{target}") + ".png")
        curve["plot"] = "accuracy/" + os.path.basename(R.curve_png(path, rn.rows, curve))
    return rn.finish(ds, [target], [sf], is_synthetic(cfg, [target]), measured=spans,
                     seeds=seeds, extra={"learning_curve": curve})


def program_of(key: str) -> str:
    """"task#sid" of a record key "task#sid@target": the program, whichever target timed it."""
    return key.rsplit("@", 1)[0]


def paired_records(ds: Dataset, idx, other: str) -> Tuple[np.ndarray, np.ndarray]:
    """(mine, theirs): the records of idx whose program target `other` timed too, and
    `other`'s records of those programs, position by position (in the order of idx)."""
    theirs_of = {program_of(ds.keys[j]): int(j) for j in ds.indices_of_targets([other])}
    pairs = [(int(i), theirs_of[p]) for i in idx if (p := program_of(ds.keys[int(i)])) in theirs_of]
    if not pairs:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    mine, theirs = (np.array(v, dtype=np.int64) for v in zip(*pairs))
    return mine, theirs


def median_ratio(ds: Dataset, mine, theirs) -> float:
    """The scale between two targets' latencies of the same programs: exp(median ln ratio)."""
    return float(np.exp(np.median(np.log(ds.latency[mine] / ds.latency[theirs]))))


def few_shot_recall(ds: Dataset, selected, test, sources: List[str]):
    """Predicts test records from measurements alone: a record's latency on a source target
    that timed its program, times the median ratio of the two targets over the selected
    (labelled) records both timed. Sources are tried in the order of their MAPE over those
    selected records, best first; one that timed fewer than two of them is not used.
    Returns (records predicted, predicted seconds, [(source, ratio)] in the order tried)."""
    fitted = []
    for source in sources:
        mine, theirs = paired_records(ds, selected, source)
        if len(mine) < 2:
            continue
        ratio = median_ratio(ds, mine, theirs)
        fitted.append((M.mape(ds.latency[mine], ds.latency[theirs] * ratio), source, ratio))
    fitted.sort()
    pred: Dict[int, float] = {}
    for _, source, ratio in fitted:
        for i, j in zip(*paired_records(ds, test, source)):
            pred.setdefault(int(i), float(ds.latency[j] * ratio))
    idx = np.array(sorted(pred), dtype=np.int64)
    return idx, np.array([pred[i] for i in idx]), [(source, ratio) for _, source, ratio in fitted]


def shipped_models(paths: List[str]) -> List[dict]:
    """name, path, config and card of each converted model: the files named, and the
    *.safetensors files of the directories named."""
    from converters import safetensors_io
    files = []
    for p in paths:
        p = p if os.path.isabs(p) or os.path.exists(p) else os.path.join(ROOT, p)
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".safetensors"))
        elif os.path.isfile(p):
            files.append(p)
        else:
            raise SystemExit(f"evaluate: no model file or directory {p}")
    if not files:
        raise SystemExit(f"evaluate: no .safetensors file in {', '.join(paths)}")
    models = []
    for path in files:
        try:
            _, meta = safetensors_io.load_file(path)
            models.append({"name": os.path.basename(path)[:-len(".safetensors")], "path": path,
                           "config": json.loads(meta["tempo.config"]),
                           "card": json.loads(meta.get("tempo.card") or "{}")})
        except (OSError, ValueError, KeyError) as e:
            raise SystemExit(f"evaluate: {path}: not a converted tempo model ({e})")
    return models


def trained_programs(model: dict) -> Optional[set]:
    """The programs ("task#sid") in the training and validation parts of a model's split file,
    on whichever target; None when its card names no split file or the file is missing. The
    card names the file relative to the repository, or by its name alone for a run outside
    it (--out DIR: DIR/splits beside DIR/models)."""
    name = (model["card"].get("split") or {}).get("file")
    if not name:
        return None
    beside = os.path.join(os.path.dirname(os.path.dirname(model["path"])), "splits",
                          os.path.basename(name))
    path = next((p for p in (os.path.join(ROOT, name), beside) if os.path.isfile(p)), None)
    if not path:
        return None
    parts = S.read_members(path)
    return {program_of(k) for part in ("train", "val") for k in parts.get(part, ())}


def engine_predict(binary: str, model: dict, ds: Dataset, idx) -> np.ndarray:
    """Seconds the engine predicts for programs idx with a converted model file."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "programs.jsonl")
        write_asts(path, ds, idx, with_device=bool(model["config"].get("device")))
        p = subprocess.run([binary, "predict", model["path"], path, "--batch", "256"],
                           capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"evaluate: tempo predict {model['name']} failed ({p.returncode}): "
                         f"{p.stderr.strip()[:500]}")
    out = predict_lines(p.stdout)
    got = [o.get("id") for o in out]
    want = [ds.keys[int(i)] for i in idx]
    if got != want:
        raise SystemExit(f"evaluate: tempo predict {model['name']} answered {len(got)} programs "
                         f"for {len(want)}, or out of order")
    return np.array([o["seconds"] for o in out], dtype=np.float64)


def exp_evaluate(cfg: dict, args) -> dict:
    """Shipped models, as converted files, on a target's records through the engine, with no
    training: every program, and the programs outside the model's training split. Beside
    them, the recall bound: a program's latency on another target, scaled by the median ratio
    of the two targets' latencies over the programs both timed."""
    rn = Runner(cfg, args, "evaluate")
    ec = cfg["evaluate"]
    targets = list(args.targets or ec["targets"])
    recall = [t for t in (ec.get("recall_from") or []) if t not in targets]
    models = shipped_models(list(args.models or ec["models"]))
    if not rn.tempo:
        raise SystemExit("evaluate: needs the tempo binary (build it, or pass --tempo PATH)")
    datasets: Dict[tuple, Dataset] = {}
    seen = {m["path"]: trained_programs(m) for m in models}  # read each split file once

    def dataset(features: str, config_name: str) -> Dataset:
        key = (features, config_name)
        if key not in datasets:
            c = copy.deepcopy(cfg)
            c["cdmpp"].update(features=features, model=config_name)
            datasets[key] = load_dataset(c, targets + recall, rn.out)
        return datasets[key]

    ds, spans, records = None, {}, 0
    for target in targets:
        for m in models:
            ds = dataset(m["config"].get("features", "ansor"), m["card"].get("config_name", "compact"))
            idx = ds.indices_of_targets([target])
            if not len(idx):
                raise SystemExit(f"evaluate: no usable records of {target} after the filters")
            pred = engine_predict(rn.tempo, m, ds, idx)
            card = m["card"]
            common = {"target": target, "model_file": repo_path(m["path"]),
                      "trained_on": (card.get("data") or {}).get("targets"),
                      "model_split": (card.get("split") or {}).get("name")}
            rn.row(m["name"], f"{target}, every program", ds, idx, pred_s=pred, extra=common)
            if seen[m["path"]] is not None:
                unseen = np.array([program_of(ds.keys[i]) not in seen[m["path"]] for i in idx])
                if unseen.any():
                    rn.row(m["name"], f"{target}, programs outside its {common['model_split']} "
                           f"split's training part", ds, idx[unseen], pred_s=pred[unseen],
                           extra=common, plot=False)
                else:
                    log(f"evaluate: {m['name']} holds all {len(idx)} programs of {target} in its "
                        f"training split; no row for unseen programs")
        records += len(idx)
        spans[target] = measured_span(ds, idx)
        for other in recall:
            mine, theirs = paired_records(ds, ds.indices_of_targets([target]), other)
            if len(mine) < 2:
                log(f"evaluate: {other} timed {len(mine)} of {target}'s programs; no recall row")
                continue
            ratio = median_ratio(ds, mine, theirs)
            rn.row(f"recall {other} × {ratio:.3f}", f"{target}, programs {other} timed too", ds,
                   mine, pred_s=ds.latency[theirs] * ratio,
                   extra={"target": target, "recall_from": other, "ratio": ratio}, plot=False)
    split_files = sorted({m["card"]["split"]["file"] for m in models
                          if (m["card"].get("split") or {}).get("file")})
    return rn.finish(ds, targets, split_files, False, records=records, measured=spans)


def finetune_set(train: np.ndarray, selected: np.ndarray, share: float) -> np.ndarray:
    """The fine-tuning records: the source training records plus the selected target
    records, repeated so that they make up about `share` of each epoch (0: once each). A few
    dozen records among thousands would otherwise hardly move the model."""
    reps = 1
    if 0 < share < 1 and len(selected):
        reps = max(1, round(share * len(train) / ((1 - share) * len(selected))))
    return np.concatenate([train] + [selected] * reps)


def openblas_dir() -> Optional[str]:
    """Debian's OpenBLAS directory (holding a libblas.so.3), if installed."""
    import glob
    for d in sorted(glob.glob("/usr/lib/*/openblas-pthread")):
        if os.path.exists(os.path.join(d, "libblas.so.3")):
            return d
    return None


def reexec_with_openblas(argv: List[str]) -> None:
    """Debian's torch/numpy call the system libblas.so.3, which may be the slow reference
    BLAS (~1 GFLOP/s). With `--blas openblas` (the default when OpenBLAS is installed) the
    run re-executes itself with OpenBLAS's directory first on LD_LIBRARY_PATH, for this process
    only (no system setting changes); OPENBLAS_NUM_THREADS follows --threads."""
    if "--blas" in argv and argv[argv.index("--blas") + 1:][:1] == ["system"]:
        return
    if os.environ.get("TEMPO_TRAINING_BLAS"):
        return
    d = openblas_dir()
    if not d:
        return
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = d + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["TEMPO_TRAINING_BLAS"] = "openblas"
    threads = "1"
    if "--threads" in argv and argv.index("--threads") + 1 < len(argv):
        threads = argv[argv.index("--threads") + 1]
    env.setdefault("OPENBLAS_NUM_THREADS", threads)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "training.run"] + argv, env)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m training.run",
                                 description="Train and evaluate tempo's cost models on one split.")
    ap.add_argument("experiment", choices=EXPERIMENTS)
    ap.add_argument("--quick", action="store_true", help="smoke run: tiny model, few steps")
    ap.add_argument("--data", help="data directory (default: config 'data')")
    ap.add_argument("--out", help="output directory (default training/runs/<experiment>-<model>)")
    ap.add_argument("--config", default=DEFAULT_CONFIG)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--model", choices=["compact", "paper"])
    ap.add_argument("--targets", nargs="+",
                    help="random: targets; cross-model: the target; same-programs: the two targets; "
                         "evaluate: the targets whose records the models predict")
    ap.add_argument("--models", nargs="+",
                    help="evaluate: converted model files or directories of them (default weights)")
    ap.add_argument("--tempo", help="the tempo binary (featurize, timing)")
    ap.add_argument("--threads", type=int)
    ap.add_argument("--noise-max-cv", type=float, dest="noise_max_cv",
                    help="drop records with std/mean above this (negative: keep all)")
    ap.add_argument("--noise-stat", choices=["std", "mad"], dest="noise_stat",
                    help="noise measure for --noise-max-cv: std/mean (CDMPP) or MAD/median of costs")
    ap.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="override a config key, e.g. cdmpp.lr=1e-4 or mlp.max_epochs=50")
    ap.add_argument("--report", help="results dir (default bench/results; --quick: OUT/report)")
    ap.add_argument("--no-report", action="store_true")
    ap.add_argument("--ship", help="copy converted CDMPP weights + cards here (e.g. weights)")
    ap.add_argument("--splits-dir", help="where splits are written (default training/splits)")
    ap.add_argument("--skip-baselines", action="store_true")
    ap.add_argument("--splits-only", action="store_true",
                    help="load the records, write the split(s), print their counts, stop")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--resume", action="store_true",
                    help="continue CDMPP training from OUT/ckpt/<model>/last.pt when present")
    ap.add_argument("--blas", choices=["openblas", "system"], default="openblas",
                    help="run under Debian's OpenBLAS when installed (default; per process) "
                         "or the system libblas")
    args = ap.parse_args(argv)
    cfg = load_config(args)
    cfg["progress"] = not args.no_progress
    cfg["blas"] = os.environ.get("TEMPO_TRAINING_BLAS", "system")
    torch.set_num_threads(max(1, int(cfg["threads"])))
    t0 = time.time()
    fn = {"random": exp_random, "cross-model": exp_cross_model, "cross-device": exp_cross_device,
          "same-programs": exp_same_programs, "learning-curve": exp_learning_curve,
          "evaluate": exp_evaluate}
    fn[args.experiment](cfg, args)
    log(f"{args.experiment}: done in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    reexec_with_openblas(sys.argv[1:])
    sys.exit(main())
