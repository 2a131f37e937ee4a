"""Tests of the CDMPP reference model, converter and fixtures.

    python3 -m unittest converters.test_convert      (from the repository root)
"""
import contextlib
import io
import json
import math
import os
import tempfile
import unittest

import numpy as np
import torch

from converters import cdmpp_torch as ct
from converters import convert as cv
from converters import random_programs as rp
from converters import safetensors_io
from converters.reference_engine import ReferenceEngine

torch.set_num_threads(1)
FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "tests", "fixtures", "cdmpp")


def small_config(**kw):
    base = dict(feature_dim=164, d_model=32, heads=4, ffn_dim=48, layers=2, dropout=0.0,
                pooling="mean", max_leaves=6, embed_dims=[24, 16], device=True,
                device_dims=[12, 16], decoder_dims=[16, 8])
    base.update(kw)
    return ct.CdmppConfig(**base).validate()


def random_bn(model, seed=0):
    """Non-identity BatchNorm statistics and affine parameters."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm1d):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=g))
                m.running_var.copy_(0.2 + 2 * torch.rand(n, generator=g))
                if m.affine:
                    m.weight.copy_(0.5 + torch.rand(n, generator=g))
                    m.bias.copy_(0.3 * torch.randn(n, generator=g))
    return model.eval()


def make_model(config, transform=None, seed=0):
    """Random weights and BatchNorm statistics; with a device branch, a standardisation
    fitted to three random targets (feature 0, the id slot, is constant: scale 0)."""
    torch.manual_seed(seed)
    model = ct.CdmppModel(config, transform or ct.OutputTransform("boxcox", -0.1, -9, 2))
    if config.device:
        rng = np.random.default_rng(seed)
        model.standardise_device([rp.random_device(rng) for _ in range(3)])
    return random_bn(model, seed)


def programs(config, n, seed=0):
    rng = np.random.default_rng(seed)
    prof = rp.random_profile(rng, config.feature_dim)
    counts = rp.random_leaf_counts(rng, n, config.max_leaves, config.pooling == "flatten")
    return prof, [rp.random_program(rng, prof, k, config.device) for k in counts]


class PositionalEncoding(unittest.TestCase):
    def test_hand_example(self):
        tree = [0, 1, 2, 3, -1, -1, 4, 5, -1, -1, -1, -1]
        self.assertEqual(ct.leaf_positions(tree, [3, 5]), [3, 7])
        pe = ct.positional_encoding(3, 164)
        self.assertAlmostEqual(pe[0], math.sin(3.0), places=15)
        self.assertAlmostEqual(pe[1], math.cos(3.0 / 10000 ** (2 * 1 / 164)), places=15)
        self.assertAlmostEqual(pe[2], math.sin(3.0 / 10000 ** (2 * 2 / 164)), places=15)
        self.assertAlmostEqual(pe[3], math.cos(3.0 / 10000 ** (2 * 3 / 164)), places=15)
        self.assertAlmostEqual(pe[162], math.sin(3.0 / 10000 ** (2 * 162 / 164)), places=15)
        self.assertAlmostEqual(pe[163], math.cos(3.0 / 10000 ** (2 * 163 / 164)), places=15)
        pe7 = ct.positional_encoding(7, 164)
        self.assertAlmostEqual(pe7[0], math.sin(7.0), places=15)
        self.assertAlmostEqual(pe7[1], math.cos(7.0 / 10000 ** (2 / 164)), places=15)
        # p = 0 gives sin 0 = 0, cos 0 = 1
        np.testing.assert_array_equal(ct.positional_encoding(0, 6), [0, 1, 0, 1, 0, 1])

    def test_preprocess_adds_pe_to_minmax(self):
        ast = {"features": [[2.0] * 4, [4.0] * 4], "leaf_ids": [3, 5],
               "tree": [0, 1, 2, 3, -1, -1, 4, 5, -1, -1, -1, -1]}
        x = ct.preprocess_ast(ast, [0, 0, 0, 0], [4, 4, 4, 4])
        np.testing.assert_allclose(x[0], 2 / (4 + 1e-6) + ct.positional_encoding(3, 4))
        np.testing.assert_allclose(x[1], 4 / (4 + 1e-6) + ct.positional_encoding(7, 4))
        half = ct.preprocess_ast(ast, [0, 0, 0, 0], [4, 4, 4, 4], pe_scale=0.5)
        np.testing.assert_allclose(half[1], 4 / (4 + 1e-6) + 0.5 * ct.positional_encoding(7, 4))

    def test_validate_ast(self):
        good = {"features": [[0.0] * 4], "leaf_ids": [2], "tree": [0, 1, 2, -1, -1, -1]}
        ct.validate_ast(good, 4, 4)
        with self.assertRaisesRegex(ValueError, "leaf_ids.*not a leaf"):
            ct.validate_ast(dict(good, leaf_ids=[1]), 4, 4)
        with self.assertRaisesRegex(ValueError, "tree"):
            ct.validate_ast(dict(good, tree=[0, 1, 2, -1, -1]), 4, 4)
        with self.assertRaisesRegex(ValueError, "features"):
            ct.validate_ast(dict(good, features=[[0.0] * 3]), 4, 4)


class Config(unittest.TestCase):
    def test_named_configs(self):
        paper = ct.paper_config()
        self.assertEqual((paper.d_model, paper.heads, paper.ffn_dim, paper.layers),
                         (164, 4, 2048, 11))
        self.assertFalse(paper.input_projection)
        n = ct.count_parameters(ct.CdmppModel(paper))
        self.assertTrue(13.5e6 < n < 14.1e6, n)   # the paper's "about 13.8M"
        compact = ct.compact_config()
        self.assertTrue(compact.input_projection)
        self.assertEqual((compact.pooling, compact.pe_scale), ("sum", 0.0))
        self.assertEqual(ct.CdmppConfig.from_dict(json.loads(compact.to_json())), compact)

    def test_invalid_configs_are_named(self):
        with self.assertRaisesRegex(ct.ConfigError, "heads=3 does not divide.*d_model=64"):
            ct.compact_config(heads=3)
        with self.assertRaisesRegex(ct.ConfigError, "activation"):
            ct.compact_config(activation="tanh")
        with self.assertRaisesRegex(ct.ConfigError, "pooling"):
            ct.compact_config(pooling="max")
        with self.assertRaisesRegex(ct.ConfigError, "device_dims"):
            ct.compact_config(device=True, device_dims=[8, 7])
        with self.assertRaisesRegex(ct.ConfigError, "unknown keys"):
            ct.CdmppConfig.from_dict({"d_modle": 3})
        for bad in (-0.5, float("nan"), "1"):
            with self.assertRaisesRegex(ct.ConfigError, "pe_scale"):
                ct.compact_config(pe_scale=bad)

    def test_feature_set_is_written_only_when_stated(self):
        self.assertNotIn("features", json.loads(ct.compact_config().to_json()))
        loops = ct.compact_config(feature_dim=174, features="ansor+loops")
        self.assertEqual(json.loads(loops.to_json())["features"], "ansor+loops")
        self.assertEqual(ct.CdmppConfig.from_dict(json.loads(loops.to_json())), loops)
        with self.assertRaisesRegex(ct.ConfigError, "features='ansor\\+loops' rows have 174 "
                                                    "columns, config.feature_dim is 164"):
            ct.compact_config(features="ansor+loops")
        with self.assertRaisesRegex(ct.ConfigError, "config.features must be one of"):
            ct.compact_config(features="tvm")


class OutputTransform(unittest.TestCase):
    def test_inverse_of_forward(self):
        x = torch.tensor([1e-6, 3e-4, 2e-2, 1.5], dtype=torch.float64)
        for tr in (ct.OutputTransform("boxcox", -0.1, -8, 2), ct.OutputTransform("boxcox", 0.0, -7, 2),
                   ct.OutputTransform("boxcox", 0.2, -3, 1.5), ct.OutputTransform("log", 0, -8, 2),
                   ct.OutputTransform("none", 0, 1e-3, 2)):
            torch.testing.assert_close(tr.inverse(tr.forward(x)), x, rtol=1e-12, atol=0)
        tr = ct.OutputTransform("boxcox", 0.5, 1.0, 2.0)
        z = tr.forward(torch.tensor([4.0], dtype=torch.float64))
        self.assertAlmostEqual(float(z), ((4 ** 0.5 - 1) / 0.5 - 1.0) / 2.0)


class Model(unittest.TestCase):
    def test_padding_and_batch_do_not_change_a_program(self):
        cfg = small_config()
        model = make_model(cfg).double()
        prof, asts = programs(cfg, 6)
        x, mask, dev = ct.preprocess(asts, prof.norm_min, prof.norm_max, cfg)
        with torch.no_grad():
            together = model(x, mask, dev)
            for i in range(len(asts)):
                n = int(mask[i].sum())
                alone = model(x[i:i + 1, :n], mask[i:i + 1, :n], dev[i:i + 1])
                self.assertAlmostEqual(float(alone), float(together[i]), places=12)

    def test_device_standardisation(self):
        model = ct.CdmppModel(small_config())
        a = [1.0, 1.2, 0.5, 0.7, 0.3, 0.6, 0.2930, 0.03]
        b = [1.0, 1.2, 0.5, 0.7, 0.3, 0.6, 0.2920, 0.09]
        model.standardise_device([a] * 9 + [b])          # each target counts once
        torch.testing.assert_close(model.device_scale[:6], torch.zeros(6))
        g = (torch.tensor([a, b]) - model.device_shift) * model.device_scale
        # feature 6's spread (std 0.0005) is under the floor 0.01; feature 7's (0.03) is not
        torch.testing.assert_close(g[:, 6:], torch.tensor([[0.05, -1.0], [-0.05, 1.0]]),
                                   rtol=0, atol=1e-5)
        with self.assertRaisesRegex(ValueError, "finite"):
            model.standardise_device([[float("nan")] * 8])
        with self.assertRaisesRegex(ValueError, "no device branch"):
            ct.CdmppModel(small_config(device=False)).standardise_device([a])

    def test_shared_bn_statistics_cover_both_inputs(self):
        cfg = small_config()
        model = make_model(cfg).double().train()
        bn = model.shared_bn
        bn.reset_running_stats()
        bn.momentum = 1.0                         # running = the last batch statistic
        seen = {}
        model.embed[-1].register_forward_hook(lambda m, i, o: seen.__setitem__("e", o))
        model.device_mlp[-1].register_forward_hook(lambda m, i, o: seen.__setitem__("g", o))
        prof, asts = programs(cfg, 8)
        x, mask, dev = ct.preprocess(asts, prof.norm_min, prof.norm_max, cfg)
        with torch.no_grad():
            model(x, mask, dev)
        both = torch.cat([seen["e"], seen["g"]])
        torch.testing.assert_close(bn.running_mean, both.mean(0))
        torch.testing.assert_close(bn.running_var, both.var(0))

    def test_flatten_needs_exact_leaf_count(self):
        cfg = small_config(pooling="flatten", max_leaves=3)
        model = make_model(cfg)
        with self.assertRaisesRegex(ValueError, "exactly 3"):
            model(torch.zeros(1, 2, 164), None, torch.zeros(1, 8))


class Folding(unittest.TestCase):
    def test_fold_linear_bn(self):
        torch.manual_seed(0)
        lin, bn = torch.nn.Linear(7, 5).double(), torch.nn.BatchNorm1d(5).double()
        random_bn(bn)
        w, b = cv.fold_linear_bn(lin, bn)
        x = torch.randn(11, 7, dtype=torch.float64)
        with torch.no_grad():
            torch.testing.assert_close(x @ w.T + b, bn(lin(x)), rtol=1e-12, atol=1e-12)

    def _check_folded_file(self, cfg, transform):
        model = make_model(cfg, transform)
        prof, asts = programs(cfg, 10, seed=3)
        ckpt = cv.make_checkpoint(model, prof.norm_min, prof.norm_max)
        tensors, meta = cv.convert(ckpt)
        self.assertFalse([k for k in tensors if ".bn." in k or "running" in k])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.safetensors")
            safetensors_io.save_file(tensors, path, meta)
            engine = ReferenceEngine(path)
        x, mask, dev = ct.preprocess(asts, prof.norm_min, prof.norm_max, cfg)
        with torch.no_grad():
            m64 = cv._double_copy(model)
            z, s = m64(x, mask, dev), m64.predict_seconds(x, mask, dev)
        for i, ast in enumerate(asts):
            ze, se = engine.predict(ast)
            self.assertAlmostEqual(ze, float(z[i]), delta=1e-5)
            self.assertAlmostEqual(se / float(s[i]), 1.0, delta=1e-5)

    def test_folding_preserves_outputs(self):
        cases = [
            (small_config(), ct.OutputTransform("boxcox", -0.1, -9, 2)),
            (small_config(norm_first=True, activation="gelu", final_norm=True, pooling="sum",
                          device=False), ct.OutputTransform("log", 0, -8, 2)),
            (small_config(pooling="flatten", max_leaves=3, d_model=164, heads=4,
                          embed_dims=[16]), ct.OutputTransform("boxcox", 0.0, -7, 1.5)),
            (small_config(d_model=30, heads=5, decoder_dims=[], device=False),
             ct.OutputTransform("none", 0, 1e-3, 1e-4)),
        ]
        for cfg, tr in cases:
            with self.subTest(cfg=cfg):
                self._check_folded_file(cfg, tr)


class Refusal(unittest.TestCase):
    def setUp(self):
        self.cfg = small_config()
        self.model = make_model(self.cfg)
        self.ckpt = cv.make_checkpoint(self.model, np.zeros(164), np.ones(164))

    def test_missing_tensor(self):
        del self.ckpt["state_dict"]["decoder.1.bn.running_var"]
        with self.assertRaisesRegex(cv.ConversionError, "missing tensor 'decoder.1.bn.running_var'"):
            cv.convert(self.ckpt)

    def test_checkpoint_without_device_standardisation_is_the_identity(self):
        model = make_model(self.cfg)
        for name in cv.OPTIONAL_TENSORS:
            del self.ckpt["state_dict"][name]
            getattr(model, name).copy_(torch.zeros(8) if name == "device_shift" else torch.ones(8))
        ref = cv.export_tensors(model)
        tensors, _ = cv.convert(self.ckpt)
        for name, t in ref.items():
            np.testing.assert_array_equal(tensors[name], t, err_msg=name)

    def test_unexpected_tensor(self):
        self.ckpt["state_dict"]["encoder.layers.2.norm1.weight"] = torch.ones(32)
        with self.assertRaisesRegex(cv.ConversionError,
                                    "unexpected tensor 'encoder.layers.2.norm1.weight'"):
            cv.convert(self.ckpt)

    def test_wrong_shape(self):
        self.ckpt["config"]["ffn_dim"] = 64
        with self.assertRaisesRegex(cv.ConversionError,
                                    r"'encoder.layers.0.linear1.weight' has shape \[48, 32\]"):
            cv.convert(self.ckpt)

    def test_cli_refuses_with_the_name(self):
        del self.ckpt["state_dict"]["head.bias"]
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "c.pt")
            torch.save(self.ckpt, src)
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                rc = cv.main([src, os.path.join(tmp, "m.safetensors")])
            self.assertEqual(rc, 1)
            self.assertIn("missing tensor 'head.bias'", err.getvalue())
            self.assertFalse(os.path.exists(os.path.join(tmp, "m.safetensors")))

    def test_bad_norm_and_transform(self):
        bad = dict(self.ckpt, norm={"min": [0.0] * 163, "max": [1.0] * 164})
        with self.assertRaisesRegex(cv.ConversionError, "norm.min"):
            cv.convert(bad)
        bad = dict(self.ckpt, output_transform={"kind": "boxcox"})
        with self.assertRaisesRegex(cv.ConversionError, "lambda"):
            cv.convert(bad)
        bad = dict(self.ckpt, config=dict(self.ckpt["config"], heads=5))
        with self.assertRaisesRegex(cv.ConversionError, "heads=5"):
            cv.convert(bad)


class RoundTrip(unittest.TestCase):
    def test_file_round_trip_and_names(self):
        cfg = small_config()
        model = make_model(cfg)
        ckpt = cv.make_checkpoint(model, np.zeros(164), np.full(164, 3.0), {"data": "none"})
        with tempfile.TemporaryDirectory() as tmp:
            src, dst = os.path.join(tmp, "c.pt"), os.path.join(tmp, "m.safetensors")
            torch.save(ckpt, src)
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(cv.main([src, dst, "--selftest", "3"]), 0)
            tensors, meta = safetensors_io.load_file(dst)
        want, want_meta = cv.convert(ckpt, selftest=3)
        self.assertEqual(meta, want_meta)
        self.assertEqual(sorted(tensors), sorted(want))
        for k in want:
            np.testing.assert_array_equal(tensors[k], want[k])
            self.assertEqual(tensors[k].dtype, np.float32, k)
        self.assertEqual(meta["tempo.format"], "1")
        self.assertEqual(meta["tempo.model"], "cdmpp")
        self.assertEqual(ct.CdmppConfig.from_dict(json.loads(meta["tempo.config"])), cfg)
        self.assertEqual(json.loads(meta["tempo.output_transform"]),
                         {"kind": "boxcox", "lambda": -0.1, "mean": -9.0, "scale": 2.0})
        self.assertEqual(json.loads(meta["tempo.card"]), {"data": "none"})
        # the exact tensor list of README.md for this config
        names = {"input_proj.weight", "input_proj.bias", "norm.min", "norm.max",
                 "head.weight", "head.bias", "shared_bn.scale", "shared_bn.shift",
                 "selftest.input", "selftest.input_mask", "selftest.input_device",
                 "selftest.output"}
        for i in range(cfg.layers):
            p = f"encoder.layers.{i}."
            names |= {p + s for s in ("self_attn.in_proj_weight", "self_attn.in_proj_bias",
                                      "self_attn.out_proj.weight", "self_attn.out_proj.bias",
                                      "linear1.weight", "linear1.bias", "linear2.weight",
                                      "linear2.bias", "norm1.weight", "norm1.bias",
                                      "norm2.weight", "norm2.bias")}
        for prefix, dims in (("embed", cfg.embed_dims), ("device_mlp", cfg.device_dims),
                             ("decoder", cfg.decoder_dims)):
            for i in range(len(dims)):
                names |= {f"{prefix}.{i}.linear.weight", f"{prefix}.{i}.linear.bias"}
        self.assertEqual(set(tensors), names)
        self.assertEqual(tensors["selftest.input"].shape, (3, 6, 164))
        self.assertEqual(tensors["selftest.input_mask"].shape, (3, 6))
        self.assertEqual(tensors["selftest.input_device"].shape, (3, 8))
        self.assertEqual(tensors["selftest.output"].shape, (3,))

    def test_selftest_is_reproducible_from_the_file(self):
        cfg = small_config(pooling="sum")
        ckpt = cv.make_checkpoint(make_model(cfg), np.zeros(164), np.ones(164))
        tensors, meta = cv.convert(ckpt, selftest=4)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.safetensors")
            safetensors_io.save_file(tensors, path, meta)
            engine = ReferenceEngine(path)
        st = json.loads(meta["tempo.selftest"])
        for b in range(st["count"]):
            n = int(tensors["selftest.input_mask"][b].sum())
            self.assertTrue((tensors["selftest.input_mask"][b, :n] == 1).all())
            z = engine.forward(tensors["selftest.input"][b, :n].astype(np.float64),
                               tensors["selftest.input_device"][b])
            want = float(tensors["selftest.output"][b])
            self.assertLessEqual(abs(z - want), st["atol"] + st["rtol"] * abs(want))


class Fixtures(unittest.TestCase):
    def test_committed_fixtures_match_the_file_only_engine(self):
        with open(os.path.join(FIXTURES, "manifest.json")) as f:
            models = [m for m in json.load(f)["models"] if m["committed"]]
        self.assertGreaterEqual(len(models), 6)
        for m in models:
            engine = ReferenceEngine(os.path.join(FIXTURES, m["model"]))
            with open(os.path.join(FIXTURES, m["inputs"])) as f:
                inputs = [json.loads(line) for line in f]
            with open(os.path.join(FIXTURES, m["expected"])) as f:
                expected = [json.loads(line) for line in f]
            self.assertEqual(len(inputs), 64)
            self.assertEqual([e["id"] for e in expected], [a["id"] for a in inputs])
            for ast, exp in list(zip(inputs, expected))[::8]:   # a sample keeps this fast
                z, s = engine.predict(ast)
                self.assertAlmostEqual(z, exp["transformed"], delta=1e-5, msg=m["name"])
                self.assertAlmostEqual(s / exp["seconds"], 1.0, delta=1e-5, msg=m["name"])
            # the embedded selftest passes with the file-only engine
            t, st = engine.t, json.loads(engine.meta["tempo.selftest"])
            for b in range(st["count"]):
                n = int(t["selftest.input_mask"][b].sum())
                dev = t["selftest.input_device"][b] if m["config"]["device"] else None
                z = engine.forward(t["selftest.input"][b, :n], dev)
                want = float(t["selftest.output"][b])
                self.assertLess(abs(z - want), 1e-5 + 1e-5 * abs(want), msg=m["name"])


if __name__ == "__main__":
    unittest.main()
