// Featurizer against the feature spec's worked example (oracle_vectors.json, field by field)
// and the compact-AST tree / leaf ids of hand-built nests.
#include "tempo/loopnest/featurize.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

using namespace tempo::loopnest;

namespace {

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    REQUIRE_MESSAGE(in, "cannot open " << path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The numbers of the flat array `"key": [ … ]` in a JSON text (enough for the oracle file).
std::vector<double> number_array(const std::string& text, const std::string& key) {
    auto at = text.find("\"" + key + "\"");
    REQUIRE(at != std::string::npos);
    at = text.find('[', at);
    auto end = text.find(']', at);
    std::vector<double> out;
    std::stringstream ss(text.substr(at + 1, end - at - 1));
    std::string item;
    while (std::getline(ss, item, ',')) out.push_back(std::stod(item));
    return out;
}

struct WorkedExample {
    LoweredProgram program;
    WorkedExample() {
        int A = 0, B = 1, C = 2;
        program.tensors = {{"A", {64, 64}}, {"B", {64, 64}}, {"C", {64, 64}}};
        program.inputs = {A, B};
        program.output = C;
        int next = 0;
        auto loop = [&](const char* name, std::int64_t ext, ForKind kind) {
            return make_for(next++, name, ext, kind);
        };
        LoopNode i0 = loop("i0", 8, ForKind::Parallel), j0 = loop("j0", 8, ForKind::Serial);
        LoopNode i1 = loop("i1", 8, ForKind::Serial), j1 = loop("j1", 8, ForKind::Vectorized);
        LoopNode k = loop("k", 64, ForKind::Serial), i1b = loop("i1b", 8, ForKind::Unrolled);
        LoopNode j1b = loop("j1b", 8, ForKind::Vectorized);
        auto v = [](const LoopNode& l) { return var(l.var, l.var_name); };
        auto c_index = [&](const LoopNode& ii, const LoopNode& jj) {
            return std::vector<Expr>{v(i0) * 8 + v(ii), v(j0) * 8 + v(jj)};
        };
        j1.children.push_back(make_store(C, c_index(i1, j1), float_imm(0.0)));
        i1.children.push_back(std::move(j1));
        Expr update = load(C, c_index(i1b, j1b)) +
                      load(A, {v(i0) * 8 + v(i1b), v(k)}) * load(B, {v(k), v(j0) * 8 + v(j1b)});
        j1b.children.push_back(make_store(C, c_index(i1b, j1b), update));
        i1b.children.push_back(std::move(j1b));
        k.children.push_back(std::move(i1b));
        j0.children.push_back(std::move(i1));
        j0.children.push_back(std::move(k));
        i0.children.push_back(std::move(j0));
        LoopNode pragma = make_attr(kPragmaAutoUnroll, 16);
        pragma.children.push_back(std::move(i0));
        program.root.children.push_back(std::move(pragma));
    }
};

} // namespace

TEST_CASE("worked example matches oracle_vectors.json field by field") {
    const std::string text =
        read_text(std::string(TEMPO_FIXTURES_DIR) + "/loopnest/oracle_vectors.json");
    WorkedExample ex;
    auto ast = featurize(ex.program);
    auto tree = number_array(text, "serialized_tree");
    auto ids = number_array(text, "node_ids");
    REQUIRE(ast.tree.size() == tree.size());
    for (std::size_t i = 0; i < tree.size(); ++i) CHECK(ast.tree[i] == static_cast<int>(tree[i]));
    REQUIRE(ast.leaf_ids.size() == 2);
    CHECK(ast.leaf_ids[0] == static_cast<int>(ids[0]));
    CHECK(ast.leaf_ids[1] == static_cast<int>(ids[1]));
    const char* keys[2] = {"S1_node6", "S2_node10"};
    for (int leaf = 0; leaf < 2; ++leaf) {
        auto expect = number_array(text, keys[leaf]);
        REQUIRE(expect.size() == kFeatureDim);
        for (std::size_t f = 0; f < kFeatureDim; ++f) {
            INFO(keys[leaf] << " feature " << f);
            CHECK(ast.leaf(leaf)[f] == doctest::Approx(expect[f]).epsilon(1e-6));
        }
    }
}

TEST_CASE("compact AST of a hand-built nest: ids, serialization, transparent Seq") {
    // root{ attr{ realize{ seq{ for{ store }, for{ for{ store }, store } } } } }
    LoweredProgram p;
    p.tensors = {{"X", {4}}, {"Y", {4}}};
    p.inputs = {0};
    p.output = 1;
    auto x = [](int id) { return var(id, "v" + std::to_string(id)); };
    LoopNode a = make_for(0, "a", 4, ForKind::Serial);
    a.children.push_back(make_store(1, {x(0)}, float_imm(0)));
    LoopNode b = make_for(1, "b", 2, ForKind::Serial);
    LoopNode c = make_for(2, "c", 2, ForKind::Serial);
    c.children.push_back(make_store(1, {x(1) * 2 + x(2)}, load(0, {x(1) * 2 + x(2)})));
    b.children.push_back(std::move(c));
    b.children.push_back(make_store(1, {x(1)}, float_imm(1)));
    LoopNode seq{NodeKind::Seq};
    seq.children.push_back(std::move(a));
    seq.children.push_back(std::move(b));
    LoopNode realize{NodeKind::Realize};
    realize.tensor = 1;
    realize.children.push_back(std::move(seq));
    LoopNode attr = make_attr(kRealizeScope, 0, 1);
    attr.children.push_back(std::move(realize));
    p.root.children.push_back(std::move(attr));
    auto ast = featurize(p);
    const std::vector<std::int32_t> tree = {0, 1,  2,  3, 4,  -1, -1, 5,  6,
                                            7, -1, -1, 8, -1, -1, -1, -1, -1};
    CHECK(ast.tree == tree);
    CHECK(ast.leaf_ids == std::vector<std::int32_t>{4, 7, 8});
    CHECK(ast.features.size() == 3 * kFeatureDim);
}

TEST_CASE("loop extension: the innermost loop and the innermost loop left after unrolling") {
    // C[i, j] = C[i, j] + A[i, k] * B[k, j] under i(4) k(16) j(3), auto-unroll 8: j unrolls
    // (3 ≤ 8), k does not (16 × 3 > 8), so gcc's vectoriser sees k, a reduction along which
    // B moves by 3 elements.
    LoweredProgram p;
    p.tensors = {{"A", {4, 16}}, {"B", {16, 3}}, {"C", {4, 3}}};
    p.inputs = {0, 1};
    p.output = 2;
    const Expr i = var(0, "i"), k = var(1, "k"), j = var(2, "j");
    LoopNode li = make_for(0, "i", 4, ForKind::Serial), lk = make_for(1, "k", 16, ForKind::Serial);
    LoopNode lj = make_for(2, "j", 3, ForKind::Serial);
    lj.children.push_back(
        make_store(2, {i, j}, load(2, {i, j}) + load(0, {i, k}) * load(1, {k, j})));
    lk.children.push_back(std::move(lj));
    li.children.push_back(std::move(lk));
    LoopNode pragma = make_attr(kPragmaAutoUnroll, 8);
    pragma.children.push_back(std::move(li));
    p.root.children.push_back(std::move(pragma));

    const tempo::CompactAst ansor = featurize(p),
                            loops = featurize(p, tempo::FeatureSet::ansor_loops);
    REQUIRE(ansor.feature_dim == kFeatureDim);
    REQUIRE(loops.feature_dim == kFeatureDim + tempo::kLoopExtensionDim);
    REQUIRE(loops.leaves() == 1);
    for (std::size_t f = 0; f < kFeatureDim; ++f) CHECK(loops.leaf(0)[f] == ansor.leaf(0)[f]);
    const float* ext = loops.leaf(0) + kFeatureDim;
    const std::vector<double> expected = {2,
                                          0,
                                          1,
                                          0, // j: slog 3, indexes C, every access moves by 0 or 1
                                          std::log2(17.0),
                                          1,
                                          0,
                                          1, // k: slog 16, a reduction, one access (B) moves by 3
                                          0,
                                          1}; // j is not vectorised; it is unrolled
    for (std::size_t c = 0; c < expected.size(); ++c) {
        INFO("extension column " << c);
        CHECK(ext[c] == doctest::Approx(expected[c]).epsilon(1e-6));
    }
    const auto unrolled = auto_unrolled_loops(p.root);
    const LoopNode& k_loop = p.root.children[0].children[0].children[0];
    CHECK(unrolled.size() == 1);
    CHECK(unrolled.count(&k_loop.children[0]) == 1); // j
}

TEST_CASE("the worked example's loop extension: vectorised innermost loops") {
    WorkedExample ex;
    const tempo::CompactAst loops = featurize(ex.program, tempo::FeatureSet::ansor_loops);
    REQUIRE(loops.leaves() == 2);
    // Both stores' innermost loops are the vectorised j1 / j1b (8): they index C, move every
    // access by 0 or 1, and stay loops (a vectorised loop is not unrolled).
    const std::vector<double> expected = {std::log2(9.0), 0, 1, 0, std::log2(9.0), 0, 1, 0, 1, 0};
    for (std::size_t leaf = 0; leaf < 2; ++leaf)
        for (std::size_t c = 0; c < expected.size(); ++c) {
            INFO("leaf " << leaf << " extension column " << c);
            CHECK(loops.leaf(leaf)[kFeatureDim + c] == doctest::Approx(expected[c]));
        }
}
