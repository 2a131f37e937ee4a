#!/usr/bin/env python3
"""Generate tempo's lab workload files: the reduction tasks of real DNNs.

Each architecture below is written out by hand from its published definition
(torchvision, HuggingFace BertModel with Tenset's custom sizes, relay.testing
dcgan).  A network function walks the layers in order, propagating tensor shapes,
and emits one *task* per fused group that contains a reduction, the way Tenset's
``auto_scheduler.extract_tasks`` does after Relay's fusion:

* conv / dense / batch_matmul / pool / softmax / layer_norm are tasks;
* the element-wise ops that follow them are their ``epilogue``
  (BatchNorm is folded into a per-channel ``bias_add``);
* purely element-wise or injective groups (concat, reshape, transpose,
  BN+ReLU before a DenseNet conv, SE's broadcast channel multiply) are not tasks.

Usage (from the repository root):

    python3 tools/lab/workloads/make_workloads.py           # (re)write all files
    python3 tools/lab/workloads/make_workloads.py --list    # print the file names only

One file per (network, batch, input size): ``<network>_b<batch>_<size>.json``.
The schema is described in README.md next to this file.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------------------
# Shape helpers
# ---------------------------------------------------------------------------

def _tup(v, n):
    """An int or a sequence -> a list of n ints."""
    if isinstance(v, (list, tuple)):
        assert len(v) == n, v
        return [int(x) for x in v]
    return [int(v)] * n


def conv_out(size, k, s, p, d=1):
    """Output length of a convolution / pooling window (floor mode, as PyTorch and TVM)."""
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


# ---------------------------------------------------------------------------
# The builder: tracks the current tensor shape and records tasks
# ---------------------------------------------------------------------------

class Net:
    """Collects the tasks of one (network, batch, size)."""

    def __init__(self, network, batch, input_shape, source):
        self.network = network
        self.batch = batch
        self.input_shape = list(input_shape)
        self.source = source
        self.tasks = []

    def task(self, name, op, params, epilogue=(), count=1):
        self.tasks.append({"name": name, "op": op, "params": params,
                           "epilogue": list(epilogue), "count": int(count)})

    # ---- 2-D NHWC ops; x is (N, H, W, C) ----------------------------------

    def conv(self, name, x, out_ch, k, s=1, p=0, g=1, d=1, epi=("bias_add", "relu")):
        n, h, w, c = x
        r, sk = _tup(k, 2)
        st, pd, dl = _tup(s, 2), _tup(p, 2), _tup(d, 2)
        assert c % g == 0 and out_ch % g == 0, (name, c, out_ch, g)
        self.task(name, "conv2d_nhwc",
                  {"N": n, "H": h, "W": w, "C": c, "K": out_ch, "R": r, "S": sk,
                   "stride": st, "padding": pd, "dilation": dl, "groups": g}, epi)
        return (n, conv_out(h, r, st[0], pd[0], dl[0]), conv_out(w, sk, st[1], pd[1], dl[1]), out_ch)

    def dwconv(self, name, x, k, s=1, epi=("bias_add", "relu")):
        c = x[3]
        return self.conv(name, x, c, k, s, (k - 1) // 2, g=c, epi=epi)

    def conv_transpose(self, name, x, out_ch, k, s, p, op=0, epi=("bias_add", "relu")):
        n, h, w, c = x
        r, sk = _tup(k, 2)
        st, pd, opd = _tup(s, 2), _tup(p, 2), _tup(op, 2)
        self.task(name, "conv2d_transpose_nhwc",
                  {"N": n, "H": h, "W": w, "C": c, "K": out_ch, "R": r, "S": sk,
                   "stride": st, "padding": pd, "output_padding": opd}, epi)
        return (n, (h - 1) * st[0] - 2 * pd[0] + r + opd[0],
                (w - 1) * st[1] - 2 * pd[1] + sk + opd[1], out_ch)

    def _pool(self, kind, name, x, k, s, p, count_include_pad, epi):
        n, h, w, c = x
        kk, st, pd = _tup(k, 2), _tup(s, 2), _tup(p, 2)
        self.task(name, kind,
                  {"N": n, "H": h, "W": w, "C": c, "kernel": kk, "stride": st, "padding": pd,
                   "count_include_pad": bool(count_include_pad)}, epi)
        return (n, conv_out(h, kk[0], st[0], pd[0]), conv_out(w, kk[1], st[1], pd[1]), c)

    def maxpool(self, name, x, k, s, p=0, epi=()):
        return self._pool("max_pool2d_nhwc", name, x, k, s, p, False, epi)

    def avgpool(self, name, x, k, s, p=0, count_include_pad=True, epi=()):
        # PyTorch's default is count_include_pad=True (torchvision never overrides it).
        return self._pool("avg_pool2d_nhwc", name, x, k, s, p, count_include_pad, epi)

    def global_avgpool(self, name, x, epi=()):
        n, h, w, c = x
        self.task(name, "global_avg_pool2d_nhwc", {"N": n, "H": h, "W": w, "C": c}, epi)
        return (n, 1, 1, c)

    def dense(self, name, m, k, n, epi=("bias_add",)):
        self.task(name, "dense", {"M": m, "N": n, "K": k}, epi)
        return (m, n)

    # ---- 3-D NDHWC ops; x is (N, D, H, W, C) -----------------------------

    def conv3d(self, name, x, out_ch, k, s=1, p=0, g=1, d=1, epi=("bias_add", "relu")):
        n, dd, h, w, c = x
        t, r, sk = _tup(k, 3)
        st, pd, dl = _tup(s, 3), _tup(p, 3), _tup(d, 3)
        self.task(name, "conv3d_ndhwc",
                  {"N": n, "D": dd, "H": h, "W": w, "C": c, "K": out_ch, "T": t, "R": r, "S": sk,
                   "stride": st, "padding": pd, "dilation": dl, "groups": g}, epi)
        return (n, conv_out(dd, t, st[0], pd[0], dl[0]), conv_out(h, r, st[1], pd[1], dl[1]),
                conv_out(w, sk, st[2], pd[2], dl[2]), out_ch)

    def to_dict(self):
        return {"network": self.network, "batch": self.batch, "input_shape": self.input_shape,
                "source": self.source, "tasks": self.tasks}


# ---------------------------------------------------------------------------
# ResNet family (torchvision resnet18 / resnet50 v1.5 / wide_resnet50_2 / resnext50_32x4d)
# ---------------------------------------------------------------------------

def _resnet_stem(net, x):
    x = net.conv("conv1", x, 64, 7, 2, 3)                 # conv1 + bn1 (folded) + relu
    return net.maxpool("maxpool", x, 3, 2, 1)


def _basic_block(net, name, x, planes, stride):
    """BasicBlock: 3x3 -> 3x3, residual add, relu; 1x1 s2 downsample when the shape changes."""
    inp = x
    y = net.conv(name + ".conv1", x, planes, 3, stride, 1)
    net.conv(name + ".conv2", y, planes, 3, 1, 1, epi=("bias_add", "add", "relu"))
    if stride != 1 or inp[3] != planes:
        net.conv(name + ".downsample.0", inp, planes, 1, stride, 0, epi=("bias_add",))
    return (y[0], y[1], y[2], planes)


def _bottleneck(net, name, x, planes, stride, groups, base_width):
    """Bottleneck v1.5 (stride on the 3x3): 1x1 -> 3x3 (grouped) -> 1x1 x4, residual, relu."""
    width = planes * base_width // 64 * groups
    out_ch = planes * 4
    inp = x
    y = net.conv(name + ".conv1", x, width, 1)
    y = net.conv(name + ".conv2", y, width, 3, stride, 1, g=groups)
    y = net.conv(name + ".conv3", y, out_ch, 1, epi=("bias_add", "add", "relu"))
    if stride != 1 or inp[3] != out_ch:
        net.conv(name + ".downsample.0", inp, out_ch, 1, stride, 0, epi=("bias_add",))
    return y


def _resnet(net, x, block, layers, groups=1, base_width=64, num_classes=1000):
    x = _resnet_stem(net, x)
    for i, (planes, blocks) in enumerate(zip((64, 128, 256, 512), layers)):
        for b in range(blocks):
            stride = 2 if (i > 0 and b == 0) else 1
            name = "layer%d.%d" % (i + 1, b)
            if block == "basic":
                x = _basic_block(net, name, x, planes, stride)
            else:
                x = _bottleneck(net, name, x, planes, stride, groups, base_width)
    x = net.global_avgpool("avgpool", x)
    net.dense("fc", x[0], x[3], num_classes)


def resnet_18(net, x):
    _resnet(net, x, "basic", (2, 2, 2, 2))


def resnet_50(net, x):
    _resnet(net, x, "bottleneck", (3, 4, 6, 3))


def wide_resnet_50(net, x):
    _resnet(net, x, "bottleneck", (3, 4, 6, 3), base_width=128)


def resnext_50(net, x):
    _resnet(net, x, "bottleneck", (3, 4, 6, 3), groups=32, base_width=4)


# ---------------------------------------------------------------------------
# MobileNet-V2 (torchvision mobilenet_v2, width 1.0)
# ---------------------------------------------------------------------------

def mobilenet_v2(net, x):
    relu6 = ("bias_add", "relu6")
    x = net.conv("features.0", x, 32, 3, 2, 1, epi=relu6)
    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    idx = 1
    for t, c, n, s in settings:
        for i in range(n):
            stride = s if i == 0 else 1
            name = "features.%d" % idx
            inp = x
            hidden = int(round(x[3] * t))
            if t != 1:
                x = net.conv(name + ".expand", x, hidden, 1, epi=relu6)
            x = net.dwconv(name + ".dw", x, 3, stride, epi=relu6)
            residual = stride == 1 and inp[3] == c
            x = net.conv(name + ".project", x, c, 1,
                         epi=("bias_add", "add") if residual else ("bias_add",))
            idx += 1
    x = net.conv("features.18", x, 1280, 1, epi=relu6)
    x = net.global_avgpool("avgpool", x)
    net.dense("classifier.1", x[0], x[3], 1000)


# ---------------------------------------------------------------------------
# MobileNet-V3-Large (torchvision mobilenet_v3_large)
# ---------------------------------------------------------------------------

def _make_divisible(v, divisor=8, min_value=None):
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def mobilenet_v3(net, x):
    hs = ("bias_add", "hardswish")
    x = net.conv("features.0", x, 16, 3, 2, 1, epi=hs)
    # (in, kernel, expanded, out, use_se, activation, stride)
    cfg = [(16, 3, 16, 16, False, "RE", 1), (16, 3, 64, 24, False, "RE", 2),
           (24, 3, 72, 24, False, "RE", 1), (24, 5, 72, 40, True, "RE", 2),
           (40, 5, 120, 40, True, "RE", 1), (40, 5, 120, 40, True, "RE", 1),
           (40, 3, 240, 80, False, "HS", 2), (80, 3, 200, 80, False, "HS", 1),
           (80, 3, 184, 80, False, "HS", 1), (80, 3, 184, 80, False, "HS", 1),
           (80, 3, 480, 112, True, "HS", 1), (112, 3, 672, 112, True, "HS", 1),
           (112, 5, 672, 160, True, "HS", 2), (160, 5, 960, 160, True, "HS", 1),
           (160, 5, 960, 160, True, "HS", 1)]
    for i, (cin, k, exp, cout, se, act, s) in enumerate(cfg):
        name = "features.%d" % (i + 1)
        assert x[3] == cin
        epi = ("bias_add", "relu") if act == "RE" else hs
        inp = x
        if exp != cin:
            x = net.conv(name + ".expand", x, exp, 1, epi=epi)
        x = net.dwconv(name + ".dw", x, k, s, epi=epi)
        if se:
            sq = _make_divisible(exp // 4, 8)
            p = net.global_avgpool(name + ".se.avgpool", x)
            p = net.conv(name + ".se.fc1", p, sq, 1, epi=("bias_add", "relu"))
            net.conv(name + ".se.fc2", p, exp, 1, epi=("bias_add", "hardsigmoid"))
            # x * scale: a broadcast multiply, fused into the next group; not a task.
        residual = s == 1 and cin == cout
        x = net.conv(name + ".project", x, cout, 1,
                     epi=("bias_add", "add") if residual else ("bias_add",))
    x = net.conv("features.16", x, 960, 1, epi=hs)
    x = net.global_avgpool("avgpool", x)
    net.dense("classifier.0", x[0], 960, 1280, epi=hs)
    net.dense("classifier.3", x[0], 1280, 1000)


# ---------------------------------------------------------------------------
# Inception-V3 (torchvision inception_v3, aux_logits=False, transform_input=False)
# ---------------------------------------------------------------------------

def _inception_a(net, name, x, pool_features):
    net.conv(name + ".branch1x1", x, 64, 1)
    b = net.conv(name + ".branch5x5_1", x, 48, 1)
    net.conv(name + ".branch5x5_2", b, 64, 5, 1, 2)
    b = net.conv(name + ".branch3x3dbl_1", x, 64, 1)
    b = net.conv(name + ".branch3x3dbl_2", b, 96, 3, 1, 1)
    net.conv(name + ".branch3x3dbl_3", b, 96, 3, 1, 1)
    p = net.avgpool(name + ".branch_pool.avg", x, 3, 1, 1)
    net.conv(name + ".branch_pool", p, pool_features, 1)
    return (x[0], x[1], x[2], 64 + 64 + 96 + pool_features)


def _inception_b(net, name, x):
    a = net.conv(name + ".branch3x3", x, 384, 3, 2)
    b = net.conv(name + ".branch3x3dbl_1", x, 64, 1)
    b = net.conv(name + ".branch3x3dbl_2", b, 96, 3, 1, 1)
    net.conv(name + ".branch3x3dbl_3", b, 96, 3, 2)
    net.maxpool(name + ".branch_pool", x, 3, 2)
    return (a[0], a[1], a[2], 384 + 96 + x[3])


def _inception_c(net, name, x, c7):
    net.conv(name + ".branch1x1", x, 192, 1)
    b = net.conv(name + ".branch7x7_1", x, c7, 1)
    b = net.conv(name + ".branch7x7_2", b, c7, (1, 7), 1, (0, 3))
    net.conv(name + ".branch7x7_3", b, 192, (7, 1), 1, (3, 0))
    b = net.conv(name + ".branch7x7dbl_1", x, c7, 1)
    b = net.conv(name + ".branch7x7dbl_2", b, c7, (7, 1), 1, (3, 0))
    b = net.conv(name + ".branch7x7dbl_3", b, c7, (1, 7), 1, (0, 3))
    b = net.conv(name + ".branch7x7dbl_4", b, c7, (7, 1), 1, (3, 0))
    net.conv(name + ".branch7x7dbl_5", b, 192, (1, 7), 1, (0, 3))
    p = net.avgpool(name + ".branch_pool.avg", x, 3, 1, 1)
    net.conv(name + ".branch_pool", p, 192, 1)
    return (x[0], x[1], x[2], 768)


def _inception_d(net, name, x):
    a = net.conv(name + ".branch3x3_1", x, 192, 1)
    a = net.conv(name + ".branch3x3_2", a, 320, 3, 2)
    b = net.conv(name + ".branch7x7x3_1", x, 192, 1)
    b = net.conv(name + ".branch7x7x3_2", b, 192, (1, 7), 1, (0, 3))
    b = net.conv(name + ".branch7x7x3_3", b, 192, (7, 1), 1, (3, 0))
    net.conv(name + ".branch7x7x3_4", b, 192, 3, 2)
    net.maxpool(name + ".branch_pool", x, 3, 2)
    return (a[0], a[1], a[2], 320 + 192 + x[3])


def _inception_e(net, name, x):
    net.conv(name + ".branch1x1", x, 320, 1)
    b = net.conv(name + ".branch3x3_1", x, 384, 1)
    net.conv(name + ".branch3x3_2a", b, 384, (1, 3), 1, (0, 1))
    net.conv(name + ".branch3x3_2b", b, 384, (3, 1), 1, (1, 0))
    b = net.conv(name + ".branch3x3dbl_1", x, 448, 1)
    b = net.conv(name + ".branch3x3dbl_2", b, 384, 3, 1, 1)
    net.conv(name + ".branch3x3dbl_3a", b, 384, (1, 3), 1, (0, 1))
    net.conv(name + ".branch3x3dbl_3b", b, 384, (3, 1), 1, (1, 0))
    p = net.avgpool(name + ".branch_pool.avg", x, 3, 1, 1)
    net.conv(name + ".branch_pool", p, 192, 1)
    return (x[0], x[1], x[2], 2048)


def inception_v3(net, x):
    # Every BasicConv2d is conv (no bias) + BN(eps 1e-3, folded) + relu.
    x = net.conv("Conv2d_1a_3x3", x, 32, 3, 2)
    x = net.conv("Conv2d_2a_3x3", x, 32, 3)
    x = net.conv("Conv2d_2b_3x3", x, 64, 3, 1, 1)
    x = net.maxpool("maxpool1", x, 3, 2)
    x = net.conv("Conv2d_3b_1x1", x, 80, 1)
    x = net.conv("Conv2d_4a_3x3", x, 192, 3)
    x = net.maxpool("maxpool2", x, 3, 2)
    x = _inception_a(net, "Mixed_5b", x, 32)
    x = _inception_a(net, "Mixed_5c", x, 64)
    x = _inception_a(net, "Mixed_5d", x, 64)
    x = _inception_b(net, "Mixed_6a", x)
    for name, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)):
        x = _inception_c(net, name, x, c7)
    x = _inception_d(net, "Mixed_7a", x)
    x = _inception_e(net, "Mixed_7b", x)
    x = _inception_e(net, "Mixed_7c", x)
    x = net.global_avgpool("avgpool", x)
    net.dense("fc", x[0], x[3], 1000)


# ---------------------------------------------------------------------------
# DenseNet-121 (torchvision densenet121: growth 32, bn_size 4, blocks 6/12/24/16)
# ---------------------------------------------------------------------------

def densenet_121(net, x, growth=32, bn_size=4, blocks=(6, 12, 24, 16)):
    x = net.conv("features.conv0", x, 64, 7, 2, 3)          # conv0 + norm0 + relu0
    x = net.maxpool("features.pool0", x, 3, 2, 1)
    ch = 64
    for bi, nlayers in enumerate(blocks):
        for li in range(nlayers):
            name = "features.denseblock%d.denselayer%d" % (bi + 1, li + 1)
            # [concat -> norm1 -> relu1] is an injective/element-wise group, not a task.
            cur = (x[0], x[1], x[2], ch)
            y = net.conv(name + ".conv1", cur, bn_size * growth, 1)   # + norm2 + relu2 folded
            net.conv(name + ".conv2", y, growth, 3, 1, 1, epi=())      # feeds a concat
            ch += growth
        if bi != len(blocks) - 1:
            name = "features.transition%d" % (bi + 1)
            # norm -> relu precede the conv (not foldable into it); the conv has no epilogue.
            y = net.conv(name + ".conv", (x[0], x[1], x[2], ch), ch // 2, 1, epi=())
            x = net.avgpool(name + ".pool", y, 2, 2)
            ch //= 2
    # norm5 -> relu -> adaptive avg pool -> classifier
    x = net.global_avgpool("avgpool", (x[0], x[1], x[2], ch))
    net.dense("classifier", x[0], ch, 1000)


# ---------------------------------------------------------------------------
# ResNet3D-18 (torchvision video r3d_18), NDHWC
# ---------------------------------------------------------------------------

def resnet3d_18(net, x):
    x = net.conv3d("stem.0", x, 64, (3, 7, 7), (1, 2, 2), (1, 3, 3))
    for i, (planes, blocks) in enumerate(zip((64, 128, 256, 512), (2, 2, 2, 2))):
        for b in range(blocks):
            stride = 2 if (i > 0 and b == 0) else 1
            name = "layer%d.%d" % (i + 1, b)
            inp = x
            y = net.conv3d(name + ".conv1", x, planes, 3, stride, 1)
            net.conv3d(name + ".conv2", y, planes, 3, 1, 1, epi=("bias_add", "add", "relu"))
            if stride != 1 or inp[4] != planes:
                net.conv3d(name + ".downsample.0", inp, planes, 1, stride, 0, epi=("bias_add",))
            x = (y[0], y[1], y[2], y[3], planes)
    # AdaptiveAvgPool3d(1) over D*H*W.  The schema has no 3-D pool; in NDHWC a global
    # average over (D, H, W) is exactly a 2-D global pool over a (D, H*W) image.
    n, d, h, w, c = x
    net.global_avgpool("avgpool", (n, d, h * w, c))
    net.dense("fc", n, c, 400)


# ---------------------------------------------------------------------------
# VGG-16 (torchvision vgg16, no batch norm)
# ---------------------------------------------------------------------------

def _adaptive_windows(inp, out):
    """Adaptive pooling windows (PyTorch's start=floor(i*in/out), end=ceil((i+1)*in/out))."""
    return [(i * inp // out, -(-(i + 1) * inp // out)) for i in range(out)]


def vgg_16(net, x):
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]
    idx = 0
    for v in cfg:
        if v == "M":
            x = net.maxpool("features.%d" % idx, x, 2, 2)
        else:
            x = net.conv("features.%d" % idx, x, v, 3, 1, 1)   # conv with bias + relu
            idx += 1
        idx += 1
    # AdaptiveAvgPool2d((7, 7)): expressed as a plain avg pool when its windows are uniform.
    wins = _adaptive_windows(x[1], 7)
    k = wins[0][1] - wins[0][0]
    s = wins[1][0] - wins[0][0]
    assert all(e - b == k and b == i * s for i, (b, e) in enumerate(wins)), wins
    x = net.avgpool("avgpool", x, k, s, 0)
    n = x[0]
    net.dense("classifier.0", n, x[1] * x[2] * x[3], 4096, epi=("bias_add", "relu"))
    net.dense("classifier.3", n, 4096, 4096, epi=("bias_add", "relu"))
    net.dense("classifier.6", n, 4096, 1000)


# ---------------------------------------------------------------------------
# DCGAN generator (relay.testing.dcgan, ngf=128, NHWC)
# ---------------------------------------------------------------------------

def dcgan(net, x, ngf=128, size=64):
    n = x[0]
    b = size // 16
    net.dense("dense", n, 100, b * b * ngf * 8, epi=("relu",))    # relay dense, no bias
    x = (n, b, b, ngf * 8)
    chans = [ngf * 4, ngf * 2, ngf, 3]
    for i, out_ch in enumerate(chans):
        # deconv2d(): kernel 4, stride 2, pad (4-1)//2 = 1, output_padding
        # (target + 2*pad - k) % stride = 0; the first three add BN(scale=False) + relu.
        target = x[1] * 2
        adj = (target + 2 * 1 - 4) % 2
        last = i == len(chans) - 1
        x = net.conv_transpose("g%d_deconv" % (i + 2), x, out_ch, 4, 2, 1, adj,
                               epi=("tanh",) if last else ("bias_add", "relu"))
        assert x[1] == target


# ---------------------------------------------------------------------------
# BERT (HF BertModel, Tenset's custom sizes, random init)
# ---------------------------------------------------------------------------

BERT_SIZES = {                       # layers, hidden, ffn, heads  (head dim 64)
    "bert_tiny": (6, 512, 2048, 8),
    "bert_base": (12, 768, 3072, 12),
    "bert_medium": (12, 1024, 4096, 16),
    "bert_large": (24, 1024, 4096, 16),
}


def _bert(net, batch, seq, layers, hidden, ffn, heads):
    dh = hidden // heads
    tokens = batch * seq

    def linear3d(name, k, n, epi, count):
        # The PyTorch frontend lowers a 3-D nn.Linear to batch_matmul (B,L,K)x(1,N,K)^T.
        net.task(name, "batch_matmul",
                 {"B": batch, "M": seq, "N": n, "K": k, "transpose_b": True, "broadcast_b": True},
                 epi, count)

    net.task("embeddings.LayerNorm", "layer_norm", {"rows": tokens, "cols": hidden})
    lname = "encoder.layer[0-%d]" % (layers - 1)
    # Q, K, V share their input: CombineParallelBatchMatmul merges them into N = 3H.
    linear3d(lname + ".attention.self.qkv", hidden, 3 * hidden, ("bias_add",), layers)
    net.task(lname + ".attention.self.scores", "batch_matmul",
             {"B": batch * heads, "M": seq, "N": seq, "K": dh,
              "transpose_b": True, "broadcast_b": False}, ("scale",), layers)
    net.task(lname + ".attention.self.softmax", "softmax",
             {"rows": batch * heads * seq, "cols": seq}, (), layers)
    net.task(lname + ".attention.self.context", "batch_matmul",
             {"B": batch * heads, "M": seq, "N": dh, "K": seq,
              "transpose_b": False, "broadcast_b": False}, (), layers)
    linear3d(lname + ".attention.output.dense", hidden, hidden, ("bias_add", "add"), layers)
    net.task(lname + ".attention.output.LayerNorm", "layer_norm",
             {"rows": tokens, "cols": hidden}, (), layers)
    linear3d(lname + ".intermediate.dense", hidden, ffn, ("bias_add", "gelu"), layers)
    linear3d(lname + ".output.dense", ffn, hidden, ("bias_add", "add"), layers)
    net.task(lname + ".output.LayerNorm", "layer_norm",
             {"rows": tokens, "cols": hidden}, (), layers)
    # Pooler: dense on the [CLS] token, then tanh.
    net.dense("pooler.dense", batch, hidden, hidden, epi=("bias_add", "tanh"))


# ---------------------------------------------------------------------------
# Network table: name -> (sizes, batches, builder, input shape, source)
# ---------------------------------------------------------------------------

CNN_SIZES = (224, 240, 256)
BATCHES = (1, 8)


def _cnn(fn, source):
    return {"sizes": CNN_SIZES, "kind": "cnn2d", "fn": fn, "source": source}


NETWORKS = {
    "resnet_18": _cnn(resnet_18, "torchvision resnet18 architecture, BN folded into bias"),
    "resnet_50": _cnn(resnet_50, "torchvision resnet50 v1.5 architecture, BN folded into bias"),
    "mobilenet_v2": _cnn(mobilenet_v2, "torchvision mobilenet_v2 (width 1.0) architecture, "
                                       "BN folded into bias"),
    "mobilenet_v3": _cnn(mobilenet_v3, "torchvision mobilenet_v3_large architecture, "
                                       "BN folded into bias"),
    "wide_resnet_50": _cnn(wide_resnet_50, "torchvision wide_resnet50_2 architecture, "
                                           "BN folded into bias"),
    "resnext_50": _cnn(resnext_50, "torchvision resnext50_32x4d architecture, BN folded into bias"),
    "densenet_121": _cnn(densenet_121, "torchvision densenet121 architecture, BN folded into the "
                                       "following conv's bias where it follows a conv"),
    "vgg_16": _cnn(vgg_16, "torchvision vgg16 (no BN) architecture"),
    "inception_v3": {"sizes": (299,), "kind": "cnn2d", "fn": inception_v3,
                     "source": "torchvision inception_v3 (aux_logits=False, transform_input=False) "
                               "architecture, BN folded into bias"},
    "resnet3d_18": {"sizes": (112, 128, 144), "kind": "cnn3d", "fn": resnet3d_18,
                    "source": "torchvision video r3d_18 architecture, NDHWC, input as Tenset's "
                              "(B,3,S,S,16) i.e. D=S, H=S, W=16, BN folded into bias"},
    "dcgan": {"sizes": (64, 80, 96), "kind": "dcgan", "fn": dcgan,
              "source": "relay.testing.dcgan generator (ngf=128, latent 100), NHWC, "
                        "BN(scale=False) folded into bias; size = output image side"},
}
for _name, (_l, _h, _f, _a) in BERT_SIZES.items():
    NETWORKS[_name] = {"sizes": (64, 128, 256), "kind": "bert", "fn": None,
                       "source": "HF BertModel (random init), Tenset's custom size: %d layers, "
                                 "hidden %d, FFN %d, %d heads; size = sequence length" % (_l, _h, _f, _a)}


def build(network, batch, size):
    spec = NETWORKS[network]
    kind = spec["kind"]
    if kind == "cnn2d":
        shape = (batch, size, size, 3)
    elif kind == "cnn3d":
        shape = (batch, size, size, 16, 3)
    elif kind == "dcgan":
        shape = (batch, 100)
    else:
        shape = (batch, size)
    net = Net(network, batch, shape, spec["source"])
    if kind == "bert":
        _bert(net, batch, size, *BERT_SIZES[network])
    elif kind == "dcgan":
        dcgan(net, shape, size=size)
    else:
        spec["fn"](net, shape)
    return net.to_dict()


def all_keys():
    for network, spec in NETWORKS.items():
        for batch in BATCHES:
            for size in spec["sizes"]:
                yield network, batch, size


def file_name(network, batch, size):
    return "%s_b%d_%d.json" % (network, batch, size)


def dumps(doc):
    """Readable JSON: header fields one per line, one task per line."""
    lines = ["{"]
    for key in ("network", "batch", "input_shape", "source"):
        lines.append("  %s: %s," % (json.dumps(key), json.dumps(doc[key])))
    lines.append('  "tasks": [')
    tasks = [json.dumps(t) for t in doc["tasks"]]
    lines.append(",\n".join("    " + t for t in tasks))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=HERE, help="output folder (default: next to this script)")
    ap.add_argument("--list", action="store_true", help="only print the file names")
    args = ap.parse_args(argv)
    n = 0
    for key in all_keys():
        name = file_name(*key)
        if args.list:
            print(name)
            continue
        doc = build(*key)
        with open(os.path.join(args.out, name), "w") as f:
            f.write(dumps(doc))
        n += 1
    if not args.list:
        print("wrote %d workload files" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
