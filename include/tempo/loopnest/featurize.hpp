// Ansor's 164 per-store features in the Tenset dialect (+ tempo's optional loop extension), and
// CDMPP's compact AST (one feature row per buffer store, pre-order node ids, the -1-closed tree
// serialization). The procedure follows the feature specification (ansor_features.md, sections
// 1, 2 and 4) step by step, quirks included, because trained models expect exactly these
// numbers.
//
// Choices where Tenset depends on hash-map order (spec section 6): slots that tie on all sort
// keys keep access order (the stored buffer, then loads in pre-order), and unique_lines uses
// the stored buffer's level-0 region for every buffer.
#pragma once

#include "tempo/loopnest/bounds.hpp"
#include "tempo/loopnest/loop_tree.hpp"
#include "tempo/loopnest/unroll.hpp"
#include "tempo/program/compact_ast.hpp"
#include "tempo/program/feature_set.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

namespace tempo::loopnest {

inline constexpr std::size_t kFeatureDim = kAnsorFeatureDim;
inline constexpr double kCacheLineBytes = 64.0;
inline constexpr int kMaxBufferSlots = 5;

inline double slog(double x) {
    return x < 0 ? -std::log2(-x + 1.0) : std::log2(x + 1.0);
}

// Ansor's syntactic "coefficient" of var v in an index expression (spec 2.2): flags shared
// across the whole post-order walk, magic default 2.
struct CoefficientWalk {
    int v;
    bool vv = false, vm = false, va = false;
    std::int64_t c = 0;
    void visit(const ExprNode& e) {
        if (e.kind == ExprKind::Var) {
            if (e.int_value == v) vv = true, c = 2;
            return;
        }
        for (const Expr& a : e.args) visit(*a);
        if (e.kind == ExprKind::Mul && vv && !va) {
            if (e.args[0]->is_int_imm())
                vm = true, c = e.args[0]->int_value;
            else if (e.args[1]->is_int_imm())
                vm = true, c = e.args[1]->int_value;
        } else if (e.kind == ExprKind::Add && vv && !vm) {
            va = true, c = 1;
        }
    }
    std::int64_t result() const { return vv && !vm && !va ? 1 : c; }
};

namespace feature_detail {

enum Acc : std::uint8_t { kRead = 0, kWrite = 1, kReadWrite = 2 };
enum ReuseType : std::uint8_t { kLoopMultipleRead = 0, kSerialMultipleReadWrite = 1, kNoReuse = 2 };

struct Touch {
    int tensor;
    Acc acc;
    double size; // elements
};

struct Access {
    int tensor;
    Acc acc;
    std::vector<const std::vector<Expr>*> tuples;
};

struct BufferFeature {
    Acc acc;
    double bytes, unique_bytes, lines, unique_lines;
    ReuseType reuse;
    double dis_iter, dis_bytes, ct, stride;
};

// Op counters in Ansor's group-1 order: float x7, int x7, bool, select.
using OpCounts = std::array<double, 16>;
enum OpSlot { kMad = 0, kAddSub, kMul, kDivMod, kCmp, kMathFunc, kOtherFunc };
inline constexpr int kIntBase = 7, kBoolOp = 14, kSelectOp = 15;

inline void count_ops(const ExprNode& e, OpCounts& c) {
    for (const Expr& a : e.args) count_ops(*a, c);
    const int base = (!e.args.empty() && e.args[0]->dtype == DType::Float32) ? 0 : kIntBase;
    switch (e.kind) {
    case ExprKind::Add:
    case ExprKind::Sub:
        c[base + kAddSub] += 1;
        break;
    case ExprKind::Mul:
        c[base + kMul] += 1;
        break;
    case ExprKind::Div:
    case ExprKind::FloorDiv:
    case ExprKind::FloorMod:
        c[base + kDivMod] += 1;
        break;
    case ExprKind::Min:
    case ExprKind::Max:
    case ExprKind::EQ:
    case ExprKind::NE:
    case ExprKind::LT:
    case ExprKind::LE:
    case ExprKind::GT:
    case ExprKind::GE:
        c[base + kCmp] += 1;
        break;
    case ExprKind::And:
    case ExprKind::Or:
    case ExprKind::Not:
        c[kBoolOp] += 1;
        break;
    case ExprKind::Select:
        c[kSelectOp] += 1;
        break;
    case ExprKind::IfThenElse:
    case ExprKind::Call:
        c[(e.dtype == DType::Float32 ? 0 : kIntBase) + kMathFunc] += 1;
        break;
    default:
        break;
    }
}

inline void collect_accesses(const ExprNode& e, std::vector<Access>& acc) {
    if (e.kind == ExprKind::Load) {
        const int t = static_cast<int>(e.int_value);
        auto it =
            std::find_if(acc.begin(), acc.end(), [&](const Access& a) { return a.tensor == t; });
        if (it == acc.end())
            acc.push_back(Access{t, kRead, {&e.args}});
        else if (it->acc == kWrite)
            it->acc = kReadWrite;
        else if (it->acc == kRead)
            it->tuples.push_back(&e.args);
    }
    for (const Expr& a : e.args) collect_accesses(*a, acc);
}

} // namespace feature_detail

// Walks a lowered program once and produces its compact AST.
class Featurizer {
public:
    explicit Featurizer(const LoweredProgram& program, FeatureSet set = FeatureSet::ansor)
        : prog_(program), set_(set) {
        if (set_ == FeatureSet::ansor_loops) unrolled_ = auto_unrolled_loops(prog_.root);
    }

