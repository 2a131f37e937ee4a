// Scalar reference of sparse_rows_sum (kernels/sparse_rows.hpp), accumulated in double.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tempo::kernels::reference {

inline void sparse_rows_sum(const float* base, const std::uint32_t* index, const float* value,
                            std::size_t count, const float* rows, std::size_t ld, float* y,
                            std::size_t n) {
    for (std::size_t c = 0; c < n; ++c) {
        double a = base[c];
        for (std::size_t i = 0; i < count; ++i)
            a += double(value[i]) * double(rows[std::size_t(index[i]) * ld + c]);
        y[c] = float(a);
    }
}

} // namespace tempo::kernels::reference
