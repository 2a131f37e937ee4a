// Scalar reference row kernels: activation, LayerNorm, softmax.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>

#include "tempo/kernels/epilogue.hpp"

namespace tempo::kernels::reference {

inline void activate(Activation a, float* x, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) x[i] = kernels::activate(a, x[i]);
}

// y = (x - mean) / sqrt(var + eps) * gamma + beta per row, biased variance (as PyTorch).
// gamma/beta may be null (no affine). y may alias x.
inline void layer_norm(const float* x, std::size_t rows, std::size_t cols, std::size_t ldx,
                       const float* gamma, const float* beta, float eps, float* y,
                       std::size_t ldy) {
    for (std::size_t r = 0; r < rows; ++r) {
        const float* xr = x + r * ldx;
        double mean = 0.0, var = 0.0;
        for (std::size_t c = 0; c < cols; ++c) mean += xr[c];
        mean /= double(cols);
        for (std::size_t c = 0; c < cols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
        var /= double(cols);
        double rstd = 1.0 / std::sqrt(var + eps);
        float* yr = y + r * ldy;
        for (std::size_t c = 0; c < cols; ++c) {
            double v = (xr[c] - mean) * rstd;
            yr[c] = float(v * (gamma ? gamma[c] : 1.0f) + (beta ? beta[c] : 0.0f));
        }
    }
}

// In-place softmax of each row after adding `mask` (cols values, may be -inf; null: none).
// A row whose every entry is -inf becomes all zeros (it attends to nothing).
inline void softmax(float* x, std::size_t rows, std::size_t cols, std::size_t ld,
                    const float* mask) {
    for (std::size_t r = 0; r < rows; ++r) {
        float* xr = x + r * ld;
        float mx = -std::numeric_limits<float>::infinity();
        for (std::size_t c = 0; c < cols; ++c) {
            if (mask) xr[c] += mask[c];
            if (xr[c] > mx) mx = xr[c];
        }
        if (mx == -std::numeric_limits<float>::infinity()) {
            for (std::size_t c = 0; c < cols; ++c) xr[c] = 0.0f;
            continue;
        }
        double sum = 0.0;
        for (std::size_t c = 0; c < cols; ++c) sum += std::exp(double(xr[c]) - mx);
        for (std::size_t c = 0; c < cols; ++c) xr[c] = float(std::exp(double(xr[c]) - mx) / sum);
    }
}

} // namespace tempo::kernels::reference