    CompactAst run() {
        ast_ = CompactAst{};
        ast_.feature_dim = feature_dim(set_);
        next_id_ = 0;
        touch_.clear();
        visit(prog_.root);
        return std::move(ast_);
    }

private:
    struct LoopFrame {
        const LoopNode* node;
        std::size_t serial; // index into touch_
    };

    // An index expression as the sum of its top-level terms (Add/Sub chain): terms over one
    // loop var carry their interval with that var fixed at 0 and ranging; the rest is either a
    // constant interval or, for terms over several vars, evaluated whole at each level.
    struct VarTerm {
        int var;
        Interval fixed, ranging;
    };
    struct IndexBound {
        Interval constant{0, 0};
        std::vector<VarTerm> terms;
        std::vector<std::pair<const ExprNode*, bool>> general; // (term, negated)
    };

    IndexBound split_index(const ExprNode& e, std::vector<int>& access_vars) {
        IndexBound b;
        add_terms(e, false, b, access_vars);
        return b;
    }

    void add_terms(const ExprNode& e, bool negate, IndexBound& b, std::vector<int>& access_vars) {
        if (e.kind == ExprKind::Add || e.kind == ExprKind::Sub) {
            add_terms(*e.args[0], negate, b, access_vars);
            add_terms(*e.args[1], e.kind == ExprKind::Sub ? !negate : negate, b, access_vars);
            return;
        }
        vars_.clear();
        collect_vars(e, vars_);
        for (int v : vars_)
            if (std::find(access_vars.begin(), access_vars.end(), v) == access_vars.end())
                access_vars.push_back(v);
        auto signed_bound = [&](Interval x) { return negate ? Interval{-x.hi, -x.lo} : x; };
        auto add = [](Interval& acc, Interval x) { acc.lo += x.lo, acc.hi += x.hi; };
        if (vars_.empty()) {
            add(b.constant, signed_bound(bound_of(e, env_)));
        } else if (vars_.size() == 1 && static_cast<std::size_t>(vars_[0]) < env_.size() &&
                   extent_of_[vars_[0]] > 0) {
            const int v = vars_[0];
            const Interval saved = env_[v];
            env_[v] = Interval{0, 0};
            const Interval fixed = signed_bound(bound_of(e, env_));
            env_[v] = Interval{0, extent_of_[v] - 1};
            const Interval ranging = signed_bound(bound_of(e, env_));
            env_[v] = saved;
            b.terms.push_back(VarTerm{v, fixed, ranging});
        } else {
            b.general.emplace_back(&e, negate);
        }
    }

