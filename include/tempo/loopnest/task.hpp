// A task: one operator with its shape parameters and fused epilogue, as Tenset extracts them
// from networks (deduplicated by key, weighted by occurrences). Builds the task's ComputeDag.
#pragma once

#include "tempo/loopnest/epilogue.hpp"
#include "tempo/loopnest/ops.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tempo::loopnest {

struct Task {
    std::string op;
    // Parameters sorted by name; scalars are one-element lists, booleans 0/1.
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> params;
    std::vector<std::string> epilogue;
    double weight = 1.0;

    // A task from its operator, parameters (any order) and epilogue.
    static Task make(std::string op,
                     std::vector<std::pair<std::string, std::vector<std::int64_t>>> params,
                     std::vector<std::string> epilogue = {}) {
        Task t;
        t.op = std::move(op);
        for (auto& [name, value] : params) t.set(name, std::move(value));
        t.epilogue = std::move(epilogue);
        return t;
    }

    void set(const std::string& name, std::vector<std::int64_t> value) {
        auto it = std::lower_bound(params.begin(), params.end(), name,
                                   [](const auto& p, const std::string& n) { return p.first < n; });
        if (it != params.end() && it->first == name)
            it->second = std::move(value);
        else
            params.insert(it, {name, std::move(value)});
    }
    bool has(const std::string& name) const {
        for (const auto& p : params)
            if (p.first == name) return true;
        return false;
    }
    const std::vector<std::int64_t>& list(const std::string& name) const {
        for (const auto& p : params)
            if (p.first == name) return p.second;
        throw Error("task " + op, "missing parameter '" + name + "'");
    }
    std::int64_t get(const std::string& name) const { return list(name).at(0); }
    std::int64_t get_or(const std::string& name, std::int64_t fallback) const {
        return has(name) ? get(name) : fallback;
    }
    std::vector<std::int64_t> list_or(const std::string& name, std::size_t n,
                                      std::int64_t v) const {
        return has(name) ? list(name) : std::vector<std::int64_t>(n, v);
    }

    // Stable identity: op(name=v,…)+epilogue…, e.g. "dense(K=512,M=1,N=1000)+bias_add".
    std::string key() const {
        std::string k = op + "(";
        for (std::size_t i = 0; i < params.size(); ++i) {
            if (i) k += ",";
            k += params[i].first + "=";
            const auto& v = params[i].second;
            if (v.size() != 1) k += "[";
            for (std::size_t j = 0; j < v.size(); ++j) k += (j ? "," : "") + std::to_string(v[j]);
            if (v.size() != 1) k += "]";
        }
        k += ")";
        for (const auto& e : epilogue) k += "+" + e;
        return k;
    }
};

inline const std::vector<std::string>& supported_ops() {
    static const std::vector<std::string> ops = {
        "dense",           "batch_matmul",    "conv2d_nhwc",
        "conv2d_nchw",     "conv3d_ndhwc",    "conv2d_transpose_nhwc",
        "max_pool2d_nhwc", "avg_pool2d_nhwc", "global_avg_pool2d_nhwc",
        "softmax",         "layer_norm",      "transpose",
        "reduce_sum"};
    return ops;
}

inline ComputeDag build_dag(const Task& t) {
    DagBuilder b;
    int out = -1;
    std::size_t channel_axis = 0;
    auto conv_geometry = [&](std::size_t nd, bool channels_last) {
        ConvGeometry g;
        g.batch = t.get("N"), g.in_channels = t.get("C"), g.out_channels = t.get("K");
        g.groups = t.get_or("groups", 1);
        g.channels_last = channels_last;
        const char* dims[3] = {"D", "H", "W"};
        const char* ks[3] = {"T", "R", "S"};
        for (std::size_t d = 3 - nd; d < 3; ++d) {
            g.spatial.push_back(t.get(dims[d]));
            g.kernel.push_back(t.get(ks[d]));
        }
        g.stride = t.list_or("stride", nd, 1);
        g.padding = t.list_or("padding", nd, 0);
        g.dilation = t.list_or("dilation", nd, 1);
        if (g.groups < 1 || g.in_channels % g.groups || g.out_channels % g.groups)
            throw Error("task " + t.key(), "channels not divisible by groups");
        return g;
    };
    if (t.op == "dense") {
        out = dense(b, t.get("M"), t.get("N"), t.get("K"));
        channel_axis = 1;
    } else if (t.op == "batch_matmul") {
        out = batch_matmul(b, t.get("B"), t.get("M"), t.get("N"), t.get("K"),
                           t.get_or("transpose_b", 1) != 0, t.get_or("broadcast_b", 0) != 0);
        channel_axis = 2;
    } else if (t.op == "conv2d_nhwc" || t.op == "conv2d_nchw" || t.op == "conv3d_ndhwc") {
        const bool last = t.op != "conv2d_nchw";
        const std::size_t nd = t.op == "conv3d_ndhwc" ? 3 : 2;
        out = conv(b, conv_geometry(nd, last));
        channel_axis = last ? nd + 1 : 1;
    } else if (t.op == "conv2d_transpose_nhwc") {
        out = conv2d_transpose_nhwc(b, t.get("N"), t.get("H"), t.get("W"), t.get("C"), t.get("K"),
                                    t.get("R"), t.get("S"), t.list_or("stride", 2, 1),
                                    t.list_or("padding", 2, 0), t.list_or("output_padding", 2, 0));
        channel_axis = 3;
    } else if (t.op == "max_pool2d_nhwc" || t.op == "avg_pool2d_nhwc") {
        out = pool2d_nhwc(b, t.op == "max_pool2d_nhwc", t.get("N"), t.get("H"), t.get("W"),
                          t.get("C"), t.list("kernel"), t.list_or("stride", 2, 1),
                          t.list_or("padding", 2, 0), t.get_or("count_include_pad", 0) != 0);
        channel_axis = 3;
    } else if (t.op == "global_avg_pool2d_nhwc") {
        out = global_avg_pool2d_nhwc(b, t.get("N"), t.get("H"), t.get("W"), t.get("C"));
        channel_axis = 1;
    } else if (t.op == "softmax") {
        out = softmax(b, t.get("rows"), t.get("cols"));
        channel_axis = 1;
    } else if (t.op == "layer_norm") {
        out = layer_norm(b, t.get("rows"), t.get("cols"));
        channel_axis = 1;
    } else if (t.op == "transpose") {
        out = transpose2d(b, t.get("rows"), t.get("cols"));
        channel_axis = 1;
    } else if (t.op == "reduce_sum") {
        out = reduce_sum_rows(b, t.get("rows"), t.get("cols"));
    } else {
        throw Error("task", "unsupported op '" + t.op + "'");
    }
    for (const auto& e : t.epilogue) out = apply_epilogue(b, out, e, channel_axis);
    return b.finish();
}

} // namespace tempo::loopnest
