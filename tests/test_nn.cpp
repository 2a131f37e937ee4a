// Layers against PyTorch: nn::MultiHeadAttention reproduces torch.nn.MultiheadAttention
// (fixture written by tests/fixtures/make_attention_fixture.py).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernel_test_util.hpp"
#include "tempo/io/json.hpp"
#include "tempo/io/safetensors.hpp"
#include "tempo/nn/layer_norm.hpp"
#include "tempo/nn/multihead_attention.hpp"

using namespace tempo;

TEST_CASE("MultiHeadAttention matches torch.nn.MultiheadAttention with and without masks") {
    auto file = io::SafeTensors::load(TEMPO_FIXTURES_DIR "/attention/mha.safetensors");
    const json::Value doc = json::parse(file.metadata("cases"), "cases");
    const json::Node cases(doc, "cases");
    REQUIRE(doc.size() >= 4);
    for (std::size_t i = 0; i < doc.size(); ++i) {
        const json::Node c = cases[i];
        const std::size_t d = c["d_model"].as_uint64(), heads = c["heads"].as_uint64(),
                          batch = c["batch"].as_uint64(), seq = c["seq"].as_uint64();
        const std::string p = "case" + std::to_string(i) + ".";
        nn::MultiHeadAttention mha(file.tensor(p + "in_proj_weight", {3 * d, d}).data(),
                                   file.tensor(p + "in_proj_bias", {3 * d}).data(),
                                   file.tensor(p + "out_proj.weight", {d, d}).data(),
                                   file.tensor(p + "out_proj.bias", {d}).data(), d, heads);
        const auto& x = file.tensor(p + "x", {batch, seq, d});
        std::vector<std::uint8_t> pad;
        for (float v : file.tensor(p + "key_padding", {batch, seq})) pad.push_back(v != 0.0f);

        Workspace ws;
        ws.reserve(mha.workspace_floats(batch, seq));
        for (bool masked : {true, false}) {
            const auto& want = file.tensor(p + (masked ? "y_masked" : "y_unmasked"));
            std::vector<float> y(batch * seq * d);
            mha.forward(x.data(), d, batch, seq, masked ? pad.data() : nullptr, ws, y.data(), d);
            double worst = 0.0;
            for (std::size_t j = 0; j < y.size(); ++j)
                worst = std::max(worst, test::scaled_error(y[j], want.data()[j], 1.0));
            INFO("case " << i << " d=" << d << " heads=" << heads << " masked=" << masked);
            CHECK(worst <= 1e-5);
        }
    }
}

TEST_CASE("MultiHeadAttention rejects a head count that does not divide d_model") {
    std::vector<float> w(3 * 10 * 10), o(10 * 10);
    CHECK_THROWS_WITH_AS(nn::MultiHeadAttention(w.data(), nullptr, o.data(), nullptr, 10, 4),
                         "MultiHeadAttention: 4 heads do not divide d_model 10", Error);
}

TEST_CASE("Workspace scopes give slices back and never reallocate after warm-up") {
    Workspace ws;
    ws.reserve(1000);
    const float* first = nullptr;
    for (int call = 0; call < 3; ++call) {
        Workspace::Scope scope(ws);
        float* a = ws.take(100);
        if (call == 0) first = a;
        CHECK(a == first);
        CHECK(reinterpret_cast<std::uintptr_t>(a) % kAlignment == 0);
    }
    ws.reserve(500); // smaller: keeps the buffer
    CHECK(ws.capacity() == 1000);
    CHECK_THROWS_WITH_AS(ws.take(2000),
                         "workspace: slice of 2000 floats exceeds the reserved 1000 (a model bug)",
                         Error);
}

TEST_CASE("LayerNorm layer matches the reference kernel in place") {
    std::mt19937 rng(2);
    auto x = test::random_vector(3 * 164, rng, -3.0f, 3.0f);
    auto g = test::random_vector(164, rng), b = test::random_vector(164, rng);
    auto want = x;
    kernels::reference::layer_norm(want.data(), 3, 164, 164, g.data(), b.data(), 1e-5f, want.data(),
                                   164);
    nn::LayerNorm(g.data(), b.data(), 164).forward(x.data(), 164, 3, x.data(), 164);
    for (std::size_t i = 0; i < x.size(); ++i)
        CHECK(test::scaled_error(x[i], want[i], 1.0) <= 1e-5);
}
