// CdmppModel against PyTorch: every fixture model of tests/fixtures/cdmpp (written by
// converters/make_parity_fixtures.py from the float64 reference module) and the `paper`
// model, generated at test time into the build tree (too large to commit).
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "tempo/tempo.hpp"

using namespace tempo;

// Counts heap allocations while `counting` is set: prediction must make none after warm-up.
namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
} // namespace
// The replacements pair malloc with free; GCC cannot see that they match.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
    if (counting) ++allocations;
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}

namespace {

std::vector<std::string> lines_of(const std::string& path) {
    std::ifstream in(path);
    REQUIRE_MESSAGE(in.good(), "cannot open " << path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) lines.push_back(line);
    return lines;
}

struct Expected {
    double transformed, seconds;
};

// Parity tolerances of the issue: z is a standardised target (unit scale), so its error is
// taken relative to max(1, |z|); seconds relative to the value.
constexpr double kTransformedTolerance = 1e-5;
constexpr double kSecondsTolerance = 1e-4;

void check_model(const std::string& dir, const std::string& name) {
    INFO("model " << name);
    CdmppModel model = CdmppModel::load(dir + "/" + name + ".safetensors", {true});
    CHECK(model.selftest_error() <= 1.0);

    std::vector<CompactAst> programs;
    std::vector<Expected> expected;
    const auto inputs = lines_of(dir + "/" + name + ".inputs.jsonl");
    const auto outputs = lines_of(dir + "/" + name + ".expected.jsonl");
    REQUIRE(inputs.size() == outputs.size());
    REQUIRE(inputs.size() >= 64);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        programs.push_back(
            parse_compact_ast(inputs[i], name + ".inputs.jsonl:" + std::to_string(i + 1)));
        const json::Value e = json::parse(outputs[i], "expected");
        expected.push_back({e.find("transformed")->as_double(), e.find("seconds")->as_double()});
    }

    // One at a time, then the whole set as one batch (mixed leaf counts, padding masks).
    Workspace ws;
    std::vector<double> single(programs.size()), batched(programs.size());
    std::vector<float> z_single(programs.size()), z_batched(programs.size());
    for (std::size_t i = 0; i < programs.size(); ++i) {
        const CompactAst* p = &programs[i];
        model.predict(&p, 1, &single[i], ws, &z_single[i]);
    }
    std::vector<const CompactAst*> all;
    for (const auto& p : programs) all.push_back(&p);
    model.predict(all.data(), all.size(), batched.data(), ws, z_batched.data());

    double worst_z = 0, worst_s = 0;
    for (std::size_t i = 0; i < programs.size(); ++i) {
        for (auto [z, s] :
             {std::pair{z_single[i], single[i]}, std::pair{z_batched[i], batched[i]}}) {
            worst_z = std::max(worst_z, std::abs(z - expected[i].transformed) /
                                            std::max(1.0, std::abs(expected[i].transformed)));
            worst_s = std::max(worst_s, std::abs(s - expected[i].seconds) / expected[i].seconds);
        }
    }
    MESSAGE(name << ": max error transformed " << worst_z << ", seconds (relative) " << worst_s);
    CHECK(worst_z <= kTransformedTolerance);
    CHECK(worst_s <= kSecondsTolerance);

    // After warm-up with the largest batch, prediction allocates nothing.
    allocations = 0;
    counting = true;
    model.predict(all.data(), all.size(), batched.data(), ws);
    for (std::size_t i = 0; i < programs.size(); ++i) single[i] = model.predict(programs[i], ws);
    counting = false;
    CHECK(allocations == 0);
}

std::vector<std::string> committed_models() {
    std::ifstream in(TEMPO_FIXTURES_DIR "/cdmpp/manifest.json");
    std::stringstream text;
    text << in.rdbuf();
    const json::Value manifest = json::parse(text.str(), "manifest.json");
    std::vector<std::string> names;
    for (const json::Value& m : manifest.find("models")->as_array())
        if (m.find("committed")->as_bool()) names.push_back(m.find("name")->as_string());
    return names;
}

} // namespace

TEST_CASE("every committed fixture model matches PyTorch, alone and batched, allocation-free") {
    const auto names = committed_models();
    REQUIRE(names.size() >= 6);
    for (const auto& name : names) check_model(TEMPO_FIXTURES_DIR "/cdmpp", name);
}

