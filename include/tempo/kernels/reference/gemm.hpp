// Scalar reference GEMM: Y = epilogue(X·Wᵀ), accumulated in double. The ground truth for the
// SIMD kernels and the `scalar` backend.
#pragma once

#include <cstddef>
#include <vector>

#include "tempo/core/aligned_buffer.hpp"
#include "tempo/kernels/epilogue.hpp"

namespace tempo::kernels::reference {

// Weights as PyTorch stores a Linear: N rows (outputs) of K values (inputs).
class PackedWeights {
public:
    PackedWeights() = default;
    PackedWeights(const float* w, std::size_t n, std::size_t k) : w_(n * k), n_(n), k_(k) {
        for (std::size_t i = 0; i < n * k; ++i) w_[i] = w[i];
    }
    std::size_t rows() const noexcept { return n_; }
    std::size_t cols() const noexcept { return k_; }
    const float* row(std::size_t n) const noexcept { return w_.data() + n * k_; }

private:
    AlignedBuffer<float> w_;
    std::size_t n_ = 0, k_ = 0;
};

inline void gemm(const float* x, std::size_t ldx, std::size_t m, const PackedWeights& w,
                 const Epilogue& ep, float* y, std::size_t ldy) {
    for (std::size_t i = 0; i < m; ++i) {
        for (std::size_t j = 0; j < w.rows(); ++j) {
            const float* wr = w.row(j);
            double acc = 0.0;
            for (std::size_t k = 0; k < w.cols(); ++k) acc += double(x[i * ldx + k]) * wr[k];
            float v = float(acc) + (ep.bias ? ep.bias[j] : 0.0f);
            v = activate(ep.activation, v);
            if (ep.residual) v += ep.residual[i * ep.ld_residual + j];
            y[i * ldy + j] = v;
        }
    }
}

} // namespace tempo::kernels::reference
