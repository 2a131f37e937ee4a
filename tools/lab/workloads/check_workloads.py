#!/usr/bin/env python3
"""Validate tempo's lab workload files and summarise them.

Run either way from the repository root:

    python3 tools/lab/workloads/check_workloads.py          # summary table; exit 1 on any problem
    python3 -m unittest tools.lab.workloads.check_workloads  # the same checks as unit tests

What it checks, for every ``*.json`` in this folder:
  * the schema (see README.md): top-level keys, op names, exact param names and types,
    epilogue names, positive sizes, non-negative padding, channels divisible by groups,
    positive integer output sizes (floor mode, as PyTorch and TVM compute them),
    the file name ``<network>_b<batch>_<size>.json`` agreeing with its contents;
  * FLOPs per task and per network, compared against published MAC counts;
  * distinct tasks, deduplicated over (op, params, epilogue), overall and per network,
    and the acceptance target: >= 300 distinct tasks from >= 15 networks;
  * that the committed files are exactly what make_workloads.py generates now.
"""

import glob
import importlib.util
import json
import os
import re
import sys
import unittest
from collections import OrderedDict, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))

MIN_DISTINCT_TASKS = 300
MIN_NETWORKS = 15

# ---------------------------------------------------------------------------
# Schema
# ---------------------------------------------------------------------------

I, B, L2, L3 = "int", "bool", "list2", "list3"   # field kinds

_CONV2D = OrderedDict([("N", I), ("H", I), ("W", I), ("C", I), ("K", I), ("R", I), ("S", I),
                       ("stride", L2), ("padding", L2), ("dilation", L2), ("groups", I)])
_POOL = OrderedDict([("N", I), ("H", I), ("W", I), ("C", I), ("kernel", L2), ("stride", L2),
                     ("padding", L2), ("count_include_pad", B)])
_ROWS = OrderedDict([("rows", I), ("cols", I)])

OPS = {
    "dense": OrderedDict([("M", I), ("N", I), ("K", I)]),
    "batch_matmul": OrderedDict([("B", I), ("M", I), ("N", I), ("K", I),
                                 ("transpose_b", B), ("broadcast_b", B)]),
    "conv2d_nhwc": _CONV2D,
    "conv2d_nchw": _CONV2D,
    "conv3d_ndhwc": OrderedDict([("N", I), ("D", I), ("H", I), ("W", I), ("C", I), ("K", I),
                                 ("T", I), ("R", I), ("S", I), ("stride", L3), ("padding", L3),
                                 ("dilation", L3), ("groups", I)]),
    "conv2d_transpose_nhwc": OrderedDict([("N", I), ("H", I), ("W", I), ("C", I), ("K", I),
                                          ("R", I), ("S", I), ("stride", L2), ("padding", L2),
                                          ("output_padding", L2)]),
    "max_pool2d_nhwc": _POOL,
    "avg_pool2d_nhwc": _POOL,
    "global_avg_pool2d_nhwc": OrderedDict([("N", I), ("H", I), ("W", I), ("C", I)]),
    "softmax": _ROWS,
    "layer_norm": _ROWS,
}

EPILOGUES = ("bias_add", "relu", "relu6", "hardswish", "hardsigmoid", "sigmoid", "tanh",
             "gelu", "add", "multiply", "scale")

TOP_KEYS = ("network", "batch", "input_shape", "source", "tasks")
TASK_KEYS = ("name", "op", "params", "epilogue", "count")
NONNEG = ("padding", "output_padding")          # may be 0; every other int must be >= 1

