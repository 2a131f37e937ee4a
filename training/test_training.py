"""Tests of training/: metrics, splits, CMD, KMeans selection, transforms, data loading, and an
end-to-end --quick run on a SYNTHETIC dataset written to a temporary directory.

    python3 -m unittest training.test_training      (from the repository root)
"""
import gzip
import io
import itertools
import json
import math
import os
import re
import stat
import sys
import tempfile
import time
import unittest
from contextlib import redirect_stderr

import numpy as np
import torch

from converters import cdmpp_torch as ct
from converters import random_programs as rp
from converters import safetensors_io
from converters.reference_engine import ReferenceEngine
from training import cdmpp as C
from training import kmeans_sampling as ks
from training import metrics as M
from training import report as R
from training import run
from training import splits as S
from training import data as D
from training.synthetic import SYNTHETIC_TARGETS, write_synthetic_data

torch.set_num_threads(1)


def quiet(fn, *a, **kw):
    with redirect_stderr(io.StringIO()):
        return fn(*a, **kw)


class _SyntheticData:
    """One synthetic data dir per test class (cheap: ~1000 records)."""
    tmp = None
    data = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="tempo-synthetic-")
        cls.data = os.path.join(cls.tmp.name, "data")
        cls.summary = write_synthetic_data(cls.data, n_tasks=10, per_task=24, seed=1)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def load(self, targets=SYNTHETIC_TARGETS[:1], **kw):
        kw.setdefault("noise_max_cv", 0.01)
        return quiet(D.load_records, self.data, list(targets), cache_dir=None, **kw)

    def script(self, name: str, python: str) -> str:
        """An executable Python script in the class's temporary directory (a stand-in binary)."""
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write("#!" + sys.executable + "\n" + python)
        os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
        return path


# --------------------------------------------------------------------------------------
class Metrics(unittest.TestCase):
    def test_mape_rmse_hand_values(self):
        t, p = [1.0, 2.0, 4.0], [1.5, 1.0, 4.0]
        self.assertAlmostEqual(M.mape(t, p), (0.5 + 0.5 + 0.0) / 3)
        want = math.sqrt((math.log(1.5) ** 2 + math.log(0.5) ** 2) / 3)
        self.assertAlmostEqual(M.rmse_log(t, p), want)

    @staticmethod
    def tau_reference(a, b):
        """tau-b by the textbook double loop (no scipy)."""
        a, b = [float(v) for v in a], [float(v) for v in b]
        n = len(a)
        c = d = ta = tb = 0
        for i, j in itertools.combinations(range(n), 2):
            sa = (a[i] > a[j]) - (a[i] < a[j])
            sb = (b[i] > b[j]) - (b[i] < b[j])
            if sa == 0:
                ta += 1
            if sb == 0:
                tb += 1
            if sa * sb > 0:
                c += 1
            elif sa * sb < 0:
                d += 1
        n0 = n * (n - 1) / 2
        return (c - d) / math.sqrt((n0 - ta) * (n0 - tb))

    def test_kendall_tau(self):
        self.assertAlmostEqual(M.kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]), 4 / 6)
        self.assertAlmostEqual(M.kendall_tau([1, 2, 3], [3, 2, 1]), -1.0)
        self.assertTrue(math.isnan(M.kendall_tau([1, 1, 1], [1, 2, 3])))
        rng = np.random.default_rng(0)
        for n in (2, 5, 17, 60):
            a = rng.integers(0, 6, n).astype(float)      # with ties
            b = a + rng.integers(-3, 4, n)
            if len(set(a)) > 1 and len(set(b)) > 1:
                self.assertAlmostEqual(M.kendall_tau(a, b, chunk=7), self.tau_reference(a, b), 12)

    def test_top_k_and_evaluate_per_task(self):
        true = np.array([3.0, 1.0, 2.0, 10.0, 20.0])
        pred = np.array([1.0, 3.0, 2.0, 5.0, 4.0])     # task 0: picks 3.0 first; task 1: picks 20
        tasks = np.array([0, 0, 0, 1, 1])
        self.assertAlmostEqual(M.top_k_score(true[:3], pred[:3], 1), 1.0 / 3.0)
        self.assertAlmostEqual(M.top_k_score(true[:3], pred[:3], 2), 1.0 / 2.0)
        self.assertAlmostEqual(M.top_k_score(true[:3], pred[:3], 5), 1.0)
        ev = M.evaluate(true, tasks, pred_s=pred)
        self.assertAlmostEqual(ev["top1"], (1 / 3 + 10 / 20) / 2)
        self.assertIsNone(ev["top5"])       # no task has 10 records
        self.assertEqual((ev["top1_tasks"], ev["top5_tasks"]), (2, 0))
        many = np.arange(1.0, 11.0)         # 10 records; the 5 predicted fastest miss the best
        ev10 = M.evaluate(many, np.zeros(10), pred_s=many[::-1].copy())
        self.assertAlmostEqual(ev10["top5"], 1.0 / 6.0)
        self.assertEqual(ev10["top5_tasks"], 1)
        self.assertIsNone(M.evaluate(many[:9], np.zeros(9), pred_s=many[:9])["top5"])
        tau0 = M.kendall_tau(true[:3], pred[:3])
        self.assertAlmostEqual(ev["kendall_tau"], (tau0 + -1.0) / 2)
        self.assertEqual((ev["records"], ev["tasks"]), (5, 2))
        # ranking-only model: rank_key, no seconds
        ev2 = M.evaluate(true, tasks, rank_key=-1.0 / pred)
        self.assertIsNone(ev2["mape"])
        self.assertAlmostEqual(ev2["top1"], ev["top1"])


# --------------------------------------------------------------------------------------
class PowerLaw(unittest.TestCase):
    def test_fit_recovers_the_law_and_the_records_for_a_goal(self):
        n = np.array([1000.0, 2000.0, 4000.0, 8000.0])
        fit = M.power_law_fit(n, 3.0 * n ** -0.25)
        self.assertAlmostEqual(fit["scale"], 3.0, places=9)
        self.assertAlmostEqual(fit["exponent"], 0.25, places=9)
        self.assertAlmostEqual(M.records_to_reach(fit, 0.3), 10.0 ** 4, delta=1e-6)
        self.assertIsNone(M.records_to_reach(M.power_law_fit(n, 0.1 * n ** 0.1), 0.05))
        for records, error in (([1000.0], [0.5]), ([1000.0, 1000.0], [0.5, 0.4]),
                               ([1000.0, 2000.0], [0.5, 0.0]), ([0.0, 2000.0], [0.5, 0.4])):
            with self.assertRaisesRegex(ValueError, "power_law_fit needs"):
                M.power_law_fit(records, error)


class TrainingSchedule(unittest.TestCase):
    def test_small_data_scales_batch_cycle_and_patience(self):
        cfg = C.TrainConfig()                       # batch 600, half-cycle 2000, patience 10
        small = C.fit_schedule(cfg, 1640)
        self.assertEqual((small.batch_size, small.steps_per_epoch), (102, 17))
        self.assertEqual(small.clr_step_size_up, 8 * 17)
        self.assertEqual(small.patience, 32)        # two full cycles of 16 epochs
        tiny = C.fit_schedule(cfg, 100)             # the batch stops shrinking at 32
        self.assertEqual((tiny.batch_size, tiny.steps_per_epoch), (32, 4))
        # past 16 batches of 600 the batch stays, but a 2000-batch half-cycle would span 105
        # epochs: it is capped at 8 epochs, patience at two full cycles
        mid = C.fit_schedule(cfg, 10879)
        self.assertEqual((mid.batch_size, mid.steps_per_epoch), (600, 19))
        self.assertEqual((mid.clr_step_size_up, mid.patience), (8 * 19, 32))
        big = C.fit_schedule(cfg, 600 * 1000 + 1)   # Tenset-sized: the tuned values; the
        self.assertEqual((big.batch_size, big.steps_per_epoch), (600, 1000))  # 1-row tail dropped
        self.assertEqual((big.clr_step_size_up, big.patience), (2000, 10))
        off = C.fit_schedule(C.TrainConfig(min_steps_per_epoch=0), 1640)
        self.assertEqual((off.batch_size, off.steps_per_epoch, off.clr_step_size_up,
                          off.patience), (600, 3, 2000, 10))


