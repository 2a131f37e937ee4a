// GEMM throughput of the xsimd, Eigen and scalar backends side by side, next to the measured
// single-core FP32 peak. Writes a markdown table (default bench/results/kernels.md).
//   bench_kernels [--out FILE] [--quick]
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "tempo/kernels/backend.hpp"

using namespace tempo;
using namespace tempo::kernels;

namespace {

struct Shape {
    std::size_t m, n, k;
};

template <typename Packed, typename Gemm>
double gflops(const Shape& s, const std::vector<float>& x, const std::vector<float>& w,
              const std::vector<float>& bias, std::vector<float>& y, int repeats, Gemm&& gemm) {
    Packed packed(w.data(), s.n, s.k);
    Epilogue ep{bias.data(), Activation::relu, nullptr, 0};
    double sec = tempo::bench::median_seconds(
        [&] {
            gemm(x.data(), s.k, s.m, packed, ep, y.data(), s.n);
            tempo::bench::keep(y[0]);
        },
        repeats);
    return 2.0 * double(s.m) * double(s.n) * double(s.k) / sec * 1e-9;
}

} // namespace

constexpr double kQuietBusy = 0.05; // above: the run is marked a trial

int main(int argc, char** argv) {
    std::string out = "bench/results/kernels.md";
    bool quick = false;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--out") && i + 1 < argc)
            out = argv[++i];
        else if (!std::strcmp(argv[i], "--quick"))
            quick = true;
        else {
            std::cerr << "usage: bench_kernels [--out FILE] [--quick]\n";
            return 2;
        }
    }
    const int repeats = quick ? 3 : 9, rounds = quick ? 1 : 3;
    const tempo::bench::OthersBusy others;
    // The core's clock drifts (boost, the host's load): the peak is re-measured before every
    // shape and the highest value of the run is the reference.
    double peak = 0;
    struct Row {
        std::size_t m, n, k;
        double simd, eigen, scalar;
    };
    std::vector<Row> rows;

    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    auto random = [&](std::size_t n) {
        std::vector<float> v(n);
        for (auto& e : v) e = dist(rng);
        return v;
    };
    const std::vector<std::pair<std::size_t, std::size_t>> nks = {
        {64, 64}, {256, 64}, {164, 164}, {2048, 164}, {164, 2048}, {985, 985}};
    // Rounds sweep every shape in turn; a cell is its best round, so a passing dip of the
    // host (a shared machine) costs one round, not the cell.
    for (int round = 0; round < rounds; ++round) {
        std::size_t cell = 0;
        for (std::size_t m : {1, 5, 16, 64, 512})
            for (auto [n, k] : nks) {
                peak = std::max(peak, tempo::bench::measured_peak_flops() * 1e-9);
                Shape s{m, n, k};
                auto x = random(m * k), w = random(n * k), bias = random(n);
                std::vector<float> y(m * n);
                const double g_simd = gflops<simd::PackedWeights>(
                    s, x, w, bias, y, repeats, [](auto&&... a) { simd::gemm(a...); });
                const double g_eigen = gflops<eigen::PackedWeights>(
                    s, x, w, bias, y, repeats, [](auto&&... a) { eigen::gemm(a...); });
                const double g_scalar = gflops<reference::PackedWeights>(
                    s, x, w, bias, y, 3, [](auto&&... a) { reference::gemm(a...); });
                if (round == 0) rows.push_back({m, n, k, 0, 0, 0});
                Row& r = rows[cell++];
                r.simd = std::max(r.simd, g_simd);
                r.eigen = std::max(r.eigen, g_eigen);
                r.scalar = std::max(r.scalar, g_scalar);
                std::cerr << "round " << round + 1 << "/" << rounds << " M=" << m << " N=" << n
                          << " K=" << k << ": xsimd " << g_simd << ", eigen " << g_eigen
                          << ", scalar " << g_scalar << " GFLOP/s\n";
            }
    }
    const double busy = others.fraction();
    std::ostringstream md;
    md << std::fixed;
    md.precision(1);
    md << "# GEMM kernels: Y = relu(X·Wᵀ + b), single thread\n\n";
    if (busy > kQuietBusy)
        md << "> **TRIAL: the other CPUs were " << 100.0 * busy
           << "% busy during this run** (SMT siblings share the core): every number is "
              "depressed and noisy. Re-run on an otherwise idle machine.\n\n";
    md << "Machine: " << tempo::bench::cpu_model() << ", " << simd::kLanes * 32
       << "-bit vectors as compiled (xsimd arch `" << simd::Batch::arch_type::name()
       << "`), micro-kernel " << simd::kMR << "×" << simd::kNR << ", pinned to CPU " << others.cpu()
       << "; the other " << std::thread::hardware_concurrency() - 1 << " CPU(s) were "
       << 100.0 * busy << "% busy during the run.  \n"
       << "Measured single-core peak FP32 FMA throughput: **" << peak
       << " GFLOP/s** (the best of a measurement before each shape).  \n"
       << "Each cell: the best of " << rounds << " rounds over all shapes, each the median "
       << "GFLOP/s of " << repeats
       << " timed blocks (≥ 20 ms each; the scalar backend 3), all backends interleaved per "
          "shape in this one run. Scalar is the double-accumulating reference.\n\n"
       << "| M | N | K | xsimd | % peak | Eigen | xsimd / Eigen | scalar |\n"
       << "|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const Row& r : rows)
        md << "| " << r.m << " | " << r.n << " | " << r.k << " | " << r.simd << " | "
           << 100.0 * r.simd / peak << "% | " << r.eigen << " | " << r.simd / r.eigen << "× | "
           << r.scalar << " |\n";
    md << "\nReproduce: `cmake -S . -B build-bench -DTEMPO_BUILD_BENCH=ON && cmake --build "
          "build-bench --target bench_kernels && build-bench/bench/bench_kernels` (run on an "
          "otherwise idle machine).\n";
    std::ofstream(out) << md.str();
    std::cout << md.str();
    return 0;
}
