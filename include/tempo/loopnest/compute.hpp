// Compute definitions (TVM's TE in miniature): float32 tensors, and stages that define one
// output tensor element-wise over spatial axes, optionally reducing over reduce axes.
// A ComputeDag is the unscheduled program of one task: inputs, stages in topological order.
#pragma once

#include "tempo/loopnest/expr.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace tempo::loopnest {

struct Tensor {
    std::string name;
    std::vector<std::int64_t> shape;
    std::int64_t elements() const {
        std::int64_t n = 1;
        for (auto d : shape) n *= d;
        return n;
    }
};

struct IterVar {
    int var = -1; // var id used by the stage's body
    std::string name;
    std::int64_t extent = 1;
};

enum class Reduce : std::uint8_t { None, Sum, Max };

struct Stage {
    std::string name;
    int output = -1;           // tensor id written by this stage
    std::vector<IterVar> axes; // spatial axes, one per output dimension, in order
    std::vector<IterVar> reduce_axes;
    Reduce reduce = Reduce::None; // None: out = body; Sum/Max: out = combine over reduce axes
    Expr body;

    bool is_reduction() const { return reduce != Reduce::None; }
    double init_value() const {
        return reduce == Reduce::Max ? -std::numeric_limits<double>::infinity() : 0.0;
    }
};

struct ComputeDag {
    std::vector<Tensor> tensors;
    std::vector<int> inputs;   // tensor ids bound by the caller, in argument order
    std::vector<Stage> stages; // topological order; the last one writes the output
    int next_var = 0;

    int output() const { return stages.back().output; }
    int producer_of(int tensor) const {
        for (std::size_t s = 0; s < stages.size(); ++s)
            if (stages[s].output == tensor) return static_cast<int>(s);
        return -1;
    }
    // Stages reading stage s's output, in order.
    std::vector<int> consumers_of(int s) const;
    // Tensor ids the stage's body loads, in pre-order, without repetition.
    std::vector<int> reads_of(int s) const;
};

inline std::vector<int> ComputeDag::reads_of(int s) const {
    std::vector<int> out;
    visit_preorder(stages[s].body, [&](const ExprNode& n) {
        if (n.kind == ExprKind::Load && std::find(out.begin(), out.end(), n.int_value) == out.end())
            out.push_back(static_cast<int>(n.int_value));
    });
    return out;
}

inline std::vector<int> ComputeDag::consumers_of(int s) const {
    std::vector<int> out;
    for (std::size_t c = 0; c < stages.size(); ++c) {
        auto reads = reads_of(static_cast<int>(c));
        if (std::find(reads.begin(), reads.end(), stages[s].output) != reads.end())
            out.push_back(static_cast<int>(c));
    }
    return out;
}

// Incremental construction of a ComputeDag by the operator builders.
class DagBuilder {
public:
    int input(std::string name, std::vector<std::int64_t> shape) {
        int t = tensor(std::move(name), std::move(shape));
        dag_.inputs.push_back(t);
        return t;
    }
    IterVar axis(std::string name, std::int64_t extent) {
        return IterVar{dag_.next_var++, std::move(name), extent};
    }
    Expr v(const IterVar& iv) const { return var(iv.var, iv.name); }
    // Adds a stage computing a new tensor shaped by `axes`; returns the tensor id.
    int stage(std::string name, std::vector<IterVar> axes, Expr body,
              std::vector<IterVar> reduce_axes = {}, Reduce reduce = Reduce::None) {
        std::vector<std::int64_t> shape;
        for (const auto& a : axes) shape.push_back(a.extent);
        int t = tensor(name, shape);
        Stage s;
        s.name = std::move(name);
        s.output = t;
        s.axes = std::move(axes);
        s.reduce_axes = std::move(reduce_axes);
        s.reduce = s.reduce_axes.empty() ? Reduce::None : reduce;
        s.body = std::move(body);
        dag_.stages.push_back(std::move(s));
        return t;
    }
    const Tensor& tensor_info(int t) const { return dag_.tensors[t]; }
    ComputeDag finish() { return std::move(dag_); }

private:
    int tensor(std::string name, std::vector<std::int64_t> shape) {
        dag_.tensors.push_back(Tensor{std::move(name), std::move(shape)});
        return static_cast<int>(dag_.tensors.size()) - 1;
    }
    ComputeDag dag_;
};

} // namespace tempo::loopnest