TEST_CASE("leaves past the positional-encoding table: predict agrees with the dense path") {
    // predict projects the raw features sparsely onto a per-position table of b + PE·Wᵀ
    // (positions < 512) or a row computed on the spot (beyond); predict_preprocessed runs the
    // dense projection on rows normalised and encoded here, as PyTorch's preprocess does.
    for (const char* name : {"compact", "d100_h5_mean_device", "prenorm_gelu_sum"}) {
        INFO("model " << name);
        const std::string path = std::string(TEMPO_FIXTURES_DIR "/cdmpp/") + name + ".safetensors";
        const io::SafeTensors file = io::SafeTensors::load(path);
        const CdmppModel model(file);
        const CdmppConfig& c = model.config();
        const std::size_t F = c.feature_dim;
        const auto inputs =
            lines_of(std::string(TEMPO_FIXTURES_DIR "/cdmpp/") + name + ".inputs.jsonl");
        CompactAst ast = parse_compact_ast(inputs.at(1), name); // the one with max_leaves leaves
        const std::size_t L = ast.leaves();
        REQUIRE(L >= 2);
        // A flat tree: the root, 400 childless nodes; the featured leaves are node 1 (position
        // 1) and nodes 401-L+2 … 400 (positions ≥ 2·(400−L+1)+1 > 512).
        ast.tree = {0};
        for (std::int32_t n = 1; n <= 400; ++n) ast.tree.insert(ast.tree.end(), {n, -1});
        ast.tree.push_back(-1);
        ast.leaf_ids = {1};
        for (std::int32_t n = 400 - std::int32_t(L) + 2; n <= 400; ++n) ast.leaf_ids.push_back(n);
        REQUIRE(ast.leaf_ids.size() == L);

        const float* mn = file.tensor("norm.min", {F}).data();
        const float* mx = file.tensor("norm.max", {F}).data();
        std::vector<float> x(L * F), pe(F);
        for (std::size_t r = 0; r < L; ++r) {
            const std::size_t pos = r == 0 ? 1 : 2 * std::size_t(ast.leaf_ids[r]) - 1;
            detail::positional_encoding(pos, F, c.pe_scale, pe.data());
            for (std::size_t i = 0; i < F; ++i)
                x[r * F + i] =
                    (ast.leaf(r)[i] - mn[i]) * float(1.0 / (double(mx[i]) - double(mn[i]) + 1e-6)) +
                    pe[i];
        }
        std::vector<std::size_t> leaves{L};
        float dense = 0, sparse = 0;
        Workspace ws;
        model.predict_preprocessed(x.data(), 1, L, leaves.data(),
                                   c.device ? ast.device.data() : nullptr, &dense, ws);
        const CompactAst* one = &ast;
        double seconds;
        model.predict(&one, 1, &seconds, ws, &sparse);
        CHECK(std::abs(sparse - dense) <= kTransformedTolerance * std::max(1.0f, std::abs(dense)));
    }
}

TEST_CASE("predict_preprocessed rejects shapes that do not fit the model") {
    const CdmppModel model = CdmppModel::load(TEMPO_FIXTURES_DIR "/cdmpp/compact.safetensors");
    const std::size_t F = model.config().feature_dim, L = model.config().max_leaves;
    std::vector<float> x((L + 1) * F, 0.0f);
    float z = 0;
    Workspace ws;
    std::vector<std::size_t> leaves{0};
    auto message = [&](std::size_t seq, const float* device) {
        try {
            model.predict_preprocessed(x.data(), 1, seq, leaves.data(), device, &z, ws);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(message(L + 1, nullptr) ==
          "predict_preprocessed: seq 17 does not fit this model (max_leaves 16)");
    CHECK(message(3, nullptr) == "predict_preprocessed: leaves[0] = 0 for seq 3");
    leaves[0] = 2;
    const float device[8] = {};
    CHECK(message(3, device) ==
          "predict_preprocessed: this model has no device branch (device must be null)");
    CHECK(message(3, nullptr) == "no error");
}

TEST_CASE("the paper config (13.8M parameters), generated by the fixture script, matches PyTorch") {
    const std::string dir = TEMPO_TEST_TMP_DIR "/cdmpp_paper";
    if (!std::ifstream(dir + "/paper.safetensors")) {
        const std::string cmd = "cd '" TEMPO_SOURCE_DIR "' && /usr/bin/python3 converters/"
                                "make_parity_fixtures.py --only paper --out '" +
                                dir + "' >/dev/null";
        REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, "fixture generation failed: " << cmd);
    }
    check_model(dir, "paper");
}
