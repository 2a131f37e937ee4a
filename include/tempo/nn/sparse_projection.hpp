// Linear projection of normalised input rows that are mostly at their offset (Ansor's
// per-store features are 50–80 % zeros, and most columns' minimum is 0), with the
// normalisation's scale folded into the weights:
//   y = base + ((f − offset) ⊙ scale)·Wᵀ  =  base + Σ_{f_i ≠ offset_i} (f_i − offset_i) · (scale_i
//   · W[:, i])
// f − offset is formed first, as the dense computation does, so no rounding is added by a
// cancellation. `base` is the caller's dense part: the bias and anything else folded in
// ahead of time (CdmppModel: the positional encoding's projection).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "tempo/core/aligned_buffer.hpp"
#include "tempo/core/workspace.hpp"
#include "tempo/kernels/backend.hpp"

namespace tempo::nn {

class SparseProjection {
public:
    SparseProjection() = default;
    // w: out × in (PyTorch layout); offset, scale: in values.
    SparseProjection(const float* w, std::size_t out, std::size_t in, const float* offset,
                     const float* scale)
        : out_(out), in_(in), ld_((out + 15) / 16 * 16), rows_(in * ld_), offset_(in) {
        std::copy(offset, offset + in, offset_.data());
        for (std::size_t i = 0; i < in; ++i)
            for (std::size_t j = 0; j < ld_; ++j)
                rows_[i * ld_ + j] = j < out ? scale[i] * w[j * in + i] : 0.0f;
    }

    std::size_t in_features() const noexcept { return in_; }
    std::size_t out_features() const noexcept { return out_; }
    // Workspace floats one forward call needs (its list of nonzeros).
    std::size_t workspace_floats() const {
        return Workspace::floats_for<std::uint32_t>(in_) + Workspace::rounded(in_);
    }

    // f: in_features values; base, y: out_features values (y may alias base).
    void forward(const float* f, const float* base, float* y, Workspace& ws) const {
        Workspace::Scope scope(ws);
        std::uint32_t* index = ws.take_as<std::uint32_t>(in_);
        float* value = ws.take(in_);
        // Branch-free compaction: every feature is written, and the slot advances only past
        // the ones off their offset (a branch here mispredicts on most leaves' mixed zeros).
        std::size_t count = 0;
        for (std::size_t i = 0; i < in_; ++i) {
            index[count] = std::uint32_t(i);
            value[count] = f[i] - offset_[i];
            count += f[i] != offset_[i];
        }
        kernels::active::sparse_rows_sum(base, index, value, count, rows_.data(), ld_, y, out_);
    }

private:
    std::size_t out_ = 0, in_ = 0, ld_ = 0;
    AlignedBuffer<float> rows_; // in × ld: rows_[i·ld + j] = scale_i · W[j][i], zero-padded
    AlignedBuffer<float> offset_;
};

} // namespace tempo::nn
