// Ansor's CPU schedule space for one task: sketches (always-inline, rfactor, cache write,
// multi-level tiling with fusion at level 1 or 2 or none), the init-population rules (random
// exact-divisor tile sizes and rfactor split, compute location, parallel outer fusion,
// auto-unroll, vectorisation) and the evolutionary mutations (tile size 0.90, auto-unroll 0.04,
// compute location 0.05, parallel 0.01). See workloads_and_schedules.md §2.
// Simplifications: rfactor applies to untiled reductions only (a tiled op needs it only when
// its spatial size is ≤ 32 on 2 cores), to at most one stage per schedule, and never together
// with a cache write.
#pragma once

#include "tempo/loopnest/analysis.hpp"
#include "tempo/loopnest/iterators.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <vector>

namespace tempo::loopnest {

struct SpaceOptions {
    int num_cores = 2;            // parallel fusion stops past 16 × num_cores
    int max_innermost_split = 64; // Ansor's max_innermost_split_factor
    int max_vectorize = 16;       // Ansor's max_vectorize_size
};

inline constexpr int kAutoUnrollChoices[] = {0, 16, 64, 512};

class ScheduleSpace {
public:
    explicit ScheduleSpace(ComputeDag dag, SpaceOptions options = {})
        : dag_(std::move(dag)), opt_(options) {
        const int n = static_cast<int>(dag_.stages.size());
        for (int s = 0; s < n; ++s) {
            tiled_.push_back(needs_multi_level_tiling(dag_, s));
            inlined_.push_back(!tiled_.back() && strictly_inlineable(dag_, s));
        }
        build_sketches();
    }

    const ComputeDag& dag() const { return dag_; }
    std::size_t sketch_count() const { return sketches_.size(); }

    Schedule sample(std::mt19937_64& rng) const {
        Schedule sch = sketches_[rng() % sketches_.size()];
        if (sch.rfactor.stage >= 0) sch.rfactor.factor = pick_rfactor_split(sch, rng);
        const ComputeDag sdag = scheduled_dag(dag_, sch);
        for (std::size_t s = 0; s < sch.stages.size(); ++s)
            if (sch.stages[s].tiled()) fill_tiles(sdag.stages[s], sch.stages[s], rng);
        for (int s = 0; s < static_cast<int>(sch.stages.size()); ++s)
            if (location_choices(sdag, sch, s) > 0) pick_location(sdag, sch, s, rng);
        for (int s = 0; s < static_cast<int>(sch.stages.size()); ++s) {
            StageSchedule& st = sch.stages[s];
            if (st.attach == Attach::Inline) continue;
            st.parallel = default_parallel(sdag, sch, s);
            st.auto_unroll = sdag.stages[s].is_reduction()
                                 ? kAutoUnrollChoices[rng() % std::size(kAutoUnrollChoices)]
                                 : -1;
            st.vectorize = pick_vectorize(sdag, sch, s, rng);
        }
        return sch;
    }