    static void collect_vars(const ExprNode& e, std::vector<int>& out) {
        if (e.kind == ExprKind::Var) {
            if (std::find(out.begin(), out.end(), e.int_value) == out.end())
                out.push_back(static_cast<int>(e.int_value));
            return;
        }
        for (const Expr& a : e.args) collect_vars(*a, out);
    }

    Interval level_bound(const IndexBound& b) const {
        Interval r = b.constant;
        for (const VarTerm& t : b.terms) {
            const Interval& x = ranging_[t.var] ? t.ranging : t.fixed;
            r.lo += x.lo, r.hi += x.hi;
        }
        for (const auto& [e, negate] : b.general) {
            const Interval x = bound_of(*e, env_);
            r.lo += negate ? -x.hi : x.lo, r.hi += negate ? -x.lo : x.hi;
        }
        return r;
    }

    void visit(const LoopNode& n) {
        const bool has_node = n.kind != NodeKind::Seq;
        std::int32_t id = -1;
        if (has_node) {
            id = next_id_++;
            ast_.tree.push_back(id);
        }
        switch (n.kind) {
        case NodeKind::For: {
            if (static_cast<std::size_t>(n.var) >= env_.size()) {
                env_.resize(static_cast<std::size_t>(n.var) + 1, Interval{});
                ranging_.resize(env_.size(), 0);
                extent_of_.resize(env_.size(), 0);
            }
            extent_of_[n.var] = n.extent;
            loops_.push_back(LoopFrame{&n, touch_.size()});
            touch_.emplace_back();
            for (const auto& c : n.children) visit(c);
            loops_.pop_back();
            break;
        }
        case NodeKind::Attr: {
            const std::int64_t saved = auto_unroll_;
            if (n.attr_key == kPragmaAutoUnroll) auto_unroll_ = n.attr_value;
            for (const auto& c : n.children) visit(c);
            auto_unroll_ = saved;
            break;
        }
        case NodeKind::Store:
            ast_.leaf_ids.push_back(id);
            store_features(n);
            break;
        default:
            for (const auto& c : n.children) visit(c);
        }
        if (has_node) ast_.tree.push_back(-1);
    }

    void store_features(const LoopNode& s);
    void loop_extension(const std::vector<feature_detail::Access>& acc,
                        const std::vector<int>& store_vars, float* out) const;

    // Elements an access moves by when loop var v steps (Ansor's stride: the smallest over
    // the access's index tuples); 0 when v is not in its indices.
    std::int64_t stride_of(const feature_detail::Access& a, int v) const {
        const auto& shape = prog_.tensors[a.tensor].shape;
        std::int64_t best = 0;
        bool found = false;
        for (const auto* tuple : a.tuples) {
            std::int64_t shape_stride = 1;
            for (int d = static_cast<int>(tuple->size()) - 1; d >= 0; --d) {
                CoefficientWalk w{v};
                w.visit(*(*tuple)[d]);
                if (w.vv) {
                    const std::int64_t cand = std::abs(w.result()) * shape_stride;
                    best = found ? std::min(best, cand) : cand;
                    found = true;
                    break;
                }
                shape_stride *= shape[d];
            }
        }
        return found ? best : 0;
    }

