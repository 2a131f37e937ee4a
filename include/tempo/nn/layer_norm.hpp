// LayerNorm over the last dimension, as torch.nn.LayerNorm (biased variance, eps inside).
#pragma once

#include <cstddef>

#include "tempo/core/aligned_buffer.hpp"
#include "tempo/kernels/backend.hpp"

namespace tempo::nn {

class LayerNorm {
public:
    LayerNorm() = default;
    // gamma, beta: dim values each, or null for elementwise_affine=False.
    LayerNorm(const float* gamma, const float* beta, std::size_t dim, float eps = 1e-5f)
        : gamma_(gamma ? dim : 0), beta_(beta ? dim : 0), dim_(dim), eps_(eps) {
        for (std::size_t i = 0; i < gamma_.size(); ++i) gamma_[i] = gamma[i];
        for (std::size_t i = 0; i < beta_.size(); ++i) beta_[i] = beta[i];
    }

    std::size_t dim() const noexcept { return dim_; }

    // Normalises `rows` rows of x (stride ldx) into y (stride ldy); y may alias x.
    void forward(const float* x, std::size_t ldx, std::size_t rows, float* y,
                 std::size_t ldy) const {
        kernels::active::layer_norm(x, rows, dim_, ldx, gamma_.empty() ? nullptr : gamma_.data(),
                                    beta_.empty() ? nullptr : beta_.data(), eps_, y, ldy);
    }

private:
    AlignedBuffer<float> gamma_, beta_;
    std::size_t dim_ = 0;
    float eps_ = 1e-5f;
};

} // namespace tempo::nn
