// The lab's command lines: every number is read whole and range-checked, and an error names
// the command and the option once.
#include <doctest/doctest.h>

#include "../tools/lab/lab_cli.hpp"
#include "../tools/lab/measure_cli.hpp"

#include <cstdint>

using namespace tempo;
using namespace tempo::lab;

TEST_CASE("parse_int: the whole text, in range, or an error naming the option and the text") {
    CHECK(parse_int<int>("42", "--n") == 42);
    CHECK(parse_int<int>("-7", "--n") == -7);
    CHECK(parse_int<std::uint64_t>("18446744073709551615", "--seed") == UINT64_MAX);
    CHECK(parse_int<int>("3", "--n", 1, 3) == 3);
    CHECK_THROWS_WITH_AS(parse_int<int>("3x", "--n"), "--n: expected an integer, got '3x'", Error);
    CHECK_THROWS_WITH_AS(parse_int<int>("", "--n"), "--n: expected an integer, got ''", Error);
    CHECK_THROWS_WITH_AS(parse_int<int>(" 3", "--n"), "--n: expected an integer, got ' 3'", Error);
    CHECK_THROWS_WITH_AS(parse_int<int>("-", "--n"), "--n: expected an integer, got '-'", Error);
    CHECK_THROWS_WITH_AS(parse_int<int>("4", "--n", 1, 3),
                         "--n: expected an integer in [1, 3], got '4'", Error);
    CHECK_THROWS_WITH_AS(parse_int<int>("0", "--n", 1, 3),
                         "--n: expected an integer in [1, 3], got '0'", Error);
    CHECK_THROWS_WITH_AS(parse_int<std::uint64_t>("x", "--seed", 1),
                         "--seed: expected an integer ≥ 1, got 'x'", Error);
    // strtoull would read "-1" as 2^64 - 1; strtoll saturates what does not fit.
    CHECK_THROWS_WITH_AS(parse_int<std::uint64_t>("-1", "--seed"),
                         "--seed: expected an integer, got '-1'", Error);
    CHECK_THROWS_AS(parse_int<std::uint64_t>("18446744073709551616", "--seed"), Error);
    CHECK_THROWS_AS(parse_int<int>("99999999999999999999", "--n"), Error);
    CHECK_THROWS_AS(parse_int<int>("2147483648", "--n"), Error); // fits long long, not int
}

TEST_CASE("parse_real: a finite number in range, or an error naming the option and the text") {
    CHECK(parse_real("0.5", "--f", 0, 1) == 0.5);
    CHECK(parse_real("1e-3", "--f", 0, 1) == 1e-3);
    CHECK_THROWS_WITH_AS(parse_real("0.5s", "--f", 0, 1),
                         "--f: expected a number in [0, 1], got '0.5s'", Error);
    CHECK_THROWS_WITH_AS(parse_real("2", "--f", 0, 1, "off"),
                         "--f: expected a number in [0, 1] or off, got '2'", Error);
    CHECK_THROWS_AS(parse_real("nan", "--f", 0, 1), Error);
    CHECK_THROWS_AS(parse_real("inf", "--f", 0, 1e300), Error);
    CHECK_THROWS_AS(parse_real("1e999", "--f", 0, 1e300), Error);
    CHECK_THROWS_AS(parse_real("", "--f", 0, 1), Error);
    CHECK_THROWS_AS(parse_real(" 1", "--f", 0, 1), Error);
}

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
