// Eigen backend of sparse_rows_sum (kernels/sparse_rows.hpp): the picked rows, weighted and
// summed as one indexed matrix–vector product.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace tempo::kernels::eigen {

inline void sparse_rows_sum(const float* base, const std::uint32_t* index, const float* value,
                            std::size_t count, const float* rows, std::size_t ld, float* y,
                            std::size_t n) {
    using Rows =
        Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
                   Eigen::Unaligned, Eigen::OuterStride<>>;
    const auto N = Eigen::Index(n);
    Eigen::Map<Eigen::VectorXf> out(y, N);
    out = Eigen::Map<const Eigen::VectorXf>(base, N);
    if (count == 0) return;
    std::size_t last = 0;
    for (std::size_t i = 0; i < count; ++i) last = std::max<std::size_t>(last, index[i]);
    const Rows R(rows, Eigen::Index(last + 1), N, Eigen::OuterStride<>(Eigen::Index(ld)));
    const Eigen::Map<const Eigen::Matrix<std::uint32_t, Eigen::Dynamic, 1>> idx(
        index, Eigen::Index(count));
    out.noalias() += R(idx, Eigen::all).transpose() *
                     Eigen::Map<const Eigen::VectorXf>(value, Eigen::Index(count));
}

} // namespace tempo::kernels::eigen
