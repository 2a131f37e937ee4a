// xsimd multi-head self-attention for short sequences (contract: kernels/attention_shape.hpp).
// Per sequence, the keys are transposed once (d_model × padded seq) and the key mask becomes
// an additive row padded with -inf to whole vectors. Per head: the scores of every query
// against every key are vector FMAs over the head's channels (no horizontal sums), four
// queries at a time; per query the softmax runs on whole padded vectors, and the context is
// the exp-weighted sum of value rows, accumulated in registers and scaled by 1/Σexp once.
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
    constexpr std::size_t kQueries = 4; // queries scored together: 4 × 2 independent chains
    const std::size_t dh = s.d_head(), L = s.seq, d = s.d_model;
    const std::size_t Lp = attention_padded_seq(L); // whole vectors of keys
    const Batch scale(s.scale());
    float* scores = scratch;       // L × Lp: one head's masked, scaled scores, then exp-scores
    float* mask = scores + L * Lp; // Lp: 0 for a key, -inf for padding and lanes past L
    float* kt = mask + Lp;         // d × Lp: kt[c·Lp + j] = k_j[c]
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
            // Scores, a block of queries at a time so that their FMA chains overlap; past the
            // last query the block repeats it and drops the result.
            for (std::size_t j0 = 0; j0 < L; j0 += kLanes) {
                const float* k = kt + c0 * Lp + j0;
                const Batch m = Batch::load_unaligned(mask + j0);
                for (std::size_t i0 = 0; i0 < L; i0 += kQueries) {
                    const float* q[kQueries];
                    for (std::size_t u = 0; u < kQueries; ++u)
                        q[u] = base + std::min(i0 + u, L - 1) * ldqkv + c0;
                    Batch a0[kQueries], a1[kQueries];
                    for (std::size_t u = 0; u < kQueries; ++u) a0[u] = a1[u] = Batch(0.0f);
                    std::size_t c = 0;
                    for (; c + 2 <= dh; c += 2) {
                        const Batch k0 = Batch::load_unaligned(k + c * Lp);
                        const Batch k1 = Batch::load_unaligned(k + (c + 1) * Lp);
                        for (std::size_t u = 0; u < kQueries; ++u) {
                            a0[u] = xsimd::fma(Batch(q[u][c]), k0, a0[u]);
                            a1[u] = xsimd::fma(Batch(q[u][c + 1]), k1, a1[u]);
                        }
                    }
                    if (c < dh) {
                        const Batch k0 = Batch::load_unaligned(k + c * Lp);
                        for (std::size_t u = 0; u < kQueries; ++u)
                            a0[u] = xsimd::fma(Batch(q[u][c]), k0, a0[u]);
                    }
                    for (std::size_t u = 0; u < kQueries && i0 + u < L; ++u)
                        xsimd::fma(a0[u] + a1[u], scale, m)
                            .store_unaligned(scores + (i0 + u) * Lp + j0);
                }
            }
            // Softmax over the keys, then the exp-weighted sum of the value rows, per query.
            for (std::size_t i = 0; i < L; ++i) {
                float* e = scores + i * Lp;
                float* out = ctx + (b * L + i) * ldctx + c0;
                Batch vmax(kNegInf);
                for (std::size_t j0 = 0; j0 < L; j0 += kLanes)
                    vmax = xsimd::max(vmax, Batch::load_unaligned(e + j0));
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
