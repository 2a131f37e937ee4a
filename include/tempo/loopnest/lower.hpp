// Lowering a scheduled ComputeDag to a loop tree, the way TVM's ScheduleOps builds TIR:
// - root stages nest as realize_scope attr → realize → {stage nest; later stages};
// - a stage computed at a consumer's loop is inserted the same way inside that loop, over the
//   region the consumer reads there (bound inference on linear index forms);
// - a reduction's init store sits after the loops before its first reduce loop, over copies of
//   the remaining spatial loops; extent-1 loops are not emitted (their var is 0);
// - fused loops decode their parts with floordiv/floormod; the unroll pragma wraps the body
//   of the stage's first loop.
#pragma once

#include "tempo/loopnest/analysis.hpp"
#include "tempo/loopnest/bounds.hpp"
#include "tempo/loopnest/iterators.hpp"
#include "tempo/loopnest/linear.hpp"
#include "tempo/loopnest/loop_tree.hpp"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace tempo::loopnest {

// Loops of a stage after fusion: which iterators each covers (outer to inner) and its kind.
struct LoopPlan {
    int first = 0, last = 0; // iterator range [first, last]
    std::int64_t extent = 1;
    ForKind kind = ForKind::Serial;
};

// Ansor's rules cap the schedule's requests: the parallel loop fuses outer spatial iterators of
// a root stage up to a reduce iterator or an attach point (inclusive); the vectorised loop
// fuses inner spatial iterators without attached stages while their product stays ≤ 16 (only
// the innermost for a tiled stage).
inline std::vector<LoopPlan> plan_loops(const std::vector<Iterator>& its, const StageSchedule& st,
                                        const std::set<int>& attach_iters) {
    const int n = static_cast<int>(its.size());
    int par = 0;
    if (st.attach == Attach::Root) {
        while (par < std::min(st.parallel, n) && !its[par].reduce) {
            ++par;
            if (attach_iters.count(par - 1)) break;
        }
    }
    int vec = 0;
    std::int64_t prod = 1;
    const int max_vec = st.tiled() ? 1 : n;
    while (vec < std::min(st.vectorize, max_vec) && n - 1 - vec >= par) {
        const Iterator& it = its[n - 1 - vec];
        if (it.reduce || attach_iters.count(n - 1 - vec) || prod * it.extent > 16) break;
        prod *= it.extent;
        ++vec;
    }
    std::vector<LoopPlan> plans;
    auto group = [&](int first, int last, ForKind kind) {
        LoopPlan p{first, last, 1, kind};
        for (int i = first; i <= last; ++i) p.extent *= its[i].extent;
        plans.push_back(p);
    };
    if (par > 0) group(0, par - 1, ForKind::Parallel);
    for (int i = par; i < n - vec; ++i) group(i, i, ForKind::Serial);
    if (vec > 0) group(n - vec, n - 1, ForKind::Vectorized);
    return plans;
}

class Lowerer {
public:
    Lowerer(const ComputeDag& task_dag, const Schedule& sch)
        : dag_(scheduled_dag(task_dag, sch)), sch_(sch) {
        if (sch.stages.size() != dag_.stages.size())
            throw Error("lower", "schedule has " + std::to_string(sch.stages.size()) +
                                     " stages, the DAG " + std::to_string(dag_.stages.size()));
        std::vector<bool> inlined;
        for (const auto& st : sch.stages) inlined.push_back(st.attach == Attach::Inline);
        dag_ = inline_stages(std::move(dag_), inlined);
        next_var_ = dag_.next_var;
    }

    LoweredProgram run() {
        LoweredProgram prog;
        prog.tensors = dag_.tensors;
        prog.inputs = dag_.inputs;
        prog.output = dag_.output();
        std::vector<int> roots;
        for (std::size_t s = 0; s < dag_.stages.size(); ++s)
            if (sch_.stages[s].attach == Attach::Root) roots.push_back(static_cast<int>(s));
        LoopNode body{NodeKind::Seq};
        for (auto it = roots.rbegin(); it != roots.rend(); ++it) {
            Region full;
            for (const IterVar& a : dag_.stages[*it].axes) {
                full.base.emplace_back();
                full.extents.push_back(a.extent);
            }
            body = pipeline(*it, full, std::move(body));
        }
        prog.root.children.push_back(std::move(body));
        return prog;
    }