    // One of Ansor's mutations, drawn by its weight; returns false if none applies.
    bool mutate(Schedule& sch, std::mt19937_64& rng) const {
        const ComputeDag sdag = scheduled_dag(dag_, sch);
        std::uniform_real_distribution<double> u(0.0, 1.0);
        for (int attempt = 0; attempt < 16; ++attempt) {
            const double r = u(rng);
            if (r < 0.90   ? mutate_tile(sch, rng)
                : r < 0.94 ? mutate_unroll(sch, rng)
                : r < 0.99 ? mutate_location(sdag, sch, rng)
                           : mutate_parallel(sdag, sch, rng))
                return true;
        }
        return false;
    }

private:
    void build_sketches() {
        const int n = static_cast<int>(dag_.stages.size());
        // Structural choices per tiled stage: 0 unfused, 1/2 fused at that level; for an output
        // tiled stage the fused forms go through a cache write.
        std::vector<Schedule> partial{Schedule{}};
        partial[0].stages.resize(n);
        for (int s = 0; s < n; ++s)
            if (inlined_[s]) partial[0].stages[s].attach = Attach::Inline;
        const ComputeDag inlined = inline_stages(dag_, inlined_);
        for (int s = n - 1; s >= 0; --s) {
            if (!tiled_[s]) continue;
            std::vector<Schedule> next;
            for (const Schedule& base : partial) {
                for (int level = 0; level <= 2; ++level) {
                    Schedule sch = base;
                    init_tiles(sch.stages[s], dag_.stages[s]);
                    int consumer = effective_consumer(inlined, s);
                    if (level > 0) {
                        if (consumer >= 0 && elementwise_match(inlined, s, consumer)) {
                            fuse(sch, s, consumer, level);
                        } else if (consumer < 0 && sch.cache_write_stage < 0) {
                            sch.cache_write_stage = s;
                            StageSchedule local = sch.stages[s];
                            sch.stages[s] = StageSchedule{};
                            sch.stages.insert(sch.stages.begin() + s, local);
                            for (auto& st : sch.stages) // indices past s moved by one
                                if (st.attach == Attach::At && st.attach_stage >= s)
                                    ++st.attach_stage;
                            fuse(sch, s, s + 1, level);
                        } else {
                            continue;
                        }
                    }
                    next.push_back(sch);
                }
            }
            partial = next;
        }
        // AddRfactor: an untiled reduction longer than the core count also gets the two
        // rfactor forms (its split factor is drawn per sample).
        const std::size_t plain = partial.size();
        for (int s = n - 1; s >= 0; --s) {
            const Stage& st = dag_.stages[s];
            if (tiled_[s] || inlined_[s] || !st.is_reduction() ||
                reduce_length(st) <= opt_.num_cores)
                continue;
            for (std::size_t b = 0; b < plain; ++b) {
                if (partial[b].cache_write_stage >= 0 || partial[b].stages[s].follow_stage >= 0)
                    continue;
                for (bool inner : {false, true}) {
                    Schedule sch = partial[b];
                    sch.rfactor = Rfactor{s, inner, 1};
                    sch.stages.insert(sch.stages.begin() + s, StageSchedule{});
                    for (auto& x : sch.stages) { // indices past s moved by one
                        if (x.attach == Attach::At && x.attach_stage >= s) ++x.attach_stage;
                        if (x.follow_stage >= s) ++x.follow_stage;
                    }
                    partial.push_back(sch);
                }
            }
        }
        sketches_ = partial;
    }

    // The rfactor split: I (the inner part) as FillTileSize draws a 2-level split.
    std::int64_t pick_rfactor_split(const Schedule& sch, std::mt19937_64& rng) const {
        const auto& choices = factorizations(reduce_length(dag_.stages[sch.rfactor.stage]), 2);
        return choices[rng() % choices.size()][1];
    }

    static void init_tiles(StageSchedule& st, const Stage& stage) {
        st.tiles.assign(stage.axes.size(), std::vector<std::int64_t>(kSpatialLevels, 1));
        for (std::size_t r = 0; r < stage.reduce_axes.size(); ++r)
            st.tiles.push_back(std::vector<std::int64_t>(kReduceLevels, 1));
    }

    void fuse(Schedule& sch, int producer, int consumer, int level) const {
        const int naxes = static_cast<int>(dag_.stages[producer].axes.size());
        sch.stages[producer].attach = Attach::At;
        sch.stages[producer].attach_stage = consumer;
        sch.stages[producer].attach_iter = level * naxes - 1;
        sch.stages[consumer].follow_stage = producer;
        sch.stages[consumer].follow_level = level;
    }

    // The single non-inlined stage reading s (through inlined stages), or -1.
    int effective_consumer(const ComputeDag& inlined, int s) const {
        std::vector<int> cs;
        for (int c : inlined.consumers_of(s))
            if (!inlined_[c]) cs.push_back(c);
        return cs.size() == 1 ? cs[0] : -1;
    }

    // Ordered factorizations of n into `parts` factors, innermost ≤ max_innermost_split.
    const std::vector<std::vector<std::int64_t>>& factorizations(std::int64_t n, int parts) const {
        auto key = std::make_pair(n, parts);
        auto it = memo_.find(key);
        if (it != memo_.end()) return it->second;
        std::vector<std::vector<std::int64_t>> out;
        std::vector<std::int64_t> cur;
        std::function<void(std::int64_t, int)> rec = [&](std::int64_t rest, int left) {
            if (left == 1) {
                if (rest <= opt_.max_innermost_split) {
                    cur.push_back(rest);
                    out.push_back(cur);
                    cur.pop_back();
                }
                return;
            }
            for (std::int64_t d = 1; d <= rest; ++d) {
                if (rest % d) continue;
                cur.push_back(d);
                rec(rest / d, left - 1);
                cur.pop_back();
            }
        };
        rec(n, parts);
        return memo_.emplace(key, std::move(out)).first->second;
    }

