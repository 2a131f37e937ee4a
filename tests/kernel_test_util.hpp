// Shared helpers for the kernel suites: seeded random data and a scale-aware comparison.
#pragma once

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

namespace tempo::test {

inline std::vector<float> random_vector(std::size_t n, std::mt19937& rng, float lo = -1.0f,
                                        float hi = 1.0f) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

// |got - want| / (|want| + scale): `scale` is the magnitude of the terms that produced want
// (Σ|x·w| for a dot product), so cancellation in a sum is not mistaken for a kernel error.
inline double scaled_error(double got, double want, double scale) {
    if (std::isnan(got) || std::isnan(want)) return std::isnan(got) == std::isnan(want) ? 0 : 1e30;
    if (std::isinf(got) || std::isinf(want)) return got == want ? 0.0 : 1e30;
    return std::abs(got - want) / (std::abs(want) + scale + 1e-30);
}

} // namespace tempo::test
