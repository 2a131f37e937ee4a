// C code generation from a lowered loop tree. Several programs go into one translation unit
// (one shared object per batch), each as a stable entry point
//
//     void <symbol>(float* const* args);
//
// where args[0..n_in-1] are the inputs in LoweredProgram::inputs order and args[n_in] is the
// output: dense row-major float32 arrays, 64-byte aligned, never aliasing. Parallel loops
// become `omp parallel for`, vectorised loops `omp simd`, loops TVM's UnrollLoop pass would
// unroll under the stage's auto_unroll_max_step get `GCC unroll`; intermediate buffers are
// allocated over their realized region (stack when small, heap otherwise).
// The lab compiles it with its target's flags (tools/lab/target.hpp, compile_flags).
#pragma once

#include "tempo/loopnest/bounds.hpp"
#include "tempo/loopnest/loop_tree.hpp"
#include "tempo/loopnest/unroll.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace tempo::loopnest {

inline constexpr std::int64_t kStackBufferLimit = 16384; // floats; larger buffers use the heap

inline std::string c_identifier(const std::string& name) {
    std::string out;
    for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
    if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "t_" + out;
    return out;
}

inline const char* c_prelude() {
    return "#include <math.h>\n#include <stdlib.h>\n\n"
           "static inline float tempo_maxf(float a, float b) { return a > b ? a : b; }\n"
           "static inline float tempo_minf(float a, float b) { return a < b ? a : b; }\n"
           "static inline int tempo_max(int a, int b) { return a > b ? a : b; }\n"
           "static inline int tempo_min(int a, int b) { return a < b ? a : b; }\n"
           "static inline int tempo_floordiv(int a, int b) { int q = a / b; "
           "return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }\n"
           "static inline int tempo_floormod(int a, int b) { return a - tempo_floordiv(a, b) * b; "
           "}\n\n";
}

struct CodegenOptions {
    // Caps auto_unroll_max_step when deciding what to unroll. 512 is TVM's own range; gcc -O3
    // can spend tens of seconds (alias walking) on 512-statement unrolled nests, so batches
    // that must compile fast can lower it.
    std::int64_t max_unroll_steps = kDefaultMaxUnrollSteps;
};

class CEmitter {
public:
    CEmitter(const LoweredProgram& p, std::string symbol, CodegenOptions options = {})
        : p_(p), symbol_(std::move(symbol)), options_(options),
          unrolled_(auto_unrolled_loops(p.root, options.max_unroll_steps)) {
        int max_var = 0;
        max_var_of(p.root, max_var);
        env_.assign(static_cast<std::size_t>(max_var) + 1, Interval{});
    }

    std::string function() {
        out_.str("");
        out_ << "void " << symbol_ << "(float* const* args) {\n";
        std::size_t arg = 0;
        for (int t : p_.inputs) bind_argument(t, arg++, true);
        bind_argument(p_.output, arg, false);
        emit(p_.root, 1);
        out_ << "}\n";
        return out_.str();
    }

private:
    struct Buffer {
        std::string name;
        std::vector<Expr> min; // empty: global coordinates
        std::vector<std::int64_t> extent;
    };

    static void max_var_of(const LoopNode& n, int& m) {
        if (n.kind == NodeKind::For) m = std::max(m, n.var);
        for (const auto& c : n.children) max_var_of(c, m);
    }

    void bind_argument(int t, std::size_t index, bool is_input) {
        const std::string name = c_identifier(p_.tensors[t].name);
        out_ << "  " << (is_input ? "const float* restrict " : "float* restrict ") << name
             << " = __builtin_assume_aligned(args[" << index << "], 64);\n";
        buffers_[t] = Buffer{name, {}, p_.tensors[t].shape};
        arguments_.push_back(t);
    }

    bool is_argument(int t) const {
        return std::find(arguments_.begin(), arguments_.end(), t) != arguments_.end();
    }

