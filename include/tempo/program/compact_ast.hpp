// CompactAst — CDMPP's view of one tensor program: its buffer-store leaves, each with a
// feature vector (Ansor's 164 per-store features), and where each leaf sits in the loop tree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tempo {

struct CompactAst {
    std::size_t feature_dim = 164;
    std::vector<float> features;        // leaves × feature_dim, row-major
    std::vector<std::int32_t> leaf_ids; // pre-order node id of each leaf
    std::vector<std::int32_t> tree;     // pre-order ids, -1 written after each node's children
    std::vector<float> device;          // optional CDMPP device features (8), empty when absent
    double flops = 0.0;                 // optional, 0 when unknown
    std::string id;                     // optional

    std::size_t leaves() const noexcept { return leaf_ids.size(); }
    const float* leaf(std::size_t i) const noexcept { return features.data() + i * feature_dim; }
};

} // namespace tempo
