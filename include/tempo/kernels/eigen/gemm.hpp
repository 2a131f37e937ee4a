// Eigen backend GEMM: the readable baseline. W stays in PyTorch's row-major layout and
// Eigen's own packing and kernels do the product; the epilogue runs as array expressions.
#pragma once

#include <Eigen/Core>
#include <cstddef>

#include "tempo/kernels/epilogue.hpp"

namespace tempo::kernels::eigen {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;
using RowMap = Eigen::Map<RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;

class PackedWeights {
public:
    PackedWeights() = default;
    PackedWeights(const float* w, std::size_t n, std::size_t k)
        : w_(Eigen::Map<const RowMatrix>(w, Eigen::Index(n), Eigen::Index(k))) {}
    std::size_t rows() const noexcept { return std::size_t(w_.rows()); }
    std::size_t cols() const noexcept { return std::size_t(w_.cols()); }
    const RowMatrix& matrix() const noexcept { return w_; }

private:
    RowMatrix w_;
};

inline void gemm(const float* x, std::size_t ldx, std::size_t m, const PackedWeights& w,
                 const Epilogue& ep, float* y, std::size_t ldy) {
    const auto M = Eigen::Index(m), N = Eigen::Index(w.rows()), K = Eigen::Index(w.cols());
    if (M == 0 || N == 0) return;
    ConstRowMap X(x, M, K, Eigen::OuterStride<>(Eigen::Index(ldx)));
    RowMap Y(y, M, N, Eigen::OuterStride<>(Eigen::Index(ldy)));
    Y.noalias() = X * w.matrix().transpose();
    if (ep.bias) Y.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(ep.bias, N);
    if (ep.activation == Activation::relu)
        Y = Y.cwiseMax(0.0f);
    else if (ep.activation != Activation::none)
        Y = Y.unaryExpr([a = ep.activation](float v) { return activate(a, v); });
    if (ep.residual)
        Y += ConstRowMap(ep.residual, M, N, Eigen::OuterStride<>(Eigen::Index(ep.ld_residual)));
}

} // namespace tempo::kernels::eigen