    const ComputeDag& dag() const { return dag_; }

private:
    struct Region {
        std::vector<Linear> base;          // per spatial axis: first index computed
        std::vector<std::int64_t> extents; // per spatial axis: how many
    };
    struct Term {
        bool reduce;
        int axis;
        Expr atom;
        std::int64_t coef;
    };
    struct LoadRecord {
        int tensor;
        std::vector<Linear> index;
    };
    struct Frame { // one stage being lowered
        int stage;
        std::vector<Iterator> its;
        std::vector<LoopPlan> loops;
        std::vector<int> vars; // per loop, -1 if extent 1
        std::vector<std::vector<Term>> terms;
        std::vector<Linear> region_base; // spatial axis values before the stage's own loops
        std::vector<Linear> axis_value, reduce_value;
        std::vector<LoadRecord> loads;
        Expr store_value;
        std::vector<Expr> store_index;
        int common = 0; // loops before the first reduce loop
    };

    int new_var() { return next_var_++; }

    std::vector<Term> loop_terms(const Frame& f, const LoopPlan& lp, const Expr& v) const {
        std::vector<Term> out;
        std::int64_t inner = lp.extent;
        bool outermost = true; // no non-trivial part outside: no floormod needed
        for (int i = lp.first; i <= lp.last; ++i) {
            const Iterator& it = f.its[i];
            inner /= it.extent;
            if (it.extent == 1) continue;
            Expr part = v;
            if (inner > 1) part = floordiv(part, inner);
            if (!outermost) part = floormod(part, it.extent);
            outermost = false;
            out.push_back(Term{it.reduce, it.axis, part, it.stride});
        }
        return out;
    }

    Expr lower_value(Frame& f, const Expr& e) {
        const Stage& st = dag_.stages[f.stage];
        auto value_of = [&](int v) -> const Linear* {
            for (std::size_t d = 0; d < st.axes.size(); ++d)
                if (st.axes[d].var == v) return &f.axis_value[d];
            for (std::size_t r = 0; r < st.reduce_axes.size(); ++r)
                if (st.reduce_axes[r].var == v) return &f.reduce_value[r];
            return nullptr;
        };
        if (e->dtype == DType::Int32) return linearize(e, value_of).to_expr();
        if (e->kind == ExprKind::Load) {
            LoadRecord rec{static_cast<int>(e->int_value), {}};
            std::vector<Expr> idx;
            for (const Expr& i : e->args) {
                rec.index.push_back(linearize(i, value_of));
                idx.push_back(rec.index.back().to_expr());
            }
            f.loads.push_back(std::move(rec));
            return load(static_cast<int>(e->int_value), std::move(idx));
        }
        if (e->args.empty()) return e;
        std::vector<Expr> args;
        for (const Expr& a : e->args) args.push_back(lower_value(f, a));
        if (e->is_binary()) return binary(e->kind, args[0], args[1]);
        auto n = std::make_shared<ExprNode>(*e);
        n->args = std::move(args);
        return n;
    }

    Frame make_frame(int s, const Region& region) {
        Frame f;
        f.stage = s;
        const Stage& st = dag_.stages[s];
        f.its = stage_iterators(dag_, sch_, s, region.extents);
        std::set<int> attach_iters;
        for (std::size_t p = 0; p < sch_.stages.size(); ++p)
            if (sch_.stages[p].attach == Attach::At && sch_.stages[p].attach_stage == s)
                attach_iters.insert(sch_.stages[p].attach_iter);
        f.loops = plan_loops(f.its, sch_.stages[s], attach_iters);
        f.region_base = region.base;
        f.axis_value = region.base;
        f.reduce_value.assign(st.reduce_axes.size(), Linear{});
        f.common = static_cast<int>(f.loops.size());
        for (std::size_t l = 0; l < f.loops.size(); ++l) {
            const LoopPlan& lp = f.loops[l];
            int v = lp.extent > 1 ? new_var() : -1;
            f.vars.push_back(v);
            f.terms.push_back(v >= 0 ? loop_terms(f, lp, var(v, loop_name(f, lp)))
                                     : std::vector<Term>{});
            for (const Term& t : f.terms.back())
                (t.reduce ? f.reduce_value[t.axis] : f.axis_value[t.axis]).add(t.atom, t.coef);
            bool has_reduce = false;
            for (int i = lp.first; i <= lp.last; ++i) has_reduce |= f.its[i].reduce;
            if (has_reduce && f.common == static_cast<int>(f.loops.size()))
                f.common = static_cast<int>(l);
        }
        for (const Linear& a : f.axis_value) f.store_index.push_back(a.to_expr());
        Expr value = lower_value(f, st.body);
        if (st.is_reduction()) {
            Expr acc = load(st.output, f.store_index);
            value = st.reduce == Reduce::Sum ? acc + value : max(acc, value);
        }
        f.store_value = value;
        return f;
    }

