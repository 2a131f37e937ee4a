// How fast the measuring core is *right now*: a few milliseconds of vector multiplies and of
// streaming reads, run in the runner just before each program is timed and stored with its
// record. On a shared host both drift by tens of percent over hours (other tenants' load,
// clocks, the memory system), and a latency means little without the state it was taken in:
// the probe lets `remeasure` and the data's users tell drift from noise.
//
// The code is fixed (SSE-width GCC vectors, multiplies that cannot be fused into FMAs), so
// values compare across records and builds of tempo on one machine; they are not the
// target's peak (`tempo lab target` measures that).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>

#include "tempo/core/aligned_buffer.hpp"

namespace tempo::lab {

struct SpeedSample {
    double mul_gflops = 0; // FP32 multiplies per second / 1e9, 12 independent 4-lane chains
    double read_gbs = 0;   // streaming read of a buffer far larger than the caches, GB/s
};

class SpeedProbe {
public:
    static constexpr std::size_t kReadBytes = std::size_t(64) << 20;
    static constexpr long kMulIterations = 1 << 18; // ~1 ms at 3 GHz

    SpeedProbe() : buffer_(kReadBytes / sizeof(float)) {
        // First touch here, outside every timing.
        std::fill(buffer_.data(), buffer_.data() + buffer_.size(), 1.0f);
    }

    // Best of `rounds` of each micro-benchmark (the best is the least disturbed).
    SpeedSample sample(int rounds = 2) const {
        SpeedSample s;
        for (int r = 0; r < rounds; ++r) {
            s.mul_gflops = std::max(s.mul_gflops, multiply_rate() / 1e9);
            s.read_gbs = std::max(s.read_gbs, read_rate() / 1e9);
        }
        return s;
    }

private:
    using V4 = float __attribute__((vector_size(16)));
    using clock = std::chrono::steady_clock;

    static double seconds_since(clock::time_point t0) {
        return std::chrono::duration<double>(clock::now() - t0).count();
    }

    static double multiply_rate() {
        constexpr int kChains = 12; // latency 3-4 × two pipes on current x86 cores
        V4 a[kChains];
        const V4 b = {0.9999999f, 0.9999999f, 0.9999999f, 0.9999999f};
        for (int c = 0; c < kChains; ++c) a[c] = V4{1.0f, 1.5f, 2.0f, 2.5f} + float(c);
        const auto t0 = clock::now();
        for (long i = 0; i < kMulIterations; ++i) {
            for (int c = 0; c < kChains; ++c) a[c] *= b;
            // Keeps the chains in registers and the loop from being folded away.
            __asm__ volatile(""
                             : "+x"(a[0]), "+x"(a[1]), "+x"(a[2]), "+x"(a[3]), "+x"(a[4]),
                               "+x"(a[5]), "+x"(a[6]), "+x"(a[7]), "+x"(a[8]), "+x"(a[9]),
                               "+x"(a[10]), "+x"(a[11]));
        }
        const double s = seconds_since(t0);
        return double(kMulIterations) * kChains * 4 / s;
    }

    double read_rate() const {
        const V4* p = reinterpret_cast<const V4*>(buffer_.data());
        const std::size_t n = kReadBytes / sizeof(V4);
        V4 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
        const auto t0 = clock::now();
        for (std::size_t i = 0; i < n; i += 4) {
            s0 += p[i];
            s1 += p[i + 1];
            s2 += p[i + 2];
            s3 += p[i + 3];
        }
        V4 s = s0 + s1 + s2 + s3;
        __asm__ volatile("" : "+x"(s));
        return double(kReadBytes) / seconds_since(t0);
    }

    AlignedBuffer<float> buffer_;
};

} // namespace tempo::lab
