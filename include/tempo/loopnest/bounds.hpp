// Interval bounds of integer index expressions over loop-variable ranges: the arithmetic behind
// touched regions (features) and bound inference (lowering).
#pragma once

#include "tempo/loopnest/expr.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tempo::loopnest {

struct Interval {
    std::int64_t lo = 0, hi = 0;
};

// Bounds of an integer index expression with each var in `env[var id]` (vars not in env: 0).
// FloorDiv/FloorMod take a positive constant divisor, as lowering produces them.
inline Interval bound_of(const ExprNode& e, const std::vector<Interval>& env) {
    switch (e.kind) {
    case ExprKind::IntImm:
        return {e.int_value, e.int_value};
    case ExprKind::Var: {
        auto id = static_cast<std::size_t>(e.int_value);
        return id < env.size() ? env[id] : Interval{0, 0};
    }
    case ExprKind::Add: {
        Interval a = bound_of(*e.args[0], env), b = bound_of(*e.args[1], env);
        return {a.lo + b.lo, a.hi + b.hi};
    }
    case ExprKind::Sub: {
        Interval a = bound_of(*e.args[0], env), b = bound_of(*e.args[1], env);
        return {a.lo - b.hi, a.hi - b.lo};
    }
    case ExprKind::Mul: {
        Interval a = bound_of(*e.args[0], env), b = bound_of(*e.args[1], env);
        std::int64_t c[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
        return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
    }
    case ExprKind::Min:
    case ExprKind::Max: {
        Interval a = bound_of(*e.args[0], env), b = bound_of(*e.args[1], env);
        if (e.kind == ExprKind::Min) return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
        return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
    case ExprKind::FloorDiv:
    case ExprKind::FloorMod: {
        Interval a = bound_of(*e.args[0], env);
        if (!e.args[1]->is_int_imm() || e.args[1]->int_value <= 0)
            throw Error("loopnest bounds", "division by a non-constant or non-positive value");
        const std::int64_t c = e.args[1]->int_value;
        const std::int64_t qlo = detail::floor_div(a.lo, c), qhi = detail::floor_div(a.hi, c);
        if (e.kind == ExprKind::FloorDiv) return {qlo, qhi};
        if (qlo == qhi) return {detail::floor_mod(a.lo, c), detail::floor_mod(a.hi, c)};
        return {0, c - 1};
    }
    default:
        throw Error("loopnest bounds", "index expression is not integer arithmetic");
    }
}

} // namespace tempo::loopnest