# --------------------------------------------------------------------------------------
class Cmd(unittest.TestCase):
    def test_cmd_hand_computation(self):
        # 1-D: x = {0, 2}, y = {1, 1}: equal means; central moments of x: 1, 0, 1, 0; of y: 0
        x, y = np.array([[0.0], [2.0]]), np.array([[1.0], [1.0]])
        self.assertAlmostEqual(ks.cmd(x, y, 5), 2.0)
        self.assertAlmostEqual(float(C.cmd_loss(torch.tensor(x), torch.tensor(y), 5)), 2.0)
        # 2-D with a mean shift: x = {(0,0),(2,2)}, y = {(1,3),(1,3)}
        x2, y2 = np.array([[0.0, 0.0], [2.0, 2.0]]), np.array([[1.0, 3.0], [1.0, 3.0]])
        want = math.sqrt(0 + 4) + math.sqrt(2) + 0 + math.sqrt(2) + 0
        self.assertAlmostEqual(ks.cmd(x2, y2, 5), want)
        self.assertAlmostEqual(float(C.cmd_loss(torch.tensor(x2), torch.tensor(y2), 5)), want)
        self.assertAlmostEqual(ks.cmd(x2, y2, 1), 2.0)   # K = 1: the mean term only
        rng = np.random.default_rng(0)
        a, b = rng.normal(size=(50, 4)), rng.normal(1, 2, size=(70, 4))
        self.assertAlmostEqual(float(C.cmd_loss(torch.tensor(a), torch.tensor(b))), ks.cmd(a, b), 10)
        self.assertAlmostEqual(ks.cmd(a, a), 0.0)


