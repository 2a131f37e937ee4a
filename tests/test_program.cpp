// Compact-AST contract: JSON reading, validation and tree positions, each bad input rejected
// with its exact message; and model files that do not match their config.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tempo/tempo.hpp"

using namespace tempo;

namespace {

std::string features_json(std::size_t leaves, std::size_t width, const char* value = "0.5") {
    std::string s = "[";
    for (std::size_t r = 0; r < leaves; ++r) {
        s += r ? ",[" : "[";
        for (std::size_t c = 0; c < width; ++c) s += std::string(c ? "," : "") + value;
        s += "]";
    }
    return s + "]";
}

std::string program(const std::string& features, const std::string& leaf_ids,
                    const std::string& tree, const std::string& extra = "") {
    return "{\"features\":" + features + ",\"leaf_ids\":" + leaf_ids + ",\"tree\":" + tree + extra +
           "}";
}

const AstLimits kLimits{4, 3, false, 0};

std::string rejection(const std::string& line) {
    try {
        validate(parse_compact_ast(line, "in.jsonl:7"), kLimits, "in.jsonl:7");
    } catch (const Error& e) {
        return e.what();
    }
    return "accepted";
}

} // namespace

TEST_CASE("a well-formed program is read, validated and positioned as CDMPP specifies") {
    // The worked example of the spec: leaves 3 and 5 sit at tree indices 3 and 7.
    const std::string line =
        program(features_json(2, 4), "[3,5]", "[0,1,2,3,-1,-1,4,5,-1,-1,-1,-1]",
                ",\"id\":\"p1\",\"flops\":12");
    CompactAst ast = parse_compact_ast(line, "in.jsonl:1");
    CHECK(ast.id == "p1");
    CHECK(ast.flops == 12.0);
    CHECK(ast.leaves() == 2);
    CHECK(ast.feature_dim == 4);
    validate(ast, kLimits, "in.jsonl:1");
    std::size_t positions[2];
    leaf_positions(ast, positions, "in.jsonl:1");
    CHECK(positions[0] == 3);
    CHECK(positions[1] == 7);
    // A dataset record carries its program under "ast".
    CompactAst nested =
        parse_compact_ast("{\"id\":\"r\",\"ast\":" + line.substr(0, line.size()) + "}", "x");
    CHECK(nested.id == "p1");
}

TEST_CASE("hostile programs are rejected naming the line and the field") {
    const std::string f2 = features_json(2, 4), tree = "[0,1,-1,2,-1,-1]";
    const std::pair<std::string, std::string> cases[] = {
        {"[1,2]", "in.jsonl:7: expected an object, got an array"},
        {"{\"features\":[]}", "in.jsonl:7: missing key \"leaf_ids\""},
        {program(f2, "[1,2]", tree, ",\"colour\":1"), "in.jsonl:7: unknown key \"colour\""},
        {program("5", "[1]", tree), "in.jsonl:7.features: expected an array, got a number"},
        {program("[[1,2,3,4],[1,2]]", "[1,2]", tree),
         "in.jsonl:7.features[1]: expected 4 elements, got 2"},
        {program("[[1,2,3,\"x\"]]", "[1]", tree),
         "in.jsonl:7.features[0][3]: expected a number, got a string"},
        {program("[[1,2,3,1e39]]", "[1]", tree),
         "in.jsonl:7.features[0][3]: number 1e+39 out of range of float"},
        {program(f2, "[1.5,2]", tree), "in.jsonl:7.leaf_ids[0]: expected an integer, got 1.5"},
        {program(f2, "[1,99999999999]", tree), "in.jsonl:7.leaf_ids[1]: integer out of range"},
        {program(features_json(1, 5), "[1]", tree),
         "in.jsonl:7: field 'features': rows of 5 values, the model takes 4"},
        {program("[]", "[]", tree),
         "in.jsonl:7: field 'features': rows of 0 values, the model takes 4"},
        {program(features_json(4, 4), "[1,2,3,4]", "[0,1,-1,2,-1,3,-1,4,-1,-1]"),
         "in.jsonl:7: field 'leaf_ids': 4 leaves, the model takes at most 3"},
        {program(f2, "[1]", tree), "in.jsonl:7: field 'features': 2 rows for 1 leaf_ids"},
        {program(f2, "[1,2]", "[]"), "in.jsonl:7: field 'tree': empty"},
        {program(f2, "[1,2]", "[0,1,-1,2,-1]"), "in.jsonl:7: field 'tree': 1 node(s) never closed"},
        {program(f2, "[1,2]", "[0,1,-1,-1,-1]"),
         "in.jsonl:7: field 'tree': -1 at index 4 closes no node"},
        {program(f2, "[1,2]", "[-1,0,-1]"),
         "in.jsonl:7: field 'tree': -1 at index 0 closes no node"},
        {program(f2, "[1,2]", "[0,1,-1,-1,2,-1]"),
         "in.jsonl:7: field 'tree': more than one root (index 4)"},
        {program(f2, "[1,2]", "[0,2,-1,1,-1,-1]"),
         "in.jsonl:7: field 'tree': index 1 holds 2, expected pre-order id 1"},
        {program(f2, "[1,2]", "[0,1,-1,1,-1,-1]"),
         "in.jsonl:7: field 'tree': index 3 holds 1, expected pre-order id 2"},
        {program(f2, "[1,7]", tree),
         "in.jsonl:7: field 'leaf_ids': id 7 is not a node of the tree"},
        {program(f2, "[-1,2]", tree),
         "in.jsonl:7: field 'leaf_ids': id -1 is not a node of the tree"},
        {program(f2, "[2,2]", tree), "in.jsonl:7: field 'leaf_ids': id 2 repeated"},
        {program(f2, "[1,2]", tree, ",\"device\":[1,2]"),
         "in.jsonl:7: field 'device': the model takes no device features"},
    };
    for (const auto& [line, message] : cases) {
        INFO(line);
        CHECK(rejection(line) == message);
    }
}

