// Eigen backend row kernels: activation, LayerNorm, softmax (contracts as in
// kernels/reference/elementwise.hpp).
#pragma once

#include <cmath>
#include <limits>

#include "tempo/kernels/eigen/gemm.hpp"

namespace tempo::kernels::eigen {

inline void activate(Activation a, float* x, std::size_t n) {
    Eigen::Map<Eigen::ArrayXf> v(x, Eigen::Index(n));
    if (a == Activation::relu)
        v = v.max(0.0f);
    else if (a != Activation::none)
        v = v.unaryExpr([a](float t) { return kernels::activate(a, t); });
}

inline void layer_norm(const float* x, std::size_t rows, std::size_t cols, std::size_t ldx,
                       const float* gamma, const float* beta, float eps, float* y,
                       std::size_t ldy) {
    const auto C = Eigen::Index(cols);
    for (std::size_t r = 0; r < rows; ++r) {
        Eigen::Map<const Eigen::ArrayXf> xr(x + r * ldx, C);
        Eigen::Map<Eigen::ArrayXf> yr(y + r * ldy, C);
        if (cols == 0) continue;
        // Centred on the first value: a large common offset never re-enters a rounded sum.
        const float pivot = xr[0];
        const float shift = (xr - pivot).mean();
        const float var = ((xr - pivot) - shift).square().mean();
        yr = ((xr - pivot) - shift) * (1.0f / std::sqrt(var + eps));
        if (gamma) yr *= Eigen::Map<const Eigen::ArrayXf>(gamma, C);
        if (beta) yr += Eigen::Map<const Eigen::ArrayXf>(beta, C);
    }
}

inline void softmax(float* x, std::size_t rows, std::size_t cols, std::size_t ld,
                    const float* mask) {
    const auto C = Eigen::Index(cols);
    for (std::size_t r = 0; r < rows; ++r) {
        Eigen::Map<Eigen::ArrayXf> xr(x + r * ld, C);
        if (mask) xr += Eigen::Map<const Eigen::ArrayXf>(mask, C);
        const float mx = cols ? xr.maxCoeff() : 0.0f;
        if (mx == -std::numeric_limits<float>::infinity()) {
            xr.setZero();
            continue;
        }
        // Masked keys get exactly no weight (a vectorised exp(-inf) may leave a denormal).
        xr = (xr == -std::numeric_limits<float>::infinity()).select(0.0f, (xr - mx).exp());
        xr /= xr.sum();
    }
}

} // namespace tempo::kernels::eigen
