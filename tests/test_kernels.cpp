// Every SIMD and Eigen kernel against its scalar reference, over odd sizes and tails.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>

#include "kernel_test_util.hpp"
#include "tempo/kernels/backend.hpp"

// GCC 12 propagates the 3-float rows below into whole-vector loops that never run for them
// and warns about the loads it imagines there.
#pragma GCC diagnostic ignored "-Warray-bounds"

using namespace tempo;
using namespace tempo::kernels;
using tempo::test::random_vector;
using tempo::test::scaled_error;

namespace {

constexpr double kTolerance = 1e-5;

struct GemmCase {
    std::size_t m, n, k;
    Epilogue epilogue;
};

// Epilogue variants cycled through the size sweep so every size meets several of them.
Epilogue epilogue_variant(std::size_t i, const float* bias, const float* residual,
                          std::size_t ld_residual) {
    switch (i % 6) {
    case 0:
        return {};
    case 1:
        return {bias, Activation::none, nullptr, 0};
    case 2:
        return {bias, Activation::relu, nullptr, 0};
    case 3:
        return {bias, Activation::gelu_erf, nullptr, 0};
    case 4:
        return {bias, Activation::gelu_tanh, residual, ld_residual};
    default:
        return {nullptr, Activation::none, residual, ld_residual};
    }
}

template <typename Packed, typename Gemm>
double max_gemm_error(std::size_t m, std::size_t n, std::size_t k, std::size_t variant,
                      std::mt19937& rng, Gemm&& gemm) {
    // Leading dimensions wider than the rows exercise strided access.
    const std::size_t ldx = k + (variant % 3), ldy = n + (variant % 2), ldr = n + 1;
    auto x = random_vector(m * ldx, rng), w = random_vector(n * k, rng);
    auto bias = random_vector(n, rng), residual = random_vector(m * ldr, rng);
    Epilogue ep = epilogue_variant(variant, bias.data(), residual.data(), ldr);

    Packed packed(w.data(), n, k);
    reference::PackedWeights ref_packed(w.data(), n, k);
    std::vector<float> got(m * ldy, -7.0f), want(m * ldy, -7.0f);
    gemm(x.data(), ldx, m, packed, ep, got.data(), ldy);
    reference::gemm(x.data(), ldx, m, ref_packed, ep, want.data(), ldy);

    double worst = 0.0;
    for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < ldy; ++j) {
            if (j >= n) { // padding columns of Y must stay untouched
                if (got[i * ldy + j] != -7.0f) return 1e30;
                continue;
            }
            double scale = std::abs(ep.bias ? ep.bias[j] : 0.0f) +
                           std::abs(ep.residual ? ep.residual[i * ldr + j] : 0.0f);
            for (std::size_t kk = 0; kk < k; ++kk)
                scale += std::abs(x[i * ldx + kk] * w[j * k + kk]);
            worst = std::max(worst, scaled_error(got[i * ldy + j], want[i * ldy + j], scale));
        }
    return worst;
}

std::vector<std::size_t> k_sweep() {
    std::vector<std::size_t> ks;
    for (std::size_t k = 1; k <= 33; ++k) ks.push_back(k);
    for (std::size_t k : {64, 164, 300}) ks.push_back(k);
    return ks;
}

template <typename Packed, typename Gemm>
void gemm_sweep(Gemm&& gemm) {
    std::mt19937 rng(1234);
    std::size_t variant = 0;
    double worst = 0.0;
    for (std::size_t k : k_sweep())
        for (std::size_t m = 1; m <= 33; ++m)
            for (std::size_t n = 1; n <= 33; ++n, ++variant) {
                double e = max_gemm_error<Packed>(m, n, k, variant, rng, gemm);
                if (e > kTolerance) {
                    INFO("M=" << m << " N=" << n << " K=" << k << " variant " << variant % 6);
                    CHECK(e <= kTolerance);
                }
                worst = std::max(worst, e);
            }
    MESSAGE("worst scaled error " << worst);
    CHECK(worst <= kTolerance);
}

} // namespace

TEST_CASE("simd gemm matches the reference for every M, N in 1..33 and K in the sweep") {
    gemm_sweep<simd::PackedWeights>([](auto&&... a) { simd::gemm(a...); });
}

TEST_CASE("eigen gemm matches the reference for every M, N in 1..33 and K in the sweep") {
    gemm_sweep<eigen::PackedWeights>([](auto&&... a) { eigen::gemm(a...); });
}

