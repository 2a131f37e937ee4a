// The codegen check of one task: random schedules compiled into one shared object with gcc -O3
// and compared with the reference interpreter.
#pragma once

#include "../tools/lab/checker.hpp"
#include "test_loopnest_util.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

namespace loopnest_test {

// Checks `count` distinct random schedules of `task`, or at least `min_distinct` where the
// space is smaller (a transpose has few).
inline void check_task(const Task& task, int count = 50, int min_distinct = 50) {
    INFO("task " << task.key());
    std::vector<tempo::lab::CheckCase> cases;
    for (auto& p : loopnest_test::random_programs(task, count, 7))
        cases.push_back({"prog_" + std::to_string(cases.size()), std::move(p.program)});
    CHECK(static_cast<int>(cases.size()) >= std::min(count, min_distinct));
    const tempo::loopnest::ComputeDag dag = build_dag(task);
    // dlopen loads a path once per process and suites run concurrently: distinct stems.
    static int batch = 0;
    const std::string stem = std::string(TEMPO_TEST_TMP_DIR) + "/loopnest_" + task.op + "_" +
                             std::to_string(::getpid()) + "_" + std::to_string(batch++);
    // Unrolling capped at 64 statements keeps gcc -O3 at ~0.1 s per program (512 works too,
    // at up to a minute for some nests).
    tempo::loopnest::CodegenOptions codegen;
    codegen.max_unroll_steps = 64;
    auto results = tempo::lab::check_programs(dag, cases, stem, codegen, "-Wall -Wextra -Werror");
    int passed = 0;
    for (std::size_t i = 0; i < results.size(); ++i) {
        INFO(results[i].symbol << ": " << results[i].message << "\n"
                               << to_string(cases[i].program));
        CHECK(results[i].ok);
        passed += results[i].ok;
    }
    MESSAGE(task.key() << ": " << passed << "/" << results.size() << " schedules match");
}

} // namespace loopnest_test
