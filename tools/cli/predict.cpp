// tempo predict MODEL [INPUT.jsonl | -] [--batch N] [--verify] [--timing] [--table]
// Reads compact ASTs (one JSON object per line), prints one JSON object per program:
//   {"line": 3, "id": "…", "task": "…", "seconds": 1.2e-4[, "measured_s": …]}
// A bad line is reported on stderr as FILE:LINE: field …; the others are still predicted and
// the exit status is 1.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "tempo/tempo.hpp"

namespace tempo::cli {

namespace {

constexpr const char* kPredictUsage =
    "usage: tempo predict MODEL [INPUT.jsonl | -] [--batch N] [--verify] [--timing] [--table]\n"
    "\n"
    "  MODEL        a converted model file (.safetensors)\n"
    "  INPUT.jsonl  compact ASTs, one JSON object per line (default: standard input)\n"
    "  --batch N    programs per batch (default 64)\n"
    "  --verify     run the model file's embedded self-test before predicting\n"
    "  --timing     print on stderr the model's time per program, without JSON parsing\n"
    "               and printing (the first batch warms the workspace and is not counted)\n"
    "  --table      a table for people instead of JSON Lines: predicted and measured\n"
    "               latency, their ratio, the task\n";

struct Pending {
    std::size_t line;
    CompactAst ast;
    std::string task;               // a dataset record's task key, echoed
    std::optional<double> measured; // a dataset record's mean latency, echoed
};

// One row of --table: latencies in the unit that keeps them readable.
std::string human_seconds(double s) {
    char buf[32];
    if (s >= 1)
        std::snprintf(buf, sizeof buf, "%.3g s", s);
    else if (s >= 1e-3)
        std::snprintf(buf, sizeof buf, "%.3g ms", s * 1e3);
    else
        std::snprintf(buf, sizeof buf, "%.3g us", s * 1e6);
    return buf;
}

void print_row(const Pending& p, double seconds) {
    std::string measured = "-", ratio = "-";
    if (p.measured) {
        measured = human_seconds(*p.measured);
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.2f", seconds / *p.measured);
        ratio = buf;
    }
    const std::string& what = p.task.empty() ? p.ast.id : p.task;
    char row[96];
    std::snprintf(row, sizeof row, "%5zu  %10s  %10s  %9s  ", p.line,
                  human_seconds(seconds).c_str(), measured.c_str(), ratio.c_str());
    std::cout << row << what << "\n";
}

void print(const Pending& p, double seconds) {
    std::string out = "{\"line\":" + std::to_string(p.line);
    if (!p.ast.id.empty()) {
        out += ",\"id\":";
        json::write_string(out, p.ast.id);
    }
    if (!p.task.empty()) {
        out += ",\"task\":";
        json::write_string(out, p.task);
    }
    out += ",\"seconds\":";
    json::write_number(out, seconds);
    if (p.measured) {
        out += ",\"measured_s\":";
        json::write_number(out, *p.measured);
    }
    out += "}\n";
    std::cout << out;
}

} // namespace

int predict_main(int argc, char** argv) {
    std::vector<std::string> positional;
    std::size_t batch = 64;
    bool verify = false, timing = false, table = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::cout << kPredictUsage;
            return 0;
        } else if (arg == "--verify") {
            verify = true;
        } else if (arg == "--timing") {
            timing = true;
        } else if (arg == "--table") {
            table = true;
        } else if (arg == "--batch") {
            try {
                if (i + 1 == argc) throw Error("tempo predict", "--batch needs a value");
                batch = parse_int<std::size_t>(argv[++i], "tempo predict --batch", 1, 1 << 20);
            } catch (const Error& e) {
                std::cerr << e.what() << "\n";
                return 2;
            }
        } else if (arg.size() > 1 && arg[0] == '-') {
            std::cerr << "tempo predict: unknown option " << arg << "\n" << kPredictUsage;
            return 2;
        } else {
            positional.push_back(arg);
        }
    }
    if (positional.empty() || positional.size() > 2) {
        std::cerr << kPredictUsage;
        return 2;
    }
    const std::string input = positional.size() == 2 ? positional[1] : "-";
    const std::string label = input == "-" ? "<stdin>" : input;

    std::optional<CdmppModel> model;
    try {
        model.emplace(CdmppModel::load(positional[0], {verify}));
        if (verify)
            std::cerr << "self-test passed (error " << model->selftest_error()
                      << " of tolerance)\n";
    } catch (const Error& e) {
        std::cerr << "tempo predict: " << e.what() << "\n";
        return 1;
    }

    std::ifstream file;
    if (input != "-") {
        file.open(input);
        if (!file) {
            std::cerr << "tempo predict: cannot open " << input << "\n";
            return 1;
        }
    }
    std::istream& in = input == "-" ? std::cin : file;

    if (table) std::cout << " line   predicted    measured  pred/meas  task\n";
    Workspace ws;
    std::vector<Pending> pending;
    std::vector<const CompactAst*> programs;
    std::vector<double> seconds;
    bool failed = false;
    double model_s = 0;
    std::size_t timed = 0, batches = 0;
    auto flush = [&] {
        programs.clear();
        for (const auto& p : pending) programs.push_back(&p.ast);
        seconds.resize(programs.size());
        const auto t0 = std::chrono::steady_clock::now();
        model->predict(programs.data(), programs.size(), seconds.data(), ws);
        if (batches++ > 0) {
            model_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            timed += programs.size();
        }
        for (std::size_t i = 0; i < pending.size(); ++i)
            table ? print_row(pending[i], seconds[i]) : print(pending[i], seconds[i]);
        pending.clear();
    };

    std::string line;
    for (std::size_t number = 1; std::getline(in, line); ++number) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const std::string where = label + ":" + std::to_string(number);
        try {
            const json::Value doc = json::parse(line, where);
            const json::Node root(doc, where);
            Pending p{number, compact_ast_from_json(root), {}, std::nullopt};
            if (auto task = root.find("task")) p.task = task->as_string();
            if (auto latency = root.find("latency_s")) p.measured = (*latency)["mean"].as_double();
            model->validate(p.ast, where);
            pending.push_back(std::move(p));
        } catch (const Error& e) {
            std::cerr << e.what() << "\n";
            failed = true;
            continue;
        }
        if (pending.size() == batch) flush();
    }
    if (!pending.empty()) flush();
    if (timing) {
        if (timed == 0)
            std::fprintf(stderr, "timing: needs more than one batch of programs\n");
        else
            std::fprintf(stderr, "timing: %.3f us per program in the model (%zu programs)\n",
                         model_s / double(timed) * 1e6, timed);
    }
    return failed ? 1 : 0;
}

} // namespace tempo::cli
