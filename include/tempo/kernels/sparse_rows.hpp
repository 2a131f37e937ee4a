// xsimd sparse row sum: y = base + Σ_i value[i] · rows[index[i]], for inputs that are mostly
// zeros (Ansor's features). Output columns go in chunks of 4 vectors held in registers while
// the nonzeros stream past; rows are padded to whole vectors (ld ≥ n, a multiple of kLanes).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "tempo/kernels/simd.hpp"

namespace tempo::kernels::simd {

inline void sparse_rows_sum(const float* base, const std::uint32_t* index, const float* value,
                            std::size_t count, const float* rows, std::size_t ld, float* y,
                            std::size_t n) {
    constexpr std::size_t kChunk = 4 * kLanes;
    std::size_t c = 0;
    for (; c + kChunk <= n; c += kChunk) {
        Batch a[4];
        for (std::size_t v = 0; v < 4; ++v) a[v] = Batch::load_unaligned(base + c + v * kLanes);
        for (std::size_t i = 0; i < count; ++i) {
            const Batch f(value[i]);
            const float* r = rows + std::size_t(index[i]) * ld + c;
#pragma GCC unroll 4
            for (std::size_t v = 0; v < 4; ++v)
                a[v] = xsimd::fma(f, Batch::load_aligned(r + v * kLanes), a[v]);
        }
        for (std::size_t v = 0; v < 4; ++v) a[v].store_unaligned(y + c + v * kLanes);
    }
    for (; c < n; c += kLanes) { // whole padded vectors; only n − c of them are stored
        Batch a = load_partial(base + c, std::min(kLanes, n - c));
        for (std::size_t i = 0; i < count; ++i)
            a = xsimd::fma(Batch(value[i]),
                           Batch::load_aligned(rows + std::size_t(index[i]) * ld + c), a);
        if (c + kLanes <= n)
            a.store_unaligned(y + c);
        else
            store_partial(a, y + c, n - c);
    }
}

} // namespace tempo::kernels::simd
