// The lab's command lines: every option's number is read whole and range-checked (the parsers:
// test_cli_args.cpp), and an error names the command and the option once.
#include <doctest/doctest.h>

#include "../tools/lab/lab_cli.hpp"
#include "../tools/lab/measure_cli.hpp"

#include <cstdint>

using namespace tempo;
using namespace tempo::lab;

TEST_CASE("the dataset commands' options: bad numbers are errors, not truncations") {
    auto options = [](std::vector<std::string> extra) {
        std::vector<std::string> args{"measure", "--target", "t"};
        args.insert(args.end(), extra.begin(), extra.end());
        return parse_data_options(args, "");
    };
    const DataOptions o = options({"--threads", "2", "--shard", "2/3", "--quiet", "off",
                                   "--compile-cores", "0,1", "--run-timeout", "2.5"});
    CHECK(o.threads == 2);
    CHECK(o.shard == 2);
    CHECK(o.shards == 3);
    CHECK(o.quiet == -1);
    CHECK(o.compile_cores == std::vector<int>{0, 1});
    CHECK(o.run_timeout == 2.5);
    CHECK_THROWS_WITH_AS(options({"--threads", "3x"}),
                         "tempo lab measure --threads: expected an integer in [1, 1024], got '3x'",
                         Error);
    CHECK_THROWS_WITH_AS(options({"--quiet-wait", "abc"}),
                         "tempo lab measure --quiet-wait: expected a number ≥ 0, got 'abc'", Error);
    CHECK_THROWS_WITH_AS(options({"--shard", "4/3"}),
                         "tempo lab measure --shard i: expected an integer in [1, 3], got '4'",
                         Error);
    CHECK_THROWS_WITH_AS(
        options({"--shard", "1/x"}),
        "tempo lab measure --shard n: expected an integer in [1, 1048576], got 'x'", Error);
    CHECK_THROWS_WITH_AS(options({"--batch", "0"}),
                         "tempo lab measure --batch: expected an integer in [1, 65536], got '0'",
                         Error);
    CHECK_THROWS_WITH_AS(options({"--compile-cores", "0,a"}),
                         "tempo lab measure --compile-cores: expected an integer in [0, 4095], got "
                         "'a'",
                         Error);
    CHECK_THROWS_WITH_AS(options({"--quiet", "1.5"}),
                         "tempo lab measure --quiet: expected a number in [0, 1] or off, got '1.5'",
                         Error);
}

TEST_CASE("an error names the command once") {
    const Error option("tempo lab measure --threads", "expected an integer, got 'x'");
    CHECK(lab_error_line("tempo lab measure", option) ==
          "tempo lab measure --threads: expected an integer, got 'x'");
    const Error file("data/t/records-s1of1-0001.jsonl.gz: line 3", "truncated");
    CHECK(lab_error_line("tempo lab measure", file) ==
          "tempo lab measure: data/t/records-s1of1-0001.jsonl.gz: line 3: truncated");
    CHECK_THROWS_WITH_AS(parse_lab_options({"sample", "-n", "many"}, ""),
                         "tempo lab sample -n: expected an integer in [1, 1073741824], got 'many'",
                         Error);
}
