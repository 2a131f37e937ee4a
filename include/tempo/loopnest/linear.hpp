// Linear index forms: Σ coef·atom + constant, where an atom is a loop var or an opaque integer
// expression (a fused-loop decode such as floordiv(f, 8), or grouped-conv channel arithmetic).
// Lowering builds every index this way, so each term mentions one loop, bound inference can
// split terms into fixed (outer) and free (inner) parts, and printed indices look like
// Simplify's canonical sums.
#pragma once

#include "tempo/loopnest/expr.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace tempo::loopnest {

struct LinearTerm {
    Expr atom;
    std::int64_t coef = 1;
};

struct Linear {
    std::vector<LinearTerm> terms;
    std::int64_t constant = 0;

    static bool same_atom(const Expr& a, const Expr& b) {
        if (a == b) return true;
        return a->kind == ExprKind::Var && b->kind == ExprKind::Var && a->int_value == b->int_value;
    }
    void add(const Expr& atom, std::int64_t coef) {
        if (coef == 0) return;
        for (auto& t : terms)
            if (same_atom(t.atom, atom)) {
                t.coef += coef;
                return;
            }
        terms.push_back(LinearTerm{atom, coef});
    }
    void add(const Linear& other, std::int64_t scale = 1) {
        for (const auto& t : other.terms) add(t.atom, t.coef * scale);
        constant += other.constant * scale;
    }
    bool is_constant() const {
        for (const auto& t : terms)
            if (t.coef != 0) return false;
        return true;
    }
    Expr to_expr() const {
        Expr e;
        for (const auto& t : terms) {
            if (t.coef == 0) continue;
            const std::int64_t mag = t.coef < 0 ? -t.coef : t.coef;
            Expr term = mag == 1 ? t.atom : t.atom * int_imm(mag);
            if (!e)
                e = t.coef < 0 ? int_imm(0) - term : term;
            else
                e = t.coef < 0 ? e - term : e + term;
        }
        if (!e) return int_imm(constant);
        if (constant > 0) return e + int_imm(constant);
        if (constant < 0) return e - int_imm(-constant);
        return e;
    }
};

// The linear form of integer expression e, with var v replaced by `value_of(v)` when that
// returns a form (else v stays an atom). Non-linear parts become opaque atoms.
inline Linear linearize(const Expr& e, const std::function<const Linear*(int)>& value_of) {
    Linear out;
    switch (e->kind) {
    case ExprKind::IntImm:
        out.constant = e->int_value;
        return out;
    case ExprKind::Var:
        if (const Linear* v = value_of(static_cast<int>(e->int_value))) return *v;
        out.add(e, 1);
        return out;
    case ExprKind::Add:
    case ExprKind::Sub:
        out = linearize(e->args[0], value_of);
        out.add(linearize(e->args[1], value_of), e->kind == ExprKind::Add ? 1 : -1);
        return out;
    case ExprKind::Mul: {
        Linear a = linearize(e->args[0], value_of), b = linearize(e->args[1], value_of);
        if (b.is_constant()) return out.add(a, b.constant), out;
        if (a.is_constant()) return out.add(b, a.constant), out;
        out.add(a.to_expr() * b.to_expr(), 1);
        return out;
    }
    default: {
        std::vector<Expr> args;
        for (const Expr& a : e->args) args.push_back(linearize(a, value_of).to_expr());
        Expr atom;
        if (e->is_binary()) {
            atom = binary(e->kind, args[0], args[1]);
        } else {
            auto n = std::make_shared<ExprNode>(*e);
            n->args = std::move(args);
            atom = n;
        }
        if (atom->is_int_imm())
            out.constant = atom->int_value;
        else
            out.add(atom, 1);
        return out;
    }
    }
}

} // namespace tempo::loopnest
