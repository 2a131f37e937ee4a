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
    const int repeats = quick ? 3 : 9;
    const std::string load_before = tempo::bench::load_average();
    const double peak = tempo::bench::measured_peak_flops() * 1e-9;
    std::ostringstream md;
    md << "# GEMM kernels: Y = relu(X·Wᵀ + b), single thread\n\n"
       << "Machine: " << tempo::bench::cpu_model() << ", " << simd::kLanes * 32
       << "-bit vectors as compiled (xsimd arch `" << simd::Batch::arch_type::name()
       << "`), micro-kernel " << simd::kMR << "×" << simd::kNR << ".  \n"
       << "Measured single-core peak FP32 FMA throughput: **" << std::fixed;
    md.precision(1);
    md << peak << " GFLOP/s**.  \n"
       << "Each cell: median GFLOP/s of " << repeats
       << " timed blocks (≥ 20 ms each; the scalar backend 3), all backends interleaved per "
          "shape in this one run. Scalar is the double-accumulating reference.\n\n"
       << "| M | N | K | xsimd | % peak | Eigen | xsimd / Eigen | scalar |\n"
       << "|---:|---:|---:|---:|---:|---:|---:|---:|\n";

    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    auto random = [&](std::size_t n) {
        std::vector<float> v(n);
        for (auto& e : v) e = dist(rng);
        return v;
    };
    const std::vector<std::pair<std::size_t, std::size_t>> nks = {
        {64, 64}, {256, 64}, {164, 164}, {2048, 164}, {164, 2048}, {985, 985}};
    for (std::size_t m : {1, 5, 16, 64, 512})
        for (auto [n, k] : nks) {
            Shape s{m, n, k};
            auto x = random(m * k), w = random(n * k), bias = random(n);
            std::vector<float> y(m * n);
            double g_simd = gflops<simd::PackedWeights>(s, x, w, bias, y, repeats,
                                                        [](auto&&... a) { simd::gemm(a...); });
            double g_eigen = gflops<eigen::PackedWeights>(s, x, w, bias, y, repeats,
                                                          [](auto&&... a) { eigen::gemm(a...); });
            double g_scalar = gflops<reference::PackedWeights>(
                s, x, w, bias, y, 3, [](auto&&... a) { reference::gemm(a...); });
            md << "| " << m << " | " << n << " | " << k << " | " << g_simd << " | "
               << 100.0 * g_simd / peak << "% | " << g_eigen << " | " << g_simd / g_eigen
               << "× | " << g_scalar << " |\n";
            std::cerr << "M=" << m << " N=" << n << " K=" << k << ": xsimd " << g_simd
                      << ", eigen " << g_eigen << ", scalar " << g_scalar << " GFLOP/s\n";
        }
    md << "\nLoad average (1/5/15 min) before the run: " << load_before << "; after: "
       << tempo::bench::load_average() << " (" << std::thread::hardware_concurrency()
       << " CPUs). Anything well above 0 means other work shared the machine.\n";
    md << "\nReproduce: `cmake -S . -B build-bench -DTEMPO_BUILD_BENCH=ON && cmake --build "
          "build-bench --target bench_kernels && build-bench/bench/bench_kernels` (run on an "
          "otherwise idle machine).\n";
    std::ofstream(out) << md.str();
    std::cout << md.str();
    return 0;
}