    void emit(const LoopNode& n, int depth) {
        const std::string pad(static_cast<std::size_t>(depth) * 2, ' ');
        switch (n.kind) {
        case NodeKind::Attr:
            if (n.attr_key == kPragmaAutoUnroll) { // its loops are in unrolled_
                for (const auto& c : n.children) emit(c, depth);
                return;
            }
            break;
        case NodeKind::For: {
            const std::string v = var_name(n.var, n.var_name);
            if (n.for_kind == ForKind::Parallel) out_ << pad << "#pragma omp parallel for\n";
            if (n.for_kind == ForKind::Vectorized) out_ << pad << "#pragma omp simd\n";
            if (n.for_kind == ForKind::Unrolled || unrolled_.count(&n))
                out_ << pad << "#pragma GCC unroll " << n.extent << "\n";
            out_ << pad << "for (int " << v << " = 0; " << v << " < " << n.extent << "; ++" << v
                 << ") {\n";
            env_[n.var] = Interval{0, n.extent - 1};
            for (const auto& c : n.children) emit(c, depth + 1);
            env_[n.var] = Interval{0, 0};
            out_ << pad << "}\n";
            return;
        }
        case NodeKind::Realize: {
            if (is_argument(n.tensor)) break;
            emit_realize(n, depth);
            return;
        }
        case NodeKind::Store:
            out_ << pad << access(n.tensor, n.indices) << " = " << expr(n.value) << ";\n";
            return;
        default:
            break;
        }
        for (const auto& c : n.children) emit(c, depth);
    }

    void emit_realize(const LoopNode& n, int depth) {
        const std::string pad(static_cast<std::size_t>(depth) * 2, ' ');
        std::int64_t elements = 1;
        for (auto e : n.region_extent) elements *= e;
        const std::string name =
            c_identifier(p_.tensors[n.tensor].name) + "_" + std::to_string(++realizes_);
        const bool on_stack = elements <= kStackBufferLimit;
        out_ << pad << "{\n";
        if (on_stack) {
            out_ << pad << "  float " << name << "[" << elements
                 << "] __attribute__((aligned(64)));\n";
        } else {
            const std::int64_t bytes = (elements * 4 + 63) / 64 * 64;
            out_ << pad << "  float* restrict " << name << " = aligned_alloc(64, " << bytes
                 << ");\n";
        }
        Buffer saved = buffers_.count(n.tensor) ? buffers_[n.tensor] : Buffer{};
        buffers_[n.tensor] = Buffer{name, n.region_min, n.region_extent};
        for (const auto& c : n.children) emit(c, depth + 1);
        buffers_[n.tensor] = saved;
        if (!on_stack) out_ << pad << "  free(" << name << ");\n";
        out_ << pad << "}\n";
    }

    std::string var_name(int id, const std::string& name) {
        return c_identifier(name) + "_v" + std::to_string(id);
    }

    std::string access(int t, const std::vector<Expr>& idx) {
        const Buffer& b = buffers_.at(t);
        std::string flat;
        for (std::size_t d = 0; d < idx.size(); ++d) {
            std::string i = expr(idx[d]);
            if (!b.min.empty() && !(b.min[d]->is_int_imm(0)))
                i = "(" + i + " - " + expr(b.min[d]) + ")";
            if (flat.empty())
                flat = i;
            else
                flat = "(" + flat + ") * " + std::to_string(b.extent[d]) + " + " + i;
        }
        return b.name + "[" + (flat.empty() ? "0" : flat) + "]";
    }

    static std::string float_literal(double v) {
        if (std::isinf(v)) return v > 0 ? "INFINITY" : "(-INFINITY)";
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.9g", v);
        std::string s = buf;
        if (s.find_first_of(".eE") == std::string::npos) s += ".0";
        return "(" + s + "f)";
    }