# --------------------------------------------------------------------------------------
class KMeansSelection(unittest.TestCase):
    def test_invariants(self):
        rng = np.random.default_rng(0)
        task_ids = np.repeat(np.arange(12), 10)
        x = rng.normal(size=(len(task_ids), 5)) + task_ids[:, None] * 0.5
        order = quiet(ks.kmeans_task_order, x, task_ids, 4, seed=3)
        self.assertEqual(sorted(order), list(range(12)))          # every task once
        for budget in (1, 7, 25, 120):
            sel = quiet(ks.kmeans_select, x, task_ids, budget, seed=3)
            self.assertEqual(len(sel), budget)
            self.assertEqual(len(set(sel.tolist())), budget)
            self.assertTrue(((sel >= 0) & (sel < len(x))).all())
            # whole tasks in pick order, only the last one cut
            picked = list(dict.fromkeys(task_ids[sel].tolist()))
            k = math.ceil(budget / 10)
            order_k = quiet(ks.kmeans_task_order, x, task_ids, k, seed=3)
            self.assertEqual(picked, order_k[:len(picked)])
            for t in picked[:-1]:
                self.assertEqual(int((task_ids[sel] == t).sum()), 10)
        a = quiet(ks.kmeans_select, x, task_ids, 25, seed=3)
        b = quiet(ks.kmeans_select, x, task_ids, 25, seed=3)
        np.testing.assert_array_equal(a, b)
        for budget in (1, 15, 120):
            sel = ks.random_task_select(task_ids, budget, seed=2)
            self.assertEqual(len(set(sel.tolist())), budget)
            picked = list(dict.fromkeys(task_ids[sel].tolist()))
            for t in picked[:-1]:
                self.assertEqual(int((task_ids[sel] == t).sum()), 10)
        self.assertNotEqual(ks.random_task_select(task_ids, 30, seed=2).tolist(),
                            ks.random_task_select(task_ids, 30, seed=5).tolist())
        r = ks.random_select(120, 12, seed=1)
        self.assertEqual(len(set(r.tolist())), 12)
        np.testing.assert_array_equal(r, ks.random_select(120, 12, seed=1))
        self.assertEqual(ks.budget_for(1000, 0.01), 10)
        self.assertEqual(ks.budget_for(50, 0.01), 1)

    def test_picks_one_task_per_separated_cluster(self):
        rng = np.random.default_rng(1)
        centres = np.array([[0, 0], [100, 0], [0, 100]], dtype=float)
        task_ids = np.repeat(np.arange(9), 8)                     # tasks 0-2 | 3-5 | 6-8
        sizes = [3, 2, 1]                                         # cluster 0 is the largest
        x = np.concatenate([centres[t // 3] + rng.normal(size=(8, 2)) for t in range(9)])
        keep = np.concatenate([np.flatnonzero(task_ids // 3 == c)[:8 * sizes[c]] for c in range(3)])
        order = quiet(ks.kmeans_task_order, x[keep], task_ids[keep], 3, seed=0)
        clusters = [t // 3 for t in order[:3]]
        self.assertEqual(clusters, [0, 1, 2])                     # largest cluster first


# --------------------------------------------------------------------------------------
class Transforms(unittest.TestCase):
    def test_boxcox_matches_sklearn_and_round_trips(self):
        from sklearn.preprocessing import PowerTransformer
        rng = np.random.default_rng(0)
        lat = np.exp(rng.normal(-9, 1.5, 500))
        tr = D.fit_output_transform(lat, "boxcox")
        pt = PowerTransformer(method="box-cox").fit(lat.reshape(-1, 1))
        z = tr.forward(torch.from_numpy(lat)).numpy()
        np.testing.assert_allclose(z, pt.transform(lat.reshape(-1, 1))[:, 0], rtol=1e-9, atol=1e-9)
        back = tr.inverse(torch.from_numpy(z)).numpy()
        np.testing.assert_allclose(back, lat, rtol=1e-9)
        np.testing.assert_allclose(back, pt.inverse_transform(z.reshape(-1, 1))[:, 0], rtol=1e-9)
        for kind in ("log", "none"):
            t2 = D.fit_output_transform(lat, kind)
            np.testing.assert_allclose(t2.inverse(t2.forward(torch.from_numpy(lat))).numpy(), lat,
                                       rtol=1e-9)

    def test_trained_bn_folds_into_the_converted_file(self):
        """A model after a few training steps (non-trivial BN statistics) converted through
        converters/convert.py predicts the same seconds in the numpy reference engine."""
        rng = np.random.default_rng(0)
        cfg = ct.compact_config(d_model=16, ffn_dim=16, layers=1, embed_dims=[16, 8],
                                decoder_dims=[8], max_leaves=6, device=True, device_dims=[8, 8])
        prof = rp.random_profile(rng, 164)
        asts = [rp.random_program(rng, prof, int(rng.integers(1, 7)), device=True) for _ in range(40)]
        lo, hi = prof.norm_min, prof.norm_max
        model = ct.CdmppModel(cfg, ct.OutputTransform("boxcox", 0.1, -5.0, 2.0))
        x, mask, dev = ct.preprocess(asts, lo, hi, cfg, dtype=torch.float32)
        opt = torch.optim.Adam(model.parameters(), 1e-2)
        model.train()
        for _ in range(5):
            loss = (model(x, mask, dev) - 1.0).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        res = C.TrainResult(model=model, norm=(lo, hi), transform=model.output_transform,
                            history=[], best_epoch=0, best_val=0.0, select_on="mape",
                            train_time_s=0.0, steps=5, parameters=ct.count_parameters(model),
                            schedule={})
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.safetensors")
            C.export(res, path, {"test": True}, selftest=2)
            tensors, meta = safetensors_io.load_file(path)
            self.assertNotIn("embed.0.bn.running_mean", tensors)
            self.assertIn("shared_bn.scale", tensors)
            eng = ReferenceEngine(path)
            with torch.no_grad():
                want = model.double().predict_seconds(x.double(), mask, dev.double()).numpy()
            got = np.array([eng.predict(a)[1] for a in asts[:8]])
            np.testing.assert_allclose(got, want[:8], rtol=1e-4)


# --------------------------------------------------------------------------------------
class Data(_SyntheticData, unittest.TestCase):
    def target_dir(self, name: str) -> str:
        """A data directory with one target `t` (its file and an empty record folder)."""
        d = os.path.join(self.tmp.name, name)
        os.makedirs(os.path.join(d, "targets"))
        os.makedirs(os.path.join(d, "t"))
        with open(os.path.join(d, "targets", "t.json"), "w") as f:
            json.dump({"cdmpp_device_features": [1] * 8}, f)
        return d

    def test_loading_filters_and_files(self):
        ds = self.load()
        st = ds.stats
        self.assertEqual(st["read"], 240)          # the unfinished line and failures are not read
        self.assertGreater(st["dropped_noisy"], 0)
        self.assertEqual(len(ds), st["read"] - st["dropped_noisy"] - st["dropped_small_task"])
        self.assertEqual(len(set(ds.keys)), len(ds))
        all_ = self.load(noise_max_cv=None)
        self.assertEqual(len(all_), 240)
        self.assertIn("resnet_50", ds.task_networks[ds.task_names[0]])
        capped = self.load(max_leaves=3)
        self.assertLessEqual(int(capped.n_leaves.max()), 3)
        exact = self.load(exact_leaves=2)
        self.assertTrue((exact.n_leaves == 2).all())
        # a truncated gzip member at the end (shard being compressed): complete lines kept
        d = self.target_dir("trunc")
        src = os.path.join(self.data, SYNTHETIC_TARGETS[0], "records-1-0001.jsonl")
        with open(src, "rb") as f:
            blob = gzip.compress(f.read())
        with open(os.path.join(d, "t", "records-0.jsonl.gz"), "wb") as f:
            f.write(blob[: len(blob) // 2])
        part = quiet(D.load_records, d, ["t"], noise_max_cv=None)
        self.assertGreater(len(part), 0)

    def test_a_retimed_program_counts_with_its_latest_timing(self):
        d = self.target_dir("retimed")
        src = os.path.join(self.data, SYNTHETIC_TARGETS[0], "records-1-0001.jsonl")
        with open(src) as f:
            lines = [json.loads(l) for l in f if l.endswith("\n")]
        first, other = lines[0], lines[1:]
        later = dict(first, measured_at="2026-12-03T02:00:00Z",
                     latency_s=dict(first["latency_s"], mean=first["latency_s"]["mean"] * 3))
        first = dict(first, measured_at="2026-12-02T16:00:00Z")
        # the re-timing sits in an earlier file than the original: time decides, not order
        for name, rows in (("records-0.jsonl", [later]), ("records-1.jsonl", [first] + other)):
            with open(os.path.join(d, "t", name), "w") as f:
                f.writelines(json.dumps(r) + "\n" for r in rows)
        ds = D.load_records(d, ["t"], noise_max_cv=None)
        self.assertEqual(ds.stats["superseded_by_retiming"], 1)
        self.assertEqual(len(ds), len(lines))
        key = f"{first['task']}#{first['sid']}@t"
        self.assertAlmostEqual(ds.latency[ds.keys.index(key)], later["latency_s"]["mean"])

    def test_feature_sets(self):
        ds = self.load()                                 # synthetic ASTs: Ansor's 164 columns
        with self.assertRaisesRegex(D.DataError, "rows have 164 values, expected 174 "
                                                 "\\(feature set ansor\\+loops\\)"):
            self.load(feature_set="ansor+loops")
        with self.assertRaisesRegex(D.DataError, "unknown feature set 'tvm'"):
            self.load(feature_set="tvm")
        cut = ds.first_columns(24)
        np.testing.assert_array_equal(cut.rows, ds.rows[:, :24])
        self.assertIs(ds.first_columns(164), ds)
        np.testing.assert_array_equal(cut.pack_sum([3]), ds.pack_sum([3])[:, :24])
        tc = C.TrainConfig(features="ansor+loops", max_steps=1, progress=False)
        self.assertEqual((tc.model_config().feature_dim, tc.model_config().features),
                         (174, "ansor+loops"))
        with self.assertRaisesRegex(ValueError, "rows have 164 columns, the model takes 174"):
            C.train(ds, np.arange(10), np.arange(10, 20), tc)

    def test_noise_measures(self):
        ls = {"mean": 2.0, "std": 0.5, "costs": [1.0, 1.0, 1.1, 0.9, 5.0]}
        self.assertAlmostEqual(D.noise_of(ls, "std"), 0.25)
        self.assertAlmostEqual(D.noise_of(ls, "mad"), 0.1)       # median 1.0, |dev| median 0.1
        self.assertAlmostEqual(D.noise_of({"mean": 2.0, "std": 0.5}, "mad"), 0.25)
        ds = self.load(noise_max_cv=0.01, noise_stat="mad")     # synthetic costs are constant
        self.assertEqual(ds.stats["dropped_noisy"], 0)

    def test_batch_equals_reference_preprocess(self):
        ds = self.load()
        lo, hi = ds.norm_stats(np.arange(len(ds)))
        idx = np.array([0, 5, 17, 40, 41])
        asts = [ds.ast(int(i), with_device=True) for i in idx]
        cfg = ct.compact_config(max_leaves=16, device=True, device_dims=[64, 64], pe_scale=1.0)
        xr, mr, dr = ct.preprocess(asts, lo, hi, cfg, dtype=torch.float64)
        x, m, dv = ds.batch(idx, lo, hi, 16, device=True, dtype=torch.float64)
        np.testing.assert_allclose(x.numpy(), xr.numpy(), atol=1e-12)
        np.testing.assert_array_equal(m.numpy(), mr.numpy())
        np.testing.assert_allclose(dv.numpy(), dr.numpy())
        cfg = ct.compact_config(max_leaves=16, pe_scale=0.3)
        xr = ct.preprocess(asts, lo, hi, cfg, dtype=torch.float64)[0]
        x = C.model_inputs(ct.CdmppModel(cfg, ct.OutputTransform()), ds, idx, (lo, hi))[0]
        L = x.shape[1]                       # mean pooling pads to the batch's most leaves
        np.testing.assert_allclose(x.numpy(), xr.numpy()[:, :L], atol=1e-6)   # float32
        self.assertFalse(xr.numpy()[:, L:].any())
        sub = ds.subset(idx)
        np.testing.assert_array_equal(sub.batch(np.arange(5), lo, hi, 16)[0].numpy(),
                                      ds.batch(idx, lo, hi, 16)[0].numpy())
        np.testing.assert_allclose(ds.pack_sum(idx[:1]),
                                   np.asarray(asts[0]["features"]).sum(0, keepdims=True), rtol=1e-6)

    def test_featurize_fallback_and_missing_binary(self):
        # records without "ast": a missing binary is a clear error ...
        d = os.path.join(self.tmp.name, "noast")
        write_synthetic_data(d, n_tasks=3, per_task=6, targets=["x.t1"], seed=2, with_ast=False)
        with self.assertRaises(D.DataError) as e:
            quiet(D.load_records, d, ["x.t1"], tempo_binary=os.path.join(d, "no-such-tempo"))
        self.assertIn("tempo binary was not found", str(e.exception))
        # ... and a binary that writes `lab featurize` output is joined on task#sid
        withast = os.path.join(self.tmp.name, "withast")
        write_synthetic_data(withast, n_tasks=3, per_task=6, targets=["x.t1"], seed=2)
        fake = self.script("fake-tempo",
                           "import sys, json\n"
                           "sys.path.insert(0, %r)\n"
                           "from training.data import record_files, iter_jsonl\n"
                           "a = sys.argv; out = a[a.index('-o') + 1]\n"
                           "with open(out, 'w') as o:\n"
                           "    for p in record_files(%r):\n"
                           "        for _, r in iter_jsonl(p):\n"
                           "            ast = dict(r['ast'], id=r['task'] + '#' + r['sid'])\n"
                           "            o.write(json.dumps(ast) + '\\n')\n"
                           % (os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              os.path.join(withast, "x.t1")))
        cache = os.path.join(self.tmp.name, "cache")
        ds = quiet(D.load_records, d, ["x.t1"], tempo_binary=fake, cache_dir=cache, noise_max_cv=None)
        ref = quiet(D.load_records, withast, ["x.t1"], noise_max_cv=None)
        self.assertEqual(ds.stats["featurized"], len(ds))
        np.testing.assert_array_equal(ds.rows, ref.rows)
        self.assertEqual(len(os.listdir(cache)), 1)
        # ... and one that succeeds without writing its output is named as such, not as a
        # failed status (what a second run racing on a shared temporary file used to see)
        silent = self.script("silent-tempo", "import sys\nsys.exit(0)\n")
        with self.assertRaises(D.DataError) as e:
            quiet(D.load_records, d, ["x.t1"], tempo_binary=silent,
                  cache_dir=os.path.join(self.tmp.name, "cache-silent"))
        self.assertIn("exited with status 0 but wrote no", str(e.exception))
        self.assertIn(f".{os.getpid()}.tmp", str(e.exception))
        # ... and one that fails half-way leaves no partial output in the cache
        partial = self.script("partial-tempo",
                              "import sys\n"
                              "a = sys.argv\n"
                              "if '--help' in a: sys.exit(0)\n"
                              "open(a[a.index('-o') + 1], 'w').write('{\"features\": [')\n"
                              "sys.exit(3)\n")
        cache_partial = os.path.join(self.tmp.name, "cache-partial")
        with self.assertRaises(D.DataError) as e:
            quiet(D.load_records, d, ["x.t1"], tempo_binary=partial, cache_dir=cache_partial)
        self.assertIn("failed with status 3", str(e.exception))
        self.assertEqual(os.listdir(cache_partial), [])

    def test_lab_records_through_real_featurize(self):
        """Records in the lab's schema (from `tempo lab sample`, ast removed) get their ASTs
        from the real `tempo lab featurize`, joined by record order when sids differ."""
        import shutil
        import subprocess
        binary = D.find_tempo_binary(need_lab=True)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        tjson = os.path.join(root, "data", "targets", "epyc-zen3.avx2.t1.json")
        if binary is None or not os.path.exists(tjson):
            self.skipTest("needs a built tempo with `lab` and data/targets")
        d = os.path.join(self.tmp.name, "lab")
        os.makedirs(os.path.join(d, "targets"))
        os.makedirs(os.path.join(d, "epyc-zen3.avx2.t1"))
        shutil.copy(tjson, os.path.join(d, "targets"))
        out = subprocess.run([binary, "lab", "sample", "--task", "1", "-n", "3"],
                             capture_output=True, text=True, check=True).stdout
        recs, want = [], []
        for k, line in enumerate(out.splitlines()):
            r = json.loads(line)
            want.append(r.pop("ast"))
            r.update(sid=f"s{k}", c_hash="x", target="epyc-zen3.avx2.t1",
                     latency_s={"mean": 1e-3, "std": 0.0, "min": 1e-3, "repeats": 3})
            recs.append(json.dumps(r))
        with open(os.path.join(d, "epyc-zen3.avx2.t1", "records-1-0000.jsonl"), "w") as f:
            f.write("\n".join(recs) + "\n")
        ds = quiet(D.load_records, d, ["epyc-zen3.avx2.t1"], tempo_binary=binary,
                   cache_dir=os.path.join(d, "cache"))
        self.assertEqual(len(ds), 3)
        for i in range(3):
            np.testing.assert_allclose(ds.rows[ds.offsets[i]:ds.offsets[i + 1]],
                                       np.asarray(want[i]["features"], dtype=np.float32))
            self.assertEqual(ds.ast(i)["tree"], want[i]["tree"])


# --------------------------------------------------------------------------------------
class Splits(_SyntheticData, unittest.TestCase):
    def test_random_split(self):
        ds = self.load()
        a = S.random_split(ds, seed=7)
        parts = [a.train, a.val, a.test]
        allidx = np.concatenate(parts)
        self.assertEqual(len(allidx), len(ds))
        self.assertEqual(len(np.unique(allidx)), len(ds))
        for t in range(len(ds.task_names)):
            n = int((ds.task == t).sum())
            self.assertEqual(int((ds.task[a.test] == t).sum()), int(round(0.2 * n)))
        b = S.random_split(ds, seed=7)
        for x, y in zip(parts, [b.train, b.val, b.test]):
            np.testing.assert_array_equal(x, y)
        c = S.random_split(ds, seed=8)
        self.assertFalse(np.array_equal(a.test, c.test))
        # a group's split does not depend on the other records present
        sub = ds.subset(np.flatnonzero(ds.task != 0))
        d = S.random_split(sub, seed=7)
        self.assertEqual({sub.keys[i] for i in d.test},
                         {ds.keys[i] for i in a.test if ds.task[i] != 0})
        # written down and read back
        with tempfile.TemporaryDirectory() as tmp:
            path = S.write_split(a, ds, tmp, tag="x")
            mem = S.read_members(path)
            self.assertEqual(mem["test"], {ds.keys[i] for i in a.test})
            self.assertEqual(json.load(open(path))["seed"], 7)
            members = path.replace(".json", ".members.json.gz")
            first = open(members, "rb").read()
            time.sleep(1.1)       # gzip stamps seconds: a later write must not differ
            S.write_split(a, ds, tmp, tag="x")
            self.assertEqual(open(members, "rb").read(), first)

    def test_cross_model_split(self):
        ds = self.load()
        hold = ["resnet_50", "bert_tiny"]
        sp = S.cross_model_split(ds, hold, seed=0)
        for i in np.concatenate([sp.train, sp.val]):
            self.assertFalse(set(ds.task_networks[ds.task_names[ds.task[i]]]) & set(hold))
        test_tasks = {ds.task_names[t] for t in ds.task[sp.test]}
        self.assertEqual(test_tasks, set(S.holdout_tasks(ds, hold)))
        self.assertTrue(test_tasks)
        self.assertEqual(len(sp.train) + len(sp.val) + len(sp.test), len(ds))
        np.testing.assert_array_equal(sp.val, S.cross_model_split(ds, hold, seed=0).val)

    def test_subsample_keeps_every_group_and_nests(self):
        ds = self.load()
        train = S.random_split(ds, seed=0).train
        groups = S._groups(ds, train)
        larger = train
        for fraction in (1.0, 0.5, 0.25, 0.01):
            sub = S.subsample_groups(ds, train, fraction, seed=3)
            self.assertTrue(set(sub) <= set(larger), fraction)  # nested
            for g, members in groups.items():
                kept = np.intersect1d(sub, members)
                self.assertEqual(len(kept), max(1, int(round(fraction * len(members)))), g)
            larger = sub
        np.testing.assert_array_equal(S.subsample_groups(ds, train, 1.0, seed=9), train)
        self.assertFalse(np.array_equal(S.subsample_groups(ds, train, 0.5, seed=3),
                                        S.subsample_groups(ds, train, 0.5, seed=4)))
        for bad in (0.0, 1.5, -0.1):
            with self.assertRaisesRegex(ValueError, "subsample fraction must be in"):
                S.subsample_groups(ds, train, bad, seed=0)

    def test_cross_device_split(self):
        tr, te = list(SYNTHETIC_TARGETS[:2]), list(SYNTHETIC_TARGETS[2:])
        ds = self.load(SYNTHETIC_TARGETS)
        methods = ["kmeans", "random-tasks", "random"]
        # 5 % is one task or less of the synthetic targets; 25 % spans several tasks
        sp = quiet(S.cross_device_split, ds, tr, te, seed=0, fractions=[0.05, 0.25],
                   methods=methods, selection_seeds=[0, 1])
        self.assertEqual({ds.target_names[t] for t in ds.target[np.concatenate([sp.train, sp.val])]}, set(tr))
        self.assertEqual({ds.target_names[t] for t in ds.target[sp.test]}, set(te))
        self.assertEqual(len(sp.variants), 3 * 2 * 2 * len(te))
        groups = {}
        for v in sp.variants.values():
            pool = ds.indices_of_targets([v["target"]])
            self.assertEqual(len(v["finetune"]), ks.budget_for(len(pool), v["fraction"]))
            self.assertEqual(len(np.intersect1d(v["finetune"], v["test"])), 0)
            groups.setdefault((v["target"], v["fraction"], v["selection_seed"]), []).append(v)
        for (target, _, _), vs in groups.items():
            # one test set per seed, judged by every method: the records none of them chose
            self.assertEqual(sorted(v["method"] for v in vs), sorted(methods))
            for v in vs:
                np.testing.assert_array_equal(v["test"], vs[0]["test"])
            chosen = np.concatenate([v["finetune"] for v in vs])
            np.testing.assert_array_equal(np.union1d(chosen, vs[0]["test"]),
                                          np.sort(ds.indices_of_targets([target])))
            by = {v["method"]: v["finetune"] for v in vs}
            pool_tasks = ds.task[ds.indices_of_targets([target])]
            for m in ("kmeans", "random-tasks"):      # whole tasks, one of them maybe cut
                tasks = np.unique(ds.task[by[m]])
                cut = [t for t in tasks
                       if (ds.task[by[m]] == t).sum() < (pool_tasks == t).sum()]
                self.assertLessEqual(len(cut), 1)
                if vs[0]["fraction"] == 0.25:
                    self.assertGreater(len(tasks), 2)
        # a second selection seed draws anew; seed 0 keeps the draws of a split without seeds
        t0 = te[0]
        self.assertFalse(np.array_equal(sp.variants[f"{t0}/random/0.05"]["finetune"],
                                        sp.variants[f"{t0}/random/0.05/s1"]["finetune"]))
        alone = quiet(S.cross_device_split, ds, tr, te, seed=0, fractions=[0.05], methods=["random"])
        np.testing.assert_array_equal(alone.variants[f"{t0}/random/0.05"]["finetune"],
                                      sp.variants[f"{t0}/random/0.05"]["finetune"])
        with self.assertRaisesRegex(ValueError, "unknown selection method 'best'"):
            S.cross_device_split(ds, tr, te, fractions=[0.05], methods=["best"])
        with self.assertRaisesRegex(ValueError, r"selection seeds must be distinct, got \[1, 1\]"):
            S.cross_device_split(ds, tr, te, fractions=[0.05], methods=["random"],
                                 selection_seeds=[1, 1])
        with self.assertRaisesRegex(ValueError, r"fraction 1 \(seed 0\) take all \d+ records of "
                                                r".*: none is left to test on"):
            S.cross_device_split(ds, tr, te, fractions=[1.0], methods=["random"])


# --------------------------------------------------------------------------------------
class Training(_SyntheticData, unittest.TestCase):
    def test_resume_reproduces_an_uninterrupted_run(self):
        ds = self.load()
        sp = S.random_split(ds, 0)
        base = dict(model_overrides={"d_model": 16, "ffn_dim": 16, "layers": 1,
                                     "embed_dims": [16, 8], "decoder_dims": [8]},
                    batch_size=64, lr=1e-3, progress=False, patience=100)
        with tempfile.TemporaryDirectory() as tmp:
            full = C.train(ds, sp.train, sp.val, C.TrainConfig(max_epochs=2, **base),
                           out_dir=os.path.join(tmp, "a"))
            C.train(ds, sp.train, sp.val, C.TrainConfig(max_epochs=1, **base),
                    out_dir=os.path.join(tmp, "b"))
            resumed = quiet(C.train, ds, sp.train, sp.val,
                            C.TrainConfig(max_epochs=2, resume=True, **base),
                            out_dir=os.path.join(tmp, "b"))
        self.assertEqual(len(resumed.history), 2)
        self.assertEqual(resumed.steps, full.steps)
        for k, v in full.model.state_dict().items():
            torch.testing.assert_close(resumed.model.state_dict()[k], v, msg=k)
        # the output transform is the Box-Cox fit of the training latencies
        self.assertEqual(full.transform.kind, "boxcox")
        z = full.transform.forward(torch.from_numpy(ds.latency[sp.train])).numpy()
        self.assertAlmostEqual(float(z.mean()), 0.0, places=6)

    def test_selection_metric_picks_the_kept_epoch(self):
        ds = self.load()
        sp = S.random_split(ds, 0)
        base = dict(model_overrides={"d_model": 16, "ffn_dim": 16, "layers": 1,
                                     "embed_dims": [16, 8], "decoder_dims": [8]},
                    batch_size=64, lr=1e-3, progress=False, patience=100, max_epochs=4)
        for metric in C.SELECTION_METRICS:
            res = C.train(ds, sp.train, sp.val, C.TrainConfig(select_on=metric, **base))
            scores = [h["val_" + metric] for h in res.history]
            self.assertEqual(res.best_epoch, int(np.argmin(scores)), metric)
            self.assertEqual(res.best_val, min(scores))
            pred = C.predict_seconds(res.model, ds, sp.val, res.norm, 256)
            metric_fn = M.mape if metric == "mape" else M.rmse_log
            self.assertAlmostEqual(metric_fn(ds.latency[sp.val], pred), res.best_val, places=4)
        with self.assertRaisesRegex(ValueError, "select_on: 'loss' is not one of"):
            C.train(ds, sp.train, sp.val, C.TrainConfig(select_on="loss", **base))


# --------------------------------------------------------------------------------------
class EndToEnd(_SyntheticData, unittest.TestCase):
    def test_quick_runs(self):
        out = os.path.join(self.tmp.name, "out")
        ansor = ["--set", 'cdmpp.features="ansor"']  # the synthetic ASTs: Ansor's 164 columns
        args = ["--quick", "--no-progress", "--data", self.data, "--out", out] + ansor
        quiet(run.main, ["random", "--targets", SYNTHETIC_TARGETS[0]] + args)
        model = os.path.join(out, "models", f"cdmpp-compact-{SYNTHETIC_TARGETS[0]}.safetensors")
        tensors, meta = safetensors_io.load_file(model)
        self.assertEqual(meta["tempo.model"], "cdmpp")
        card = json.loads(meta["tempo.card"])
        self.assertTrue(card["data"]["synthetic"])
        self.assertEqual(card["split"]["name"], "random")
        self.assertIn("mape", card["metrics"][SYNTHETIC_TARGETS[0]])
        self.assertIn("selftest.output", tensors)
        # the converted file agrees with the trained model (numpy reference engine)
        ckpt = torch.load(model[:-len(".safetensors")] + ".pt")
        m = ct.CdmppModel(ct.CdmppConfig.from_dict(ckpt["config"]),
                          ct.OutputTransform.from_dict(ckpt["output_transform"]))
        m.load_state_dict(ckpt["state_dict"])
        m.eval()
        ds = self.load()
        asts = [ds.ast(i) for i in range(4)]
        x, mask, _ = ct.preprocess(asts, ckpt["norm"]["min"], ckpt["norm"]["max"], m.config)
        with torch.no_grad():
            want = m.double().predict_seconds(x, mask).numpy()
        eng = ReferenceEngine(model)
        got = np.array([eng.predict(a)[1] for a in asts])
        np.testing.assert_allclose(got, want, rtol=1e-3)
        res = json.load(open(os.path.join(out, "result.json")))
        models = {r["model"] for r in res["rows"]}
        self.assertEqual(models, {"cdmpp-compact", "xgboost-log", "xgboost-throughput", "mlp-segsum"})
        md = open(os.path.join(out, "report", "accuracy.md")).read()
        self.assertIn("## random", md)
        self.assertTrue(os.path.exists(os.path.join(out, "splits", f"random.{SYNTHETIC_TARGETS[0]}.json")))
        for r in res["rows"]:
            if r.get("scatter"):
                self.assertTrue(os.path.exists(os.path.join(out, "report", r["scatter"])))
        # cross-device: the device branch, CMD, KMeans and random-task few-shot variants over
        # two selection seeds (no baselines)
        out2 = os.path.join(self.tmp.name, "out2")
        quiet(run.main, ["cross-device", "--quick", "--no-progress", "--data", self.data,
                         "--out", out2, "--skip-baselines",
                         "--set", "cross_device.train_targets=" + json.dumps(list(SYNTHETIC_TARGETS[:2])),
                         "--set", "cross_device.test_targets=" + json.dumps([SYNTHETIC_TARGETS[2]]),
                         "--set", "cross_device.fractions=[0.05]",
                         "--set", "cross_device.selections=[\"kmeans\", \"random-tasks\"]",
                         "--set", "cross_device.selection_seeds=[0, 1]"] + ansor)
        t2, meta2 = safetensors_io.load_file(os.path.join(out2, "models", "cdmpp-compact-cross-device.safetensors"))
        self.assertTrue(json.loads(meta2["tempo.config"])["device"])
        self.assertIn("device_mlp.0.linear.weight", t2)
        # the device features are standardised over the two training targets: only the ones
        # that differ between them (synthetic._device) keep a non-zero scale
        ckpt2 = torch.load(os.path.join(out2, "models", "cdmpp-compact-cross-device.pt"))
        self.assertEqual(torch.nonzero(ckpt2["state_dict"]["device_scale"]).flatten().tolist(),
                         [1, 5, 7])
        res2 = json.load(open(os.path.join(out2, "result.json")))
        # the split's own settings (config.json cross_device.cdmpp) are what the run records
        with open(run.DEFAULT_CONFIG) as f:
            split_settings = json.load(f)["cross_device"]["cdmpp"]
        self.assertEqual(res2["cdmpp"]["weight_decay"], split_settings["weight_decay"])
        self.assertIn("cdmpp-compact-device-fine-tuned", {r["model"] for r in res2["rows"]})
        # when each part was timed (the synthetic targets are a day apart)
        self.assertEqual(res2["measured"]["training"][0][:10], "2026-01-01")
        self.assertEqual(res2["measured"]["test"], ["2026-01-03T00:00:00Z", "2026-01-03T23:00:00Z"])
        md2 = open(os.path.join(out2, "report", "accuracy.md")).read()
        self.assertIn("test records 2026-01-03T00:00:00Z … 2026-01-03T23:00:00Z", md2)
        # seed 0 makes the table (with plots), both seeds the comparison of the selections
        tuned = [r for r in res2["rows"] if r["model"] == "cdmpp-compact-device-fine-tuned"]
        self.assertEqual(sorted((r["selection"], r["selection_seed"]) for r in tuned),
                         [("kmeans", 0), ("kmeans", 1), ("random-tasks", 0), ("random-tasks", 1)])
        for r in tuned:
            self.assertEqual(r["in_table"], r["selection_seed"] == 0)
            self.assertEqual("scatter" in r, r["selection_seed"] == 0)
        self.assertIn("(kmeans 5%, seed 0)", md2)
        self.assertNotIn("(kmeans 5%, seed 1)", md2)
        self.assertIn("Fine-tuning selections compared", md2)
        self.assertRegex(md2, r"(?m)\| 5% \| kmeans \| 2 \| \d+ \(\d+\), \d+ \(\d+\) \| [\d.]+% ± [\d.]+ \|.* \| [\d.]+% ± [\d.]+ \|$")
        # few-shot recall from the two training targets (the synthetic targets share one CPU),
        # one row per variant, on the programs they timed: here every test program
        recall = {(r["recall_selection"], r["recall_seed"]): r for r in res2["rows"] if "recall_seed" in r}
        self.assertEqual(sorted(recall), sorted((r["selection"], r["selection_seed"]) for r in tuned))
        for (method, seed), r in recall.items():
            self.assertEqual(sorted(r["recall_from"]), sorted(SYNTHETIC_TARGETS[:2]))
            self.assertEqual(r["in_table"], seed == 0)
            twin = next(t for t in tuned if (t["selection"], t["selection_seed"]) == (method, seed))
            self.assertEqual(r["metrics"]["records"], twin["metrics"]["records"])

    def test_cross_model_trains_one_model_per_target_and_keeps_the_others_rows(self):
        out = os.path.join(self.tmp.name, "out-cross-model")
        a, b = SYNTHETIC_TARGETS[:2]
        args = ["--quick", "--no-progress", "--data", self.data, "--out", out,
                "--set", 'cdmpp.features="ansor"', "--noise-stat", "std", "--noise-max-cv", "0.01"]
        quiet(run.main, ["cross-model", "--targets", a, b] + args)
        res = json.load(open(os.path.join(out, "result.json")))
        self.assertEqual({(r["model"], r["target"], r["test_set"]) for r in res["rows"]},
                         {(m, t, f"{t}, held-out tasks") for t in (a, b)
                          for m in ("cdmpp-compact", "xgboost-log", "xgboost-throughput", "mlp-segsum")})
        for t in (a, b):
            ds = self.load([t], noise_stat="std")
            test = {ds.keys[i] for i in S.cross_model_split(ds, ["resnet_50", "bert_tiny"]).test}
            self.assertEqual(S.read_members(os.path.join(out, "splits", f"cross-model.{t}.json"))["test"], test)
            self.assertTrue(os.path.exists(os.path.join(out, "models", f"cdmpp-compact-cross-model-{t}.safetensors")))
            self.assertTrue(res["measured"][f"{t} training"] and res["measured"][f"{t} test"])
        before = {r["model"]: r["metrics"] for r in res["rows"] if r["target"] == a}
        # a run on one target replaces its rows only
        quiet(run.main, ["cross-model", "--targets", b, "--seed", "1"] + args)
        merged = json.load(open(os.path.join(out, "report", "accuracy.cross-model.json")))
        self.assertEqual(merged["data"]["targets"], [a, b])
        self.assertEqual({r["model"]: r["metrics"] for r in merged["rows"] if r["target"] == a}, before)
        self.assertEqual(len(merged["rows"]), 8)
        self.assertEqual(sorted(merged["measured"]), sorted(f"{t} {p}" for t in (a, b) for p in ("training", "test")))
        md = open(os.path.join(out, "report", "accuracy.md")).read()
        self.assertIn(f"| cdmpp-compact | {a}, held-out tasks |", md)
        self.assertIn(f"{b} test records", md)
        for r in merged["rows"]:
            if r.get("scatter"):
                self.assertTrue(os.path.exists(os.path.join(out, "report", r["scatter"])), r["scatter"])
        # hold-out networks no task belongs to: the error names them, nothing trains
        with self.assertRaisesRegex(SystemExit, r"cross-model: %s: empty train or test set "
                                    r"\(counts \{'train': \d+, 'val': \d+, 'test': 0\}; split "
                                    r"\{'holdout_networks': \['no_such_net'\]" % re.escape(a)):
            quiet(run.main, ["cross-model", "--targets", a, "--set",
                             'cross_model.holdout_networks=["no_such_net"]'] + args)

    def test_same_programs_splits_the_programs_both_targets_hold(self):
        out = os.path.join(self.tmp.name, "out-same")
        a, b = SYNTHETIC_TARGETS[:2]
        # std/mean ≤ 0.01 drops each target's noisy records independently (synthetic: ~10 %)
        filters = ["--noise-stat", "std", "--noise-max-cv", "0.01"]
        quiet(run.main, ["same-programs", "--quick", "--no-progress", "--data", self.data,
                         "--out", out, "--targets", a, b, "--set", 'cdmpp.features="ansor"',
                         "--set", "same_programs.seeds=[0, 1]"] + filters)
        ds = self.load([a, b], noise_max_cv=0.01, noise_stat="std")
        programs = {t: {k.rsplit("@", 1)[0] for k in ds.keys if k.endswith("@" + t)} for t in (a, b)}
        common = programs[a] & programs[b]
        self.assertLess(len(common), min(len(programs[a]), len(programs[b])))
        for seed in (0, 1):
            parts = S.read_members(os.path.join(out, "splits", f"random.same-programs.seed{seed}.{a}.json"))
            split_programs = {k.rsplit("@", 1)[0] for keys in parts.values() for k in keys}
            self.assertEqual(split_programs, common)
        res = json.load(open(os.path.join(out, "result.json")))
        self.assertEqual(res["data"]["records"], 2 * len(common))
        cells = {(r["model"], r["pair_seed"], r["pair_target"]): r for r in res["rows"]}
        self.assertEqual(len(cells), len(res["rows"]))
        self.assertEqual(set(cells), {(m, s, t) for m in ("cdmpp-compact", "xgboost-log")
                                      for s in (0, 1) for t in (a, b)})
        for (model, seed, target), r in cells.items():
            # one test set per seed: the same programs on either target
            self.assertEqual(r["test_programs"], cells[(model, seed, a)]["test_programs"])
            self.assertEqual(r["metrics"]["records"], cells[(model, seed, a)]["metrics"]["records"])
            self.assertEqual("scatter" in r, seed == 0)
        self.assertNotEqual(cells[("cdmpp-compact", 0, a)]["test_programs"],
                            cells[("cdmpp-compact", 1, a)]["test_programs"])
        md = open(os.path.join(out, "report", "accuracy.md")).read()
        self.assertIn("## same-programs", md)
        self.assertIn(f"random.same-programs.seed1.{a}.json` (seeds 0, 1); run", md)
        self.assertIn(f"| model | seed | MAPE: {a} | MAPE: {b} |", md)
        self.assertRegex(md, r"\| cdmpp-compact \| mean ± sd \| [\d.]+% ± [\d.]+ \| [\d.]+% ± [\d.]+ \|")
        with self.assertRaisesRegex(SystemExit, "takes two different targets"):
            quiet(run.main, ["same-programs", "--quick", "--data", self.data, "--out", out,
                             "--targets", a])


    def test_learning_curve_trains_each_fraction_on_the_same_test_set(self):
        out = os.path.join(self.tmp.name, "out-curve")
        t = SYNTHETIC_TARGETS[0]
        quiet(run.main, ["learning-curve", "--quick", "--no-progress", "--data", self.data,
                         "--out", out, "--targets", t, "--set", 'cdmpp.features="ansor"',
                         "--set", "learning_curve.fractions=[0.25, 0.5, 1]",
                         "--set", "learning_curve.seeds=[0, 1]",
                         "--noise-stat", "std", "--noise-max-cv", "0.01"])
        res = json.load(open(os.path.join(out, "result.json")))
        runs = {(r["model"], r["curve_fraction"], r["curve_seed"]): r for r in res["rows"]}
        self.assertEqual(set(runs), {(m, f, s) for m in ("cdmpp-compact", "xgboost-log")
                                     for f, s in ((0.25, 0), (0.25, 1), (0.5, 0), (0.5, 1), (1.0, None))})
        ds = self.load([t], noise_stat="std")
        split = S.cross_model_split(ds, ["resnet_50", "bert_tiny"])
        full = runs[("cdmpp-compact", 1.0, None)]
        self.assertEqual(full["train_records"], len(split.train))
        self.assertEqual(res["learning_curve"]["full_train_records"], len(split.train))
        for (model, f, seed), r in runs.items():
            self.assertEqual(r["metrics"]["records"], len(split.test))
            self.assertEqual(r["train_records"], len(S.subsample_groups(ds, split.train, f, seed or 0)))
        self.assertLess(runs[("cdmpp-compact", 0.25, 0)]["train_records"],
                        runs[("cdmpp-compact", 0.5, 0)]["train_records"])
        self.assertTrue(os.path.exists(os.path.join(out, "report", res["learning_curve"]["plot"])))
        md = open(os.path.join(out, "report", "accuracy.md")).read()
        self.assertIn("## learning-curve", md)
        self.assertRegex(md, r"\| cdmpp-compact \| 0.25 \| [\d,]+ \(\d+\) \| 2 \| [\d.]+% ± [\d.]+ \|")
        self.assertRegex(md, r"Fits: cdmpp-compact: MAPE ≈ [\d.e+-]+ · N\^−-?[\d.]+, ")
        with self.assertRaisesRegex(SystemExit, "learning-curve: takes one target"):
            quiet(run.main, ["learning-curve", "--quick", "--data", self.data, "--out", out,
                             "--targets", *SYNTHETIC_TARGETS[:2]])
        with self.assertRaisesRegex(SystemExit, r"learning-curve: fractions must be >= 2 values"):
            quiet(run.main, ["learning-curve", "--quick", "--data", self.data, "--out", out,
                             "--targets", t, "--set", "learning_curve.fractions=[0.5, 2]"])

    def test_evaluate_runs_converted_models_through_the_engine(self):
        binary = D.find_tempo_binary()
        if not binary:
            self.skipTest("needs a built tempo (TEMPO_BIN or build/tools/tempo)")
        out = os.path.join(self.tmp.name, "out-evaluate")
        a, b = SYNTHETIC_TARGETS[:2]
        args = ["--quick", "--no-progress", "--data", self.data, "--out", out, "--tempo", binary,
                "--set", 'cdmpp.features="ansor"', "--noise-stat", "std", "--noise-max-cv", "0.01"]
        quiet(run.main, ["random", "--targets", a, "--skip-baselines"] + args)
        model = os.path.join(out, "models", f"cdmpp-compact-{a}.safetensors")
        quiet(run.main, ["evaluate", "--targets", b, "--models", model,
                         "--set", f'evaluate.recall_from=["{a}"]'] + args)
        with open(os.path.join(out, "result.json")) as f:
            rows = {r["test_set"]: r for r in json.load(f)["rows"]}
        ds = self.load([a, b], min_records_per_task=2)
        mine = ds.indices_of_targets([b])
        # every program of b, predicted by the engine: the numpy reference engine agrees
        every = rows[f"{b}, every program"]
        self.assertEqual(every["model"], f"cdmpp-compact-{a}")
        self.assertEqual(every["metrics"]["records"], len(mine))
        eng = ReferenceEngine(model)
        want = M.evaluate(ds.latency[mine], ds.task[mine],
                          pred_s=np.array([eng.predict(ds.ast(int(i)))[1] for i in mine]))
        self.assertAlmostEqual(every["metrics"]["mape"], want["mape"], delta=1e-4 * want["mape"])
        # the programs outside the training and validation parts of a's split
        parts = S.read_members(os.path.join(out, "splits", f"random.{a}.json"))
        seen = {k.rsplit("@", 1)[0] for k in parts["train"] | parts["val"]}
        outside = [i for i in mine if ds.keys[i].rsplit("@", 1)[0] not in seen]
        self.assertTrue(0 < len(outside) < len(mine))
        self.assertEqual(rows[f"{b}, programs outside its random split's training part"]
                         ["metrics"]["records"], len(outside))
        # recall: b's latency from a's, scaled by the median ratio over the programs both hold
        at_a = {ds.keys[i].rsplit("@", 1)[0]: ds.latency[i] for i in ds.indices_of_targets([a])}
        pairs = [(ds.latency[i], at_a[k]) for i in mine
                 for k in [ds.keys[i].rsplit("@", 1)[0]] if k in at_a]
        ratio = float(np.exp(np.median([math.log(x / y) for x, y in pairs])))
        recall = rows[f"{b}, programs {a} timed too"]
        self.assertEqual(recall["metrics"]["records"], len(pairs))
        self.assertAlmostEqual(recall["ratio"], ratio, places=12)
        self.assertEqual(recall["model"], f"recall {a} × {ratio:.3f}")
        with open(os.path.join(out, "report", "accuracy.md")) as f:
            md = f.read()
        self.assertIn(f"the models' split files `random.{a}.json`", md)
        # hostile model arguments: named, nothing runs
        with self.assertRaisesRegex(SystemExit, "evaluate: no model file or directory .*no-such"):
            quiet(run.main, ["evaluate", "--targets", b, "--models", "no-such.safetensors"] + args)
        card = os.path.join(out, "models", f"cdmpp-compact-{a}.card.json")
        fake = os.path.join(self.tmp.name, "card.safetensors")
        with open(card, "rb") as f, open(fake, "wb") as g:
            g.write(f.read())
        with self.assertRaisesRegex(SystemExit, "card.safetensors: not a converted tempo model"):
            quiet(run.main, ["evaluate", "--targets", b, "--models", fake] + args)


class FewShotRecall(_SyntheticData, unittest.TestCase):
    def test_each_program_from_the_best_fitting_source_that_timed_it(self):
        a, b, c = SYNTHETIC_TARGETS[:3]
        full = self.load([a, b, c], noise_max_cv=None)
        prog = [run.program_of(k) for k in full.keys]
        at = {(prog[i], full.target_names[full.target[i]]): float(full.latency[i]) for i in range(len(full))}
        on_c = full.indices_of_targets([c])
        # a loses every third of c's programs, so those can only come from b
        dropped = {prog[i] for i in on_c[::3]}
        keep = [i for i in range(len(full)) if not (full.target_names[full.target[i]] == a and prog[i] in dropped)]
        ds = full.subset(keep)
        prog = [run.program_of(k) for k in ds.keys]
        on_c = ds.indices_of_targets([c])
        selected, test = on_c[:40], on_c[40:]

        def fit(source):
            pairs = [(at[(prog[i], c)], at[(prog[i], source)]) for i in selected if (prog[i], source) in at
                     and not (source == a and prog[i] in dropped)]
            ratio = math.exp(float(np.median([math.log(x / y) for x, y in pairs])))
            return float(np.mean([abs(y * ratio - x) / x for x, y in pairs])), ratio

        (err_a, ratio_a), (err_b, ratio_b) = fit(a), fit(b)
        idx, pred, fitted = run.few_shot_recall(ds, selected, test, [a, b])
        order = [a, b] if err_a <= err_b else [b, a]
        self.assertEqual([s for s, _ in fitted], order)
        ratios = dict(fitted)
        self.assertAlmostEqual(ratios[a], ratio_a, places=12)
        self.assertAlmostEqual(ratios[b], ratio_b, places=12)
        np.testing.assert_array_equal(idx, test)   # b timed every program
        for i, p in zip(idx, pred):
            source = order[0] if order[0] == b or prog[i] not in dropped else b
            self.assertAlmostEqual(p, at[(prog[i], source)] * ratios[source], places=15)
        self.assertTrue(any(prog[i] in dropped for i in test))
        # a source that timed fewer than two selected programs is not used; none left: nothing
        idx, pred, fitted = run.few_shot_recall(ds, selected[:1], test, [a, b])
        self.assertEqual((len(idx), len(pred), fitted), (0, 0, []))


class SplitSettings(unittest.TestCase):
    def test_a_split_section_overrides_the_shared_cdmpp_settings(self):
        cfg = {"cdmpp": {"weight_decay": 1e-3, "lr": None, "model_overrides": {"d_model": 32}},
               "cross_device": {"cdmpp": {"weight_decay": 0.0, "model_overrides": {"dropout": 0.0}}},
               "cross_model": {}, "seed": 0, "threads": 1}
        run.apply_split_cdmpp(cfg, "cross_model")           # no section of its own: unchanged
        self.assertEqual(cfg["cdmpp"]["weight_decay"], 1e-3)
        run.apply_split_cdmpp(cfg, "cross_device")
        self.assertEqual(cfg["cdmpp"], {"weight_decay": 0.0, "lr": None,
                                        "model_overrides": {"d_model": 32, "dropout": 0.0}})
        tc = run.train_config(cfg)
        self.assertEqual((tc.weight_decay, tc.model_config().dropout), (0.0, 0.0))


class FinetuneSet(unittest.TestCase):
    def test_selected_records_make_up_the_share(self):
        train, sel = np.arange(900), np.arange(1000, 1010)
        out = run.finetune_set(train, sel, 0.25)      # 30 copies: 300 of 1,200
        self.assertEqual(int(np.isin(out, sel).sum()), 300)
        np.testing.assert_array_equal(out[:900], train)
        self.assertEqual(len(run.finetune_set(train, sel, 0.0)), 910)
        self.assertEqual(len(run.finetune_set(train, np.arange(2000, 2600), 0.25)), 1500)


class Report(unittest.TestCase):
    def test_a_result_removes_the_plots_its_split_no_longer_names(self):
        row = {"model": "m", "test_set": "t", "metrics": {"records": 1}}
        with tempfile.TemporaryDirectory() as tmp:
            plots = os.path.join(tmp, "accuracy")
            os.makedirs(plots)
            for name in ("cross-device-m-old.png", "cross-device-m-kept.png", "random-m-t.png"):
                open(os.path.join(plots, name), "w").close()
            R.write_result({"split": "cross-device", "rows": [
                dict(row, scatter="accuracy/cross-device-m-kept.png"), row]}, tmp)
            self.assertEqual(sorted(os.listdir(plots)), ["cross-device-m-kept.png", "random-m-t.png"])
            self.assertTrue(os.path.exists(os.path.join(tmp, "accuracy.md")))


    def test_a_run_on_some_targets_keeps_the_other_targets_rows(self):
        def result(date, targets, mape):
            return {"split": "random", "date": date, "seed": 0,
                    "data": {"targets": targets, "records": 10 * len(targets)},
                    "split_file": ", ".join(f"random.{t}.json" for t in targets),
                    "per_target": {t: {"records": 10, "split_file": f"random.{t}.json", "date": date}
                                   for t in targets},
                    "rows": [{"model": "m", "test_set": t, "metrics": {"mape": mape}} for t in targets]}
        with tempfile.TemporaryDirectory() as tmp:
            R.write_result(result("D1", ["a", "b"], 0.5), tmp)
            with open(R.write_result(result("D2", ["b"], 0.25), tmp)) as f:
                md = f.read()
            with open(os.path.join(tmp, "accuracy.random.json")) as f:
                merged = json.load(f)
            self.assertEqual([(r["test_set"], r["metrics"]["mape"]) for r in merged["rows"]],
                             [("a", 0.5), ("b", 0.25)])
            self.assertEqual(merged["data"]["targets"], ["a", "b"])
            self.assertEqual(merged["data"]["records"], 20)
            self.assertEqual(merged["split_file"], "random.a.json, random.b.json")
            self.assertIn("Data: targets a (10 records, run D1), b (10 records, run D2); 20 records", md)
            self.assertIn("(seed 0). Features:", md)  # the run dates are the targets' own
            # a run on every target replaces them all; other splits are never merged
            with open(R.write_result(result("D3", ["a", "b"], 0.75), tmp)) as f:
                md = f.read()
            self.assertIn("Data: targets a, b; 20 records", md)
            self.assertIn("(seed 0); run D3. Features:", md)
            with open(os.path.join(tmp, "accuracy.random.json")) as f:
                self.assertEqual({r["metrics"]["mape"] for r in json.load(f)["rows"]}, {0.75})
            other = dict(result("D4", ["b"], 0.1), split="cross-model")
            self.assertEqual(R.keep_other_targets(other, result("D3", ["a", "b"], 0.75)), other)
        # a previous result written before per_target: its rows keep its date, records unknown
        old = result("D0", ["a", "b"], 0.5)
        del old["per_target"]
        merged = R.keep_other_targets(result("D5", ["b"], 0.2), old)
        self.assertEqual(merged["per_target"]["a"], {"date": "D0"})
        self.assertIsNone(merged["data"]["records"])


class WeightsIndex(unittest.TestCase):
    def test_one_row_per_card_and_test_set(self):
        card = {"model": "cdmpp-compact-x", "config_name": "compact", "parameters": 98817,
                "date": "2026-12-02T18:02:03Z", "us_per_prediction_tempo": 20.41,
                "tempo_parity_max_rel": 3.14e-7, "tempo_parity_programs": 461,
                "data": {"targets": ["x"], "records": 2280, "noise_stat": "mad",
                         "noise_max_cv": 0.05},
                "split": {"name": "random", "seed": 0,
                          "counts": {"train": 1638, "val": 181, "test": 461}},
                "metrics": {"x": {"mape": 0.5944, "rmse_log": 0.8878, "kendall_tau": 0.3333,
                                  "top1": 0.8418},
                            "y (zero-shot)": {"mape": 1.5, "rmse_log": 0.9, "kendall_tau": 0.25,
                                              "top1": 0.5}}}
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "cdmpp-compact-x.card.json"), "w") as f:
                json.dump(card, f)
            with open(R.write_weights_index(tmp)) as f:
                rows = [l for l in f if l.startswith("| `")]
        head = ("| `cdmpp-compact-x.safetensors` | compact (ansor) | x: 2280 records "
                "(noise mad ≤ 0.05) | random (0) | 1638 / 181 / 461 | ")
        tail = " | 20.4 | 3.1e-07 over 461 programs | 98,817 | 2026-12-02 |\n"
        self.assertEqual(rows, [head + "x | 59.4% | 0.888 | 0.333 | 0.842" + tail,
                                head + "y (zero-shot) | 150.0% | 0.900 | 0.250 | 0.500" + tail])

    def test_config_cell_names_the_feature_set(self):
        card = {"config_name": "compact", "training": {"hyperparameters": {"features": "ansor+loops"}}}
        self.assertEqual(R._config_cell(card), "compact (ansor+loops)")
        self.assertEqual(R._config_cell({"config_name": "paper"}), "paper (ansor)")

    def test_data_cell_names_held_out_targets(self):
        d = {"targets": ["a", "b"], "test_targets": ["c"], "records": 10, "noise_stat": "mad",
             "noise_max_cv": 0.05}
        self.assertEqual(R._data_cell(d), "a, b; test: c: 10 records (noise mad ≤ 0.05)")
        self.assertEqual(R._data_cell(dict(d, test_targets=[])),
                         "a, b: 10 records (noise mad ≤ 0.05)")


if __name__ == "__main__":
    unittest.main()
