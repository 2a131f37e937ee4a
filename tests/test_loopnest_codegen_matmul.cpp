// Codegen check, dense and batch_matmul: ≥ 50 random schedules per task (samples and mutations of
// Ansor's CPU space) compile with gcc -O3 into one shared object per task and match the reference.
#include "test_loopnest_check.hpp"

using loopnest_test::check_task;
using tempo::loopnest::Task;

TEST_CASE("dense") {
    check_task(Task::make("dense", {{"M", {16}}, {"N", {32}}, {"K", {24}}}, {"bias_add", "relu"}));
}
TEST_CASE("dense without epilogue (cache write)") {
    check_task(Task::make("dense", {{"M", {8}}, {"N", {48}}, {"K", {16}}}));
}
TEST_CASE("batch_matmul") {
    check_task(Task::make("batch_matmul",
                          {{"B", {2}},
                           {"M", {8}},
                           {"N", {12}},
                           {"K", {16}},
                           {"transpose_b", {1}},
                           {"broadcast_b", {0}}},
                          {"scale"}));
    check_task(Task::make("batch_matmul",
                          {{"B", {3}},
                           {"M", {4}},
                           {"N", {16}},
                           {"K", {8}},
                           {"transpose_b", {0}},
                           {"broadcast_b", {1}}},
                          {"bias_add", "gelu"}));
}