    std::string expr(const Expr& e) {
        auto a = [&](int i) { return expr(e->args[i]); };
        switch (e->kind) {
        case ExprKind::IntImm:
            return std::to_string(e->int_value);
        case ExprKind::FloatImm:
            return float_literal(e->float_value);
        case ExprKind::Var:
            return var_name(static_cast<int>(e->int_value), e->name);
        case ExprKind::Load:
            return access(static_cast<int>(e->int_value), e->args);
        case ExprKind::Cast:
            return "((float)" + a(0) + ")";
        case ExprKind::Add:
            return "(" + a(0) + " + " + a(1) + ")";
        case ExprKind::Sub:
            return "(" + a(0) + " - " + a(1) + ")";
        case ExprKind::Mul:
            return "(" + a(0) + " * " + a(1) + ")";
        case ExprKind::Div:
            return "(" + a(0) + " / " + a(1) + ")";
        case ExprKind::FloorDiv:
        case ExprKind::FloorMod: {
            const bool plain = bound_of(*e->args[0], env_).lo >= 0 && e->args[1]->is_int_imm() &&
                               e->args[1]->int_value > 0;
            if (plain)
                return "(" + a(0) + (e->kind == ExprKind::FloorDiv ? " / " : " % ") + a(1) + ")";
            return std::string(e->kind == ExprKind::FloorDiv ? "tempo_floordiv("
                                                             : "tempo_floormod(") +
                   a(0) + ", " + a(1) + ")";
        }
        case ExprKind::Min:
        case ExprKind::Max: {
            const bool f = e->dtype == DType::Float32;
            const char* fn = e->kind == ExprKind::Min ? (f ? "tempo_minf(" : "tempo_min(")
                                                      : (f ? "tempo_maxf(" : "tempo_max(");
            return fn + a(0) + ", " + a(1) + ")";
        }
        case ExprKind::EQ:
            return "(" + a(0) + " == " + a(1) + ")";
        case ExprKind::NE:
            return "(" + a(0) + " != " + a(1) + ")";
        case ExprKind::LT:
            return "(" + a(0) + " < " + a(1) + ")";
        case ExprKind::LE:
            return "(" + a(0) + " <= " + a(1) + ")";
        case ExprKind::GT:
            return "(" + a(0) + " > " + a(1) + ")";
        case ExprKind::GE:
            return "(" + a(0) + " >= " + a(1) + ")";
        case ExprKind::And:
            return "(" + a(0) + " && " + a(1) + ")";
        case ExprKind::Or:
            return "(" + a(0) + " || " + a(1) + ")";
        case ExprKind::Not:
            return "(!" + a(0) + ")";
        case ExprKind::Select:
        case ExprKind::IfThenElse:
            return "(" + a(0) + " ? " + a(1) + " : " + a(2) + ")";
        case ExprKind::Call:
            switch (e->fn) {
            case MathFn::Exp:
                return "expf(" + a(0) + ")";
            case MathFn::Tanh:
                return "tanhf(" + a(0) + ")";
            case MathFn::Erf:
                return "erff(" + a(0) + ")";
            case MathFn::Sqrt:
                return "sqrtf(" + a(0) + ")";
            case MathFn::Rsqrt:
                return "(1.0f / sqrtf(" + a(0) + "))";
            }
        }
        throw Error("codegen", "unsupported expression");
    }

    const LoweredProgram& p_;
    std::string symbol_;
    CodegenOptions options_;
    std::ostringstream out_;
    std::map<int, Buffer> buffers_;
    std::vector<int> arguments_;
    std::vector<Interval> env_;
    std::set<const LoopNode*> unrolled_;
    int realizes_ = 0;
};

// One C translation unit holding every (symbol, program) pair.
inline std::string
emit_c(const std::vector<std::pair<std::string, const LoweredProgram*>>& programs,
       CodegenOptions options = {}) {
    std::string src = c_prelude();
    for (const auto& [symbol, program] : programs)
        src += CEmitter(*program, symbol, options).function() + "\n";
    return src;
}

} // namespace tempo::loopnest