    void fill_tiles(const Stage& stage, StageSchedule& st, std::mt19937_64& rng) const {
        for (std::size_t a = 0; a < st.tiles.size(); ++a) {
            const bool spatial = a < stage.axes.size();
            const std::int64_t extent =
                spatial ? stage.axes[a].extent : stage.reduce_axes[a - stage.axes.size()].extent;
            const auto& choices = factorizations(extent, spatial ? kSpatialLevels : kReduceLevels);
            st.tiles[a] = choices[rng() % choices.size()];
        }
    }

    int location_choices(const ComputeDag& sdag, const Schedule& sch, int s) const {
        auto c = location_candidates(sdag, sch, s);
        return static_cast<int>(c.size());
    }

    // compute_at candidates of an untiled, non-inlined, non-output stage with one consumer:
    // the consumer's iterators before its first reduce iterator.
    std::vector<std::pair<int, int>> location_candidates(const ComputeDag& sdag,
                                                         const Schedule& sch, int s) const {
        const StageSchedule& st = sch.stages[s];
        std::vector<std::pair<int, int>> out;
        if (st.tiled() || st.attach == Attach::Inline || st.follow_stage >= 0 ||
            s + 1 == static_cast<int>(sdag.stages.size()))
            return out;
        std::vector<bool> inl;
        for (const auto& x : sch.stages) inl.push_back(x.attach == Attach::Inline);
        const ComputeDag inlined = inline_stages(sdag, inl);
        std::vector<int> cs;
        for (int c : inlined.consumers_of(s))
            if (!inl[c]) cs.push_back(c);
        if (cs.size() != 1) return out;
        const int c = cs[0];
        const StageSchedule& cst = sch.stages[c];
        if (!cst.tiled() && cst.attach != Attach::Root) return out;
        auto its = stage_iterators(sdag, sch, c);
        const int first_reduce = first_reduce_iterator(its);
        for (int i = 0; i < first_reduce; ++i) out.emplace_back(c, i);
        return out;
    }

    void pick_location(const ComputeDag& sdag, Schedule& sch, int s, std::mt19937_64& rng) const {
        auto cands = location_candidates(sdag, sch, s);
        StageSchedule& st = sch.stages[s];
        const std::size_t pick = rng() % (cands.size() + 1);
        if (pick == 0) {
            st.attach = Attach::Root, st.attach_stage = -1, st.attach_iter = -1;
        } else {
            st.attach = Attach::At;
            st.attach_stage = cands[pick - 1].first;
            st.attach_iter = cands[pick - 1].second;
        }
    }

    std::vector<int> attach_iters(const Schedule& sch, int s) const {
        std::vector<int> out;
        for (const auto& p : sch.stages)
            if (p.attach == Attach::At && p.attach_stage == s) out.push_back(p.attach_iter);
        return out;
    }

    // Ansor's parallel rule: fuse outer spatial iterators until their product exceeds
    // 16 × cores, stopping at a reduce iterator or at (and including) an attach point.
    int max_parallel(const ComputeDag& sdag, const Schedule& sch, int s, bool threshold) const {
        if (sch.stages[s].attach != Attach::Root) return 0;
        auto its = stage_iterators(sdag, sch, s);
        auto at = attach_iters(sch, s);
        int n = 0;
        std::int64_t prod = 1;
        for (const Iterator& it : its) {
            if (it.reduce) break;
            ++n;
            prod *= it.extent;
            if (std::find(at.begin(), at.end(), n - 1) != at.end()) break;
            if (threshold && prod > 16 * opt_.num_cores) break;
        }
        return n;
    }
    int default_parallel(const ComputeDag& sdag, const Schedule& sch, int s) const {
        return max_parallel(sdag, sch, s, true);
    }

