// Expressions of tempo's loop-nest IR: immutable trees of integer index arithmetic and float
// value arithmetic, close to TVM's TIR expressions so that Ansor's op counting applies as is.
#pragma once

#include "tempo/core/error.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tempo::loopnest {

enum class DType : std::uint8_t { Float32, Int32, Bool };

enum class ExprKind : std::uint8_t {
    IntImm,
    FloatImm,
    Var,
    Load, // args = indices, buffer = tensor id
    Cast, // args[0] converted to dtype
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    FloorMod,
    Min,
    Max,
    EQ,
    NE,
    LT,
    LE,
    GT,
    GE,
    And,
    Or,
    Not,
    Select,     // args = cond, then, else (counted as select_op)
    IfThenElse, // TIR's pure builtin call if_then_else(cond, then, else) (counted as a call)
    Call,       // pure math function `fn` of args
};

enum class MathFn : std::uint8_t { Exp, Tanh, Erf, Sqrt, Rsqrt };

inline const char* math_fn_name(MathFn fn) {
    switch (fn) {
    case MathFn::Exp:
        return "exp";
    case MathFn::Tanh:
        return "tanh";
    case MathFn::Erf:
        return "erf";
    case MathFn::Sqrt:
        return "sqrt";
    case MathFn::Rsqrt:
        return "rsqrt";
    }
    return "?";
}

struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

struct ExprNode {
    ExprKind kind = ExprKind::IntImm;
    DType dtype = DType::Int32;
    std::int64_t int_value = 0; // IntImm value, Var id, Load tensor id
    double float_value = 0.0;   // FloatImm
    MathFn fn = MathFn::Exp;    // Call
    std::string name;           // Var name (for printing and code generation)
    std::vector<Expr> args;

    bool is_int_imm() const noexcept { return kind == ExprKind::IntImm; }
    bool is_int_imm(std::int64_t v) const noexcept { return is_int_imm() && int_value == v; }
    bool is_binary() const noexcept { return kind >= ExprKind::Add && kind <= ExprKind::Or; }
};

namespace detail {
inline Expr make(ExprKind kind, DType dtype, std::vector<Expr> args) {
    auto n = std::make_shared<ExprNode>();
    n->kind = kind;
    n->dtype = dtype;
    n->args = std::move(args);
    return n;
}
inline std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    std::int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
inline std::int64_t floor_mod(std::int64_t a, std::int64_t b) {
    return a - floor_div(a, b) * b;
}
} // namespace detail

inline Expr int_imm(std::int64_t v) {
    auto n = std::make_shared<ExprNode>();
    n->int_value = v;
    return n;
}
inline Expr float_imm(double v) {
    auto n = std::make_shared<ExprNode>();
    n->kind = ExprKind::FloatImm;
    n->dtype = DType::Float32;
    n->float_value = v;
    return n;
}
inline Expr var(int id, std::string name) {
    auto n = std::make_shared<ExprNode>();
    n->kind = ExprKind::Var;
    n->int_value = id;
    n->name = std::move(name);
    return n;
}
inline Expr load(int tensor, std::vector<Expr> indices) {
    auto n = std::make_shared<ExprNode>();
    n->kind = ExprKind::Load;
    n->dtype = DType::Float32;
    n->int_value = tensor;
    n->args = std::move(indices);
    return n;
}
inline Expr cast_float(Expr e) {
    return detail::make(ExprKind::Cast, DType::Float32, {std::move(e)});
}

// Integer binary ops fold constants and the identities TVM's Simplify removes (x+0, x*1, x*0),
// so lowered indices look like Simplify's output. Float ops are kept verbatim.
inline Expr binary(ExprKind kind, Expr a, Expr b) {
    const bool ints = a->dtype == DType::Int32 && b->dtype == DType::Int32;
    if (ints && a->is_int_imm() && b->is_int_imm()) {
        const std::int64_t x = a->int_value, y = b->int_value;
        switch (kind) {
        case ExprKind::Add:
            return int_imm(x + y);
        case ExprKind::Sub:
            return int_imm(x - y);
        case ExprKind::Mul:
            return int_imm(x * y);
        case ExprKind::FloorDiv:
            return int_imm(detail::floor_div(x, y));
        case ExprKind::FloorMod:
            return int_imm(detail::floor_mod(x, y));
        default:
            break;
        }
    }
    if (ints) {
        switch (kind) {
        case ExprKind::Add:
            if (a->is_int_imm(0)) return b;
            if (b->is_int_imm(0)) return a;
            break;
        case ExprKind::Sub:
            if (b->is_int_imm(0)) return a;
            break;
        case ExprKind::Mul:
            if (a->is_int_imm(0) || b->is_int_imm(0)) return int_imm(0);
            if (a->is_int_imm(1)) return b;
            if (b->is_int_imm(1)) return a;
            break;
        case ExprKind::FloorDiv:
            if (b->is_int_imm(1)) return a;
            break;
        case ExprKind::FloorMod:
            if (b->is_int_imm(1)) return int_imm(0);
            break;
        default:
            break;
        }
    }
    const bool comparison = kind >= ExprKind::EQ && kind <= ExprKind::Or;
    DType dtype = comparison ? DType::Bool : a->dtype;
    return detail::make(kind, dtype, {std::move(a), std::move(b)});
}

