// Compute definitions of the operators tempo's lab generates programs for, written the way
// TOPI writes them for x86 + Ansor (NHWC/NDHWC, HWIO kernels, a separate PaddedInput stage,
// reductions as one stage, element-wise epilogues as further stages).
#pragma once

#include "tempo/loopnest/compute.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tempo::loopnest {

// Pads `x` (zero or `value` outside) by `before`/`after` per dimension; returns x if no padding.
inline int pad_stage(DagBuilder& b, int x, const std::vector<std::int64_t>& before,
                     const std::vector<std::int64_t>& after, double value,
                     const std::string& name = "PaddedInput") {
    const auto shape = b.tensor_info(x).shape;
    bool any = false;
    for (std::size_t d = 0; d < shape.size(); ++d) any |= before[d] != 0 || after[d] != 0;
    if (!any) return x;
    std::vector<IterVar> axes;
    std::vector<Expr> index, conds;
    for (std::size_t d = 0; d < shape.size(); ++d) {
        axes.push_back(b.axis("i" + std::to_string(d), shape[d] + before[d] + after[d]));
        Expr i = b.v(axes.back());
        index.push_back(i - int_imm(before[d]));
        if (before[d] != 0 || after[d] != 0) {
            conds.push_back(cmp(ExprKind::GE, i, int_imm(before[d])));
            conds.push_back(cmp(ExprKind::LT, i, int_imm(shape[d] + before[d])));
        }
    }
    Expr body = if_then_else(all_of(conds), load(x, index), float_imm(value));
    return b.stage(name, axes, body);
}

// Y[m,n] = Σk X[m,k]·W[n,k]
inline int dense(DagBuilder& b, std::int64_t M, std::int64_t N, std::int64_t K) {
    int x = b.input("X", {M, K}), w = b.input("W", {N, K});
    IterVar m = b.axis("i", M), n = b.axis("j", N), k = b.axis("k", K);
    Expr body = load(x, {b.v(m), b.v(k)}) * load(w, {b.v(n), b.v(k)});
    return b.stage("T_matmul_NT", {m, n}, body, {k}, Reduce::Sum);
}

// Y[b,m,n] = Σk X[b,m,k]·W[b',n,k] (transpose_b) or W[b',k,n]; b' = 0 when broadcast_b.
inline int batch_matmul(DagBuilder& b, std::int64_t B, std::int64_t M, std::int64_t N,
                        std::int64_t K, bool transpose_b, bool broadcast_b) {
    const std::int64_t bw = broadcast_b ? 1 : B;
    int x = b.input("X", {B, M, K});
    int w = b.input("W", transpose_b ? std::vector<std::int64_t>{bw, N, K}
                                     : std::vector<std::int64_t>{bw, K, N});
    IterVar ib = b.axis("b", B), m = b.axis("i", M), n = b.axis("j", N), k = b.axis("k", K);
    Expr wb = broadcast_b ? int_imm(0) : b.v(ib);
    Expr wl = transpose_b ? load(w, {wb, b.v(n), b.v(k)}) : load(w, {wb, b.v(k), b.v(n)});
    Expr body = load(x, {b.v(ib), b.v(m), b.v(k)}) * wl;
    return b.stage("T_batch_matmul", {ib, m, n}, body, {k}, Reduce::Sum);
}

// Geometry of an N-d convolution with groups; `spatial` etc. hold one entry per spatial dim.
struct ConvGeometry {
    std::int64_t batch = 1, in_channels = 1, out_channels = 1, groups = 1;
    std::vector<std::int64_t> spatial, kernel, stride, padding, dilation;
    bool channels_last = true; // NHWC/NDHWC + HWIO weights; else NCHW + OIHW

    std::int64_t out_size(std::size_t d) const {
        return (spatial[d] + 2 * padding[d] - dilation[d] * (kernel[d] - 1) - 1) / stride[d] + 1;
    }
};