TEST_CASE("a leaf id that names an inner node is rejected when positions are computed") {
    CompactAst ast = parse_compact_ast(program(features_json(1, 4), "[0]", "[0,1,-1,-1]"), "x");
    validate(ast, kLimits, "x");
    std::size_t p;
    CHECK_THROWS_WITH_AS(leaf_positions(ast, &p, "x"), "x: field 'leaf_ids': node 0 has children",
                         Error);
}

namespace {
std::string fixture_bytes() {
    std::ifstream in(TEMPO_FIXTURES_DIR "/cdmpp/tiny_f24_flatten2.safetensors", std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}
} // namespace

TEST_CASE("a model file that does not match its config is refused naming the tensor") {
    // Same-length edits of the header text keep the file well-formed but change its meaning.
    const std::string bytes = fixture_bytes();
    REQUIRE(bytes.size() > 8);
    auto edited = [&](const std::string& from, const std::string& to) {
        std::string b = bytes;
        const std::size_t at = b.find(from);
        REQUIRE(at != std::string::npos);
        REQUIRE(from.size() == to.size()); // keep the header length valid
        b.replace(at, from.size(), to);
        return io::SafeTensors::parse(b, "m.safetensors");
    };
    CHECK_NOTHROW(CdmppModel(io::SafeTensors::parse(bytes, "m.safetensors"), {true}));
    CHECK_THROWS_WITH_AS(CdmppModel(edited("\\\"ffn_dim\\\": 32", "\\\"ffn_dim\\\": 31")),
                         "m.safetensors: tensor \"encoder.layers.0.linear1.weight\": expected "
                         "shape [31, 24], file has [32, 24]",
                         Error);
    CHECK_THROWS_WITH_AS(
        CdmppModel(edited("\"tempo.model\":\"cdmpp\"", "\"tempo.model\":\"cdmpq\"")),
        "m.safetensors: tempo.model is \"cdmpq\", not a cdmpp model", Error);
    CHECK_THROWS_WITH_AS(CdmppModel(edited("\\\"heads\\\": 3", "\\\"heads\\\": 5")),
                         "m.safetensors: tempo.config.heads: 5 heads do not divide d_model 24",
                         Error);
    CHECK_THROWS_WITH_AS(CdmppModel(edited("\\\"pe_scale\\\": 0.25", "\\\"pe_scale\\\": -1.0")),
                         "m.safetensors: tempo.config.pe_scale: must be a finite number >= 0",
                         Error);
}

TEST_CASE("a model config names its feature set, and the set must match feature_dim") {
    auto config = [](const std::string& feature_dim, const std::string& features) {
        std::string text = R"({"feature_dim": )" + feature_dim +
                           R"(, "d_model": 16, "heads": 2, "ffn_dim": 16, "layers": 1,
            "activation": "relu", "norm_first": false, "final_norm": false,
            "layer_norm_eps": 1e-5, "pooling": "sum", "max_leaves": 4, "embed_dims": [8],
            "device": false, "decoder_dims": [])";
        if (!features.empty()) text += R"(, "features": )" + features;
        const json::Value doc = json::parse(text + "}", "c.json");
        return CdmppConfig::from_json(json::Node(doc, "c.json"));
    };
    CHECK_FALSE(config("24", "").features.has_value()); // older files: not stated
    CHECK(config("164", "\"ansor\"").features == FeatureSet::ansor);
    CHECK(config("174", "\"ansor+loops\"").features == FeatureSet::ansor_loops);
    CHECK_THROWS_WITH_AS(config("164", "\"ansor+loops\""),
                         "c.json.features: ansor+loops rows have 174 columns, feature_dim is 164",
                         Error);
    CHECK_THROWS_WITH_AS(config("164", "\"tvm\""),
                         "c.json.features: unknown feature set \"tvm\" (known: ansor, ansor+loops)",
                         Error);
    CHECK_THROWS_WITH_AS(config("164", "3"), "c.json.features: expected a string, got a number",
                         Error);
}
