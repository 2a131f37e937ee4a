// Small timing harness for tempo's benches: medians of repeated timed blocks, the machine's
// name, and its measured single-core FP32 FMA peak.
#pragma once

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <xsimd/xsimd.hpp>

#include "../tools/lab/cpu_load.hpp"
#include "tempo/kernels/simd.hpp"

namespace tempo::bench {

// Keeps a value alive so the optimiser cannot drop the work that made it.
template <typename T>
inline void keep(T const& value) {
    asm volatile("" : : "r,m"(value) : "memory");
}

// Median seconds per call of fn over `repeats` blocks, each long enough (≥ min_block_s) for
// the clock to be exact; one untimed warm-up call first.
template <typename F>
double median_seconds(F&& fn, int repeats = 7, double min_block_s = 0.02) {
    using clock = std::chrono::steady_clock;
    fn();
    long calls = 1;
    for (;;) { // size the block
        auto t0 = clock::now();
        for (long i = 0; i < calls; ++i) fn();
        double s = std::chrono::duration<double>(clock::now() - t0).count();
        if (s >= min_block_s || calls > (1L << 30)) break;
        calls = s <= 0 ? calls * 10 : std::max(calls + 1, long(calls * 1.2 * min_block_s / s));
    }
    std::vector<double> per_call;
    for (int r = 0; r < repeats; ++r) {
        auto t0 = clock::now();
        for (long i = 0; i < calls; ++i) fn();
        per_call.push_back(std::chrono::duration<double>(clock::now() - t0).count() / calls);
    }
    std::nth_element(per_call.begin(), per_call.begin() + repeats / 2, per_call.end());
    return per_call[repeats / 2];
}

inline std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return "unknown CPU";
}

// How busy the other CPUs were while a bench ran. The bench pins itself to the CPU it starts
// on; on SMT machines (and VMs whose vCPUs are siblings) work on another CPU slows it down,
// so a bench is only a measurement when this stays near 0.
class OthersBusy {
public:
    OthersBusy() {
        cpu_ = sched_getcpu();
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu_, &set);
        sched_setaffinity(0, sizeof set, &set);
        start_ = lab::cpu_jiffies();
    }
    int cpu() const { return cpu_; }
    // Busy fraction of the other CPUs since construction (0 when there are none).
    double fraction() const {
        return std::max(0.0, lab::others_busy(start_, lab::cpu_jiffies(), {cpu_}));
    }

private:
    int cpu_ = 0;
    std::vector<std::pair<double, double>> start_;
};

// Single-core peak FP32 FLOP/s: enough independent FMA chains to cover latency × pipes, few
// enough that they and the two operands stay in registers.
inline double measured_peak_flops() {
    using B = xsimd::batch<float>;
    constexpr int kChains = kernels::simd::kVectorRegisters - 4;
    constexpr long kIters = 1 << 22;
    auto run = [] {
        B acc[kChains];
        for (int c = 0; c < kChains; ++c) acc[c] = B(0.001f * float(c));
        const B a(0.999999f), b(1e-7f);
        for (long i = 0; i < kIters; ++i)
#pragma GCC unroll 16
            for (int c = 0; c < kChains; ++c) acc[c] = xsimd::fma(acc[c], a, b);
        B total(0.0f);
        for (int c = 0; c < kChains; ++c) total += acc[c];
        keep(total);
    };
    double s = median_seconds(run, 5, 0.05);
    return 2.0 * double(B::size) * kChains * double(kIters) / s;
}

} // namespace tempo::bench
