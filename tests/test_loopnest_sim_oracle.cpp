// Differential test: features of 100 random dense schedules (Ansor's space: fused, unfused and
// cache-write sketches, random tiles, parallel, vectorize, unroll) against the spec's
// independent Python re-implementation sim_oracle.py, through a generated fixture.
// Square 64×64×64 shapes keep the spec's hash-order choices (section 6) out of play.
//
// The test always writes the nests it lowered to <tmp>/loopnest_sim_nests.json. When the
// lowering changes, regenerate the fixture with
//   /usr/bin/python3 tests/fixtures/loopnest/gen_sim_oracle_fixture.py <spec dir>
//       <build>/tests/tmp/loopnest_sim_nests.json tests/fixtures/loopnest/sim_oracle_matmul.json
#include "test_loopnest_util.hpp"

#include "tempo/io/json.hpp"
#include "tempo/loopnest/featurize.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>

using namespace tempo::loopnest;
namespace json = tempo::json;

namespace {

std::string digest(const std::string& text) { // FNV-1a 64
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
    std::ostringstream o;
    o << std::hex << h;
    return o.str();
}

json::Value expr_json(const Expr& e, const std::vector<Tensor>& tensors) {
    auto j = [&](const Expr& x) { return expr_json(x, tensors); };
    const bool f = e->dtype == DType::Float32;
    switch (e->kind) {
    case ExprKind::IntImm:
        return json::Value::Array{"int", e->int_value};
    case ExprKind::FloatImm:
        return json::Value::Array{"fimm", e->float_value};
    case ExprKind::Var:
        return json::Value::Array{"var", e->name + "#" + std::to_string(e->int_value)};
    case ExprKind::Load: {
        json::Value::Array idx;
        for (const Expr& i : e->args) idx.push_back(j(i));
        return json::Value::Array{"load", tensors[e->int_value].name, idx};
    }
    case ExprKind::Add:
        return json::Value::Array{f ? "fadd" : "add", j(e->args[0]), j(e->args[1])};
    case ExprKind::Mul:
        return json::Value::Array{f ? "fmul" : "mul", j(e->args[0]), j(e->args[1])};
    case ExprKind::Sub:
        return json::Value::Array{"sub", j(e->args[0]), j(e->args[1])};
    case ExprKind::FloorDiv:
        return json::Value::Array{"floordiv", j(e->args[0]), j(e->args[1])};
    case ExprKind::FloorMod:
        return json::Value::Array{"floormod", j(e->args[0]), j(e->args[1])};
    default:
        FAIL("expression kind outside sim_oracle's vocabulary");
        return {};
    }
}

// The stores of a program with their loop stacks, in sim_oracle's terms.
void collect_stores(const LoopNode& n, const LoweredProgram& p, json::Value::Array& loops,
                    std::int64_t unroll, int& next_loop, json::Value::Array& out) {
    static const char* kinds[] = {"serial", "parallel", "vectorized", "unrolled"};
    if (n.kind == NodeKind::For) {
        loops.push_back(json::Value::Array{next_loop++, n.var_name + "#" + std::to_string(n.var),
                                           n.extent, kinds[static_cast<int>(n.for_kind)]});
    }
    if (n.kind == NodeKind::Attr && n.attr_key == kPragmaAutoUnroll) unroll = n.attr_value;
    if (n.kind == NodeKind::Store) {
        json::Value::Array idx;
        for (const Expr& i : n.indices) idx.push_back(expr_json(i, p.tensors));
        json::Value::Object s;
        s.push_back({"loops", loops});
        s.push_back({"buf", p.tensors[n.tensor].name});
        s.push_back({"idx", idx});
        s.push_back({"value", expr_json(n.value, p.tensors)});
        s.push_back({"auto_unroll", unroll});
        out.emplace_back(std::move(s));
    }
    for (const auto& c : n.children) collect_stores(c, p, loops, unroll, next_loop, out);
    if (n.kind == NodeKind::For) loops.pop_back();
}

} // namespace

TEST_CASE("100 random dense schedules agree with sim_oracle.py on every feature") {
    std::vector<loopnest_test::RandomProgram> programs;
    for (const auto& epilogue :
         {std::vector<std::string>{}, std::vector<std::string>{"bias_add"}}) {
        auto task = Task::make("dense", {{"M", {64}}, {"N", {64}}, {"K", {64}}}, epilogue);
        for (auto& p : loopnest_test::random_programs(task, 50, 11))
            programs.push_back(std::move(p));
    }
    REQUIRE(programs.size() == 100);

    json::Value::Array nests;
    for (std::size_t i = 0; i < programs.size(); ++i) {
        const LoweredProgram& p = programs[i].program;
        json::Value::Object shapes, prog;
        for (const Tensor& t : p.tensors) {
            json::Value::Array shape;
            for (auto d : t.shape) shape.emplace_back(d);
            shapes.push_back({t.name, shape});
        }
        json::Value::Array loops, stores;
        int next_loop = 0;
        collect_stores(p.root, p, loops, 0, next_loop, stores);
        prog.push_back({"id", static_cast<std::int64_t>(i)});
        prog.push_back({"digest", digest(programs[i].text)});
        prog.push_back({"shapes", shapes});
        prog.push_back({"stores", stores});
        nests.emplace_back(std::move(prog));
    }
    std::ofstream(std::string(TEMPO_TEST_TMP_DIR) + "/loopnest_sim_nests.json")
        << json::dump(nests);

    const std::string path = std::string(TEMPO_FIXTURES_DIR) + "/loopnest/sim_oracle_matmul.json";
    std::ifstream in(path);
    REQUIRE_MESSAGE(in, "missing fixture " << path);
    std::stringstream ss;
    ss << in.rdbuf();
    const json::Value fixture = json::parse(ss.str(), path);
    const auto& expected = fixture.find("programs")->as_array();
    REQUIRE(expected.size() == programs.size());
    std::size_t compared = 0;
    for (std::size_t i = 0; i < programs.size(); ++i) {
        INFO("program " << i << "\n" << programs[i].text);
        REQUIRE_MESSAGE(expected[i].find("digest")->as_string() == digest(programs[i].text),
                        "the lowering changed: regenerate the fixture (see the top of this file)");
        const auto ast = featurize(programs[i].program);
        const auto& rows = expected[i].find("features")->as_array();
        REQUIRE(rows.size() == ast.leaves());
        for (std::size_t leaf = 0; leaf < rows.size(); ++leaf) {
            std::vector<double> want(kFeatureDim, 0.0);
            for (const auto& entry : rows[leaf].as_array())
                want[static_cast<std::size_t>(entry.as_array()[0].as_int64())] =
                    entry.as_array()[1].as_double();
            for (std::size_t f = 0; f < kFeatureDim; ++f) {
                INFO("leaf " << leaf << " feature " << f);
                CHECK(std::fabs(ast.leaf(leaf)[f] - want[f]) <= 2e-6 + 2e-6 * std::fabs(want[f]));
                ++compared;
            }
        }
    }
    MESSAGE(programs.size() << " programs, " << compared << " feature values compared");
}
