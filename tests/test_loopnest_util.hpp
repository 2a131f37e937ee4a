// Shared helper of the loopnest suites: random distinct programs.
#pragma once

#include "tempo/loopnest/lower.hpp"
#include "tempo/loopnest/print.hpp"
#include "tempo/loopnest/sampler.hpp"
#include "tempo/loopnest/task.hpp"

#include <random>
#include <set>
#include <string>
#include <vector>

namespace loopnest_test {

using namespace tempo::loopnest;

struct RandomProgram {
    Schedule schedule;
    LoweredProgram program;
    std::string text; // printed loop tree
};

// Distinct programs (by printed loop tree): fresh samples alternating with mutations of
// earlier ones, as Tenset drew its programs.
inline std::vector<RandomProgram> random_programs(const Task& task, int count, std::uint64_t seed) {
    const ComputeDag dag = build_dag(task);
    ScheduleSpace space(dag);
    std::mt19937_64 rng(seed);
    std::set<std::string> seen;
    std::vector<RandomProgram> out;
    for (int attempt = 0; attempt < count * 20 && static_cast<int>(out.size()) < count; ++attempt) {
        Schedule s;
        if (out.empty() || attempt % 2 == 0) {
            s = space.sample(rng);
        } else {
            s = out[rng() % out.size()].schedule;
            space.mutate(s, rng);
        }
        LoweredProgram p = Lowerer(dag, s).run();
        std::string text = to_string(p);
        if (!seen.insert(text).second) continue;
        out.push_back({s, std::move(p), std::move(text)});
    }
    return out;
}

} // namespace loopnest_test