TEST_CASE("simd gemm handles large shapes that cross the panel and K blocking") {
    std::mt19937 rng(7);
    // AVX2: 13×700×600 has 3 K slices of 200 and 44 panels in blocks of 15 (the last partial);
    // 40×2100×164: 132 panels in blocks of 18, the last panel 4 columns wide.
    for (auto [m, n, k] :
         {std::tuple{517, 70, 600}, std::tuple{1100, 33, 520}, std::tuple{13, 700, 600},
          std::tuple{40, 2100, 164}, std::tuple{5, 2048, 164}, std::tuple{2, 164, 2048}}) {
        INFO("M=" << m << " N=" << n << " K=" << k);
        CHECK(max_gemm_error<simd::PackedWeights>(
                  m, n, k, 4, rng, [](auto&&... a) { simd::gemm(a...); }) <= kTolerance);
    }
}

TEST_CASE("gemm with K = 0 applies the epilogue to zero") {
    const float bias[3] = {1.0f, -2.0f, 0.5f};
    simd::PackedWeights packed(nullptr, 3, 0);
    float y[6];
    simd::gemm(nullptr, 0, 2, packed, {bias, Activation::relu, nullptr, 0}, y, 3);
    CHECK(y[0] == 1.0f);
    CHECK(y[1] == 0.0f);
    CHECK(y[5] == 0.5f);
}

namespace {
template <typename F>
void activation_sweep(F&& activate_fn) {
    std::mt19937 rng(3);
    for (Activation a : {Activation::relu, Activation::gelu_erf, Activation::gelu_tanh}) {
        for (std::size_t n = 1; n <= 70; ++n) {
            auto x = random_vector(n, rng, -6.0f, 6.0f);
            auto want = x, input = x;
            reference::activate(a, want.data(), n);
            activate_fn(a, x.data(), n);
            // GELU's tail cancels (1 + erf → 0): measure against the input's magnitude.
            for (std::size_t i = 0; i < n; ++i)
                CHECK(scaled_error(x[i], want[i], std::abs(input[i])) <= kTolerance);
        }
    }
}
} // namespace

TEST_CASE("activations match the reference over every tail length") {
    activation_sweep([](auto... a) { simd::activate(a...); });
    activation_sweep([](auto... a) { eigen::activate(a...); });
}

namespace {
template <typename F>
void layer_norm_sweep(F&& layer_norm_fn) {
    std::mt19937 rng(11);
    for (float offset : {0.0f, 1e4f, -3e5f})
        for (float spread : {1e-2f, 1.0f, 1e3f})
            for (std::size_t cols : {1, 2, 7, 8, 9, 15, 16, 17, 33, 64, 100, 164, 2048}) {
                const std::size_t rows = 3, ld = cols + 3;
                auto x = random_vector(rows * ld, rng, offset - spread, offset + spread);
                auto gamma = random_vector(cols, rng, 0.5f, 1.5f), beta = random_vector(cols, rng);
                std::vector<float> got(rows * ld), want(rows * ld);
                layer_norm_fn(x.data(), rows, cols, ld, gamma.data(), beta.data(), 1e-5f,
                              got.data(), ld);
                reference::layer_norm(x.data(), rows, cols, ld, gamma.data(), beta.data(), 1e-5f,
                                      want.data(), ld);
                for (std::size_t r = 0; r < rows; ++r)
                    for (std::size_t c = 0; c < cols; ++c) {
                        INFO("offset " << offset << " spread " << spread << " cols " << cols);
                        // Outputs are O(1): compare against the output scale.
                        CHECK(scaled_error(got[r * ld + c], want[r * ld + c], 1.0) <= 1e-4);
                    }
            }
    // In place, no affine parameters, and a constant row (variance 0) stays finite.
    std::vector<float> row(20, 5e4f);
    layer_norm_fn(row.data(), 1, 20, 20, nullptr, nullptr, 1e-5f, row.data(), 20);
    for (float v : row) CHECK(v == 0.0f);
}
} // namespace

TEST_CASE("layer_norm matches the reference at large magnitudes, offsets and every tail") {
    layer_norm_sweep([](auto... a) { simd::layer_norm(a...); });
    layer_norm_sweep([](auto... a) { eigen::layer_norm(a...); });
}

