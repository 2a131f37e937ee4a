// Static analysis of a ComputeDag in the manner of Ansor's AccessAnalyzer: which stages need
// multi-level tiling, which are strictly inlineable, which consumers match element-wise, and
// the FLOP count of the task (TVM's FlopEstimator: float ops only, loads free).
#pragma once

#include "tempo/loopnest/compute.hpp"

#include <algorithm>
#include <vector>

namespace tempo::loopnest {

// Tiling is needed when ≥ 2 read tensors miss some spatial axis (extent > 1), or ≥ 1 does and
// the stage reduces (conv, dense, matmul; not pooling, softmax or means).
inline bool needs_multi_level_tiling(const ComputeDag& dag, int s) {
    const Stage& st = dag.stages[s];
    int missing = 0;
    for (int t : dag.reads_of(s)) {
        bool misses = false;
        for (const IterVar& a : st.axes) {
            if (a.extent <= 1) continue;
            bool used = false;
            visit_preorder(st.body, [&](const ExprNode& n) {
                if (n.kind == ExprKind::Load && n.int_value == t)
                    for (const Expr& i : n.args) used |= uses_var(i, a.var);
            });
            misses |= !used;
        }
        missing += misses;
    }
    return missing >= 2 || (missing >= 1 && st.is_reduction());
}

// No reduction, no branch, no expensive call, and every read indexes with plain axis vars or
// constants in axis order (bias[c], x[n,h,w,c]); the output stage is never inlined.
inline bool strictly_inlineable(const ComputeDag& dag, int s) {
    const Stage& st = dag.stages[s];
    if (st.is_reduction() || s + 1 == static_cast<int>(dag.stages.size())) return false;
    bool ok = true;
    visit_preorder(st.body, [&](const ExprNode& n) {
        if (n.kind == ExprKind::Select || n.kind == ExprKind::IfThenElse ||
            n.kind == ExprKind::Call)
            ok = false;
        if (n.kind == ExprKind::Load) {
            int last_axis = -1;
            for (const Expr& i : n.args) {
                if (i->kind == ExprKind::IntImm) continue;
                if (i->kind != ExprKind::Var) {
                    ok = false;
                    continue;
                }
                auto it = std::find_if(st.axes.begin(), st.axes.end(),
                                       [&](const IterVar& a) { return a.var == i->int_value; });
                int pos = static_cast<int>(it - st.axes.begin());
                if (it == st.axes.end() || pos <= last_axis) ok = false;
                last_axis = pos;
            }
        }
    });
    return ok;
}

// Consumer c reads producer p's output only as p[c's axes…] and both have the same shape.
inline bool elementwise_match(const ComputeDag& dag, int p, int c) {
    const Stage& ps = dag.stages[p];
    const Stage& cs = dag.stages[c];
    if (ps.axes.size() != cs.axes.size() || cs.is_reduction()) return false;
    for (std::size_t d = 0; d < ps.axes.size(); ++d)
        if (ps.axes[d].extent != cs.axes[d].extent) return false;
    bool ok = true;
    visit_preorder(cs.body, [&](const ExprNode& n) {
        if (n.kind != ExprKind::Load || n.int_value != ps.output) return;
        for (std::size_t d = 0; d < n.args.size(); ++d)
            ok &= n.args[d]->kind == ExprKind::Var && n.args[d]->int_value == cs.axes[d].var;
    });
    return ok;
}

// The DAG with the bodies of stages marked in `inlined` substituted into their readers (the
// inlined stages stay in the list; nothing reads them any more).
inline ComputeDag inline_stages(ComputeDag dag, const std::vector<bool>& inlined) {
    for (std::size_t s = 0; s < dag.stages.size(); ++s) {
        if (!inlined[s]) continue;
        const Stage producer = dag.stages[s];
        for (std::size_t c = s + 1; c < dag.stages.size(); ++c) {
            dag.stages[c].body = substitute_loads(
                dag.stages[c].body, [&](int t, const std::vector<Expr>& idx) -> Expr {
                    if (t != producer.output) return nullptr;
                    return substitute(producer.body, [&](int v) -> Expr {
                        for (std::size_t d = 0; d < producer.axes.size(); ++d)
                            if (producer.axes[d].var == v) return idx[d];
                        return nullptr;
                    });
                });
        }
    }
    return dag;
}

namespace analysis_detail {
inline double float_ops(const ExprNode& e) {
    if (e.kind == ExprKind::Load || e.args.empty()) return 0;
    if (e.kind == ExprKind::Select || e.kind == ExprKind::IfThenElse)
        return float_ops(*e.args[0]) + std::max(float_ops(*e.args[1]), float_ops(*e.args[2]));
    double sum = 0;
    for (const Expr& a : e.args) sum += float_ops(*a);
    const bool counted =
        e.kind == ExprKind::Call || (e.is_binary() && e.args[0]->dtype == DType::Float32);
    return sum + (counted ? 1.0 : 0.0);
}
} // namespace analysis_detail

inline double flop_count(const ComputeDag& dag) {
    double total = 0;
    for (const Stage& s : dag.stages) {
        double points = 1, reduce = 1;
        for (const IterVar& a : s.axes) points *= static_cast<double>(a.extent);
        for (const IterVar& a : s.reduce_axes) reduce *= static_cast<double>(a.extent);
        const double combine = s.is_reduction() ? 1.0 : 0.0;
        total += points * reduce * (analysis_detail::float_ops(*s.body) + combine);
    }
    return total;
}

} // namespace tempo::loopnest
