// The shape contract of multi-head self-attention, shared by every backend.
//
// Input: one row per token (batch × seq rows), each row [q | k | v] of 3·d_model values as the
// fused in-projection writes it. Output: the per-token context (before the out-projection),
// d_model values per row. Heads split d_model into equal slices; q is scaled by 1/sqrt(d_head)
// as torch.nn.MultiheadAttention does. key_padding: batch × seq bytes, nonzero = padded key.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace tempo::kernels {

struct AttentionShape {
    std::size_t batch = 1, seq = 1, d_model = 0, heads = 1;
    std::size_t d_head() const noexcept { return d_model / heads; }
    float scale() const noexcept { return 1.0f / std::sqrt(float(d_head())); }
};

// Floats of scratch any backend's attention may need: a score tile and a mask row, each
// padded to whole 16-float vectors per row, and the keys of one sequence transposed
// (d_model × padded seq).
inline constexpr std::size_t attention_padded_seq(std::size_t seq) {
    return (seq + 15) / 16 * 16;
}
inline constexpr std::size_t attention_scratch_floats(std::size_t seq, std::size_t d_model) {
    return (seq + 1 + d_model) * attention_padded_seq(seq);
}

// Additive mask row (0 or -inf) for one sequence; null key_padding means no mask.
inline const float* key_mask_row(const std::uint8_t* key_padding, std::size_t seq, float* row) {
    if (!key_padding) return nullptr;
    for (std::size_t j = 0; j < seq; ++j)
        row[j] = key_padding[j] ? -std::numeric_limits<float>::infinity() : 0.0f;
    return row;
}

} // namespace tempo::kernels
