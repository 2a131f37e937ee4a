// A schedule: Ansor's CPU decisions for one task, stage by stage — where each stage is computed
// (root, inlined, or at a consumer's loop), SSRSRS tile sizes, following a fused producer's
// tiles, parallel and vectorised loop fusion, and auto-unroll. Stage indices refer to the
// scheduled DAG: the task's DAG after the optional cache write (a ".local" accumulator stage
// inserted before the output stage).
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

struct Schedule {
    int cache_write_stage = -1; // stage of the task's DAG given a .local accumulator; -1: none
    std::vector<StageSchedule> stages;
    bool operator==(const Schedule& o) const {
        return cache_write_stage == o.cache_write_stage && stages == o.stages;
    }
};

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
    return sch.cache_write_stage >= 0 ? apply_cache_write(dag, sch.cache_write_stage) : dag;
}

} // namespace tempo::loopnest
