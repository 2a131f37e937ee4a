// Scalar reference multi-head self-attention (see kernels/attention_shape.hpp for the contract).
#pragma once

#include "tempo/kernels/attention_shape.hpp"
#include "tempo/kernels/reference/elementwise.hpp"

namespace tempo::kernels::reference {

inline void attention(const AttentionShape& s, const float* qkv, std::size_t ldqkv,
                      const std::uint8_t* key_padding, float* scratch, float* ctx,
                      std::size_t ldctx) {
    const std::size_t dh = s.d_head(), L = s.seq;
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
                for (std::size_t j = 0; j < L; ++j) {
                    double dot = 0.0;
                    for (std::size_t c = 0; c < dh; ++c)
                        dot += double(q[i * ldqkv + c] * s.scale()) * k[j * ldqkv + c];
                    scores[i * L + j] = float(dot);
                }
            softmax(scores, L, L, L, mask);
            for (std::size_t i = 0; i < L; ++i)
                for (std::size_t c = 0; c < dh; ++c) {
                    double acc = 0.0;
                    for (std::size_t j = 0; j < L; ++j)
                        acc += double(scores[i * L + j]) * v[j * ldqkv + c];
                    ctx[(b * L + i) * ldctx + h * dh + c] = float(acc);
                }
        }
    }
}

} // namespace tempo::kernels::reference
