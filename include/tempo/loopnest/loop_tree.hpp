// The lowered program: a tree of loops, attributes, buffer realizations and buffer stores
// over multi-dimensional buffers, shaped like TIR after TVM's ScheduleOps + Simplify (the
// input Ansor's feature extractor expects). Featurizer and C code generator both read it.
#pragma once

#include "tempo/loopnest/compute.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tempo::loopnest {

enum class ForKind : std::uint8_t { Serial, Parallel, Vectorized, Unrolled };

enum class NodeKind : std::uint8_t {
    Root,    // the program; gets AST id 0
    Seq,     // statements in order; no AST node (transparent, like SeqStmt)
    For,     // loop var in [0, extent)
    Attr,    // AttrStmt: "realize_scope" (tensor) or "pragma_auto_unroll_max_step" (value)
    Realize, // BufferRealize of `tensor` over [region_min, region_min + region_extent)
    Store,   // BufferStore tensor[indices] = value
};

inline constexpr const char* kRealizeScope = "realize_scope";
inline constexpr const char* kPragmaAutoUnroll = "pragma_auto_unroll_max_step";

struct LoopNode {
    explicit LoopNode(NodeKind k = NodeKind::Seq) : kind(k) {}

    NodeKind kind;
    // For
    int var = -1;
    std::string var_name;
    std::int64_t extent = 1;
    ForKind for_kind = ForKind::Serial;
    // Attr
    std::string attr_key;
    std::int64_t attr_value = 0;
    // Realize, Store, Attr(realize_scope)
    int tensor = -1;
    std::vector<Expr> region_min;            // Realize
    std::vector<std::int64_t> region_extent; // Realize
    std::vector<Expr> indices;               // Store
    Expr value;                              // Store

    std::vector<LoopNode> children;
};

// A lowered program: the tensors it touches (buffer shapes are the full tensor shapes, indices
// are global coordinates, as before TVM's storage flattening) and its loop tree.
struct LoweredProgram {
    std::vector<Tensor> tensors;
    std::vector<int> inputs; // argument order: inputs…, then output
    int output = -1;
    LoopNode root{NodeKind::Root};
};

inline LoopNode make_for(int var, std::string name, std::int64_t extent, ForKind kind) {
    LoopNode n{NodeKind::For};
    n.var = var;
    n.var_name = std::move(name);
    n.extent = extent;
    n.for_kind = kind;
    return n;
}
inline LoopNode make_attr(std::string key, std::int64_t value, int tensor = -1) {
    LoopNode n{NodeKind::Attr};
    n.attr_key = std::move(key);
    n.attr_value = value;
    n.tensor = tensor;
    return n;
}
inline LoopNode make_store(int tensor, std::vector<Expr> indices, Expr value) {
    LoopNode n{NodeKind::Store};
    n.tensor = tensor;
    n.indices = std::move(indices);
    n.value = std::move(value);
    return n;
}

} // namespace tempo::loopnest
