// xsimd GEMM: Y = epilogue(X·Wᵀ) with W packed once into column panels.
//
// Packing: W (N×K, PyTorch Linear layout) becomes ⌈N/NR⌉ panels; panel p holds, for every k,
// the NR weights of outputs p·NR … p·NR+NR-1 (zero-padded past N), so the micro-kernel reads
// one aligned NR-vector per k. The micro-kernel keeps an MR×NR tile of accumulators in
// registers (MR rows × 2 vectors), broadcasting one X value per row and k: on AVX2 that is
// 12 accumulators + 2 weight vectors + 1 broadcast of 16 registers (MR=6, NR=16); on AVX-512
// 24 + 3 of 32 (MR=12, NR=32). Rows below MR interleave k over extra accumulator sets so
// that ≥ 8 FMAs stay independent (FMA latency 4, two pipes), which keeps batch-1 fast.
// Blocking: panels in blocks that stay in L2; within a block, MR-row strips of X, each held in
// L1 while it sweeps the block's panels, so Y is written row by row. When K is sliced (K >
// kKc), rows go in blocks of kSlicedRows outside the panel blocks, so that the partial sums
// of a row block × panel block stay in L2 from one slice to the next.
#pragma once

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "tempo/core/aligned_buffer.hpp"
#include "tempo/kernels/simd.hpp"