// Direct convolution over an input tensor `data` (already shaped as g says); returns output.
inline int conv_stage(DagBuilder& b, int data, const ConvGeometry& g, bool flip_kernel = false,
                      const std::string& name = "Conv2dOutput") {
    const std::size_t nd = g.spatial.size();
    const std::int64_t cpg = g.in_channels / g.groups, kpg = g.out_channels / g.groups;
    std::vector<std::int64_t> wshape;
    if (g.channels_last) {
        wshape = g.kernel;
        wshape.push_back(cpg);
        wshape.push_back(g.out_channels);
    } else {
        wshape = {g.out_channels, cpg};
        wshape.insert(wshape.end(), g.kernel.begin(), g.kernel.end());
    }
    int w = b.input("W", wshape);
    std::vector<std::int64_t> before(nd + 2, 0);
    for (std::size_t d = 0; d < nd; ++d) before[g.channels_last ? d + 1 : d + 2] = g.padding[d];
    int padded = pad_stage(b, data, before, before, 0.0);

    IterVar n = b.axis("nn", g.batch), k = b.axis("ff", g.out_channels);
    std::vector<IterVar> outs, reds;
    for (std::size_t d = 0; d < nd; ++d)
        outs.push_back(b.axis("yy" + std::to_string(d), g.out_size(d)));
    Expr rc = int_imm(0);
    if (cpg > 1) {
        reds.push_back(b.axis("rc", cpg));
        rc = b.v(reds.back());
    }
    std::vector<Expr> kidx;
    for (std::size_t d = 0; d < nd; ++d) {
        if (g.kernel[d] > 1) {
            reds.push_back(b.axis("r" + std::to_string(d), g.kernel[d]));
            kidx.push_back(b.v(reds.back()));
        } else {
            kidx.push_back(int_imm(0));
        }
    }
    Expr channel = floordiv(b.v(k), kpg) * cpg + rc;
    std::vector<Expr> in_sp, w_sp;
    for (std::size_t d = 0; d < nd; ++d) {
        in_sp.push_back(b.v(outs[d]) * g.stride[d] + kidx[d] * g.dilation[d]);
        w_sp.push_back(flip_kernel ? int_imm(g.kernel[d] - 1) - kidx[d] : kidx[d]);
    }
    std::vector<Expr> in_idx{b.v(n)}, w_idx;
    std::vector<IterVar> axes{n};
    if (g.channels_last) {
        in_idx.insert(in_idx.end(), in_sp.begin(), in_sp.end());
        in_idx.push_back(channel);
        w_idx = w_sp;
        w_idx.push_back(rc);
        w_idx.push_back(b.v(k));
        axes.insert(axes.end(), outs.begin(), outs.end());
        axes.push_back(k);
    } else {
        in_idx.push_back(channel);
        in_idx.insert(in_idx.end(), in_sp.begin(), in_sp.end());
        w_idx = {b.v(k), rc};
        w_idx.insert(w_idx.end(), w_sp.begin(), w_sp.end());
        axes.push_back(k);
        axes.insert(axes.end(), outs.begin(), outs.end());
    }
    Expr body = load(padded, in_idx) * load(w, w_idx);
    return b.stage(name, axes, body, reds, Reduce::Sum);
}

inline int conv(DagBuilder& b, const ConvGeometry& g) {
    std::vector<std::int64_t> shape{g.batch};
    if (!g.channels_last) shape.push_back(g.in_channels);
    shape.insert(shape.end(), g.spatial.begin(), g.spatial.end());
    if (g.channels_last) shape.push_back(g.in_channels);
    int data = b.input("X", shape);
    return conv_stage(b, data, g, false, g.spatial.size() == 3 ? "Conv3dOutput" : "Conv2dOutput");
}

