// `tempo lab …`: the tensor-program lab's commands.
//   tasks   list the deduplicated tasks of the workload files with their weights
//   sample  random schedules of one task as dataset-style JSON Lines (schedule, compact AST,
//           stage graph, FLOPs)
//   emit    the C source of one scheduled program
#pragma once

#include "cli_args.hpp"
#include "workloads.hpp"

#include "tempo/loopnest/codegen_c.hpp"
#include "tempo/loopnest/featurize.hpp"
#include "tempo/loopnest/lower.hpp"
#include "tempo/loopnest/print.hpp"
#include "tempo/loopnest/sampler.hpp"
#include "tempo/loopnest/serialize.hpp"
#include "tempo/loopnest/stage_graph.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace tempo::lab {

inline constexpr const char* kLabUsage =
    "usage: tempo lab <command> [options]\n"
    "\n"
    "commands:\n"
    "  tasks                      list tasks: index, weight, networks, GFLOP, key\n"
    "  sample --task T [-n N] [--seed S] [--features ansor|ansor+loops]\n"
    "                             N distinct random schedules of task T as JSON Lines\n"
    "                             {task, op, shape, networks, schedule, flops, ast, graph};\n"
    "                             the ASTs' columns: the feature set a model names\n"
    "  emit --task T [--seed S | --schedule FILE] [--symbol NAME]\n"
    "                             C source of one scheduled program (a sampled one, or the\n"
    "                             schedule object of FILE: a record line or a bare schedule)\n"
    "\n"
    "options:\n"
    "  --workloads DIR            workload files (default: the lab's own)\n"
    "  T                          a task key as `tasks` prints it, or its index\n";

struct LabOptions {
    std::string command, workloads, task, schedule_file, symbol = "tempo_program";
    int count = 1;
    std::uint64_t seed = 1;
    FeatureSet features = FeatureSet::ansor;
};

inline LabOptions parse_lab_options(const std::vector<std::string>& args,
                                    const std::string& default_dir) {
    LabOptions o;
    o.workloads = default_dir;
    if (args.empty()) throw Error("tempo lab", "missing command");
    o.command = args[0];
    for (std::size_t i = 1; i < args.size(); ++i) {
        auto value = [&]() -> const std::string& {
            if (i + 1 >= args.size())
                throw Error("tempo lab " + o.command, args[i] + " needs a value");
            return args[++i];
        };
        const std::string& a = args[i];
        if (a == "--workloads")
            o.workloads = value();
        else if (a == "--task")
            o.task = value();
        else if (a == "-n")
            o.count = parse_int<int>(value(), "tempo lab " + o.command + " -n", 1, 1 << 30);
        else if (a == "--seed")
            o.seed = parse_int<std::uint64_t>(value(), "tempo lab " + o.command + " --seed");
        else if (a == "--schedule")
            o.schedule_file = value();
        else if (a == "--symbol")
            o.symbol = loopnest::c_identifier(value());
        else if (a == "--features")
            o.features = feature_set_from_name(value(), "--features");
        else
            throw Error("tempo lab " + o.command, "unknown option '" + a + "'");
    }
    return o;
}

inline const WorkloadTask& find_task(const Workloads& w, const std::string& t) {
    if (t.empty()) throw Error("tempo lab", "--task is required");
    if (t.find_first_not_of("0123456789") == std::string::npos) {
        if (w.tasks.empty()) throw Error("--task", "index " + t + ": the workloads have no tasks");
        return w.tasks[parse_int<std::size_t>(t, "--task", 0, w.tasks.size() - 1)];
    }
    for (const auto& x : w.tasks)
        if (x.task.key() == t) return x;
    throw Error("--task", "no task '" + t + "'");
}

inline int lab_tasks(const LabOptions& o, std::ostream& out) {
    const Workloads w = load_workloads(o.workloads);
    out << "#index\tweight\tnetworks\tgflop\ttask\n";
    for (std::size_t i = 0; i < w.tasks.size(); ++i) {
        const auto& t = w.tasks[i];
        char gflop[32];
        std::snprintf(gflop, sizeof gflop, "%.4f",
                      loopnest::flop_count(loopnest::build_dag(t.task)) / 1e9);
        out << i << "\t" << t.task.weight << "\t" << t.networks.size() << "\t" << gflop << "\t"
            << t.task.key() << "\n";
    }
    std::cerr << w.tasks.size() << " tasks from " << w.networks() << " networks (" << w.files.size()
              << " workload files)\n";
    return 0;
}

