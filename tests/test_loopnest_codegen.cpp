// Every operator: ≥ 50 random schedules (samples and mutations of Ansor's CPU space) compile
// with gcc -O3 into one shared object per operator and match the reference interpreter.
#include "../tools/lab/checker.hpp"
#include "tempo/loopnest/print.hpp"
#include "tempo/loopnest/sampler.hpp"
#include "tempo/loopnest/task.hpp"

#include <doctest/doctest.h>

#include <set>

using namespace tempo::loopnest;

namespace {

Task make_task(const std::string& op, std::vector<std::pair<std::string, std::vector<std::int64_t>>> params,
               std::vector<std::string> epilogue = {}) {
    Task t;
    t.op = op;
    for (auto& [k, v] : params) t.set(k, v);
    t.epilogue = std::move(epilogue);
    return t;
}

// Random distinct schedules: fresh samples alternating with mutations of earlier ones.
std::vector<tempo::lab::CheckCase> random_programs(const Task& task, int count, std::uint64_t seed) {
    const ComputeDag dag = build_dag(task);
    ScheduleSpace space(dag);
    std::mt19937_64 rng(seed);
    std::vector<Schedule> pool;
    std::set<std::string> seen;
    std::vector<tempo::lab::CheckCase> out;
    for (int attempt = 0; attempt < count * 20 && static_cast<int>(out.size()) < count; ++attempt) {
        Schedule s;
        if (pool.empty() || attempt % 2 == 0) {
            s = space.sample(rng);
        } else {
            s = pool[rng() % pool.size()];
            space.mutate(s, rng);
        }
        LoweredProgram p = Lowerer(dag, s).run();
        std::string text = to_string(p);
        if (!seen.insert(text).second) continue;
        pool.push_back(s);
        out.push_back({"prog_" + std::to_string(out.size()), std::move(p)});
    }
    return out;
}

void check_task(const Task& task, int count = 50) {
    INFO("task " << task.key());
    auto cases = random_programs(task, count, 7);
    CHECK(static_cast<int>(cases.size()) >= std::min(count, 8));
    const ComputeDag dag = build_dag(task);
    static int batch = 0; // a shared object path is loaded once per process: keep them distinct
    std::string stem = std::string(TEMPO_TEST_TMP_DIR) + "/loopnest_" + task.op + "_" + std::to_string(batch++);
    // Unrolling capped at 64 statements keeps gcc -O3 at ~0.1 s per program (512 works too,
    // at up to a minute for some nests).
    tempo::loopnest::CodegenOptions codegen;
    codegen.max_unroll_steps = 64;
    auto results = tempo::lab::check_programs(dag, cases, stem, codegen);
    int passed = 0;
    for (std::size_t i = 0; i < results.size(); ++i) {
        INFO(results[i].symbol << ": " << results[i].message << "\n" << to_string(cases[i].program));
        CHECK(results[i].ok);
        passed += results[i].ok;
    }
    MESSAGE(task.key() << ": " << passed << "/" << results.size() << " schedules match");
}

} // namespace

TEST_CASE("dense") { check_task(make_task("dense", {{"M", {16}}, {"N", {32}}, {"K", {24}}}, {"bias_add", "relu"})); }
TEST_CASE("dense without epilogue (cache write)") {
    check_task(make_task("dense", {{"M", {8}}, {"N", {48}}, {"K", {16}}}));
}
TEST_CASE("batch_matmul") {
    check_task(make_task("batch_matmul", {{"B", {2}}, {"M", {8}}, {"N", {12}}, {"K", {16}}, {"transpose_b", {1}}, {"broadcast_b", {0}}}, {"scale"}));
    check_task(make_task("batch_matmul", {{"B", {3}}, {"M", {4}}, {"N", {16}}, {"K", {8}}, {"transpose_b", {0}}, {"broadcast_b", {1}}}, {"bias_add", "gelu"}));
}
TEST_CASE("conv2d_nhwc") {
    check_task(make_task("conv2d_nhwc", {{"N", {1}}, {"H", {8}}, {"W", {8}}, {"C", {4}}, {"K", {8}}, {"R", {3}}, {"S", {3}}, {"stride", {1, 1}}, {"padding", {1, 1}}, {"dilation", {1, 1}}, {"groups", {1}}}, {"bias_add", "add", "relu"}));
}