inline Expr operator+(Expr a, Expr b) {
    return binary(ExprKind::Add, std::move(a), std::move(b));
}
inline Expr operator-(Expr a, Expr b) {
    return binary(ExprKind::Sub, std::move(a), std::move(b));
}
inline Expr operator*(Expr a, Expr b) {
    return binary(ExprKind::Mul, std::move(a), std::move(b));
}
inline Expr operator/(Expr a, Expr b) {
    return binary(ExprKind::Div, std::move(a), std::move(b));
}
inline Expr operator+(Expr a, std::int64_t b) {
    return std::move(a) + int_imm(b);
}
inline Expr operator*(Expr a, std::int64_t b) {
    return std::move(a) * int_imm(b);
}
inline Expr floordiv(Expr a, std::int64_t b) {
    return binary(ExprKind::FloorDiv, std::move(a), int_imm(b));
}
inline Expr floormod(Expr a, std::int64_t b) {
    return binary(ExprKind::FloorMod, std::move(a), int_imm(b));
}
inline Expr min(Expr a, Expr b) {
    return binary(ExprKind::Min, std::move(a), std::move(b));
}
inline Expr max(Expr a, Expr b) {
    return binary(ExprKind::Max, std::move(a), std::move(b));
}
inline Expr cmp(ExprKind kind, Expr a, Expr b) {
    return binary(kind, std::move(a), std::move(b));
}
inline Expr all_of(std::vector<Expr> conditions) {
    Expr r;
    for (auto& c : conditions) r = r ? binary(ExprKind::And, r, std::move(c)) : std::move(c);
    return r;
}
inline Expr select(Expr cond, Expr a, Expr b) {
    DType dtype = a->dtype;
    return detail::make(ExprKind::Select, dtype, {std::move(cond), std::move(a), std::move(b)});
}
inline Expr if_then_else(Expr cond, Expr a, Expr b) {
    DType dtype = a->dtype;
    return detail::make(ExprKind::IfThenElse, dtype, {std::move(cond), std::move(a), std::move(b)});
}
inline Expr call(MathFn fn, Expr x) {
    auto n = std::make_shared<ExprNode>();
    n->kind = ExprKind::Call;
    n->dtype = DType::Float32;
    n->fn = fn;
    n->args = {std::move(x)};
    return n;
}

// Calls `f(node)` on every node, parents before children (Ansor's pre-order walk).
inline void visit_preorder(const Expr& e, const std::function<void(const ExprNode&)>& f) {
    f(*e);
    for (const Expr& a : e->args) visit_preorder(a, f);
}

inline bool uses_var(const Expr& e, int var_id) {
    if (e->kind == ExprKind::Var) return e->int_value == var_id;
    for (const Expr& a : e->args)
        if (uses_var(a, var_id)) return true;
    return false;
}

// Rebuilds `e` with each Var replaced by `lookup(id)` (nullptr keeps the Var), re-folding.
inline Expr substitute(const Expr& e, const std::function<Expr(int)>& lookup) {
    if (e->kind == ExprKind::Var) {
        Expr r = lookup(static_cast<int>(e->int_value));
        return r ? r : e;
    }
    if (e->args.empty()) return e;
    std::vector<Expr> args;
    args.reserve(e->args.size());
    bool changed = false;
    for (const Expr& a : e->args) {
        args.push_back(substitute(a, lookup));
        changed |= args.back() != a;
    }
    if (!changed) return e;
    if (e->is_binary()) return binary(e->kind, args[0], args[1]);
    auto n = std::make_shared<ExprNode>(*e);
    n->args = std::move(args);
    return n;
}

// Rebuilds `e` with each Load of tensor t replaced by `lookup(t, indices)` (nullptr keeps it).
inline Expr substitute_loads(const Expr& e,
                             const std::function<Expr(int, const std::vector<Expr>&)>& lookup) {
    if (e->args.empty()) return e;
    std::vector<Expr> args;
    args.reserve(e->args.size());
    for (const Expr& a : e->args) args.push_back(substitute_loads(a, lookup));
    if (e->kind == ExprKind::Load) {
        Expr r = lookup(static_cast<int>(e->int_value), args);
        if (r) return r;
    }
    if (e->is_binary()) return binary(e->kind, args[0], args[1]);
    auto n = std::make_shared<ExprNode>(*e);
    n->args = std::move(args);
    return n;
}

} // namespace tempo::loopnest