// One program as a dataset record without measurements.
inline json::Value program_record(const WorkloadTask& wt, const loopnest::ComputeDag& dag,
                                  const loopnest::Schedule& sch,
                                  const loopnest::LoweredProgram& prog, FeatureSet features) {
    using namespace loopnest;
    CompactAst ast = featurize(prog, features);
    ast.flops = flop_count(dag);
    json::Value::Object networks;
    for (const auto& [k, v] : wt.networks) networks.push_back({k, v});
    json::Value::Array epilogue;
    for (const auto& e : wt.task.epilogue) epilogue.emplace_back(e);
    return json::Value::Object{{"task", wt.task.key()},
                               {"op", wt.task.op},
                               {"shape", task_params_to_json(wt.task)},
                               {"epilogue", epilogue},
                               {"networks", networks},
                               {"weight", wt.task.weight},
                               {"schedule", schedule_to_json(sch, scheduled_dag(dag, sch))},
                               {"flops", ast.flops},
                               {"ast", compact_ast_to_json(ast)},
                               {"graph", stage_graph_to_json(stage_graph(prog, ast))}};
}

inline int lab_sample(const LabOptions& o, std::ostream& out) {
    using namespace loopnest;
    const Workloads w = load_workloads(o.workloads);
    const WorkloadTask& wt = find_task(w, o.task);
    const ComputeDag dag = build_dag(wt.task);
    ScheduleSpace space(dag);
    std::mt19937_64 rng(o.seed);
    std::set<std::string> seen;
    std::vector<Schedule> kept;
    for (int attempt = 0; attempt < 50 * o.count && static_cast<int>(kept.size()) < o.count;
         ++attempt) {
        Schedule s;
        if (kept.empty() || attempt % 2 == 0) {
            s = space.sample(rng);
        } else {
            s = kept[rng() % kept.size()];
            space.mutate(s, rng);
        }
        LoweredProgram prog = Lowerer(dag, s).run();
        if (!seen.insert(to_string(prog)).second) continue;
        kept.push_back(s);
        out << json::dump(program_record(wt, dag, s, prog, o.features)) << "\n";
    }
    return 0;
}

inline loopnest::Schedule read_schedule(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error(path, "cannot open");
    std::string line;
    std::getline(in, line); // a record line (JSON Lines) or a one-line schedule object
    const json::Value v = json::parse(line, path);
    const json::Value* sch = v.find("schedule");
    return loopnest::schedule_from_json(sch ? *sch : v, path + (sch ? ".schedule" : ""));
}

inline std::string program_c_source(const loopnest::LoweredProgram& prog,
                                    const std::string& task_key, const std::string& symbol) {
    std::ostringstream head;
    head << "/* tempo lab program: " << task_key << "\n"
         << " * Entry point: void " << symbol << "(float* const* args);\n"
         << " *   args[i]: dense row-major float32 arrays, 64-byte aligned, not aliasing:\n";
    std::size_t i = 0;
    auto shape = [&](int t) {
        std::string s;
        for (auto d : prog.tensors[t].shape) s += (s.empty() ? "" : "x") + std::to_string(d);
        return s;
    };
    for (int t : prog.inputs)
        head << " *   args[" << i++ << "] = " << prog.tensors[t].name << " [" << shape(t)
             << "] (input)\n";
    head << " *   args[" << i << "] = " << prog.tensors[prog.output].name << " ["
         << shape(prog.output) << "] (output)\n";
    head << " * Build as the lab's targets do (data/targets/<id>.json, compiler.flags):\n"
         << " *   gcc -std=c11 -O3 -march=<the target's, e.g. x86-64-v4> -ffp-contract=fast\n"
         << " *       -fopenmp -fPIC -shared -lm\n"
         << " *   (a --vectorize schedule target adds -fno-tree-vectorize after -O3)\n */\n";
    return head.str() + loopnest::emit_c({{symbol, &prog}});
}

inline int lab_emit(const LabOptions& o, std::ostream& out) {
    using namespace loopnest;
    const Workloads w = load_workloads(o.workloads);
    const WorkloadTask& wt = find_task(w, o.task);
    const ComputeDag dag = build_dag(wt.task);
    Schedule sch;
    if (!o.schedule_file.empty()) {
        sch = read_schedule(o.schedule_file);
        validate_schedule(dag, sch, o.schedule_file);
    } else {
        std::mt19937_64 rng(o.seed);
        sch = ScheduleSpace(dag).sample(rng);
    }
    out << program_c_source(Lowerer(dag, sch).run(), wt.task.key(), o.symbol);
    return 0;
}

inline int lab_main(const std::vector<std::string>& args, const std::string& default_workloads) {
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
        std::cout << kLabUsage;
        return args.empty() ? 2 : 0;
    }
    try {
        const LabOptions o = parse_lab_options(args, default_workloads);
        if (o.command == "tasks") return lab_tasks(o, std::cout);
        if (o.command == "sample") return lab_sample(o, std::cout);
        if (o.command == "emit") return lab_emit(o, std::cout);
        std::cerr << "tempo lab: unknown command '" << o.command << "'\n" << kLabUsage;
        return 2;
    } catch (const std::exception& e) {
        std::cerr << lab_error_line("tempo lab", e) << "\n";
        return 1;
    }
}

} // namespace tempo::lab
