// Codegen check, convolutions (NHWC, NCHW, grouped, depthwise, 3-D, transposed): ≥ 50 random
// schedules per task (samples and mutations of Ansor's CPU space) compile with gcc -O3 into one
// shared object per task and match the reference.
#include "test_loopnest_check.hpp"

using loopnest_test::check_task;
using tempo::loopnest::Task;

TEST_CASE("conv2d_nhwc") {
    check_task(Task::make("conv2d_nhwc",
                          {{"N", {1}},
                           {"H", {8}},
                           {"W", {8}},
                           {"C", {4}},
                           {"K", {8}},
                           {"R", {3}},
                           {"S", {3}},
                           {"stride", {1, 1}},
                           {"padding", {1, 1}},
                           {"dilation", {1, 1}},
                           {"groups", {1}}},
                          {"bias_add", "add", "relu"}));
}
TEST_CASE("conv2d_nhwc strided, dilated, grouped, depthwise") {
    check_task(Task::make("conv2d_nhwc",
                          {{"N", {1}},
                           {"H", {9}},
                           {"W", {7}},
                           {"C", {3}},
                           {"K", {8}},
                           {"R", {3}},
                           {"S", {2}},
                           {"stride", {2, 1}},
                           {"padding", {1, 0}},
                           {"dilation", {1, 2}},
                           {"groups", {1}}},
                          {"relu6"}));
    check_task(Task::make("conv2d_nhwc",
                          {{"N", {1}},
                           {"H", {6}},
                           {"W", {6}},
                           {"C", {8}},
                           {"K", {8}},
                           {"R", {3}},
                           {"S", {3}},
                           {"stride", {1, 1}},
                           {"padding", {1, 1}},
                           {"dilation", {1, 1}},
                           {"groups", {8}}},
                          {"bias_add", "hardswish"}));
    check_task(Task::make("conv2d_nhwc",
                          {{"N", {2}},
                           {"H", {5}},
                           {"W", {5}},
                           {"C", {8}},
                           {"K", {4}},
                           {"R", {1}},
                           {"S", {1}},
                           {"stride", {1, 1}},
                           {"padding", {0, 0}},
                           {"dilation", {1, 1}},
                           {"groups", {2}}},
                          {"multiply"}));
}
TEST_CASE("conv2d_nchw") {
    check_task(Task::make("conv2d_nchw",
                          {{"N", {1}},
                           {"H", {8}},
                           {"W", {8}},
                           {"C", {4}},
                           {"K", {6}},
                           {"R", {3}},
                           {"S", {3}},
                           {"stride", {2, 2}},
                           {"padding", {1, 1}},
                           {"dilation", {1, 1}},
                           {"groups", {1}}},
                          {"bias_add", "sigmoid"}));
}
TEST_CASE("conv3d_ndhwc") {
    check_task(Task::make("conv3d_ndhwc",
                          {{"N", {1}},
                           {"D", {4}},
                           {"H", {5}},
                           {"W", {4}},
                           {"C", {3}},
                           {"K", {4}},
                           {"T", {3}},
                           {"R", {3}},
                           {"S", {3}},
                           {"stride", {1, 2, 1}},
                           {"padding", {1, 1, 1}},
                           {"dilation", {1, 1, 1}},
                           {"groups", {1}}},
                          {"bias_add", "relu"}));
}
TEST_CASE("conv2d_transpose_nhwc") {
    check_task(Task::make("conv2d_transpose_nhwc",
                          {{"N", {1}},
                           {"H", {4}},
                           {"W", {3}},
                           {"C", {4}},
                           {"K", {3}},
                           {"R", {4}},
                           {"S", {4}},
                           {"stride", {2, 2}},
                           {"padding", {1, 1}},
                           {"output_padding", {0, 1}}},
                          {"tanh"}));
}
