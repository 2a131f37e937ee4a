// Correctness check of scheduled programs: compile a batch into one shared object, run each on
// small random inputs, compare with the reference interpreter of the unscheduled DAG. A
// mismatch is a generator bug, reported with the program's symbol.
#pragma once

#include "compiler.hpp"

#include "tempo/core/aligned_buffer.hpp"
#include "tempo/loopnest/codegen_c.hpp"
#include "tempo/loopnest/lower.hpp"
#include "tempo/loopnest/reference.hpp"

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace tempo::lab {

struct CheckResult {
    std::string symbol;
    bool ok = true;
    double max_abs_error = 0;
    std::string message;
};

struct CheckCase {
    std::string symbol;
    loopnest::LoweredProgram program;
};

// All cases belong to one task DAG (same inputs and output).
inline std::vector<CheckResult>
check_programs(const loopnest::ComputeDag& dag, const std::vector<CheckCase>& cases,
               const std::string& stem, loopnest::CodegenOptions codegen = {},
               const std::string& c_flags = "", std::uint64_t seed = 1, double tolerance = 1e-3) {
    std::vector<std::pair<std::string, const loopnest::LoweredProgram*>> units;
    for (const auto& c : cases) units.emplace_back(c.symbol, &c.program);
    SharedLibrary lib(compile_shared(loopnest::emit_c(units, codegen), stem, c_flags));

    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<std::vector<float>> inputs;
    for (int t : dag.inputs) {
        inputs.emplace_back(static_cast<std::size_t>(dag.tensors[t].elements()));
        for (auto& x : inputs.back()) x = u(rng);
    }
    const auto expected = loopnest::ReferenceEvaluator(dag).run(inputs)[dag.output()];

    std::vector<CheckResult> results;
    for (const auto& c : cases) {
        std::vector<AlignedBuffer<float>> buffers;
        std::vector<float*> args;
        for (const auto& in : inputs) {
            buffers.emplace_back(in.size());
            std::copy(in.begin(), in.end(), buffers.back().data());
        }
        buffers.emplace_back(expected.size());
        std::fill(buffers.back().data(), buffers.back().data() + expected.size(), NAN);
        for (auto& b : buffers) args.push_back(b.data());
        lib.entry(c.symbol)(args.data());
        CheckResult r;
        r.symbol = c.symbol;
        const float* got = buffers.back().data();
        for (std::size_t i = 0; i < expected.size(); ++i) {
            const double err = std::fabs(static_cast<double>(got[i]) - expected[i]);
            const bool bad = !(err <= tolerance * (1.0 + std::fabs(expected[i])));
            if (!(err <= r.max_abs_error)) r.max_abs_error = err;
            if (bad && r.ok) {
                r.ok = false;
                r.message = "element " + std::to_string(i) + ": got " + std::to_string(got[i]) +
                            ", expected " + std::to_string(expected[i]);
            }
        }
        results.push_back(r);
    }
    return results;
}

} // namespace tempo::lab
