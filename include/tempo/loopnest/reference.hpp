// A direct interpreter of a ComputeDag: the unscheduled reference that scheduled C programs are
// checked against. Every stage is evaluated over its full output in double precision.
#pragma once

#include "tempo/loopnest/compute.hpp"

#include <cmath>
#include <vector>

namespace tempo::loopnest {

class ReferenceEvaluator {
public:
    explicit ReferenceEvaluator(const ComputeDag& dag) : dag_(dag) {}

    // `inputs` in dag.inputs order; returns every tensor's contents (inputs included).
    std::vector<std::vector<float>> run(const std::vector<std::vector<float>>& inputs) {
        values_.assign(dag_.tensors.size(), {});
        for (std::size_t i = 0; i < dag_.inputs.size(); ++i) values_[dag_.inputs[i]] = inputs[i];
        env_.assign(static_cast<std::size_t>(dag_.next_var), 0);
        for (const Stage& s : dag_.stages) evaluate(s);
        return values_;
    }

private:
    void evaluate(const Stage& s) {
        auto& out = values_[s.output];
        out.assign(static_cast<std::size_t>(dag_.tensors[s.output].elements()), 0.0f);
        std::vector<std::int64_t> point(s.axes.size(), 0);
        for (std::size_t flat = 0; flat < out.size(); ++flat) {
            std::size_t rest = flat;
            for (int d = static_cast<int>(s.axes.size()) - 1; d >= 0; --d) {
                env_[s.axes[d].var] = static_cast<std::int64_t>(rest % s.axes[d].extent);
                rest /= static_cast<std::size_t>(s.axes[d].extent);
            }
            out[flat] = static_cast<float>(s.is_reduction() ? reduce(s) : eval(*s.body));
        }
    }

    double reduce(const Stage& s) {
        double acc = s.init_value();
        std::int64_t total = 1;
        for (const auto& r : s.reduce_axes) total *= r.extent;
        for (std::int64_t flat = 0; flat < total; ++flat) {
            std::int64_t rest = flat;
            for (int d = static_cast<int>(s.reduce_axes.size()) - 1; d >= 0; --d) {
                env_[s.reduce_axes[d].var] = rest % s.reduce_axes[d].extent;
                rest /= s.reduce_axes[d].extent;
            }
            const double v = eval(*s.body);
            acc = s.reduce == Reduce::Sum ? acc + v : std::max(acc, v);
        }
        return acc;
    }

    std::int64_t eval_int(const ExprNode& e) {
        auto a = [&](int i) { return eval_int(*e.args[i]); };
        switch (e.kind) {
        case ExprKind::IntImm:
            return e.int_value;
        case ExprKind::Var:
            return env_[e.int_value];
        case ExprKind::Add:
            return a(0) + a(1);
        case ExprKind::Sub:
            return a(0) - a(1);
        case ExprKind::Mul:
            return a(0) * a(1);
        case ExprKind::FloorDiv:
            return detail::floor_div(a(0), a(1));
        case ExprKind::FloorMod:
            return detail::floor_mod(a(0), a(1));
        case ExprKind::Min:
            return std::min(a(0), a(1));
        case ExprKind::Max:
            return std::max(a(0), a(1));
        default:
            throw Error("reference", "unsupported integer expression");
        }
    }

    bool eval_bool(const ExprNode& e) {
        auto cmp2 = [&](auto op) {
            if (e.args[0]->dtype == DType::Float32) return op(eval(*e.args[0]), eval(*e.args[1]));
            return op(static_cast<double>(eval_int(*e.args[0])),
                      static_cast<double>(eval_int(*e.args[1])));
        };
        switch (e.kind) {
        case ExprKind::EQ:
            return cmp2([](double x, double y) { return x == y; });
        case ExprKind::NE:
            return cmp2([](double x, double y) { return x != y; });
        case ExprKind::LT:
            return cmp2([](double x, double y) { return x < y; });
        case ExprKind::LE:
            return cmp2([](double x, double y) { return x <= y; });
        case ExprKind::GT:
            return cmp2([](double x, double y) { return x > y; });
        case ExprKind::GE:
            return cmp2([](double x, double y) { return x >= y; });
        case ExprKind::And:
            return eval_bool(*e.args[0]) && eval_bool(*e.args[1]);
        case ExprKind::Or:
            return eval_bool(*e.args[0]) || eval_bool(*e.args[1]);
        case ExprKind::Not:
            return !eval_bool(*e.args[0]);
        default:
            throw Error("reference", "unsupported condition");
        }
    }

    double eval(const ExprNode& e) {
        if (e.dtype == DType::Int32) return static_cast<double>(eval_int(e));
        auto a = [&](int i) { return eval(*e.args[i]); };
        switch (e.kind) {
        case ExprKind::FloatImm:
            return e.float_value;
        case ExprKind::Load: {
            const auto& shape = dag_.tensors[e.int_value].shape;
            std::int64_t flat = 0;
            for (std::size_t d = 0; d < shape.size(); ++d) {
                const std::int64_t i = eval_int(*e.args[d]);
                if (i < 0 || i >= shape[d]) throw Error("reference", "load out of bounds");
                flat = flat * shape[d] + i;
            }
            return values_[e.int_value][static_cast<std::size_t>(flat)];
        }
        case ExprKind::Cast:
            return static_cast<double>(eval_int(*e.args[0]));
        case ExprKind::Add:
            return a(0) + a(1);
        case ExprKind::Sub:
            return a(0) - a(1);
        case ExprKind::Mul:
            return a(0) * a(1);
        case ExprKind::Div:
            return a(0) / a(1);
        case ExprKind::Min:
            return std::min(a(0), a(1));
        case ExprKind::Max:
            return std::max(a(0), a(1));
        case ExprKind::Select:
        case ExprKind::IfThenElse:
            return eval_bool(*e.args[0]) ? a(1) : a(2);
        case ExprKind::Call:
            switch (e.fn) {
            case MathFn::Exp:
                return std::exp(a(0));
            case MathFn::Tanh:
                return std::tanh(a(0));
            case MathFn::Erf:
                return std::erf(a(0));
            case MathFn::Sqrt:
                return std::sqrt(a(0));
            case MathFn::Rsqrt:
                return 1.0 / std::sqrt(a(0));
            }
            break;
        default:
            break;
        }
        throw Error("reference", "unsupported float expression");
    }

    const ComputeDag& dag_;
    std::vector<std::vector<float>> values_;
    std::vector<std::int64_t> env_;
};

} // namespace tempo::loopnest