FILE_RE = re.compile(r"^(?P<network>[a-z0-9_]+)_b(?P<batch>\d+)_(?P<size>\d+)\.json$")


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _out(size, k, s, p, d=1):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def output_shape(op, p):
    """The task's output shape (floor mode)."""
    if op == "dense":
        return [p["M"], p["N"]]
    if op == "batch_matmul":
        return [p["B"], p["M"], p["N"]]
    if op in ("conv2d_nhwc", "conv2d_nchw"):
        (sh, sw), (ph, pw), (dh, dw) = p["stride"], p["padding"], p["dilation"]
        ho, wo = _out(p["H"], p["R"], sh, ph, dh), _out(p["W"], p["S"], sw, pw, dw)
        return [p["N"], ho, wo, p["K"]] if op == "conv2d_nhwc" else [p["N"], p["K"], ho, wo]
    if op == "conv3d_ndhwc":
        st, pd, dl = p["stride"], p["padding"], p["dilation"]
        return [p["N"], _out(p["D"], p["T"], st[0], pd[0], dl[0]),
                _out(p["H"], p["R"], st[1], pd[1], dl[1]),
                _out(p["W"], p["S"], st[2], pd[2], dl[2]), p["K"]]
    if op == "conv2d_transpose_nhwc":
        (sh, sw), (ph, pw), (oh, ow) = p["stride"], p["padding"], p["output_padding"]
        return [p["N"], (p["H"] - 1) * sh - 2 * ph + p["R"] + oh,
                (p["W"] - 1) * sw - 2 * pw + p["S"] + ow, p["K"]]
    if op in ("max_pool2d_nhwc", "avg_pool2d_nhwc"):
        (kh, kw), (sh, sw), (ph, pw) = p["kernel"], p["stride"], p["padding"]
        return [p["N"], _out(p["H"], kh, sh, ph), _out(p["W"], kw, sw, pw), p["C"]]
    if op == "global_avg_pool2d_nhwc":
        return [p["N"], 1, 1, p["C"]]
    if op in ("softmax", "layer_norm"):
        return [p["rows"], p["cols"]]
    raise KeyError(op)


def _prod(xs):
    r = 1
    for x in xs:
        r *= x
    return r


