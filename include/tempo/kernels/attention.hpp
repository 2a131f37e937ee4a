// xsimd multi-head self-attention for short sequences (contract: kernels/attention_shape.hpp).
// Per sequence, the keys are transposed once (d_model × padded seq) and the key mask becomes
// an additive row padded with -inf to whole vectors. Per head and query: the scores against
// every key are vector FMAs over the head's channels (no horizontal sums), the softmax runs on
// whole padded vectors, and the context is the exp-weighted sum of value rows, accumulated in
// registers and scaled by 1/Σexp once.
#pragma once

#include <algorithm>
#include <limits>

#include "tempo/kernels/attention_shape.hpp"
#include "tempo/kernels/simd.hpp"

namespace tempo::kernels::simd {

namespace detail {
// out[0..n) = scale · Σ_j w[j] · v[j·ldv + (0..n)]
inline void weighted_rows(const float* w, std::size_t rows, const float* v, std::size_t ldv,
                          float scale, float* out, std::size_t n) {
    const Batch s(scale);
    std::size_t c = 0;
    for (; c + 2 * kLanes <= n; c += 2 * kLanes) {
        Batch a0(0.0f), a1(0.0f);
        for (std::size_t j = 0; j < rows; ++j) {
            const Batch wj(w[j]);
            a0 = xsimd::fma(wj, Batch::load_unaligned(v + j * ldv + c), a0);
            a1 = xsimd::fma(wj, Batch::load_unaligned(v + j * ldv + c + kLanes), a1);
        }
        (a0 * s).store_unaligned(out + c);
        (a1 * s).store_unaligned(out + c + kLanes);
    }
    for (; c + kLanes <= n; c += kLanes) {
        Batch a(0.0f);
        for (std::size_t j = 0; j < rows; ++j)
            a = xsimd::fma(Batch(w[j]), Batch::load_unaligned(v + j * ldv + c), a);
        (a * s).store_unaligned(out + c);
    }
    for (; c < n; ++c) {
        float a = 0.0f;
        for (std::size_t j = 0; j < rows; ++j) a += w[j] * v[j * ldv + c];
        out[c] = a * scale;
    }
}
} // namespace detail

inline void attention(const AttentionShape& s, const float* qkv, std::size_t ldqkv,
                      const std::uint8_t* key_padding, float* scratch, float* ctx,
                      std::size_t ldctx) {
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    const std::size_t dh = s.d_head(), L = s.seq, d = s.d_model;
    const std::size_t Lp = attention_padded_seq(L); // whole vectors of keys
    const Batch scale(s.scale());
    float* e = scratch;    // Lp: one query's exp-scores
    float* mask = e + Lp;  // Lp: 0 for a key, -inf for padding and lanes past L
    float* kt = mask + Lp; // d × Lp: kt[c·Lp + j] = k_j[c]
    for (std::size_t b = 0; b < s.batch; ++b) {
        const float* base = qkv + b * L * ldqkv;
        const std::uint8_t* pad = key_padding ? key_padding + b * L : nullptr;
        for (std::size_t j = 0; j < Lp; ++j) mask[j] = j < L && !(pad && pad[j]) ? 0.0f : kNegInf;
        for (std::size_t c = 0; c < d; ++c) {
            float* row = kt + c * Lp;
            for (std::size_t j = 0; j < L; ++j) row[j] = base[j * ldqkv + d + c];
            std::fill(row + L, row + Lp, 0.0f);
        }
        for (std::size_t h = 0; h < s.heads; ++h) {
            const std::size_t c0 = h * dh;
            for (std::size_t i = 0; i < L; ++i) {
                const float* q = base + i * ldqkv + c0;
                float* out = ctx + (b * L + i) * ldctx + c0;
                // Scores (masked, scaled), then their maximum.
                Batch vmax(kNegInf);
                for (std::size_t j0 = 0; j0 < L; j0 += kLanes) {
                    const float* k = kt + c0 * Lp + j0;
                    Batch a0(0.0f), a1(0.0f); // two chains: FMA latency
                    std::size_t c = 0;
                    for (; c + 2 <= dh; c += 2) {
                        a0 = xsimd::fma(Batch(q[c]), Batch::load_unaligned(k + c * Lp), a0);
                        a1 = xsimd::fma(Batch(q[c + 1]), Batch::load_unaligned(k + (c + 1) * Lp),
                                        a1);
                    }
                    if (c < dh) a0 = xsimd::fma(Batch(q[c]), Batch::load_unaligned(k + c * Lp), a0);
                    const Batch v = xsimd::fma(a0 + a1, scale, Batch::load_unaligned(mask + j0));
                    v.store_unaligned(e + j0);
                    vmax = xsimd::max(vmax, v);
                }
                alignas(64) float lanes[kLanes];
                vmax.store_aligned(lanes);
                const float mx = *std::max_element(lanes, lanes + kLanes);
                if (mx == kNegInf) { // every key masked: attends to nothing
                    std::fill(out, out + dh, 0.0f);
                    continue;
                }
                Batch vsum(0.0f);
                for (std::size_t j0 = 0; j0 < L; j0 += kLanes) {
                    const Batch v = Batch::load_unaligned(e + j0);
                    // exp(-inf) must be exactly 0 so masked keys get no weight at all.
                    const Batch w =
                        xsimd::select(v == Batch(kNegInf), Batch(0.0f), xsimd::exp(v - Batch(mx)));
                    w.store_unaligned(e + j0);
                    vsum += w;
                }
                detail::weighted_rows(e, L, base + 2 * d + c0, ldqkv, 1.0f / xsimd::hadd(vsum), out,
                                      dh);
            }
        }
    }
}

} // namespace tempo::kernels::simd