    std::string loop_name(const Frame& f, const LoopPlan& lp) const {
        const Stage& st = dag_.stages[f.stage];
        std::string name;
        for (int i = lp.first; i <= lp.last; ++i) {
            const Iterator& it = f.its[i];
            if (!name.empty()) name += "_";
            name += it.reduce ? st.reduce_axes[it.axis].name : st.axes[it.axis].name;
            name += "_" + std::to_string(i);
        }
        return name + (lp.last > lp.first ? "_fused" : "");
    }

    LoopNode pipeline(int s, const Region& region, LoopNode rest) {
        LoopNode seq{NodeKind::Seq};
        seq.children.push_back(nest(s, region));
        if (!rest.children.empty() || rest.kind != NodeKind::Seq)
            seq.children.push_back(std::move(rest));
        LoopNode realize{NodeKind::Realize};
        realize.tensor = dag_.stages[s].output;
        for (std::size_t d = 0; d < region.base.size(); ++d)
            realize.region_min.push_back(region.base[d].to_expr());
        realize.region_extent = region.extents;
        realize.children.push_back(std::move(seq));
        LoopNode attr = make_attr(kRealizeScope, 0, dag_.stages[s].output);
        attr.children.push_back(std::move(realize));
        return attr;
    }

    LoopNode nest(int s, const Region& region) {
        Frame f = make_frame(s, region);
        return build(f, 0);
    }

    LoopNode build(Frame& f, int li) {
        const Stage& st = dag_.stages[f.stage];
        if (st.is_reduction() && li == f.common) {
            LoopNode seq{NodeKind::Seq};
            seq.children.push_back(init_nest(f, li));
            seq.children.push_back(loop_at(f, li));
            return seq;
        }
        return loop_at(f, li);
    }

    LoopNode loop_at(Frame& f, int li) {
        if (li == static_cast<int>(f.loops.size()))
            return make_store(dag_.stages[f.stage].output, f.store_index, f.store_value);
        const LoopPlan& lp = f.loops[li];
        if (f.vars[li] >= 0) enclosing_.push_back(f.vars[li]);
        LoopNode body = build(f, li + 1);
        // Producers computed at this loop, earlier stages outermost.
        for (int p = static_cast<int>(sch_.stages.size()) - 1; p >= 0; --p) {
            const StageSchedule& ps = sch_.stages[p];
            if (ps.attach != Attach::At || ps.attach_stage != f.stage) continue;
            if (ps.attach_iter < lp.first || ps.attach_iter > lp.last) continue;
            body = pipeline(p, infer_region(f, li, p), std::move(body));
        }
        if (li == 0 && sch_.stages[f.stage].auto_unroll >= 0) {
            LoopNode attr = make_attr(kPragmaAutoUnroll, sch_.stages[f.stage].auto_unroll);
            attr.children.push_back(std::move(body));
            body = std::move(attr);
        }
        if (f.vars[li] < 0) return body;
        enclosing_.pop_back();
        LoopNode loop = make_for(f.vars[li], loop_name(f, lp), lp.extent, lp.kind);
        loop.children.push_back(std::move(body));
        return loop;
    }

