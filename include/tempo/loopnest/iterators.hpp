// A stage's iterators after splitting and before fusion (Ansor's stage->iters): SSRSRS levels for
// tiled stages, the producer's outer levels then the rest for a follower, one per axis else.
// Each iterator contributes `stride × its value` to one spatial or reduce axis.
#pragma once

#include "tempo/loopnest/schedule.hpp"

#include <cstdint>
#include <vector>

namespace tempo::loopnest {

struct Iterator {
    bool reduce = false;
    int axis = 0;
    std::int64_t extent = 1;
    std::int64_t stride = 1;
};

inline std::int64_t product(const std::vector<std::int64_t>& v, std::size_t from = 0,
                            std::size_t to = SIZE_MAX) {
    std::int64_t p = 1;
    for (std::size_t i = from; i < v.size() && i < to; ++i) p *= v[i];
    return p;
}

// Spatial levels of a tiled stage bound to its consumer's loops (it is fused at that level).
inline int fused_levels(const Schedule& sch, int s) {
    const StageSchedule& st = sch.stages[s];
    if (st.attach != Attach::At || !st.tiled()) return 0;
    const StageSchedule& c = sch.stages[st.attach_stage];
    return c.follow_stage == s ? c.follow_level : 0;
}

// `extents`: the spatial extents this stage computes (its region); empty = its full axes.
inline std::vector<Iterator> stage_iterators(const ComputeDag& dag, const Schedule& sch, int s,
                                             const std::vector<std::int64_t>& extents = {}) {
    const Stage& stage = dag.stages[s];
    const StageSchedule& st = sch.stages[s];
    const int ns = static_cast<int>(stage.axes.size());
    const int nr = static_cast<int>(stage.reduce_axes.size());
    std::vector<Iterator> out;
    if (st.tiled()) {
        auto spatial_level = [&](int l) {
            for (int a = 0; a < ns; ++a)
                out.push_back(Iterator{false, a, st.tiles[a][l], product(st.tiles[a], l + 1)});
        };
        auto reduce_level = [&](int l) {
            for (int r = 0; r < nr; ++r) {
                const auto& f = st.tiles[ns + r];
                out.push_back(Iterator{true, r, f[l], product(f, l + 1)});
            }
        };
        const int skip = fused_levels(sch, s);
        for (int l = skip; l < 2; ++l) spatial_level(l); // S0 S1
        reduce_level(0);                                 // R0
        spatial_level(2);                                // S2
        reduce_level(1);                                 // R1
        spatial_level(3);                                // S3
        return out;
    }
    if (st.follow_stage >= 0) {
        const auto& tiles = sch.stages[st.follow_stage].tiles;
        for (int l = 0; l < st.follow_level; ++l)
            for (int a = 0; a < ns; ++a)
                out.push_back(Iterator{false, a, tiles[a][l], product(tiles[a], l + 1)});
        for (int a = 0; a < ns; ++a)
            out.push_back(Iterator{false, a, product(tiles[a], st.follow_level), 1});
        return out;
    }
    // An inner rfactor's ".rf" stage loops over its factored (last) axis inside the reduction.
    const bool factored_last = sch.rfactor.inner && s == sch.rfactor.stage;
    const int outer = factored_last ? ns - 1 : ns;
    for (int a = 0; a < outer; ++a)
        out.push_back(Iterator{false, a, extents.empty() ? stage.axes[a].extent : extents[a], 1});
    for (int r = 0; r < nr; ++r) out.push_back(Iterator{true, r, stage.reduce_axes[r].extent, 1});
    for (int a = outer; a < ns; ++a)
        out.push_back(Iterator{false, a, extents.empty() ? stage.axes[a].extent : extents[a], 1});
    return out;
}

// Index of the first iterator over a reduce axis (iterators.size() when there is none).
inline int first_reduce_iterator(const std::vector<Iterator>& its) {
    for (std::size_t i = 0; i < its.size(); ++i)
        if (its[i].reduce) return static_cast<int>(i);
    return static_cast<int>(its.size());
}

} // namespace tempo::loopnest
