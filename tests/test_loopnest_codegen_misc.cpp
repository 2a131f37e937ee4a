// Codegen check, pooling, softmax, layer norm, transpose, reductions: ≥ 50 random schedules per
// task (samples and mutations of Ansor's CPU space) compile with gcc -O3 into one shared object per
// task and match the reference.
#include "test_loopnest_check.hpp"

using loopnest_test::check_task;
using tempo::loopnest::Task;

TEST_CASE("pooling") {
    check_task(Task::make("max_pool2d_nhwc", {{"N", {1}},
                                              {"H", {9}},
                                              {"W", {8}},
                                              {"C", {4}},
                                              {"kernel", {3, 3}},
                                              {"stride", {2, 2}},
                                              {"padding", {1, 1}}}));
    check_task(Task::make("avg_pool2d_nhwc", {{"N", {1}},
                                              {"H", {7}},
                                              {"W", {7}},
                                              {"C", {8}},
                                              {"kernel", {3, 3}},
                                              {"stride", {1, 1}},
                                              {"padding", {1, 1}},
                                              {"count_include_pad", {0}}}));
    check_task(Task::make("avg_pool2d_nhwc", {{"N", {2}},
                                              {"H", {8}},
                                              {"W", {8}},
                                              {"C", {4}},
                                              {"kernel", {2, 2}},
                                              {"stride", {2, 2}},
                                              {"padding", {0, 0}},
                                              {"count_include_pad", {1}}}));
    check_task(
        Task::make("global_avg_pool2d_nhwc", {{"N", {2}}, {"H", {7}}, {"W", {7}}, {"C", {16}}}));
}
TEST_CASE("softmax, layer_norm, transpose, reduce_sum") {
    check_task(Task::make("softmax", {{"rows", {12}}, {"cols", {32}}}));
    check_task(Task::make("layer_norm", {{"rows", {8}}, {"cols", {48}}}, {"add"}));
    // A pure data movement has no tiling or reduction: Ansor's space holds 2 programs here.
    check_task(Task::make("transpose", {{"rows", {24}}, {"cols", {16}}}), 50, 2);
    check_task(Task::make("reduce_sum", {{"rows", {6}}, {"cols", {40}}}));
}