    // The init store of a reduction, under copies of the spatial loops from `li` on.
    LoopNode init_nest(Frame& f, int li) {
        const Stage& st = dag_.stages[f.stage];
        std::vector<Linear> axis = base_axis_value(f, li);
        std::vector<LoopNode> loops;
        for (std::size_t l = li; l < f.loops.size(); ++l) {
            const LoopPlan& lp = f.loops[l];
            bool spatial = true;
            for (int i = lp.first; i <= lp.last; ++i) spatial &= !f.its[i].reduce;
            if (!spatial || lp.extent == 1) continue;
            int v = new_var();
            for (const Term& t : loop_terms(f, lp, var(v, loop_name(f, lp) + "_init")))
                axis[t.axis].add(t.atom, t.coef);
            loops.push_back(make_for(v, loop_name(f, lp) + "_init", lp.extent, lp.kind));
        }
        std::vector<Expr> idx;
        for (const Linear& a : axis) idx.push_back(a.to_expr());
        LoopNode node = make_store(st.output, idx, float_imm(st.init_value()));
        for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
            it->children.push_back(std::move(node));
            node = std::move(*it);
        }
        return node;
    }

    // Spatial axis values from the region base and the loops before `li`.
    std::vector<Linear> base_axis_value(const Frame& f, int li) const {
        std::vector<Linear> axis = f.region_base;
        for (int l = 0; l < li; ++l)
            for (const Term& t : f.terms[l])
                if (!t.reduce) axis[t.axis].add(t.atom, t.coef);
        return axis;
    }

    // The region of `producer` that frame f reads inside its loop li: terms of loops at or
    // outside li give the base, inner loops the extent. A dimension whose index mixes both,
    // or whose fixed parts differ between reads, is computed whole.
    Region infer_region(const Frame& f, int li, int producer) {
        const Stage& ps = dag_.stages[producer];
        const auto& shape = dag_.tensors[ps.output].shape;
        std::set<int> free;
        std::vector<Interval> env(static_cast<std::size_t>(next_var_), Interval{});
        for (std::size_t l = li + 1; l < f.loops.size(); ++l) {
            if (f.vars[l] < 0) continue;
            free.insert(f.vars[l]);
            env[f.vars[l]] = Interval{0, f.loops[l].extent - 1};
        }
        auto var_set = [](const Expr& e, std::vector<int>& out) {
            visit_preorder(e, [&](const ExprNode& n) {
                if (n.kind == ExprKind::Var) out.push_back(static_cast<int>(n.int_value));
            });
        };
        Region r;
        for (std::size_t d = 0; d < shape.size(); ++d) {
            bool ok = true, seen = false;
            Linear fixed_ref;
            std::int64_t lo = 0, hi = 0;
            for (const LoadRecord& rec : f.loads) {
                if (rec.tensor != ps.output) continue;
                Linear fixed;
                std::int64_t flo = rec.index[d].constant, fhi = flo;
                for (const LinearTerm& t : rec.index[d].terms) {
                    if (t.coef == 0) continue;
                    std::vector<int> vars;
                    var_set(t.atom, vars);
                    int n_free = 0;
                    for (int v : vars) n_free += free.count(v) ? 1 : 0;
                    if (n_free == 0) {
                        fixed.add(t.atom, t.coef);
                    } else if (n_free == static_cast<int>(vars.size())) {
                        Interval b = bound_of(*t.atom, env);
                        flo += std::min(b.lo * t.coef, b.hi * t.coef);
                        fhi += std::max(b.lo * t.coef, b.hi * t.coef);
                    } else {
                        ok = false;
                    }
                }
                if (seen && !same_terms(fixed, fixed_ref)) ok = false;
                lo = seen ? std::min(lo, flo) : flo;
                hi = seen ? std::max(hi, fhi) : fhi;
                fixed_ref = std::move(fixed);
                seen = true;
            }
            if (!ok || !seen) {
                r.base.emplace_back();
                r.extents.push_back(shape[d]);
            } else {
                fixed_ref.constant += lo;
                r.base.push_back(std::move(fixed_ref));
                r.extents.push_back(hi - lo + 1);
            }
        }
        const int levels = fused_levels(sch_, producer);
        if (levels > 0) {
            const auto& tiles = sch_.stages[producer].tiles;
            for (std::size_t d = 0; d < shape.size(); ++d)
                if (r.extents[d] != product(tiles[d], levels))
                    throw Error("lower " + ps.name,
                                "fused tile does not match its consumer's loops");
        }
        return r;
    }

    static bool same_terms(const Linear& a, const Linear& b) {
        if (a.terms.size() != b.terms.size()) return false;
        for (std::size_t i = 0; i < a.terms.size(); ++i)
            if (a.terms[i].coef != b.terms[i].coef ||
                !Linear::same_atom(a.terms[i].atom, b.terms[i].atom))
                return false;
        return true;
    }

    ComputeDag dag_;
    const Schedule& sch_;
    int next_var_ = 0;
    std::vector<int> enclosing_;
};

} // namespace tempo::loopnest
