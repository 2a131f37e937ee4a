// Which loops TVM's UnrollLoop pass unrolls under a stage's auto_unroll_max_step. The C code
// generator marks them `GCC unroll`; the featurizer's loop extension reads the same decision,
// so both see the loop nest gcc compiles.
#pragma once

#include "tempo/loopnest/loop_tree.hpp"

#include <algorithm>
#include <cstdint>
#include <set>

namespace tempo::loopnest {

inline constexpr int kMaxUnrollDepth = 8;
// TVM's own range of auto_unroll_max_step; see CodegenOptions::max_unroll_steps.
inline constexpr std::int64_t kDefaultMaxUnrollSteps = 512;

namespace unroll_detail {

struct UnrollInfo {
    bool unrolled = true;
    std::int64_t steps = 0;
    int depth = 0;
};

// Bottom-up: a serial loop unrolls when everything inside unrolled, the unrolled depth stays
// ≤ 8 and extent × statements ≤ max_step. Vectorised loops count as one statement.
inline UnrollInfo unroll_info(const LoopNode& n, std::int64_t max_step, std::int64_t cap,
                              std::set<const LoopNode*>& unrolled) {
    if (n.kind == NodeKind::Store) return {true, 1, 0};
    if (n.kind == NodeKind::Attr && n.attr_key == kPragmaAutoUnroll)
        max_step = std::min(n.attr_value, cap);
    UnrollInfo inner;
    for (const auto& c : n.children) {
        const UnrollInfo ci = unroll_info(c, max_step, cap, unrolled);
        inner.unrolled &= ci.unrolled;
        inner.steps += ci.steps;
        inner.depth = std::max(inner.depth, ci.depth);
    }
    if (n.kind != NodeKind::For) return inner;
    if (n.for_kind == ForKind::Vectorized) return {inner.unrolled, 1, inner.depth};
    const bool unroll = n.for_kind != ForKind::Parallel && inner.unrolled && max_step > 0 &&
                        n.extent * inner.steps <= max_step && inner.depth + 1 <= kMaxUnrollDepth;
    if (unroll) unrolled.insert(&n);
    return unroll ? UnrollInfo{true, n.extent * inner.steps, inner.depth + 1}
                  : UnrollInfo{false, 1, inner.depth};
}

inline void find_auto_unroll(const LoopNode& n, std::int64_t cap,
                             std::set<const LoopNode*>& unrolled) {
    if (n.kind == NodeKind::Attr && n.attr_key == kPragmaAutoUnroll) {
        unroll_info(n, 0, cap, unrolled); // covers the attributes nested below it too
        return;
    }
    for (const auto& c : n.children) find_auto_unroll(c, cap, unrolled);
}

} // namespace unroll_detail

// The loops auto-unrolled under the auto_unroll_max_step attributes of `root` (each attribute
// capped at `cap`); loops the schedule itself marks Unrolled are not included.
inline std::set<const LoopNode*> auto_unrolled_loops(const LoopNode& root,
                                                     std::int64_t cap = kDefaultMaxUnrollSteps) {
    std::set<const LoopNode*> unrolled;
    unroll_detail::find_auto_unroll(root, cap, unrolled);
    return unrolled;
}

} // namespace tempo::loopnest
