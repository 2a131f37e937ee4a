// The vector type and register budget every xsimd kernel is written against.
#pragma once

#include <cstddef>
#include <xsimd/xsimd.hpp>

#include "tempo/kernels/epilogue.hpp"

namespace tempo::kernels::simd {

using Batch = xsimd::batch<float>;
inline constexpr std::size_t kLanes = Batch::size;
#if defined(__AVX512F__)
inline constexpr std::size_t kVectorRegisters = 32;
#else
inline constexpr std::size_t kVectorRegisters = 16; // SSE, AVX, AVX2
#endif

// The GELUs are long; kept out of line so that the cheap cases inline into GEMM epilogues.
[[gnu::noinline]] inline Batch gelu(Activation a, Batch v) {
    if (a == Activation::gelu_erf)
        return Batch(0.5f) * v * (Batch(1.0f) + xsimd::erf(v * kSqrt1_2));
    Batch inner = Batch(kSqrt2OverPi) * xsimd::fma(Batch(0.044715f) * v, v * v, v);
    return Batch(0.5f) * v * (Batch(1.0f) + xsimd::tanh(inner));
}

inline Batch activate(Activation a, Batch v) {
    if (a == Activation::none) return v;
    if (a == Activation::relu) return xsimd::max(v, Batch(0.0f));
    return gelu(a, v);
}

// Loads n < kLanes floats, zero-filling the rest; stores back only n.
inline Batch load_partial(const float* p, std::size_t n) {
    alignas(64) float buf[kLanes] = {};
    for (std::size_t i = 0; i < n; ++i) buf[i] = p[i];
    return Batch::load_aligned(buf);
}
inline void store_partial(Batch v, float* p, std::size_t n) {
    alignas(64) float buf[kLanes];
    v.store_aligned(buf);
    for (std::size_t i = 0; i < n; ++i) p[i] = buf[i];
}

} // namespace tempo::kernels::simd