    int pick_vectorize(const ComputeDag& sdag, const Schedule& sch, int s,
                       std::mt19937_64& rng) const {
        const StageSchedule& st = sch.stages[s];
        if (st.tiled()) return 1;
        if (st.attach == Attach::At) return 1;
        auto its = stage_iterators(sdag, sch, s);
        auto at = attach_iters(sch, s);
        int k = 0;
        std::int64_t prod = 1;
        for (int i = static_cast<int>(its.size()) - 1; i >= 0; --i) {
            if (its[i].reduce || std::find(at.begin(), at.end(), i) != at.end()) break;
            if (prod * its[i].extent > opt_.max_vectorize) break;
            prod *= its[i].extent;
            ++k;
        }
        if (k > 1) return 1 + static_cast<int>(rng() % (k - 1));
        return k;
    }

    bool mutate_tile(Schedule& sch, std::mt19937_64& rng) const {
        std::vector<std::pair<int, int>> splits;
        for (int s = 0; s < static_cast<int>(sch.stages.size()); ++s)
            for (int a = 0; a < static_cast<int>(sch.stages[s].tiles.size()); ++a)
                if (product(sch.stages[s].tiles[a]) > 1) splits.emplace_back(s, a);
        if (sch.rfactor.stage >= 0) splits.emplace_back(-1, -1); // the rfactor split
        if (splits.empty()) return false;
        auto [s, a] = splits[rng() % splits.size()];
        if (s < 0) {
            const std::int64_t old = sch.rfactor.factor;
            sch.rfactor.factor = pick_rfactor_split(sch, rng);
            return sch.rfactor.factor != old;
        }
        auto& f = sch.stages[s].tiles[a];
        std::vector<int> sources;
        for (int l = 0; l < static_cast<int>(f.size()); ++l)
            if (f[l] > 1) sources.push_back(l);
        const int src = sources[rng() % sources.size()];
        int dst = static_cast<int>(rng() % (f.size() - 1));
        if (dst >= src) ++dst;
        std::vector<std::int64_t> divisors;
        for (std::int64_t d = 2; d <= f[src]; ++d)
            if (f[src] % d == 0) divisors.push_back(d);
        const std::int64_t d = divisors[rng() % divisors.size()];
        auto g = f;
        g[src] /= d;
        g[dst] *= d;
        if (g.back() > opt_.max_innermost_split) return false;
        f = g;
        return true;
    }

    bool mutate_unroll(Schedule& sch, std::mt19937_64& rng) const {
        std::vector<int> targets;
        for (int s = 0; s < static_cast<int>(sch.stages.size()); ++s)
            if (sch.stages[s].auto_unroll >= 0) targets.push_back(s);
        if (targets.empty()) return false;
        auto& st = sch.stages[targets[rng() % targets.size()]];
        const int old = st.auto_unroll;
        while (st.auto_unroll == old)
            st.auto_unroll = kAutoUnrollChoices[rng() % std::size(kAutoUnrollChoices)];
        return true;
    }

    bool mutate_location(const ComputeDag& sdag, Schedule& sch, std::mt19937_64& rng) const {
        std::vector<int> targets;
        for (int s = 0; s < static_cast<int>(sch.stages.size()); ++s)
            if (location_choices(sdag, sch, s) > 0) targets.push_back(s);
        if (targets.empty()) return false;
        const int s = targets[rng() % targets.size()];
        const StageSchedule before = sch.stages[s];
        pick_location(sdag, sch, s, rng);
        return !(sch.stages[s] == before);
    }

    bool mutate_parallel(const ComputeDag& sdag, Schedule& sch, std::mt19937_64& rng) const {
        std::vector<int> targets;
        for (int s = 0; s < static_cast<int>(sch.stages.size()); ++s)
            if (sch.stages[s].parallel > 0 && max_parallel(sdag, sch, s, false) > 1)
                targets.push_back(s);
        if (targets.empty()) return false;
        const int s = targets[rng() % targets.size()];
        const int old = sch.stages[s].parallel;
        const int n = max_parallel(sdag, sch, s, false);
        sch.stages[s].parallel = 1 + static_cast<int>(rng() % n);
        return sch.stages[s].parallel != old;
    }

    ComputeDag dag_;
    SpaceOptions opt_;
    std::vector<bool> tiled_, inlined_;
    std::vector<Schedule> sketches_;
    mutable std::map<std::pair<std::int64_t, int>, std::vector<std::vector<std::int64_t>>> memo_;
};

} // namespace tempo::loopnest
