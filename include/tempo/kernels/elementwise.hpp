// xsimd row kernels: activation, LayerNorm, softmax. Same contracts as
// kernels/reference/elementwise.hpp; each loop runs whole vectors, then a partial one.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "tempo/kernels/simd.hpp"

namespace tempo::kernels::simd {

namespace detail {
// Applies f to x[0..n) in vectors; f(Batch, offset, lanes) returns the new value.
template <typename F>
inline void transform(float* x, std::size_t n, F&& f) {
    std::size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) f(Batch::load_unaligned(x + i), i).store_unaligned(x + i);
    if (i < n) store_partial(f(load_partial(x + i, n - i), i), x + i, n - i);
}

// Sum of f(x[i]) over i < n; f works lane-wise (the lanes of a partial vector past n are
// dropped, whatever f makes of their zero padding).
template <typename F>
inline float sum(const float* x, std::size_t n, F&& f) {
    Batch s0(0.0f), s1(0.0f);
    std::size_t i = 0;
    for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
        s0 += f(Batch::load_unaligned(x + i));
        s1 += f(Batch::load_unaligned(x + i + kLanes));
    }
    for (; i + kLanes <= n; i += kLanes) s0 += f(Batch::load_unaligned(x + i));
    float total = xsimd::hadd(s0 + s1);
    if (i < n) {
        alignas(64) float tail[kLanes];
        f(load_partial(x + i, n - i)).store_aligned(tail);
        for (std::size_t k = 0; k < n - i; ++k) total += tail[k];
    }
    return total;
}
} // namespace detail

inline void activate(Activation a, float* x, std::size_t n) {
    if (a == Activation::none) return;
    detail::transform(x, n, [a](Batch v, std::size_t) { return simd::activate(a, v); });
}

// Two passes over values centred on the row's first one, so a large common offset costs no
// float precision (the offset never re-enters a rounded sum). y may alias x.
inline void layer_norm(const float* x, std::size_t rows, std::size_t cols, std::size_t ldx,
                       const float* gamma, const float* beta, float eps, float* y,
                       std::size_t ldy) {
    for (std::size_t r = 0; r < rows; ++r) {
        const float* xr = x + r * ldx;
        float* yr = y + r * ldy;
        if (cols == 0) continue;
        const Batch pivot(xr[0]);
        // mean − pivot
        const Batch shift(detail::sum(xr, cols, [&](Batch v) { return v - pivot; }) / float(cols));
        auto centred = [&](Batch v) { return (v - pivot) - shift; };
        const float var = detail::sum(xr, cols,
                                      [&](Batch v) {
                                          Batch d = centred(v);
                                          return d * d;
                                      }) /
                          float(cols);
        const Batch rstd(1.0f / std::sqrt(var + eps));
        if (yr != xr) std::copy(xr, xr + cols, yr);
        detail::transform(yr, cols, [&](Batch v, std::size_t c) {
            Batch n = centred(v) * rstd;
            const std::size_t lanes = std::min(kLanes, cols - c);
            auto load = [&](const float* p) {
                return lanes == kLanes ? Batch::load_unaligned(p) : load_partial(p, lanes);
            };
            if (gamma) n *= load(gamma + c);
            if (beta) n += load(beta + c);
            return n;
        });
    }
}

// In-place softmax of each row after adding `mask` (cols values, may be -inf; null: none).
// A row whose every entry is -inf becomes all zeros (it attends to nothing).
inline void softmax(float* x, std::size_t rows, std::size_t cols, std::size_t ld,
                    const float* mask) {
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    const std::size_t whole = cols / kLanes * kLanes;
    for (std::size_t r = 0; r < rows; ++r) {
        float* xr = x + r * ld;
        Batch vmax(kNegInf);
        for (std::size_t c = 0; c < whole; c += kLanes) {
            Batch v = Batch::load_unaligned(xr + c);
            if (mask) v += Batch::load_unaligned(mask + c);
            v.store_unaligned(xr + c);
            vmax = xsimd::max(vmax, v);
        }
        alignas(64) float lanes[kLanes];
        vmax.store_aligned(lanes);
        float mx = *std::max_element(lanes, lanes + kLanes);
        for (std::size_t c = whole; c < cols; ++c) {
            if (mask) xr[c] += mask[c];
            mx = std::max(mx, xr[c]);
        }
        if (mx == kNegInf) {
            std::fill(xr, xr + cols, 0.0f);
            continue;
        }
        const Batch shift(mx);
        Batch vsum(0.0f);
        for (std::size_t c = 0; c < whole; c += kLanes) {
            Batch v = Batch::load_unaligned(xr + c);
            // exp(-inf) must be exactly 0 so masked keys get no weight at all.
            Batch e = xsimd::select(v == Batch(kNegInf), Batch(0.0f), xsimd::exp(v - shift));
            e.store_unaligned(xr + c);
            vsum += e;
        }
        if (whole < cols) { // the tail as one vector padded with -inf, whose exp is 0
            const std::size_t n = cols - whole;
            alignas(64) float buf[kLanes];
            for (std::size_t i = 0; i < kLanes; ++i) buf[i] = i < n ? xr[whole + i] : kNegInf;
            Batch v = Batch::load_aligned(buf);
            Batch e = xsimd::select(v == Batch(kNegInf), Batch(0.0f), xsimd::exp(v - shift));
            vsum += e;
            store_partial(e, xr + whole, n);
        }
        const float sum = xsimd::hadd(vsum);
        const float inv = 1.0f / sum;
        detail::transform(xr, cols, [inv](Batch v, std::size_t) { return v * inv; });
    }
}

} // namespace tempo::kernels::simd
