// xsimd multi-head self-attention for short sequences (contract: kernels/attention_shape.hpp).
// Per sequence and head: scores = (q·scale)·kᵀ as vector dot products over d_head, masked
// softmax, then the context as a sum of value rows (axpy over d_head).
#pragma once

#include "tempo/kernels/attention_shape.hpp"
#include "tempo/kernels/elementwise.hpp"

namespace tempo::kernels::simd {

namespace detail {
inline float dot(const float* a, const float* b, std::size_t n) {
    Batch s0(0.0f), s1(0.0f);
    std::size_t i = 0;
    for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
        s0 = xsimd::fma(Batch::load_unaligned(a + i), Batch::load_unaligned(b + i), s0);
        s1 = xsimd::fma(Batch::load_unaligned(a + i + kLanes),
                        Batch::load_unaligned(b + i + kLanes), s1);
    }
    if (i + kLanes <= n) {
        s0 = xsimd::fma(Batch::load_unaligned(a + i), Batch::load_unaligned(b + i), s0);
        i += kLanes;
    }
    float s = xsimd::hadd(s0 + s1);
    for (; i < n; ++i) s += a[i] * b[i];
    return s;
}

// y[0..n) += alpha · x[0..n)
inline void axpy(float alpha, const float* x, float* y, std::size_t n) {
    const Batch a(alpha);
    std::size_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        xsimd::fma(a, Batch::load_unaligned(x + i), Batch::load_unaligned(y + i))
            .store_unaligned(y + i);
    for (; i < n; ++i) y[i] += alpha * x[i];
}
} // namespace detail

inline void attention(const AttentionShape& s, const float* qkv, std::size_t ldqkv,
                      const std::uint8_t* key_padding, float* scratch, float* ctx,
                      std::size_t ldctx) {
    const std::size_t dh = s.d_head(), L = s.seq;
    const float scale = s.scale();
    float* scores = scratch;
    float* mask_row = scratch + L * L;
    for (std::size_t b = 0; b < s.batch; ++b) {
        const float* base = qkv + b * L * ldqkv;
        const float* mask = key_mask_row(key_padding ? key_padding + b * L : nullptr, L, mask_row);
        for (std::size_t h = 0; h < s.heads; ++h) {
            const float* q = base + h * dh;
            const float* k = base + s.d_model + h * dh;
            const float* v = base + 2 * s.d_model + h * dh;
            for (std::size_t i = 0; i < L; ++i)
                for (std::size_t j = 0; j < L; ++j)
                    scores[i * L + j] = scale * detail::dot(q + i * ldqkv, k + j * ldqkv, dh);
            softmax(scores, L, L, L, mask);
            for (std::size_t i = 0; i < L; ++i) {
                float* out = ctx + (b * L + i) * ldctx + h * dh;
                std::fill(out, out + dh, 0.0f);
                for (std::size_t j = 0; j < L; ++j)
                    if (scores[i * L + j] != 0.0f)
                        detail::axpy(scores[i * L + j], v + j * ldqkv, out, dh);
            }
        }
    }
}

} // namespace tempo::kernels::simd