// NHWC transposed convolution as Tenset's fork lowers it: zero-insertion and padding in one
// if_then_else stage, then a stride-1 convolution with the flipped HWIO kernel.
inline int conv2d_transpose_nhwc(DagBuilder& b, std::int64_t N, std::int64_t H, std::int64_t W,
                                 std::int64_t C, std::int64_t K, std::int64_t R, std::int64_t S,
                                 std::vector<std::int64_t> stride,
                                 std::vector<std::int64_t> padding,
                                 std::vector<std::int64_t> output_padding) {
    int x = b.input("X", {N, H, W, C});
    const std::int64_t in[2] = {H, W}, ks[2] = {R, S};
    std::vector<IterVar> axes{b.axis("i0", N)};
    std::vector<Expr> idx{b.v(axes[0])}, conds;
    for (int d = 0; d < 2; ++d) {
        const std::int64_t before = ks[d] - 1 - padding[d];
        const std::int64_t size = (in[d] - 1) * stride[d] + 1 + 2 * before + output_padding[d];
        axes.push_back(b.axis("i" + std::to_string(d + 1), size));
        Expr i = b.v(axes.back()) - int_imm(before);
        conds.push_back(cmp(ExprKind::GE, i, int_imm(0)));
        conds.push_back(cmp(ExprKind::LT, i, int_imm((in[d] - 1) * stride[d] + 1)));
        conds.push_back(cmp(ExprKind::EQ, floormod(i, stride[d]), int_imm(0)));
        idx.push_back(floordiv(i, stride[d]));
    }
    axes.push_back(b.axis("i3", C));
    idx.push_back(b.v(axes.back()));
    int dilated =
        b.stage("data_pad", axes, if_then_else(all_of(conds), load(x, idx), float_imm(0)));
    ConvGeometry g;
    g.batch = N, g.in_channels = C, g.out_channels = K, g.groups = 1;
    g.spatial = {b.tensor_info(dilated).shape[1], b.tensor_info(dilated).shape[2]};
    g.kernel = {R, S}, g.stride = {1, 1}, g.padding = {0, 0}, g.dilation = {1, 1};
    return conv_stage(b, dilated, g, true, "conv2d_transpose_nhwc");
}

// Max or average pooling over H and W of an NHWC tensor.
inline int pool2d_nhwc(DagBuilder& b, bool is_max, std::int64_t N, std::int64_t H, std::int64_t W,
                       std::int64_t C, std::vector<std::int64_t> kernel,
                       std::vector<std::int64_t> stride, std::vector<std::int64_t> padding,
                       bool count_include_pad) {
    int x = b.input("X", {N, H, W, C});
    const double pad_value = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
    int padded = pad_stage(b, x, {0, padding[0], padding[1], 0}, {0, padding[0], padding[1], 0},
                           pad_value, "pad_temp");
    const std::int64_t OH = (H + 2 * padding[0] - kernel[0]) / stride[0] + 1;
    const std::int64_t OW = (W + 2 * padding[1] - kernel[1]) / stride[1] + 1;
    IterVar n = b.axis("ax0", N), oh = b.axis("ax1", OH), ow = b.axis("ax2", OW),
            c = b.axis("ax3", C), rh = b.axis("rv0", kernel[0]), rw = b.axis("rv1", kernel[1]);
    Expr body = load(
        padded, {b.v(n), b.v(oh) * stride[0] + b.v(rh), b.v(ow) * stride[1] + b.v(rw), b.v(c)});
    int pooled = b.stage(is_max ? "pool_max" : "pool_sum", {n, oh, ow, c}, body, {rh, rw},
                         is_max ? Reduce::Max : Reduce::Sum);
    if (is_max) return pooled;
    IterVar a0 = b.axis("ax0", N), a1 = b.axis("ax1", OH), a2 = b.axis("ax2", OW),
            a3 = b.axis("ax3", C);
    Expr count;
    if (count_include_pad || (padding[0] == 0 && padding[1] == 0)) {
        count = float_imm(static_cast<double>(kernel[0] * kernel[1]));
    } else {
        auto extent = [&](const IterVar& o, int d, std::int64_t size) {
            Expr start = b.v(o) * stride[d] - int_imm(padding[d]);
            return min(start + kernel[d], int_imm(size)) - max(start, int_imm(0));
        };
        count = cast_float(extent(a1, 0, H) * extent(a2, 1, W));
    }
    Expr avg = load(pooled, {b.v(a0), b.v(a1), b.v(a2), b.v(a3)}) / count;
    return b.stage("pool_avg", {a0, a1, a2, a3}, avg);
}

