// Reading compact ASTs from JSON (one program per line in .jsonl files; schema in README.md):
//   {"features": [[…164…], …], "leaf_ids": [3, 5], "tree": [0, 1, …, -1],
//    "device": [8 floats] (optional), "flops": 2.1e8 (optional), "id": "…" (optional)}
// A dataset record holding the program under "ast" is accepted too.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "tempo/io/json.hpp"
#include "tempo/program/compact_ast.hpp"

namespace tempo {

namespace detail {
inline std::int32_t as_int32(const json::Node& n) {
    const std::int64_t v = n.as_int64();
    if (v < std::numeric_limits<std::int32_t>::min() ||
        v > std::numeric_limits<std::int32_t>::max())
        n.fail("integer out of range");
    return static_cast<std::int32_t>(v);
}
} // namespace detail

// Converts a parsed JSON object; errors name the offending field by its path.
inline CompactAst compact_ast_from_json(const json::Node& root) {
    if (auto ast = root.find("ast")) {
        CompactAst program = compact_ast_from_json(*ast);
        if (program.id.empty())
            if (auto id = root.find("id")) program.id = id->as_string();
        return program;
    }
    root.only_keys({"features", "leaf_ids", "tree", "device", "flops", "id"});
    CompactAst ast;
    const json::Node features = root["features"];
    const auto& rows = features.as_array();
    ast.feature_dim = rows.empty() ? 0 : features[0].as_array().size();
    ast.features.reserve(rows.size() * ast.feature_dim);
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const json::Node row = features[r];
        row.as_array(ast.feature_dim); // every row as wide as the first
        for (std::size_t c = 0; c < ast.feature_dim; ++c) ast.features.push_back(row[c].as_float());
    }
    const json::Node leaf_ids = root["leaf_ids"];
    for (std::size_t i = 0; i < leaf_ids.as_array().size(); ++i)
        ast.leaf_ids.push_back(detail::as_int32(leaf_ids[i]));
    const json::Node tree = root["tree"];
    for (std::size_t i = 0; i < tree.as_array().size(); ++i)
        ast.tree.push_back(detail::as_int32(tree[i]));
    if (auto device = root.find("device"))
        for (std::size_t i = 0; i < device->as_array().size(); ++i)
            ast.device.push_back((*device)[i].as_float());
    if (auto flops = root.find("flops")) ast.flops = flops->as_double();
    if (auto id = root.find("id"))
        ast.id = id->type() == json::Type::String ? id->as_string() : json::dump(id->value());
    return ast;
}

// Parses one line of a .jsonl file; `where` (e.g. "programs.jsonl:12") prefixes errors.
inline CompactAst parse_compact_ast(std::string_view line, const std::string& where) {
    const json::Value doc = json::parse(line, where);
    return compact_ast_from_json(json::Node(doc, where));
}

} // namespace tempo
