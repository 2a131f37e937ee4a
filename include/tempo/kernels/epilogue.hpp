// What a GEMM does to its accumulators before storing them: y = act(acc + bias) + residual.
// Shared by every backend so layers describe the fusion once.
#pragma once

#include <cmath>
#include <cstddef>

namespace tempo::kernels {

enum class Activation { none, relu, gelu_erf, gelu_tanh };

struct Epilogue {
    const float* bias = nullptr; // N values, or null
    Activation activation = Activation::none;
    const float* residual = nullptr; // M×N with leading dimension ld_residual, or null
    std::size_t ld_residual = 0;
};

// Scalar definitions, the ground truth the SIMD versions are tested against.
inline constexpr float kSqrt1_2 = 0.70710678118654752440f;
inline constexpr float kSqrt2OverPi = 0.79788456080286535588f;

inline float activate(Activation a, float v) {
    switch (a) {
    case Activation::relu:
        return v > 0.0f ? v : 0.0f;
    case Activation::gelu_erf:
        return 0.5f * v * (1.0f + std::erf(v * kSqrt1_2));
    case Activation::gelu_tanh:
        return 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
    case Activation::none:
        break;
    }
    return v;
}

} // namespace tempo::kernels
