// Eigen backend multi-head self-attention (contract: kernels/attention_shape.hpp): per
// sequence and head, two strided matrix products around a masked softmax.
#pragma once

#include "tempo/kernels/attention_shape.hpp"
#include "tempo/kernels/eigen/elementwise.hpp"

namespace tempo::kernels::eigen {

inline void attention(const AttentionShape& s, const float* qkv, std::size_t ldqkv,
                      const std::uint8_t* key_padding, float* scratch, float* ctx,
                      std::size_t ldctx) {
    const auto L = Eigen::Index(s.seq), dh = Eigen::Index(s.d_head());
    const Eigen::OuterStride<> in_stride{Eigen::Index(ldqkv)}, out_stride{Eigen::Index(ldctx)};
    RowMap scores(scratch, L, L, Eigen::OuterStride<>(L));
    float* mask_row = scratch + s.seq * s.seq;
    for (std::size_t b = 0; b < s.batch; ++b) {
        const float* base = qkv + b * s.seq * ldqkv;
        const float* mask =
            key_mask_row(key_padding ? key_padding + b * s.seq : nullptr, s.seq, mask_row);
        for (std::size_t h = 0; h < s.heads; ++h) {
            const std::size_t off = h * s.d_head();
            ConstRowMap q(base + off, L, dh, in_stride);
            ConstRowMap k(base + s.d_model + off, L, dh, in_stride);
            ConstRowMap v(base + 2 * s.d_model + off, L, dh, in_stride);
            scores.noalias() = (q * s.scale()) * k.transpose();
            softmax(scratch, s.seq, s.seq, s.seq, mask);
            RowMap out(ctx + b * s.seq * ldctx + off, L, dh, out_stride);
            out.noalias() = scores * v;
        }
    }
}

} // namespace tempo::kernels::eigen
