// Schedule space and lowering: sketches, exact splits, deterministic sampling, JSON round trip
// with deterministic replay, and a scheduled matmul lowered to the spec's worked example.
#include "test_loopnest_util.hpp"

#include "tempo/loopnest/featurize.hpp"
#include "tempo/loopnest/serialize.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

using namespace tempo::loopnest;

namespace {

Task resnet_conv() {
    return Task::make("conv2d_nhwc",
                      {{"N", {1}},
                       {"H", {56}},
                       {"W", {56}},
                       {"C", {64}},
                       {"K", {64}},
                       {"R", {3}},
                       {"S", {3}},
                       {"stride", {1, 1}},
                       {"padding", {1, 1}},
                       {"dilation", {1, 1}},
                       {"groups", {1}}},
                      {"bias_add", "add", "relu"});
}

std::vector<double> number_array(const std::string& text, const std::string& key) {
    auto at = text.find('[', text.find("\"" + key + "\""));
    auto end = text.find(']', at);
    std::vector<double> out;
    std::stringstream ss(text.substr(at + 1, end - at - 1));
    std::string item;
    while (std::getline(ss, item, ',')) out.push_back(std::stod(item));
    return out;
}

} // namespace

TEST_CASE("sketches: fused at level 1, 2 or unfused; cache write for an output reduction") {
    CHECK(ScheduleSpace(build_dag(resnet_conv())).sketch_count() == 3);
    CHECK(ScheduleSpace(build_dag(Task::make("dense", {{"M", {8}}, {"N", {8}}, {"K", {8}}})))
              .sketch_count() == 3);
    // An untiled reduction longer than the 2 cores: plain, rfactor outer, rfactor inner.
    CHECK(ScheduleSpace(build_dag(Task::make("global_avg_pool2d_nhwc",
                                             {{"N", {1}}, {"H", {4}}, {"W", {4}}, {"C", {8}}})))
              .sketch_count() == 3);
    CHECK(ScheduleSpace(build_dag(Task::make("reduce_sum", {{"rows", {4}}, {"cols", {2}}})))
              .sketch_count() == 1);
    // softmax: its normalisation is tiled (unfused, or a cache write fused at level 1 or 2);
    // the unfused form also gets rfactor on its max or on its exp-sum (one per schedule).
    CHECK(ScheduleSpace(build_dag(Task::make("softmax", {{"rows", {4}}, {"cols", {8}}})))
              .sketch_count() == 3 + 2 + 2);
    // bias_add and the residual add are inlined, the padding (a branch) is not.
    ScheduleSpace space(build_dag(resnet_conv()));
    std::mt19937_64 rng(3);
    Schedule s = space.sample(rng);
    const ComputeDag sdag = scheduled_dag(space.dag(), s);
    for (std::size_t i = 0; i < sdag.stages.size(); ++i) {
        INFO(sdag.stages[i].name);
        const bool inlined = sdag.stages[i].name == "T_add";
        CHECK((s.stages[i].attach == Attach::Inline) == inlined);
    }
}

TEST_CASE("tiles are exact divisor splits, innermost ≤ 64; sampling is deterministic") {
    const ComputeDag dag = build_dag(resnet_conv());
    ScheduleSpace space(dag);
    std::mt19937_64 a(5), b(5);
    for (int i = 0; i < 200; ++i) {
        Schedule s = space.sample(a);
        if (i % 2) space.mutate(s, a);
        Schedule t = space.sample(b);
        if (i % 2) space.mutate(t, b);
        CHECK(s == t);
        validate_schedule(dag, s, "sampled");
        for (const auto& st : s.stages)
            for (const auto& f : st.tiles) CHECK(f.back() <= 64);
    }
}

TEST_CASE("schedule JSON round trip replays to the same program and features") {
    for (const Task& task :
         {resnet_conv(), Task::make("dense", {{"M", {64}}, {"N", {128}}, {"K", {32}}}),
          Task::make("avg_pool2d_nhwc", {{"N", {1}},
                                         {"H", {14}},
                                         {"W", {14}},
                                         {"C", {32}},
                                         {"kernel", {3, 3}},
                                         {"stride", {2, 2}},
                                         {"padding", {1, 1}},
                                         {"count_include_pad", {0}}})}) {
        for (const auto& p : loopnest_test::random_programs(task, 20, 9)) {
            const ComputeDag dag = build_dag(task);
            const std::string text =
                tempo::json::dump(schedule_to_json(p.schedule, scheduled_dag(dag, p.schedule)));
            const Schedule back =
                schedule_from_json(tempo::json::parse(text, "schedule"), "schedule");
            CHECK(back == p.schedule);
            validate_schedule(dag, back, "schedule");
            const LoweredProgram replay = Lowerer(dag, back).run();
            CHECK(to_string(replay) == p.text);
            CHECK(featurize(replay).features == featurize(p.program).features);
        }
    }
}

TEST_CASE("bad schedules are refused with the field named") {
    const ComputeDag dag = build_dag(Task::make("dense", {{"M", {8}}, {"N", {8}}, {"K", {8}}}));
    const std::string text =
        R"({"cache_write":-1,"stages":[{"attach":"root","tiles":[[2,2,2,2],[1,1,1,8],[8,1]]}]})";
    Schedule s = schedule_from_json(tempo::json::parse(text, "s"), "s");
    CHECK_THROWS_WITH_AS(validate_schedule(dag, s, "s"), doctest::Contains("s.stages[0]"),
                         tempo::Error);
    CHECK_THROWS_AS(
        schedule_from_json(
            tempo::json::parse(R"({"cache_write":-1,"stages":[{"attach":"up"}]})", "s"), "s"),
        tempo::Error);
}