inline int global_avg_pool2d_nhwc(DagBuilder& b, std::int64_t N, std::int64_t H, std::int64_t W,
                                  std::int64_t C) {
    int x = b.input("X", {N, H, W, C});
    IterVar n = b.axis("ax0", N), c = b.axis("ax3", C), rh = b.axis("rv0", H),
            rw = b.axis("rv1", W);
    int sum = b.stage("adaptive_pool_sum", {n, c}, load(x, {b.v(n), b.v(rh), b.v(rw), b.v(c)}),
                      {rh, rw}, Reduce::Sum);
    IterVar a0 = b.axis("ax0", N), a3 = b.axis("ax3", C);
    Expr avg = load(sum, {b.v(a0), b.v(a3)}) / float_imm(static_cast<double>(H * W));
    return b.stage("adaptive_pool_avg", {a0, a3}, avg);
}

// Softmax over the last axis: max, exp-sum, then normalise.
inline int softmax(DagBuilder& b, std::int64_t rows, std::int64_t cols) {
    int x = b.input("X", {rows, cols});
    IterVar i = b.axis("i0", rows), k = b.axis("k", cols);
    int mx = b.stage("T_softmax_maxelem", {i}, load(x, {b.v(i), b.v(k)}), {k}, Reduce::Max);
    IterVar i2 = b.axis("i0", rows), k2 = b.axis("k", cols);
    int sum = b.stage("T_softmax_expsum", {i2},
                      call(MathFn::Exp, load(x, {b.v(i2), b.v(k2)}) - load(mx, {b.v(i2)})), {k2},
                      Reduce::Sum);
    IterVar i3 = b.axis("i0", rows), j3 = b.axis("i1", cols);
    Expr e = call(MathFn::Exp, load(x, {b.v(i3), b.v(j3)}) - load(mx, {b.v(i3)}));
    return b.stage("T_softmax_norm", {i3, j3}, e / load(sum, {b.v(i3)}));
}

// Layer normalisation over the last axis: mean, variance, then normalise with gamma and beta.
inline int layer_norm(DagBuilder& b, std::int64_t rows, std::int64_t cols) {
    int x = b.input("X", {rows, cols});
    int gamma = b.input("gamma", {cols}), beta = b.input("beta", {cols});
    const Expr inv = float_imm(1.0 / static_cast<double>(cols));
    IterVar i = b.axis("i0", rows), k = b.axis("k", cols);
    int mean = b.stage("T_mean", {i}, load(x, {b.v(i), b.v(k)}) * inv, {k}, Reduce::Sum);
    IterVar i2 = b.axis("i0", rows), k2 = b.axis("k", cols);
    Expr d = load(x, {b.v(i2), b.v(k2)}) - load(mean, {b.v(i2)});
    int var_t = b.stage("T_variance", {i2}, d * d * inv, {k2}, Reduce::Sum);
    IterVar i3 = b.axis("i0", rows), j3 = b.axis("i1", cols);
    Expr centred = load(x, {b.v(i3), b.v(j3)}) - load(mean, {b.v(i3)});
    Expr scale = call(MathFn::Rsqrt, load(var_t, {b.v(i3)}) + float_imm(1e-5));
    Expr y = centred * scale * load(gamma, {b.v(j3)}) + load(beta, {b.v(j3)});
    return b.stage("T_layer_norm", {i3, j3}, y);
}

// out[i, j] = in[j, i]: a pure data-movement stage.
inline int transpose2d(DagBuilder& b, std::int64_t rows, std::int64_t cols) {
    int x = b.input("X", {rows, cols});
    IterVar i = b.axis("ax0", cols), j = b.axis("ax1", rows);
    return b.stage("T_transpose", {i, j}, load(x, {b.v(j), b.v(i)}));
}

// Sum over the last axis.
inline int reduce_sum_rows(DagBuilder& b, std::int64_t rows, std::int64_t cols) {
    int x = b.input("X", {rows, cols});
    IterVar i = b.axis("ax0", rows), k = b.axis("k0", cols);
    return b.stage("T_sum", {i}, load(x, {b.v(i), b.v(k)}), {k}, Reduce::Sum);
}

} // namespace tempo::loopnest
