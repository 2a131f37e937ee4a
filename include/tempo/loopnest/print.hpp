// Human-readable TIR-like text of expressions and loop trees (debugging, `tempo lab` output).
#pragma once

#include "tempo/loopnest/loop_tree.hpp"

#include <sstream>
#include <string>

namespace tempo::loopnest {

inline const char* binary_symbol(ExprKind k) {
    switch (k) {
    case ExprKind::Add:
        return "+";
    case ExprKind::Sub:
        return "-";
    case ExprKind::Mul:
        return "*";
    case ExprKind::Div:
        return "/";
    case ExprKind::FloorDiv:
        return "//";
    case ExprKind::FloorMod:
        return "%";
    case ExprKind::EQ:
        return "==";
    case ExprKind::NE:
        return "!=";
    case ExprKind::LT:
        return "<";
    case ExprKind::LE:
        return "<=";
    case ExprKind::GT:
        return ">";
    case ExprKind::GE:
        return ">=";
    case ExprKind::And:
        return "&&";
    case ExprKind::Or:
        return "||";
    default:
        return nullptr;
    }
}

inline std::string to_string(const Expr& e, const std::vector<Tensor>& tensors) {
    auto s = [&](const Expr& x) { return to_string(x, tensors); };
    switch (e->kind) {
    case ExprKind::IntImm:
        return std::to_string(e->int_value);
    case ExprKind::FloatImm: {
        std::ostringstream o;
        o << e->float_value << "f";
        return o.str();
    }
    case ExprKind::Var:
        return e->name;
    case ExprKind::Load: {
        std::string r = tensors[e->int_value].name + "[";
        for (std::size_t i = 0; i < e->args.size(); ++i) r += (i ? ", " : "") + s(e->args[i]);
        return r + "]";
    }
    case ExprKind::Cast:
        return "float32(" + s(e->args[0]) + ")";
    case ExprKind::Min:
        return "min(" + s(e->args[0]) + ", " + s(e->args[1]) + ")";
    case ExprKind::Max:
        return "max(" + s(e->args[0]) + ", " + s(e->args[1]) + ")";
    case ExprKind::Not:
        return "!" + s(e->args[0]);
    case ExprKind::Select:
    case ExprKind::IfThenElse:
        return std::string(e->kind == ExprKind::Select ? "select(" : "if_then_else(") +
               s(e->args[0]) + ", " + s(e->args[1]) + ", " + s(e->args[2]) + ")";
    case ExprKind::Call:
        return std::string(math_fn_name(e->fn)) + "(" + s(e->args[0]) + ")";
    default:
        return "(" + s(e->args[0]) + " " + binary_symbol(e->kind) + " " + s(e->args[1]) + ")";
    }
}

inline void print_tree(std::ostream& out, const LoopNode& n, const LoweredProgram& p, int depth) {
    std::string pad(static_cast<std::size_t>(depth) * 2, ' ');
    static const char* kinds[] = {"", " parallel", " vectorized", " unrolled"};
    int inner = depth + 1;
    switch (n.kind) {
    case NodeKind::For:
        out << pad << "for " << n.var_name << " in 0.." << n.extent
            << kinds[static_cast<int>(n.for_kind)] << "\n";
        break;
    case NodeKind::Attr:
        out << pad << "attr " << n.attr_key << " = "
            << (n.tensor >= 0 ? p.tensors[n.tensor].name : std::to_string(n.attr_value)) << "\n";
        break;
    case NodeKind::Realize:
        out << pad << "realize " << p.tensors[n.tensor].name << "(";
        for (std::size_t d = 0; d < n.region_extent.size(); ++d)
            out << (d ? ", " : "") << "[" << to_string(n.region_min[d], p.tensors) << ", "
                << n.region_extent[d] << "]";
        out << ")\n";
        break;
    case NodeKind::Store:
        out << pad << to_string(load(n.tensor, n.indices), p.tensors) << " = "
            << to_string(n.value, p.tensors) << "\n";
        break;
    default:
        inner = depth;
    }
    for (const auto& c : n.children) print_tree(out, c, p, inner);
}

inline std::string to_string(const LoweredProgram& p) {
    std::ostringstream out;
    print_tree(out, p.root, p, 0);
    return out.str();
}

} // namespace tempo::loopnest
