// A schedule: Ansor's CPU decisions for one task, stage by stage — where each stage is computed
// (root, inlined, or at a consumer's loop), SSRSRS tile sizes, following a fused producer's
// tiles, parallel and vectorised loop fusion, and auto-unroll. Stage indices refer to the
// scheduled DAG: the task's DAG after the optional rfactor (a ".rf" stage inserted before the
// factored reduction) or the optional cache write (a ".local" accumulator stage inserted
// before the output stage).
#pragma once

#include "tempo/loopnest/compute.hpp"

#include <cstdint>
#include <vector>

namespace tempo::loopnest {

enum class Attach : std::uint8_t { Root, Inline, At };

inline constexpr int kSpatialLevels = 4; // SSRSRS: S0 S1 R0 S2 R1 S3
inline constexpr int kReduceLevels = 2;

struct StageSchedule {
    Attach attach = Attach::Root;
    int attach_stage = -1; // At: the consumer stage
    int attach_iter = -1;  // At: index into the consumer's iterators before fusion
    // Tiled stages: per spatial axis kSpatialLevels factors, then per reduce axis kReduceLevels.
    std::vector<std::vector<std::int64_t>> tiles;
    // A consumer split following a producer fused at its loops of level `follow_level`.
    int follow_stage = -1;
    int follow_level = 0;
    int parallel = 0;     // outer iterators fused into one parallel loop (root stages)
    int vectorize = 0;    // inner iterators fused into one vectorised loop (capped by Ansor's rule)
    int auto_unroll = -1; // pragma auto_unroll_max_step value; -1: no pragma

    bool tiled() const { return !tiles.empty(); }
    bool operator==(const StageSchedule& o) const {
        return attach == o.attach && attach_stage == o.attach_stage &&
               attach_iter == o.attach_iter && tiles == o.tiles && follow_stage == o.follow_stage &&
               follow_level == o.follow_level && parallel == o.parallel &&
               vectorize == o.vectorize && auto_unroll == o.auto_unroll;
    }
};

// Ansor's rfactor (AddRfactor): the stage's reduce axes fused into one index k of length E,
// split E = O × I (k = ko·I + ki), and one part factored out: a ".rf" stage, inserted before
// the stage, keeps it as an extra innermost spatial axis and reduces over the other part; the
// stage then reduces the ".rf" tensor over that axis. inner: the kept part is ki (the ".rf"
// stage loops over it inside its reduce loop, so it can be vectorised); outer: ko.
struct Rfactor {
    int stage = -1; // stage of the task's DAG; -1: none
    bool inner = false;
    std::int64_t factor = 1; // I
    bool operator==(const Rfactor& o) const {
        return stage == o.stage && inner == o.inner && factor == o.factor;
    }
};

struct Schedule {
    int cache_write_stage = -1; // stage of the task's DAG given a .local accumulator; -1: none
    Rfactor rfactor;            // never together with a cache write
    std::vector<StageSchedule> stages;
    bool operator==(const Schedule& o) const {
        return cache_write_stage == o.cache_write_stage && rfactor == o.rfactor &&
               stages == o.stages;
    }
};

inline std::int64_t reduce_length(const Stage& st) {
    std::int64_t e = 1;
    for (const IterVar& r : st.reduce_axes) e *= r.extent;
    return e;
}

// The task's DAG with stage rf.stage split into "<name>.rf" and the stage reducing it.
inline ComputeDag apply_rfactor(const ComputeDag& dag, const Rfactor& rf) {
    ComputeDag out = dag;
    const Stage& st = dag.stages[rf.stage];
    const std::int64_t E = reduce_length(st), I = rf.factor, O = E / I;
    const std::int64_t kept = rf.inner ? I : O;
    Stage part = st;
    part.name += ".rf";
    const IterVar kv{out.next_var++, rf.inner ? "k_inner" : "k_outer", kept};
    const IterVar rv{out.next_var++, rf.inner ? "k_outer" : "k_inner", rf.inner ? O : I};
    const Expr k = var(rf.inner ? rv.var : kv.var, rf.inner ? rv.name : kv.name) * I +
                   var(rf.inner ? kv.var : rv.var, rf.inner ? kv.name : rv.name);
    // Each original reduce index from the fused k (row-major over the reduce axes).
    std::vector<std::pair<int, Expr>> index;
    std::int64_t stride = E;
    for (std::size_t m = 0; m < st.reduce_axes.size(); ++m) {
        const IterVar& r = st.reduce_axes[m];
        stride /= r.extent;
        Expr e = stride > 1 ? floordiv(k, stride) : k;
        if (m > 0) e = floormod(e, r.extent);
        index.emplace_back(r.var, e);
    }
    part.body = substitute(st.body, [&](int v) -> Expr {
        for (const auto& [id, e] : index)
            if (id == v) return e;
        return nullptr;
    });
    part.axes.push_back(kv);
    part.reduce_axes = {rv};
    std::vector<std::int64_t> shape = dag.tensors[st.output].shape;
    shape.push_back(kept);
    out.tensors.push_back(Tensor{dag.tensors[st.output].name + ".rf", shape});
    part.output = static_cast<int>(out.tensors.size()) - 1;

    Stage total;
    total.name = st.name;
    total.output = st.output;
    std::vector<Expr> idx;
    for (const IterVar& a : st.axes) {
        total.axes.push_back(IterVar{out.next_var++, a.name, a.extent});
        idx.push_back(var(total.axes.back().var, a.name));
    }
    total.reduce_axes = {IterVar{out.next_var++, "k_rf", kept}};
    idx.push_back(var(total.reduce_axes[0].var, "k_rf"));
    total.reduce = st.reduce;
    total.body = load(part.output, idx);
    out.stages[rf.stage] = total;
    out.stages.insert(out.stages.begin() + rf.stage, part);
    return out;
}

// The task's DAG with stage s computed into a new "<name>.local" tensor, then copied out.
inline ComputeDag apply_cache_write(const ComputeDag& dag, int s) {
    ComputeDag out = dag;
    Stage local = dag.stages[s];
    local.name += ".local";
    out.tensors.push_back(
        Tensor{dag.tensors[local.output].name + ".local", dag.tensors[local.output].shape});
    local.output = static_cast<int>(out.tensors.size()) - 1;
    Stage copy;
    copy.name = dag.stages[s].name;
    copy.output = dag.stages[s].output;
    std::vector<Expr> idx;
    for (const IterVar& a : dag.stages[s].axes) {
        copy.axes.push_back(IterVar{out.next_var++, a.name, a.extent});
        idx.push_back(var(copy.axes.back().var, a.name));
    }
    copy.body = load(local.output, idx);
    // Later readers of stage s keep reading the copied-out tensor.
    out.stages[s] = copy;
    out.stages.insert(out.stages.begin() + s, local);
    return out;
}

inline ComputeDag scheduled_dag(const ComputeDag& dag, const Schedule& sch) {
    if (sch.rfactor.stage >= 0) return apply_rfactor(dag, sch.rfactor);
    return sch.cache_write_stage >= 0 ? apply_cache_write(dag, sch.cache_write_stage) : dag;
}

} // namespace tempo::loopnest