def macs(op, p):
    """Multiply-accumulates of the main computation (GEMM-like ops); 0 for the others."""
    if op == "dense":
        return p["M"] * p["N"] * p["K"]
    if op == "batch_matmul":
        return p["B"] * p["M"] * p["N"] * p["K"]
    if op in ("conv2d_nhwc", "conv2d_nchw"):
        return _prod(output_shape(op, p)) * (p["C"] // p["groups"]) * p["R"] * p["S"]
    if op == "conv3d_ndhwc":
        return _prod(output_shape(op, p)) * (p["C"] // p["groups"]) * p["T"] * p["R"] * p["S"]
    if op == "conv2d_transpose_nhwc":
        # Useful MACs: every input pixel scatters a CxK RxS kernel (the zero-inserted
        # direct form the lab computes does about stride_h*stride_w times more).
        return p["N"] * p["H"] * p["W"] * p["C"] * p["K"] * p["R"] * p["S"]
    return 0


def flops(task):
    """Approximate FLOPs of a task: 2 per MAC, window reads for pools, a few per element for
    softmax / layer_norm, and one per output element per epilogue op."""
    op, p = task["op"], task["params"]
    out = _prod(output_shape(op, p))
    if op in ("max_pool2d_nhwc", "avg_pool2d_nhwc"):
        main = out * p["kernel"][0] * p["kernel"][1]
    elif op == "global_avg_pool2d_nhwc":
        main = p["N"] * p["H"] * p["W"] * p["C"]
    elif op == "softmax":
        main = 4 * out                 # max, exp(x - max), sum, divide
    elif op == "layer_norm":
        main = 7 * out                 # mean, variance (sub, square, sum), normalise, scale, shift
    else:
        main = 2 * macs(op, p)
    return main + out * len(task["epilogue"])


def validate(doc, filename=None):
    """Return a list of error strings for one workload document."""
    errs = []

    def err(where, msg):
        errs.append("%s: %s" % (where, msg))

    if not isinstance(doc, dict):
        return ["top level is not an object"]
    keys = list(doc.keys())
    if sorted(keys) != sorted(TOP_KEYS):
        err("top", "keys %s, expected %s" % (keys, list(TOP_KEYS)))
        return errs
    if not isinstance(doc["network"], str) or not re.match(r"^[a-z0-9_]+$", doc["network"]):
        err("network", "must be a lower-case identifier string")
    if not _is_int(doc["batch"]) or doc["batch"] < 1:
        err("batch", "must be a positive int")
    shp = doc["input_shape"]
    if not (isinstance(shp, list) and shp and all(_is_int(v) and v > 0 for v in shp)):
        err("input_shape", "must be a non-empty list of positive ints")
    elif _is_int(doc["batch"]) and shp[0] != doc["batch"]:
        err("input_shape", "leading dim %d != batch %d" % (shp[0], doc["batch"]))
    if not isinstance(doc["source"], str) or not doc["source"]:
        err("source", "must be a non-empty string")
    if filename is not None:
        m = FILE_RE.match(os.path.basename(filename))
        if not m:
            err("file", "name must be <network>_b<batch>_<size>.json")
        elif m.group("network") != doc["network"] or int(m.group("batch")) != doc["batch"]:
            err("file", "name disagrees with network/batch fields")
    tasks = doc["tasks"]
    if not isinstance(tasks, list) or not tasks:
        err("tasks", "must be a non-empty list")
        return errs
    names = set()
    for i, t in enumerate(tasks):
        where = "tasks[%d]" % i
        if not isinstance(t, dict) or sorted(t.keys()) != sorted(TASK_KEYS):
            err(where, "keys must be exactly %s" % list(TASK_KEYS))
            continue
        where = "tasks[%d] (%s)" % (i, t["name"])
        if not isinstance(t["name"], str) or not t["name"]:
            err(where, "name must be a non-empty string")
        elif t["name"] in names:
            err(where, "duplicate name")
        names.add(t["name"])
        if not _is_int(t["count"]) or t["count"] < 1:
            err(where, "count must be a positive int")
        epi = t["epilogue"]
        if not isinstance(epi, list) or any(e not in EPILOGUES for e in epi):
            err(where, "epilogue %r: names must be among %s" % (epi, list(EPILOGUES)))
        elif epi.count("bias_add") > 1:
            err(where, "bias_add twice")
        op = t["op"]
        if op not in OPS:
            err(where, "unknown op %r" % op)
            continue
        schema, p = OPS[op], t["params"]
        if not isinstance(p, dict) or sorted(p.keys()) != sorted(schema.keys()):
            err(where, "params keys %s, expected %s" % (sorted(p) if isinstance(p, dict) else p,
                                                         sorted(schema)))
            continue
        ok = True
        for k, kind in schema.items():
            v = p[k]
            lo = 0 if k in NONNEG else 1
            if kind == I:
                good = _is_int(v) and v >= lo
            elif kind == B:
                good = isinstance(v, bool)
            else:
                n = 2 if kind == L2 else 3
                good = isinstance(v, list) and len(v) == n and all(_is_int(x) and x >= lo for x in v)
            if not good:
                err(where, "param %s=%r is not a valid %s (min %d)" % (k, v, kind, lo))
                ok = False
        if not ok:
            continue
        if "groups" in p and (p["C"] % p["groups"] or p["K"] % p["groups"]):
            err(where, "C=%d and K=%d must be divisible by groups=%d" % (p["C"], p["K"], p["groups"]))
        if op in ("max_pool2d_nhwc", "avg_pool2d_nhwc"):
            if any(2 * pd > k for pd, k in zip(p["padding"], p["kernel"])):
                err(where, "pool padding must be at most half the kernel")
        if op == "conv2d_transpose_nhwc":
            if any(o >= s for o, s in zip(p["output_padding"], p["stride"])):
                err(where, "output_padding must be smaller than stride")
        out = output_shape(op, p)
        if any(v < 1 for v in out):
            err(where, "output shape %s is not positive" % out)
        # The leading (batch) dimension must carry the file's batch.
        lead = {"dense": "M", "batch_matmul": "B", "softmax": "rows", "layer_norm": "rows"}.get(op, "N")
        if _is_int(doc["batch"]) and p[lead] % doc["batch"]:
            err(where, "%s=%d is not a multiple of batch %d" % (lead, p[lead], doc["batch"]))
    return errs


def is_tenset_winograd(op, p):
    """Tenset's x86 strategy picks Winograd NHWC for fp32 3x3 s1 d1 convs with 64 < K < 512."""
    return (op == "conv2d_nhwc" and p["R"] == 3 and p["S"] == 3 and p["stride"] == [1, 1]
            and p["dilation"] == [1, 1] and p["groups"] == 1 and 64 < p["K"] < 512)


def task_key(t):
    """Identity used for deduplication: (op, params, epilogue)."""
    return (t["op"], json.dumps(t["params"], sort_keys=True), tuple(t["epilogue"]))


# ---------------------------------------------------------------------------
# Loading and summarising
# ---------------------------------------------------------------------------

def load_all(folder=HERE):
    docs = OrderedDict()
    def order(path):   # by network, then batch and size numerically
        m = FILE_RE.match(os.path.basename(path))
        return (m.group("network"), int(m.group("batch")), int(m.group("size"))) if m else (path, 0, 0)
    for path in sorted(glob.glob(os.path.join(folder, "*.json")), key=order):
        with open(path) as f:
            docs[os.path.basename(path)] = json.load(f)
    return docs


def _size_of(fname):
    m = FILE_RE.match(fname)
    return int(m.group("size")) if m else None


# Published MACs at batch 1 (torchvision's model-zoo "GFLOPS" column counts MACs of conv and
# linear layers).  (network, size) -> (GMAC, where the figure comes from).
def _bert_ref(layers, h, f, seq):
    # per token and layer: QKV 3H^2 + out H^2 + FFN 2HF, plus attention 2*L*H; pooler H^2.
    per_tok_layer = 4 * h * h + 2 * h * f + 2 * seq * h
    return (layers * seq * per_tok_layer + h * h) / 1e9


def _dcgan_ref(size, ngf=128):
    b = size // 16
    g = 100 * b * b * ngf * 8
    chans = [ngf * 8, ngf * 4, ngf * 2, ngf, 3]
    for i in range(4):
        s = b * 2 ** i
        g += s * s * chans[i] * chans[i + 1] * 16
    return g / 1e9


REFERENCE_GMAC = {
    ("resnet_18", 224): (1.81, "torchvision model zoo"),
    ("resnet_50", 224): (4.09, "torchvision model zoo"),
    ("mobilenet_v2", 224): (0.30, "torchvision model zoo (300 M mult-adds in the paper)"),
    ("mobilenet_v3", 224): (0.22, "torchvision model zoo (219 M in the paper)"),
    ("wide_resnet_50", 224): (11.40, "torchvision model zoo"),
    ("resnext_50", 224): (4.23, "torchvision model zoo"),
    ("densenet_121", 224): (2.83, "torchvision model zoo"),
    ("inception_v3", 299): (5.71, "torchvision model zoo"),
    ("vgg_16", 224): (15.47, "torchvision model zoo"),
    ("resnet3d_18", 112): (40.70, "torchvision r3d_18 (16x112x112 clip: same output volume)"),
    ("bert_tiny", 128): (_bert_ref(6, 512, 2048, 128), "12H^2+2LH per token-layer"),
    ("bert_base", 128): (_bert_ref(12, 768, 3072, 128), "12H^2+2LH per token-layer (~11.2 G)"),
    ("bert_medium", 128): (_bert_ref(12, 1024, 4096, 128), "12H^2+2LH per token-layer"),
    ("bert_large", 128): (_bert_ref(24, 1024, 4096, 128), "12H^2+2LH per token-layer"),
    ("dcgan", 64): (_dcgan_ref(64), "sum of layer MACs, computed independently"),
}
REL_TOLERANCE = 0.03

# TLP's hold-out (spec 1.4): tasks of these files are the test set of the main split.
HOLDOUT_FILES = ("resnet_50_b1_224.json", "mobilenet_v2_b1_224.json", "resnext_50_b1_224.json",
                 "bert_base_b1_128.json", "bert_tiny_b1_128.json")


def network_gmac(doc):
    return sum(macs(t["op"], t["params"]) * t["count"] for t in doc["tasks"]) / 1e9


def network_gflop(doc):
    return sum(flops(t) * t["count"] for t in doc["tasks"]) / 1e9


def summarise(docs):
    """Per-network rows and overall distinct-task counts."""
    per_net = OrderedDict()
    all_keys = set()
    holdout_keys, train_keys = set(), set()
    for fname, doc in docs.items():
        net = doc["network"]
        row = per_net.setdefault(net, {"files": 0, "entries": 0, "keys": set(), "ops": defaultdict(int)})
        row["files"] += 1
        row["entries"] += len(doc["tasks"])
        for t in doc["tasks"]:
            k = task_key(t)
            if k not in row["keys"]:
                row["ops"][t["op"]] += 1
            row["keys"].add(k)
            all_keys.add(k)
            (holdout_keys if fname in HOLDOUT_FILES else train_keys).add(k)
    return per_net, all_keys, holdout_keys, train_keys


def flop_comparison(docs):
    rows = []
    for (net, size), (ref, src) in REFERENCE_GMAC.items():
        fname = "%s_b1_%d.json" % (net, size)
        if fname not in docs:
            rows.append((net, size, None, ref, None, src))
            continue
        got = network_gmac(docs[fname])
        rows.append((net, size, got, ref, got / ref - 1.0, src))
    return rows


def _load_generator():
    spec = importlib.util.spec_from_file_location("_tempo_make_workloads",
                                                  os.path.join(HERE, "make_workloads.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def stale_files(docs):
    """Generated files that differ from what make_workloads.py produces now (or are missing)."""
    gen = _load_generator()
    bad = []
    for key in gen.all_keys():
        name = gen.file_name(*key)
        path = os.path.join(HERE, name)
        if not os.path.exists(path):
            bad.append(name + " (missing)")
            continue
        with open(path) as f:
            if f.read() != gen.dumps(gen.build(*key)):
                bad.append(name)
    return bad


def report(docs, out=sys.stdout):
    """Print the summary; return the number of problems found."""
    problems = 0
    for fname, doc in docs.items():
        for e in validate(doc, fname):
            print("SCHEMA %s: %s" % (fname, e), file=out)
            problems += 1
    if problems:
        return problems

    per_net, all_keys, holdout_keys, train_keys = summarise(docs)
    print("%-15s %5s %7s %8s  %-s" % ("network", "files", "entries", "distinct", "distinct by op"),
          file=out)
    for net, row in per_net.items():
        ops = ", ".join("%s %d" % (op, n) for op, n in sorted(row["ops"].items()))
        print("%-15s %5d %7d %8d  %s" % (net, row["files"], row["entries"], len(row["keys"]), ops),
              file=out)
    by_op = defaultdict(int)
    for k in all_keys:
        by_op[k[0]] += 1
    print("-" * 78, file=out)
    print("%d networks, %d files, %d distinct tasks over all files" %
          (len(per_net), len(docs), len(all_keys)), file=out)
    print("distinct by op: " + ", ".join("%s %d" % kv for kv in sorted(by_op.items())), file=out)
    for b in sorted(set(doc["batch"] for doc in docs.values())):
        kb = set(task_key(t) for doc in docs.values() if doc["batch"] == b for t in doc["tasks"])
        print("distinct tasks in the batch-%d files: %d" % (b, len(kb)), file=out)
    wino = [k for k in all_keys if is_tenset_winograd(k[0], json.loads(k[1]))]
    print("distinct tasks Tenset would compute with Winograd (3x3 s1 d1 g1, 64 < K < 512; "
          "direct here): %d" % len(wino), file=out)
    print("TLP hold-out files (%s): %d distinct tasks, %d of them also occur elsewhere"
          % (", ".join(f[:-5] for f in HOLDOUT_FILES), len(holdout_keys),
             len(holdout_keys & train_keys)), file=out)

    print("\nPer-file totals at batch 1 (GMAC = conv/dense/matmul multiply-adds; GFLOP incl. "
          "pools, norms, epilogues):", file=out)
    for fname, doc in docs.items():
        if doc["batch"] == 1:
            print("  %-28s %4d entries %4d distinct %9.3f GMAC %9.3f GFLOP" %
                  (fname[:-5], len(doc["tasks"]), len(set(task_key(t) for t in doc["tasks"])),
                   network_gmac(doc), network_gflop(doc)), file=out)

    print("\nFLOP sanity check against published MACs (batch 1):", file=out)
    print("  %-14s %4s %10s %10s %7s  %s" % ("network", "size", "ours GMAC", "ref GMAC", "diff",
                                             "reference"), file=out)
    for net, size, got, ref, rel, src in flop_comparison(docs):
        if got is None:
            print("  %-14s %4d %10s %10.3f %7s  %s" % (net, size, "missing", ref, "", src), file=out)
            problems += 1
            continue
        flag = "" if abs(rel) <= REL_TOLERANCE else "  <-- off by more than %d%%" % (
            REL_TOLERANCE * 100)
        problems += bool(flag)
        print("  %-14s %4d %10.3f %10.3f %+6.1f%%  %s%s" % (net, size, got, ref, 100 * rel, src, flag),
              file=out)

    ok_tasks = len(all_keys) >= MIN_DISTINCT_TASKS
    ok_nets = len(per_net) >= MIN_NETWORKS
    print("\nacceptance: %d distinct tasks (need >= %d) %s; %d networks (need >= %d) %s" %
          (len(all_keys), MIN_DISTINCT_TASKS, "ok" if ok_tasks else "FAIL",
           len(per_net), MIN_NETWORKS, "ok" if ok_nets else "FAIL"), file=out)
    problems += (not ok_tasks) + (not ok_nets)

    stale = stale_files(docs)
    if stale:
        print("stale generated files (rerun make_workloads.py): %s" % ", ".join(stale), file=out)
        problems += len(stale)
    return problems


# ---------------------------------------------------------------------------
# unittest entry points
# ---------------------------------------------------------------------------

class WorkloadFilesTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.docs = load_all()

    def test_files_present(self):
        self.assertTrue(self.docs, "no workload files")

    def test_schema(self):
        for fname, doc in self.docs.items():
            with self.subTest(file=fname):
                self.assertEqual(validate(doc, fname), [])

    def test_flops_match_published(self):
        for net, size, got, ref, rel, src in flop_comparison(self.docs):
            with self.subTest(network=net, size=size):
                self.assertIsNotNone(got, "file missing")
                self.assertLessEqual(abs(rel), REL_TOLERANCE,
                                     "%s@%d: %.3f GMAC vs %.3f (%s)" % (net, size, got, ref, src))

    def test_acceptance(self):
        per_net, all_keys, _, _ = summarise(self.docs)
        self.assertGreaterEqual(len(all_keys), MIN_DISTINCT_TASKS)
        self.assertGreaterEqual(len(per_net), MIN_NETWORKS)

    def test_generated_files_up_to_date(self):
        self.assertEqual(stale_files(self.docs), [])


class ValidatorTest(unittest.TestCase):
    """The validator itself rejects broken documents."""

    def _doc(self, **task_over):
        task = {"name": "c", "op": "conv2d_nhwc",
                "params": {"N": 1, "H": 8, "W": 8, "C": 4, "K": 8, "R": 3, "S": 3, "stride": [1, 1],
                           "padding": [1, 1], "dilation": [1, 1], "groups": 2},
                "epilogue": ["bias_add", "relu"], "count": 1}
        task.update(task_over)
        return {"network": "toy", "batch": 1, "input_shape": [1, 8, 8, 4], "source": "test",
                "tasks": [task]}

    def test_good(self):
        self.assertEqual(validate(self._doc(), "toy_b1_8.json"), [])

    def test_bad(self):
        d = self._doc()
        d["tasks"][0]["params"]["groups"] = 3
        self.assertTrue(validate(d))
        self.assertTrue(validate(self._doc(epilogue=["swish"])))
        self.assertTrue(validate(self._doc(op="conv9d")))
        self.assertTrue(validate(self._doc(count=0)))
        d = self._doc()
        d["tasks"][0]["params"]["R"] = 11           # window larger than the padded input
        self.assertTrue(validate(d))
        d = self._doc()
        del d["tasks"][0]["params"]["dilation"]
        self.assertTrue(validate(d))
        self.assertTrue(validate(self._doc(), "toy_b2_8.json"))


def main():
    docs = load_all()
    problems = report(docs)
    print("\n%s" % ("OK" if not problems else "%d problem(s)" % problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
