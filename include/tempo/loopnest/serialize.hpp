// JSON forms of tasks, schedules and compact ASTs (the dataset record's "task"/"op"/"shape",
// "schedule" and "ast" fields). A schedule read back replays to the same program.
#pragma once

#include "tempo/io/json.hpp"
#include "tempo/loopnest/iterators.hpp"
#include "tempo/loopnest/schedule.hpp"
#include "tempo/loopnest/task.hpp"
#include "tempo/program/compact_ast.hpp"

#include <string>
#include <vector>

namespace tempo::loopnest {

namespace serialize_detail {
inline void member(json::Value::Object& o, std::string key, json::Value v) {
    o.push_back(json::Member{std::move(key), std::move(v)});
}
template <typename T>
json::Value array_of(const std::vector<T>& v) {
    json::Value::Array a;
    for (const auto& x : v) a.emplace_back(x);
    return a;
}
inline std::vector<std::int64_t> ints(const json::Value& v, const std::string& where) {
    std::vector<std::int64_t> out;
    for (std::size_t i = 0; i < v.as_array(where).size(); ++i)
        out.push_back(v.as_array(where)[i].as_int64(where + "[" + std::to_string(i) + "]"));
    return out;
}
} // namespace serialize_detail

inline const char* attach_name(Attach a) {
    return a == Attach::Root ? "root" : a == Attach::Inline ? "inline" : "at";
}

// `sdag` (the scheduled DAG) only contributes stage names, for readers.
inline json::Value schedule_to_json(const Schedule& sch, const ComputeDag& sdag) {
    using serialize_detail::array_of;
    using serialize_detail::member;
    json::Value::Object root;
    member(root, "cache_write", sch.cache_write_stage);
    if (sch.rfactor.stage >= 0)
        member(root, "rfactor",
               json::Value::Object{{"stage", sch.rfactor.stage},
                                   {"part", sch.rfactor.inner ? "inner" : "outer"},
                                   {"factor", sch.rfactor.factor}});
    json::Value::Array stages;
    for (std::size_t s = 0; s < sch.stages.size(); ++s) {
        const StageSchedule& st = sch.stages[s];
        json::Value::Object o;
        member(o, "name", sdag.stages[s].name);
        member(o, "attach", attach_name(st.attach));
        if (st.attach == Attach::At)
            member(o, "at", array_of(std::vector<int>{st.attach_stage, st.attach_iter}));
        if (st.tiled()) {
            json::Value::Array tiles;
            for (const auto& f : st.tiles) tiles.push_back(array_of(f));
            member(o, "tiles", std::move(tiles));
        }
        if (st.follow_stage >= 0)
            member(o, "follow", array_of(std::vector<int>{st.follow_stage, st.follow_level}));
        if (st.attach != Attach::Inline) {
            member(o, "parallel", st.parallel);
            member(o, "vectorize", st.vectorize);
            member(o, "unroll", st.auto_unroll);
        }
        stages.emplace_back(std::move(o));
    }
    member(root, "stages", std::move(stages));
    return root;
}

inline Schedule schedule_from_json(const json::Value& v, const std::string& where) {
    using serialize_detail::ints;
    Schedule sch;
    const json::Value* cw = v.find("cache_write");
    if (!cw) throw Error(where, "missing \"cache_write\"");
    sch.cache_write_stage = static_cast<int>(cw->as_int64(where + ".cache_write"));
    if (const json::Value* rf = v.find("rfactor")) {
        const std::string w = where + ".rfactor";
        const json::Value* stage = rf->find("stage");
        const json::Value* part = rf->find("part");
        const json::Value* factor = rf->find("factor");
        if (!stage || !part || !factor) throw Error(w, "expected {stage, part, factor}");
        sch.rfactor.stage = static_cast<int>(stage->as_int64(w + ".stage"));
        const std::string& p = part->as_string(w + ".part");
        if (p != "inner" && p != "outer")
            throw Error(w + ".part", "expected inner or outer, got \"" + p + "\"");
        sch.rfactor.inner = p == "inner";
        sch.rfactor.factor = factor->as_int64(w + ".factor");
        if (sch.rfactor.stage < 0) throw Error(w + ".stage", "negative stage");
    }
    const json::Value* stages = v.find("stages");
    if (!stages) throw Error(where, "missing \"stages\"");
    for (std::size_t s = 0; s < stages->as_array(where + ".stages").size(); ++s) {
        const std::string w = where + ".stages[" + std::to_string(s) + "]";
        const json::Value& o = stages->as_array()[s];
        StageSchedule st;
        const json::Value* attach = o.find("attach");
        if (!attach) throw Error(w, "missing \"attach\"");
        const std::string& a = attach->as_string(w + ".attach");
        if (a == "root")
            st.attach = Attach::Root;
        else if (a == "inline")
            st.attach = Attach::Inline;
        else if (a == "at")
            st.attach = Attach::At;
        else
            throw Error(w + ".attach", "expected root, inline or at, got \"" + a + "\"");
        if (st.attach == Attach::At) {
            const json::Value* at = o.find("at");
            auto p = at ? ints(*at, w + ".at") : std::vector<std::int64_t>{};
            if (p.size() != 2) throw Error(w + ".at", "expected [stage, iterator]");
            st.attach_stage = static_cast<int>(p[0]), st.attach_iter = static_cast<int>(p[1]);
        }
        if (const json::Value* tiles = o.find("tiles"))
            for (std::size_t i = 0; i < tiles->as_array(w + ".tiles").size(); ++i)
                st.tiles.push_back(
                    ints(tiles->as_array()[i], w + ".tiles[" + std::to_string(i) + "]"));
        if (const json::Value* follow = o.find("follow")) {
            auto p = ints(*follow, w + ".follow");
            if (p.size() != 2) throw Error(w + ".follow", "expected [stage, level]");
            st.follow_stage = static_cast<int>(p[0]), st.follow_level = static_cast<int>(p[1]);
        }
        if (const json::Value* x = o.find("parallel"))
            st.parallel = static_cast<int>(x->as_int64(w + ".parallel"));
        if (const json::Value* x = o.find("vectorize"))
            st.vectorize = static_cast<int>(x->as_int64(w + ".vectorize"));
        if (const json::Value* x = o.find("unroll"))
            st.auto_unroll = static_cast<int>(x->as_int64(w + ".unroll"));
        sch.stages.push_back(std::move(st));
    }
    return sch;
}

// Checks that a schedule read from a file fits the task's DAG before lowering trusts it.
inline void validate_schedule(const ComputeDag& task_dag, const Schedule& sch,
                              const std::string& where) {
    if (sch.cache_write_stage >= static_cast<int>(task_dag.stages.size()))
        throw Error(where, "cache_write stage out of range");
    if (sch.rfactor.stage >= 0) {
        const std::string w = where + ".rfactor";
        if (sch.cache_write_stage >= 0) throw Error(w, "rfactor together with a cache write");
        if (sch.rfactor.stage >= static_cast<int>(task_dag.stages.size()))
            throw Error(w, "stage out of range");
        const Stage& st = task_dag.stages[sch.rfactor.stage];
        if (!st.is_reduction()) throw Error(w, "stage " + st.name + " is not a reduction");
        if (sch.rfactor.factor < 1 || reduce_length(st) % sch.rfactor.factor != 0)
            throw Error(w + ".factor", std::to_string(sch.rfactor.factor) +
                                           " does not divide the reduce length " +
                                           std::to_string(reduce_length(st)));
    }
    const ComputeDag sdag = scheduled_dag(task_dag, sch);
    const int n = static_cast<int>(sdag.stages.size());
    if (static_cast<int>(sch.stages.size()) != n)
        throw Error(where, "expected " + std::to_string(n) + " stages, got " +
                               std::to_string(sch.stages.size()));
    auto at = [&](int s) { return where + ".stages[" + std::to_string(s) + "]"; };
    for (int s = 0; s < n; ++s) { // tiles first: iterators are built from them
        const StageSchedule& st = sch.stages[s];
        const Stage& stage = sdag.stages[s];
        if (!st.tiled()) continue;
        if (st.tiles.size() != stage.axes.size() + stage.reduce_axes.size())
            throw Error(at(s), "wrong number of tile lists");
        for (std::size_t a = 0; a < st.tiles.size(); ++a) {
            const bool spatial = a < stage.axes.size();
            const auto extent =
                spatial ? stage.axes[a].extent : stage.reduce_axes[a - stage.axes.size()].extent;
            std::int64_t p = 1;
            for (auto f : st.tiles[a]) {
                if (f < 1) throw Error(at(s), "tile factor below 1");
                p *= f;
            }
            const auto levels = static_cast<std::size_t>(spatial ? kSpatialLevels : kReduceLevels);
            if (st.tiles[a].size() != levels || p != extent)
                throw Error(at(s), "tile factors of axis " + std::to_string(a) +
                                       " do not split its extent");
        }
    }
    for (int s = 0; s < n; ++s) {
        const StageSchedule& st = sch.stages[s];
        if (st.follow_stage >= 0) {
            const int p = st.follow_stage;
            if (p >= s || !sch.stages[p].tiled() || st.follow_level < 1 || st.follow_level > 2 ||
                sdag.stages[p].axes.size() != sdag.stages[s].axes.size())
                throw Error(at(s), "invalid follow");
            const int naxes = static_cast<int>(sdag.stages[p].axes.size());
            const StageSchedule& ps = sch.stages[p];
            if (ps.attach != Attach::At || ps.attach_stage != s ||
                ps.attach_iter != st.follow_level * naxes - 1)
                throw Error(at(s), "follows a producer that is not fused at its level");
        }
    }
    for (int s = 0; s < n; ++s) {
        const StageSchedule& st = sch.stages[s];
        if (st.attach != Attach::At) continue;
        if (st.attach_stage <= s || st.attach_stage >= n)
            throw Error(at(s), "attached to an invalid consumer");
        if (st.tiled() && sch.stages[st.attach_stage].follow_stage != s)
            throw Error(at(s), "a tiled stage is computed only where its consumer follows it");
        const auto its = stage_iterators(sdag, sch, st.attach_stage);
        if (st.attach_iter < 0 || st.attach_iter >= static_cast<int>(its.size()))
            throw Error(at(s), "attach iterator out of range");
    }
}

inline json::Value compact_ast_to_json(const CompactAst& ast) {
    using serialize_detail::array_of;
    using serialize_detail::member;
    json::Value::Object o;
    json::Value::Array rows;
    for (std::size_t i = 0; i < ast.leaves(); ++i)
        rows.push_back(array_of(std::vector<double>(ast.leaf(i), ast.leaf(i) + ast.feature_dim)));
    member(o, "features", std::move(rows));
    member(o, "leaf_ids", array_of(ast.leaf_ids));
    member(o, "tree", array_of(ast.tree));
    member(o, "flops", ast.flops);
    if (!ast.id.empty()) member(o, "id", ast.id);
    return o;
}

inline json::Value task_params_to_json(const Task& t) {
    using serialize_detail::array_of;
    json::Value::Object o;
    for (const auto& [k, v] : t.params)
        o.push_back(json::Member{k, v.size() == 1 ? json::Value(v[0]) : array_of(v)});
    return o;
}

} // namespace tempo::loopnest
