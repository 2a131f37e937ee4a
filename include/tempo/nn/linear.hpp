// Linear layer: y = act(x·Wᵀ + b) [+ residual], weights packed once for the active backend.
#pragma once

#include <cstddef>
#include <string>

#include "tempo/core/aligned_buffer.hpp"
#include "tempo/core/error.hpp"
#include "tempo/kernels/backend.hpp"

namespace tempo::nn {

class Linear {
public:
    Linear() = default;
    // weight: out × in (PyTorch layout); bias: out values or null.
    Linear(const float* weight, const float* bias, std::size_t out, std::size_t in,
           kernels::Activation activation = kernels::Activation::none)
        : weights_(weight, out, in), bias_(bias ? out : 0), activation_(activation) {
        for (std::size_t i = 0; i < bias_.size(); ++i) bias_[i] = bias[i];
    }

    std::size_t in_features() const noexcept { return weights_.cols(); }
    std::size_t out_features() const noexcept { return weights_.rows(); }
    kernels::Activation activation() const noexcept { return activation_; }

    // x: m rows of in_features (stride ldx); y: m rows of out_features (stride ldy);
    // residual (optional, stride ldr) is added after the activation. y must not alias x.
    void forward(const float* x, std::size_t ldx, std::size_t m, float* y, std::size_t ldy,
                 const float* residual = nullptr, std::size_t ldr = 0) const {
        kernels::Epilogue ep{bias_.empty() ? nullptr : bias_.data(), activation_, residual, ldr};
        kernels::active::gemm(x, ldx, m, weights_, ep, y, ldy);
    }

private:
    kernels::active::PackedWeights weights_;
    AlignedBuffer<float> bias_;
    kernels::Activation activation_ = kernels::Activation::none;
};

} // namespace tempo::nn
