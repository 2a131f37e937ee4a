// The lab over the real workload files: ≥ 300 distinct weighted tasks from ≥ 15 networks, each
// one schedulable, lowerable and featurizable; `tempo lab emit` C compiles warning-free.
#include "../tools/lab/compiler.hpp"
#include "../tools/lab/lab_cli.hpp"

#include <doctest/doctest.h>

#include <set>
#include <sstream>
#include <unistd.h>

using namespace tempo;

namespace {
const std::string kWorkloads = std::string(TEMPO_SOURCE_DIR) + "/tools/lab/workloads";
}

TEST_CASE("workloads: ≥ 300 distinct tasks from ≥ 15 networks, all schedulable") {
    const lab::Workloads w = lab::load_workloads(kWorkloads);
    CHECK(w.tasks.size() >= 300);
    CHECK(w.networks() >= 15);
    std::set<std::string> keys, ops;
    std::mt19937_64 rng(1);
    for (const auto& t : w.tasks) {
        INFO(t.task.key());
        CHECK(keys.insert(t.task.key()).second);
        CHECK(t.task.weight >= 1);
        ops.insert(t.task.op);
        const loopnest::ComputeDag dag = loopnest::build_dag(t.task);
        loopnest::ScheduleSpace space(dag);
        loopnest::Schedule s = space.sample(rng);
        space.mutate(s, rng);
        const auto ast = loopnest::featurize(loopnest::Lowerer(dag, s).run());
        CHECK(ast.leaves() >= 1);
        CHECK(ast.tree.size() % 2 == 0);
    }
    MESSAGE(w.tasks.size() << " tasks, " << ops.size() << " ops, " << w.networks() << " networks");
}

TEST_CASE("tempo lab tasks / sample / emit") {
    std::ostringstream tasks;
    CHECK(lab::lab_tasks(lab::parse_lab_options({"tasks"}, kWorkloads), tasks) == 0);
    CHECK(tasks.str().rfind("#index\tweight", 0) == 0);

    std::ostringstream sample;
    CHECK(lab::lab_sample(lab::parse_lab_options({"sample", "--task", "3", "-n", "5"}, kWorkloads),
                          sample) == 0);
    std::istringstream lines(sample.str());
    std::string line;
    int n = 0;
    while (std::getline(lines, line)) {
        const json::Value r = json::parse(line, "sample");
        CHECK(r.find("schedule") != nullptr);
        const json::Value* ast = r.find("ast");
        REQUIRE(ast != nullptr);
        CHECK(ast->find("features")->as_array().size() == ast->find("leaf_ids")->as_array().size());
        CHECK(r.find("graph")->find("nodes")->size() >= 1);
        ++n;
    }
    CHECK(n == 5);

    // One task per op, emitted as `tempo lab emit` prints it, compiles with -O3 -Wall -Wextra.
    const lab::Workloads w = lab::load_workloads(kWorkloads);
    std::set<std::string> ops;
    for (std::size_t i = 0; i < w.tasks.size(); ++i) {
        if (!ops.insert(w.tasks[i].task.op).second) continue;
        std::ostringstream c;
        CHECK(lab::lab_emit(lab::parse_lab_options(
                                {"emit", "--task", std::to_string(i), "--seed", "2"}, kWorkloads),
                            c) == 0);
        const std::string stem = std::string(TEMPO_TEST_TMP_DIR) + "/loopnest_emit_" +
                                 w.tasks[i].task.op + "_" + std::to_string(::getpid());
        INFO(w.tasks[i].task.key());
        CHECK_NOTHROW(lab::compile_shared(c.str(), stem, "-Wall -Wextra -Werror"));
    }
}