    const LoweredProgram& prog_;
    FeatureSet set_;
    std::set<const LoopNode*> unrolled_; // auto-unrolled loops (loop extension only)
    CompactAst ast_;
    std::int32_t next_id_ = 0;
    std::vector<LoopFrame> loops_;
    std::vector<std::vector<feature_detail::Touch>> touch_; // per loop, in visit order
    std::vector<Interval> env_;           // per var: its range at the current level
    std::vector<char> ranging_;           // per var: 1 when its loop ranges at the current level
    std::vector<std::int64_t> extent_of_; // per var: its loop's extent (0: not a loop var)
    std::vector<int> vars_;               // scratch
    std::int64_t auto_unroll_ = 0;
};

inline void Featurizer::store_features(const LoopNode& s) {
    using namespace feature_detail;
    const int n = static_cast<int>(loops_.size());
    const double elem = 4.0; // float32 only
    double P = 1;
    for (const auto& l : loops_) P *= static_cast<double>(l.node->extent);

    OpCounts counts{};
    count_ops(*s.value, counts);
    double flops_per_iter = 0;
    for (int k = 0; k < kIntBase; ++k) flops_per_iter += counts[k];

    std::vector<Access> acc;
    acc.push_back(Access{s.tensor, kWrite, {&s.indices}});
    collect_accesses(*s.value, acc);

    // Touched regions, level by level from the innermost loop outward (spec 1). Each index is
    // split once into its top-level sum of terms; a term over a single loop var has one
    // interval while that loop is fixed and one while it ranges, so a level costs a sum.
    for (const auto& l : loops_) env_[l.node->var] = Interval{0, 0}, ranging_[l.node->var] = 0;
    std::vector<IndexBound> bounds; // per access, tuple, dim (row-major)
    std::vector<std::vector<int>> access_vars(acc.size());
    for (std::size_t ai = 0; ai < acc.size(); ++ai)
        for (const auto* tuple : acc[ai].tuples)
            for (const Expr& e : *tuple) bounds.push_back(split_index(*e, access_vars[ai]));
    std::vector<double> log_k, log_m; // innermost first
    std::vector<std::int64_t> stored_region0;
    double k_prod = flops_per_iter;
    for (int i = n - 1; i >= 0; --i) {
        const LoopNode& loop = *loops_[i].node;
        env_[loop.var] = Interval{0, loop.extent - 1};
        ranging_[loop.var] = 1;
        auto& table = touch_[loops_[i].serial];
        double mem = 0;
        std::size_t bi = 0;
        for (const Access& a : acc) {
            const std::size_t dims = prog_.tensors[a.tensor].shape.size();
            double size = 1;
            for (std::size_t d = 0; d < dims; ++d) {
                std::int64_t lo = 0, hi = 0;
                for (std::size_t t = 0; t < a.tuples.size(); ++t) {
                    Interval b = level_bound(bounds[bi + t * dims + d]);
                    lo = t ? std::min(lo, b.lo) : b.lo;
                    hi = t ? std::max(hi, b.hi) : b.hi;
                }
                size *= static_cast<double>(hi - lo + 1);
                if (i == 0 && a.tensor == s.tensor) stored_region0.push_back(hi - lo + 1);
            }
            bi += a.tuples.size() * dims;
            table.push_back(Touch{a.tensor, a.acc, size});
            mem += size * elem;
        }
        k_prod *= static_cast<double>(loop.extent);
        log_m.push_back(std::log2(mem));
        log_k.push_back(k_prod > 0 ? std::log2(k_prod) : -INFINITY);
    }

    auto var_in_access = [&](std::size_t ai, int v) {
        const auto& vars = access_vars[ai];
        return std::find(vars.begin(), vars.end(), v) != vars.end();
    };

    std::vector<BufferFeature> feats;
    feats.reserve(acc.size());
    for (std::size_t ai = 0; ai < acc.size(); ++ai) {
        const Access& a = acc[ai];
        const auto& shape = prog_.tensors[a.tensor].shape;
        BufferFeature f{};
        f.acc = a.acc;
        f.bytes = P * elem;
        f.unique_bytes = elem;
        if (n > 0) {
            for (const Touch& t : touch_[loops_[0].serial])
                if (t.tensor == a.tensor) {
                    f.unique_bytes = t.size * elem;
                    break;
                }
        }
        // Stride and lines (with the innermost-extent `rr` quirk).
        std::int64_t stride = 0;
        double rr = 1;
        int i = n - 1;
        for (; i >= 0; --i) {
            stride = stride_of(acc[ai], loops_[i].node->var);
            if (stride != 0) break;
            rr *= static_cast<double>(loops_[n - 1].node->extent);
        }
        f.lines = std::max(
            1.0, P / rr * std::min(1.0, static_cast<double>(stride) * elem / kCacheLineBytes));
        f.stride = (i == n - 1) ? static_cast<double>(stride) : 0.0;
        double ncont = elem;
        for (int d = static_cast<int>(std::min(stored_region0.size(), shape.size())) - 1; d >= 0;
             --d) {
            if (stored_region0[d] == shape[d]) {
                ncont *= static_cast<double>(stored_region0[d]);
                break;
            }
        }
        f.unique_lines = std::max(1.0, f.unique_bytes / std::min(ncont, kCacheLineBytes));

        // Reuse (Tenset rule).
        double dis_iter = 1, dis_bytes = -1, ct = 1;
        bool phase_b = false, decided = false;
        for (int li = n - 1; li >= 0 && !decided; --li) {
            const auto& table = touch_[loops_[li].serial];
            const double ext = static_cast<double>(loops_[li].node->extent);
            const bool touches = var_in_access(ai, loops_[li].node->var);
            if (!phase_b) {
                if (touches) {
                    dis_iter *= ext;
                    dis_bytes = 0;
                    for (const Touch& t : table) dis_bytes += t.size * elem;
                } else {
                    if (dis_bytes < 0) dis_bytes = static_cast<double>(table.size()) * elem;
                    phase_b = true;
                    ct *= ext;
                }
            } else {
                if (touches) {
                    f.reuse = kLoopMultipleRead, f.dis_iter = dis_iter, f.dis_bytes = dis_bytes,
                    f.ct = ct, decided = true;
                    break;
                }
                ct *= ext;
            }
            int same = 0;
            double min_size = 0, read_bytes = 0;
            for (const Touch& t : table) {
                if (t.tensor == a.tensor) min_size = same++ ? std::min(min_size, t.size) : t.size;
                if (t.acc == kRead) read_bytes += t.size * elem;
            }
            if (same >= 2) {
                double outer = 1;
                for (int j = 0; j <= li; ++j) outer *= static_cast<double>(loops_[j].node->extent);
                f.reuse = kSerialMultipleReadWrite, f.dis_iter = min_size / ext,
                f.dis_bytes = read_bytes / ext, f.ct = outer, decided = true;
            }
        }
        if (!decided) {
            if (phase_b)
                f.reuse = kLoopMultipleRead, f.dis_iter = dis_iter, f.dis_bytes = dis_bytes,
                f.ct = ct;
            else
                f.reuse = kNoReuse, f.dis_iter = 0, f.dis_bytes = 0, f.ct = 0;
        }
        feats.push_back(f);
    }
    std::stable_sort(feats.begin(), feats.end(),
                     [](const BufferFeature& x, const BufferFeature& y) {
                         if (x.dis_bytes != y.dis_bytes) return x.dis_bytes < y.dis_bytes;
                         if (x.unique_bytes != y.unique_bytes)
                             return x.unique_bytes < y.unique_bytes;
                         if (x.unique_lines != y.unique_lines)
                             return x.unique_lines < y.unique_lines;
                         return x.acc < y.acc;
                     });

    // Encoding.
    const std::size_t row = ast_.features.size();
    ast_.features.resize(row + ast_.feature_dim, 0.0f);
    float* out = ast_.features.data() + row;
    auto put = [&](int idx, double v) { out[idx] = static_cast<float>(v); };
    for (int k = 0; k < 16; ++k)
        if (k != kMad && k != kIntBase + kMad) put(k, slog(counts[k] * P));
    int base = 16;
    for (ForKind kind : {ForKind::Vectorized, ForKind::Unrolled, ForKind::Parallel}) {
        int num = 0;
        double prod = 1, len = 0;
        for (const auto& l : loops_)
            if (l.node->for_kind == kind) ++num, prod *= l.node->extent, len = l.node->extent;
        put(base, slog(num));
        put(base + 1, num ? slog(prod) : 0.0);
        put(base + 2, num ? slog(len) : 0.0);
        put(base + 3 + (num ? 7 : 0), 1.0); // kPosMixed when annotated, else kPosNone
        base += 11;
    }
    for (int k = 50; k <= 56; ++k) put(k, 1.0); // CPU: thread lengths default to 1 → slog 1
    for (std::size_t slot = 0; slot < feats.size() && slot < kMaxBufferSlots; ++slot) {
        const BufferFeature& f = feats[slot];
        const int o = 57 + 18 * static_cast<int>(slot);
        put(o + f.acc, 1.0);
        put(o + 3, slog(f.bytes));
        put(o + 4, slog(f.unique_bytes));
        put(o + 5, slog(f.lines));
        put(o + 6, slog(f.unique_lines));
        put(o + 7 + f.reuse, 1.0);
        put(o + 10, slog(f.dis_iter));
        put(o + 11, slog(f.dis_bytes));
        put(o + 12, slog(f.ct));
        const double xs[4] = {f.bytes, f.unique_bytes, f.lines, f.unique_lines};
        for (int k = 0; k < 4; ++k) put(o + 13 + k, slog(f.ct > 0.5 ? xs[k] / f.ct : xs[k] * 2));
        put(o + 17, slog(f.stride));
    }
    if (flops_per_iter > 0 && n > 0) {
        std::size_t pt = 0;
        const double c_last = log_k.back();
        for (int s_i = 0; s_i < 10; ++s_i) {
            const double x = c_last * (s_i + 1) / 10.0;
            while (log_k[pt] < x - 1e-4) ++pt;
            double v;
            if (pt == 0) {
                v = log_k[0] / log_m[0];
            } else {
                const double r0 = log_k[pt - 1] / log_m[pt - 1], r1 = log_k[pt] / log_m[pt];
                v = r0 + (r1 - r0) / (log_k[pt] - log_k[pt - 1]) * (x - log_k[pt - 1]);
            }
            put(147 + s_i, v);
        }
    }
    put(161, slog(P));
    put(162, slog(n));
    put(163, slog(static_cast<double>(auto_unroll_)));
    if (set_ == FeatureSet::ansor_loops)
        loop_extension(acc, access_vars.front(), out + kFeatureDim);
}

// tempo's loop extension (FeatureSet::ansor_loops, after Ansor's 164 columns). Ansor's
// features describe TVM's explicit vectorisation; here gcc -O3 compiles the C and vectorises
// (or not) the loops the schedule leaves plain, so the extension describes the two loops gcc's
// vectoriser sees: the store's innermost loop, and its innermost loop that stays a loop after
// unrolling. Per loop, 4 columns: slog(extent); 1 when the store's indices do not use it (a
// reduction: gcc does not vectorise float reductions without -ffast-math); 1 when every
// access moves by 0 or 1 element with it; slog(number of accesses that move by more). Then
// 2 flags: the innermost loop is vectorised; it is unrolled (by the schedule or auto-unroll).
inline void Featurizer::loop_extension(const std::vector<feature_detail::Access>& acc,
                                       const std::vector<int>& store_vars, float* out) const {
    const auto describe = [&](const LoopNode& loop, float* o) {
        int strided = 0;
        for (const auto& a : acc) strided += stride_of(a, loop.var) > 1;
        o[0] = static_cast<float>(slog(static_cast<double>(loop.extent)));
        o[1] = std::find(store_vars.begin(), store_vars.end(), loop.var) == store_vars.end();
        o[2] = strided == 0;
        o[3] = static_cast<float>(slog(strided));
    };
    const auto unrolled = [&](const LoopNode& loop) {
        return loop.for_kind == ForKind::Unrolled || unrolled_.count(&loop) > 0;
    };
    if (loops_.empty()) return;
    const LoopNode& innermost = *loops_.back().node;
    describe(innermost, out);
    for (auto it = loops_.rbegin(); it != loops_.rend(); ++it)
        if (!unrolled(*it->node)) {
            describe(*it->node, out + 4);
            break;
        }
    out[8] = innermost.for_kind == ForKind::Vectorized;
    out[9] = unrolled(innermost);
}

inline CompactAst featurize(const LoweredProgram& program, FeatureSet set = FeatureSet::ansor) {
    return Featurizer(program, set).run();
}

} // namespace tempo::loopnest
