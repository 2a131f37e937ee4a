// Shared by bench_cdmpp.cpp (tempo, per backend) and bench_cdmpp_libtorch.cpp: FLOPs of one
// CDMPP prediction from its config, the single-thread streaming read bandwidth, and the
// benchmark's inputs (files written by bench/make_bench_models.py).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <xsimd/xsimd.hpp>

#include "bench_util.hpp"
#include "tempo/core/aligned_buffer.hpp"
#include "tempo/io/json.hpp"
#include "tempo/io/safetensors.hpp"
#include "tempo/models/cdmpp_config.hpp"

namespace tempo::bench {

inline const std::vector<std::size_t>& cdmpp_batches() {
    static const std::vector<std::size_t> batches = {1, 16, 512};
    return batches;
}

// FLOPs of one prediction of a program with `n` leaves: every GEMM (2·m·n·k) and the
// attention products (Q·Kᵀ and A·V: 2 · 2·n²·d over all heads); layer norms, softmax,
// activations, pooling and the output transform are not counted.
inline double cdmpp_flops(const CdmppConfig& c, std::size_t n) {
    const double N = double(n), d = double(c.d_model), F = double(c.feature_dim);
    double f = c.projects_input() ? 2 * N * F * d : 0.0;
    const double layer = 2 * N * d * 3 * d                // Q, K, V projection
                         + 4 * N * N * d                  // scores and weighted values, all heads
                         + 2 * N * d * d                  // output projection
                         + 4 * N * d * double(c.ffn_dim); // feed-forward
    f += double(c.layers) * layer;
    auto mlp = [](double in, const std::vector<std::size_t>& dims) {
        double s = 0.0;
        for (std::size_t w : dims) {
            s += 2 * in * double(w);
            in = double(w);
        }
        return s;
    };
    f += mlp(double(c.pooled_width()), c.embed_dims);
    if (c.device) f += mlp(double(CdmppConfig::kDeviceFeatures), c.device_dims);
    f += mlp(double(c.embedding_width()), c.decoder_dims);
    f += 2 * double(c.decoder_dims.empty() ? c.embedding_width() : c.decoder_dims.back());
    return f;
}

// Weight bytes a prediction streams: every tensor of the model file but the self-test and
// the normalisation vectors, as float32.
inline double cdmpp_weight_bytes(const io::SafeTensors& file) {
    double bytes = 0;
    for (const std::string& name : file.names())
        if (name.rfind("selftest.", 0) != 0 && name.rfind("norm.", 0) != 0)
            bytes += 4.0 * double(file.tensor(name).numel());
    return bytes;
}

// Sustained single-thread read bandwidth (bytes/s): a vectorised sum over `bytes` (≫ L3),
// several independent accumulators, median of `repeats` passes after one warm pass.
inline double measured_read_bandwidth(std::size_t bytes = std::size_t(1) << 30, int repeats = 5) {
    using B = xsimd::batch<float>;
    const std::size_t n = bytes / sizeof(float) / (4 * B::size) * (4 * B::size);
    AlignedBuffer<float> buf(n);
    for (std::size_t i = 0; i < n; ++i) buf[i] = float(i & 1023) * 1e-3f;
    const float* p = buf.data();
    auto pass = [&] {
        B a0(0.0f), a1(0.0f), a2(0.0f), a3(0.0f);
        for (std::size_t i = 0; i < n; i += 4 * B::size) {
            a0 += B::load_aligned(p + i);
            a1 += B::load_aligned(p + i + B::size);
            a2 += B::load_aligned(p + i + 2 * B::size);
            a3 += B::load_aligned(p + i + 3 * B::size);
        }
        keep(xsimd::hadd((a0 + a1) + (a2 + a3)));
    };
    pass();
    std::vector<double> rates;
    for (int r = 0; r < repeats; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        pass();
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        rates.push_back(double(n) * sizeof(float) / s);
    }
    std::sort(rates.begin(), rates.end());
    return rates[rates.size() / 2];
}

inline CdmppConfig cdmpp_config_of(const io::SafeTensors& file) {
    const json::Value doc = json::parse(file.metadata("tempo.config"), file.label());
    return CdmppConfig::from_json(json::Node(doc, file.label() + ": tempo.config"));
}

// Compact JSON numbers without locale surprises.
inline std::string num(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

} // namespace tempo::bench