namespace {
template <typename F>
void softmax_sweep(F&& softmax_fn) {
    std::mt19937 rng(5);
    constexpr float kInf = std::numeric_limits<float>::infinity();
    for (float magnitude : {1.0f, 80.0f, 3e4f})
        for (std::size_t cols : {1, 2, 5, 7, 8, 9, 16, 17, 31, 64, 65}) {
            const std::size_t rows = 4, ld = cols + 2;
            auto x = random_vector(rows * ld, rng, -magnitude, magnitude);
            std::vector<float> mask(cols, 0.0f);
            for (std::size_t c = 0; c < cols; c += 3) mask[c] = -kInf;
            for (const float* m :
                 {static_cast<const float*>(nullptr), static_cast<const float*>(mask.data())}) {
                auto got = x, want = x;
                softmax_fn(got.data(), rows, cols, ld, m);
                reference::softmax(want.data(), rows, cols, ld, m);
                for (std::size_t r = 0; r < rows; ++r) {
                    double total = 0;
                    for (std::size_t c = 0; c < cols; ++c) {
                        INFO("magnitude " << magnitude << " cols " << cols);
                        CHECK(std::isfinite(got[r * ld + c]));
                        CHECK(scaled_error(got[r * ld + c], want[r * ld + c], 1e-6) <= 1e-5);
                        if (m && m[c] == -kInf) CHECK(got[r * ld + c] == 0.0f);
                        total += got[r * ld + c];
                    }
                    CHECK(total == doctest::Approx(cols == 1 && m ? 0.0 : 1.0).epsilon(1e-5));
                }
            }
        }
    // A fully masked row attends to nothing: zeros, never NaN.
    std::vector<float> row = {1.0f, 2.0f, 3.0f}, all_masked(3, -kInf);
    softmax_fn(row.data(), 1, 3, 3, all_masked.data());
    for (float v : row) CHECK(v == 0.0f);
}
} // namespace

TEST_CASE("softmax matches the reference with large values and -inf masks") {
    softmax_sweep([](auto... a) { simd::softmax(a...); });
    softmax_sweep([](auto... a) { eigen::softmax(a...); });
}

namespace {
template <typename F>
void attention_sweep(F&& attention_fn) {
    std::mt19937 rng(9);
    for (auto [d, heads] : {std::pair{164, 4}, std::pair{100, 5}, std::pair{64, 4}, std::pair{8, 1},
                            std::pair{12, 3}, std::pair{33, 11}})
        for (std::size_t seq : {1, 2, 5, 16, 17, 64}) {
            const std::size_t batch = 3, ld = 3 * d + 1, ldctx = d + 2;
            AttentionShape shape{batch, seq, std::size_t(d), std::size_t(heads)};
            auto qkv = random_vector(batch * seq * ld, rng, -2.0f, 2.0f);
            std::vector<std::uint8_t> pad(batch * seq, 0);
            for (std::size_t b = 0; b < batch; ++b) // sequence b keeps seq - b keys
                for (std::size_t j = seq > b ? seq - b : 0; j < seq; ++j) pad[b * seq + j] = 1;
            for (const std::uint8_t* mask : {static_cast<const std::uint8_t*>(nullptr),
                                             static_cast<const std::uint8_t*>(pad.data())}) {
                std::vector<float> scratch(attention_scratch_floats(seq, std::size_t(d)));
                std::vector<float> got(batch * seq * ldctx), want(batch * seq * ldctx);
                attention_fn(shape, qkv.data(), ld, mask, scratch.data(), got.data(), ldctx);
                reference::attention(shape, qkv.data(), ld, mask, scratch.data(), want.data(),
                                     ldctx);
                for (std::size_t r = 0; r < batch * seq; ++r)
                    for (std::size_t c = 0; c < std::size_t(d); ++c) {
                        INFO("d " << d << " heads " << heads << " seq " << seq);
                        CHECK(scaled_error(got[r * ldctx + c], want[r * ldctx + c], 2.0) <= 1e-5);
                    }
            }
        }
}
} // namespace

TEST_CASE("attention matches the reference for short sequences, odd head sizes and masks") {
    attention_sweep([](auto&&... a) { simd::attention(a...); });
    attention_sweep([](auto&&... a) { eigen::attention(a...); });
}

namespace {
template <typename F>
void sparse_rows_sweep(F&& sum_fn) {
    std::mt19937 rng(11);
    for (std::size_t n = 1; n <= 70; ++n)
        for (std::size_t count : {0, 1, 3, 17, 60}) {
            const std::size_t in = 64, ld = (n + 15) / 16 * 16;
            tempo::AlignedBuffer<float> rows(in * ld);
            const auto values = random_vector(in * ld, rng);
            std::copy(values.begin(), values.end(), rows.data());
            const auto base = random_vector(n, rng), value = random_vector(count, rng);
            std::vector<std::uint32_t> index(count);
            for (auto& i : index) i = std::uint32_t(rng() % in); // repeats allowed
            std::vector<float> got(n), want(n);
            sum_fn(base.data(), index.data(), value.data(), count, rows.data(), ld, got.data(), n);
            reference::sparse_rows_sum(base.data(), index.data(), value.data(), count, rows.data(),
                                       ld, want.data(), n);
            for (std::size_t c = 0; c < n; ++c) {
                INFO("n " << n << " count " << count << " column " << c);
                CHECK(scaled_error(got[c], want[c], 1.0 + double(count)) <= kTolerance);
            }
        }
}
} // namespace

TEST_CASE("sparse_rows_sum matches the reference for every width and nonzero count") {
    sparse_rows_sweep([](auto&&... a) { simd::sparse_rows_sum(a...); });
    sparse_rows_sweep([](auto&&... a) { eigen::sparse_rows_sum(a...); });
}