namespace tempo::kernels::simd {

inline constexpr std::size_t kNR = 2 * kLanes;
inline constexpr std::size_t kMR = kVectorRegisters == 32 ? 12 : 6;
inline constexpr std::size_t kKc = 256;                    // an MR×kKc strip of X: 6 KiB (AVX2)
inline constexpr std::size_t kPanelBlockBytes = 192 << 10; // W panels kept in L2
inline constexpr std::size_t kSlicedRows = 16 * kMR;       // row block when K is sliced
inline constexpr std::size_t kPrefetchSteps = 64;          // 4 KiB ahead in a 16-wide panel

class PackedWeights {
public:
    PackedWeights() = default;
    PackedWeights(const float* w, std::size_t n, std::size_t k)
        : n_(n), k_(k), data_(panels_for(n) * k * kNR) {
        for (std::size_t p = 0; p < panels_for(n); ++p)
            for (std::size_t kk = 0; kk < k; ++kk)
                for (std::size_t c = 0; c < kNR; ++c) {
                    std::size_t j = p * kNR + c;
                    data_[(p * k + kk) * kNR + c] = j < n ? w[j * k + kk] : 0.0f;
                }
    }
    std::size_t rows() const noexcept { return n_; }
    std::size_t cols() const noexcept { return k_; }
    std::size_t panels() const noexcept { return panels_for(n_); }
    const float* panel(std::size_t p) const noexcept { return data_.data() + p * k_ * kNR; }

private:
    static std::size_t panels_for(std::size_t n) { return (n + kNR - 1) / kNR; }
    std::size_t n_ = 0, k_ = 0;
    AlignedBuffer<float> data_;
};

namespace detail {

// Accumulates an MR×NR tile over kc steps of k. x: MR rows with stride ldx; wp: panel slice.
template <std::size_t MR>
inline void gemm_tile(const float* x, std::size_t ldx, const float* wp, std::size_t kc,
                      Batch (&acc)[MR][2]) {
    // Independent accumulator sets along k when MR alone gives < 8 chains.
    constexpr std::size_t KU = MR >= 4 ? 1 : (MR >= 2 ? 2 : 4);
    Batch part[KU][MR][2];
#pragma GCC unroll 16
    for (std::size_t u = 0; u < KU; ++u)
#pragma GCC unroll 16
        for (std::size_t i = 0; i < MR; ++i) part[u][i][0] = part[u][i][1] = Batch(0.0f);

    std::size_t k = 0;
    for (; k + KU <= kc; k += KU) {
        // A lone strip streams each panel once, from memory when the weights exceed the
        // caches (a big model at batch 1): fetch ahead of the hardware prefetcher.
        if constexpr (MR < kMR) __builtin_prefetch(wp + (k + kPrefetchSteps) * kNR);
#pragma GCC unroll 16
        for (std::size_t u = 0; u < KU; ++u) {
            Batch b0 = Batch::load_aligned(wp + (k + u) * kNR);
            Batch b1 = Batch::load_aligned(wp + (k + u) * kNR + kLanes);
#pragma GCC unroll 16
            for (std::size_t i = 0; i < MR; ++i) {
                Batch a(x[i * ldx + k + u]);
                part[u][i][0] = xsimd::fma(a, b0, part[u][i][0]);
                part[u][i][1] = xsimd::fma(a, b1, part[u][i][1]);
            }
        }
    }
    for (; k < kc; ++k) {
        Batch b0 = Batch::load_aligned(wp + k * kNR);
        Batch b1 = Batch::load_aligned(wp + k * kNR + kLanes);
#pragma GCC unroll 16
        for (std::size_t i = 0; i < MR; ++i) {
            Batch a(x[i * ldx + k]);
            part[0][i][0] = xsimd::fma(a, b0, part[0][i][0]);
            part[0][i][1] = xsimd::fma(a, b1, part[0][i][1]);
        }
    }
#pragma GCC unroll 16
    for (std::size_t i = 0; i < MR; ++i) {
        acc[i][0] = part[0][i][0];
        acc[i][1] = part[0][i][1];
#pragma GCC unroll 16
        for (std::size_t u = 1; u < KU; ++u) {
            acc[i][0] += part[u][i][0];
            acc[i][1] += part[u][i][1];
        }
    }
}

// Writes one accumulator vector to y: adds the partial sum already there unless this is the
// first K slice, and applies the epilogue on the last one. Full vectors take the branch-free
// path; the last panel's n < kLanes columns go through a padded copy.
template <bool Full>
[[gnu::always_inline]] inline void store_lanes(Batch v, float* y, std::size_t n, bool first,
                                               const Epilogue* ep, std::size_t row,
                                               std::size_t col) {
    auto load = [n](const float* p) {
        if constexpr (Full)
            return Batch::load_unaligned(p);
        else
            return load_partial(p, n);
    };
    if (!first) v += load(y);
    if (ep) {
        if (ep->bias) v += load(ep->bias + col);
        v = activate(ep->activation, v);
        if (ep->residual) v += load(ep->residual + row * ep->ld_residual + col);
    }
    if constexpr (Full)
        v.store_unaligned(y);
    else
        store_partial(v, y, n);
}

template <std::size_t MR>
inline void gemm_block(const float* x, std::size_t ldx, const float* wp, std::size_t kc,
                       std::size_t row0, std::size_t col0, std::size_t cols, bool first,
                       const Epilogue* ep, float* y, std::size_t ldy) {
    Batch acc[MR][2];
    gemm_tile<MR>(x, ldx, wp, kc, acc);
    if (cols == kNR) {
#pragma GCC unroll 16
        for (std::size_t i = 0; i < MR; ++i) {
            float* yr = y + (row0 + i) * ldy + col0;
            store_lanes<true>(acc[i][0], yr, kLanes, first, ep, row0 + i, col0);
            store_lanes<true>(acc[i][1], yr + kLanes, kLanes, first, ep, row0 + i, col0 + kLanes);
        }
        return;
    }
    const std::size_t n0 = std::min(cols, kLanes), n1 = cols - n0;
    for (std::size_t i = 0; i < MR; ++i) {
        float* yr = y + (row0 + i) * ldy + col0;
        if (n0 == kLanes)
            store_lanes<true>(acc[i][0], yr, kLanes, first, ep, row0 + i, col0);
        else
            store_lanes<false>(acc[i][0], yr, n0, first, ep, row0 + i, col0);
        if (n1) store_lanes<false>(acc[i][1], yr + kLanes, n1, first, ep, row0 + i, col0 + kLanes);
    }
}

// Calls f(std::integral_constant<size_t, rows>) for 1 ≤ rows ≤ R.
template <std::size_t R, typename F>
inline void with_rows(std::size_t rows, F&& f) {
    if constexpr (R > 0) {
        if (rows == R)
            f(std::integral_constant<std::size_t, R>{});
        else
            with_rows<R - 1>(rows, f);
    }
}

} // namespace detail

// Y (m×N, leading dimension ldy) = epilogue(X (m×K, ldx) · Wᵀ). Y must not alias X or the
// residual.
inline void gemm(const float* x, std::size_t ldx, std::size_t m, const PackedWeights& w,
                 const Epilogue& ep, float* y, std::size_t ldy) {
    const std::size_t N = w.rows(), K = w.cols();
    if (m == 0 || N == 0) return;
    // A single strip reuses no panel slice: stream each panel whole, in memory order.
    const std::size_t k_slices = m <= kMR ? 1 : std::max<std::size_t>(1, (K + kKc - 1) / kKc);
    const std::size_t kc_step = std::max<std::size_t>(1, (K + k_slices - 1) / k_slices);
    const std::size_t panel_block =
        std::max<std::size_t>(1, kPanelBlockBytes / (sizeof(float) * kNR * kc_step));
    const std::size_t row_block = k_slices == 1 ? m : kSlicedRows;
    for (std::size_t m0 = 0; m0 < m; m0 += row_block) {
        const std::size_t m1 = std::min(m, m0 + row_block);
        for (std::size_t p0 = 0; p0 < w.panels(); p0 += panel_block) {
            const std::size_t p1 = std::min(w.panels(), p0 + panel_block);
            for (std::size_t s = 0; s < k_slices; ++s) {
                const std::size_t k0 = s * kc_step, kc = std::min(kc_step, K - std::min(K, k0));
                const Epilogue* last = s + 1 == k_slices ? &ep : nullptr;
                for (std::size_t i = m0; i < m1; i += kMR) {
                    detail::with_rows<kMR>(std::min(kMR, m1 - i), [&](auto rows) {
                        for (std::size_t p = p0; p < p1; ++p) {
                            const std::size_t col0 = p * kNR;
                            detail::gemm_block<decltype(rows)::value>(
                                x + i * ldx + k0, ldx, w.panel(p) + k0 * kNR, kc, i, col0,
                                std::min(kNR, N - col0), s == 0, last, y, ldy);
                        }
                    });
                }
            }
        }
    }
}

} // namespace tempo::kernels::simd