TEST_CASE("a scheduled 64x64x64 matmul lowers to the worked example's nest") {
    // b: 1; i, j: S0 = 8, S3 = 8; k: R0 = 64; parallel i0, vectorised j3, auto-unroll 16.
    const Task task = Task::make("batch_matmul", {{"B", {1}},
                                                  {"M", {64}},
                                                  {"N", {64}},
                                                  {"K", {64}},
                                                  {"transpose_b", {0}},
                                                  {"broadcast_b", {0}}});
    const ComputeDag dag = build_dag(task);
    Schedule s;
    StageSchedule st;
    st.tiles = {{1, 1, 1, 1}, {8, 1, 1, 8}, {8, 1, 1, 8}, {64, 1}};
    st.parallel = 2, st.vectorize = 1, st.auto_unroll = 16; // parallel: b0 (extent 1) and i0
    s.stages = {st};
    const LoweredProgram p = Lowerer(dag, s).run();
    const auto ast = featurize(p);
    // root, realize_scope, realize, i0, pragma, j0, {i3, j3, init}, {k0, i3, j3, update}
    CHECK(ast.tree == std::vector<std::int32_t>{0,  1,  2,  3,  4,  5,  6,  7,  8,
                                                -1, -1, -1, 9,  10, 11, 12, -1, -1,
                                                -1, -1, -1, -1, -1, -1, -1, -1});
    CHECK(ast.leaf_ids == std::vector<std::int32_t>{8, 12});
    std::ifstream in(std::string(TEMPO_FIXTURES_DIR) + "/loopnest/oracle_vectors.json");
    std::stringstream ss;
    ss << in.rdbuf();
    const auto s1 = number_array(ss.str(), "S1_node6"), s2 = number_array(ss.str(), "S2_node10");
    for (std::size_t f = 0; f < kFeatureDim; ++f) {
        INFO("feature " << f);
        CHECK(ast.leaf(0)[f] == doctest::Approx(s1[f]).epsilon(1e-6));
        // The example's update loop i1' is unrolled; Ansor's CPU schedules never are.
        if (f < 27 || f > 37) CHECK(ast.leaf(1)[f] == doctest::Approx(s2[f]).epsilon(1e-6));
    }
}

TEST_CASE("a fused schedule edited into inconsistency is refused") {
    const ComputeDag dag = build_dag(resnet_conv());
    ScheduleSpace space(dag);
    std::mt19937_64 rng(2);
    for (int i = 0; i < 50; ++i) {
        Schedule s = space.sample(rng);
        for (std::size_t k = 0; k < s.stages.size(); ++k) {
            if (s.stages[k].attach != Attach::At) continue;
            Schedule bad = s;
            bad.stages[k].attach_iter = 99;
            CHECK_THROWS_AS(validate_schedule(dag, bad, "s"), tempo::Error);
            if (s.stages[k].tiled()) {
                bad = s;
                bad.stages[s.stages[k].attach_stage].follow_level =
                    3 - bad.stages[s.stages[k].attach_stage].follow_level;
                CHECK_THROWS_AS(validate_schedule(dag, bad, "s"), tempo::Error);
            }
        }
    }
}

TEST_CASE("rfactor splits a reduction into a .rf stage and the stage reducing it") {
    const ComputeDag dag = build_dag(
        Task::make("global_avg_pool2d_nhwc", {{"N", {2}}, {"H", {3}}, {"W", {4}}, {"C", {5}}}));
    for (bool inner : {false, true}) {
        INFO("inner " << inner);
        const ComputeDag r = apply_rfactor(dag, Rfactor{0, inner, 4}); // E = 12 = 3 × 4
        REQUIRE(r.stages.size() == dag.stages.size() + 1);
        CHECK(r.stages[0].name == "adaptive_pool_sum.rf");
        CHECK(r.stages[1].name == "adaptive_pool_sum");
        CHECK(r.tensors[r.stages[0].output].shape ==
              std::vector<std::int64_t>{2, 5, inner ? 4 : 3});
        CHECK(r.stages[0].reduce_axes.size() == 1);
        CHECK(r.stages[0].reduce_axes[0].extent == (inner ? 3 : 4));
        CHECK(r.stages[1].reduce_axes[0].extent == (inner ? 4 : 3));
        CHECK(r.stages[1].output == dag.stages[0].output);
    }
    // Replays through JSON; a factor that does not divide the reduce length is refused.
    ScheduleSpace space(dag);
    std::mt19937_64 rng(5);
    int seen = 0;
    for (int i = 0; i < 60 && seen < 10; ++i) {
        Schedule s = space.sample(rng);
        if (s.rfactor.stage < 0) continue;
        ++seen;
        const ComputeDag sdag = scheduled_dag(dag, s);
        const Schedule back = schedule_from_json(schedule_to_json(s, sdag), "sch");
        CHECK(back == s);
        validate_schedule(dag, back, "sch");
        Schedule bad = s;
        bad.rfactor.factor = 5;
        CHECK_THROWS_WITH(validate_schedule(dag, bad, "sch"),
                          "sch.rfactor.factor: 5 does not divide the reduce length 12");
    }
    CHECK(seen == 10);
}
