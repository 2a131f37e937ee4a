// Checks a CompactAst against its contract before any model touches it, and finds where each
// leaf sits in the serialized tree. Allocation-free, so prediction can validate every call.
//
// Tree contract (CDMPP): node ids are pre-order visit indices, so the k-th id written in
// `tree` is k; each node is closed by a -1 after its children; one root. A leaf id must name
// a node without children. Featureless childless nodes are allowed.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tempo/core/error.hpp"
#include "tempo/program/compact_ast.hpp"
#include "tempo/program/feature_set.hpp"

namespace tempo {

struct AstLimits {
    std::size_t feature_dim = 164;
    std::size_t max_leaves = 16;
    bool exact_leaves = false;          // flatten pooling takes exactly max_leaves
    std::size_t device_dim = 0;         // 0: the model takes no device features
    std::optional<FeatureSet> features; // named in the width error when the model states it
};

namespace detail {
[[noreturn]] inline void bad_field(std::string_view where, const char* field,
                                   const std::string& reason) {
    throw Error(std::string(where), std::string("field '") + field + "': " + reason);
}
} // namespace detail

// Throws tempo::Error("<where>: field 'x': …") on the first violation; `where` names the
// program (a line of a file, an id).
inline void validate(const CompactAst& ast, const AstLimits& limits, std::string_view where) {
    using detail::bad_field;
    const std::size_t n = ast.leaves();
    if (ast.feature_dim != limits.feature_dim)
        bad_field(where, "features",
                  "rows of " + std::to_string(ast.feature_dim) + " values, the model takes " +
                      std::to_string(limits.feature_dim) +
                      (limits.features ? std::string(" (feature set ") +
                                             feature_set_name(*limits.features) + ")"
                                       : std::string()));
    if (n == 0) bad_field(where, "leaf_ids", "no leaves");
    if (n > limits.max_leaves || (limits.exact_leaves && n != limits.max_leaves))
        bad_field(where, "leaf_ids",
                  std::to_string(n) + " leaves, the model takes " +
                      (limits.exact_leaves ? "exactly " : "at most ") +
                      std::to_string(limits.max_leaves));
    if (ast.features.size() != n * ast.feature_dim)
        bad_field(where, "features",
                  std::to_string(ast.features.size() / std::max<std::size_t>(1, ast.feature_dim)) +
                      " rows for " + std::to_string(n) + " leaf_ids");
    for (std::size_t i = 0; i < ast.features.size(); ++i)
        if (!std::isfinite(ast.features[i]))
            bad_field(where, "features",
                      "row " + std::to_string(i / ast.feature_dim) + ", column " +
                          std::to_string(i % ast.feature_dim) + " is not finite");
    if (ast.device.size() != limits.device_dim)
        bad_field(where, "device",
                  limits.device_dim
                      ? "the model needs " + std::to_string(limits.device_dim) +
                            " device features, got " + std::to_string(ast.device.size())
                      : std::string("the model takes no device features"));
    for (float v : ast.device)
        if (!std::isfinite(v)) bad_field(where, "device", "values must be finite");

    // Tree: pre-order ids 0, 1, 2, … each closed by -1; depth returns to 0 only at the end.
    std::int32_t next_id = 0;
    std::size_t depth = 0;
    if (ast.tree.empty()) bad_field(where, "tree", "empty");
    for (std::size_t i = 0; i < ast.tree.size(); ++i) {
        const std::int32_t t = ast.tree[i];
        if (t == -1) {
            if (depth == 0)
                bad_field(where, "tree", "-1 at index " + std::to_string(i) + " closes no node");
            if (--depth == 0 && i + 1 != ast.tree.size())
                bad_field(where, "tree",
                          ast.tree[i + 1] == -1
                              ? "-1 at index " + std::to_string(i + 1) + " closes no node"
                              : "more than one root (index " + std::to_string(i + 1) + ")");
        } else {
            if (t != next_id)
                bad_field(where, "tree",
                          "index " + std::to_string(i) + " holds " + std::to_string(t) +
                              ", expected pre-order id " + std::to_string(next_id));
            ++next_id;
            ++depth;
        }
    }
    if (depth != 0) bad_field(where, "tree", std::to_string(depth) + " node(s) never closed");

    for (std::size_t r = 0; r < n; ++r) {
        const std::int32_t id = ast.leaf_ids[r];
        if (id < 0 || id >= next_id)
            bad_field(where, "leaf_ids", "id " + std::to_string(id) + " is not a node of the tree");
        for (std::size_t q = 0; q < r; ++q)
            if (ast.leaf_ids[q] == id)
                bad_field(where, "leaf_ids", "id " + std::to_string(id) + " repeated");
    }
}

// Index of each leaf's id in the serialized tree, counting the -1 markers (CDMPP's position
// p). Needs a validated tree; also checks the leaf really has no children.
inline void leaf_positions(const CompactAst& ast, std::size_t* positions, std::string_view where) {
    for (std::size_t r = 0; r < ast.leaves(); ++r) {
        const std::int32_t id = ast.leaf_ids[r];
        // Pre-order: the id is found by counting opened nodes.
        std::int32_t seen = -1;
        std::size_t i = 0;
        for (; i < ast.tree.size(); ++i)
            if (ast.tree[i] != -1 && ++seen == id) break;
        if (i + 1 >= ast.tree.size() || ast.tree[i + 1] != -1)
            detail::bad_field(where, "leaf_ids", "node " + std::to_string(id) + " has children");
        positions[r] = i;
    }
}

} // namespace tempo
