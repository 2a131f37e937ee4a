// The tool's number parsers: the whole text, range-checked, or an error naming the option and
// the text (std::stoi and strtol take "3x" as 3 and " 3" or "+3" as 3).
#include <doctest/doctest.h>

#include "../tools/cli/args.hpp"

#include <cstdint>

using namespace tempo;
using namespace tempo::cli;

TEST_CASE("parse_int: the whole text, in range, or an error naming the option and the text") {
    CHECK(parse_int<int>("42", "--n") == 42);
    CHECK(parse_int<int>("-7", "--n") == -7);
    CHECK(parse_int<std::uint64_t>("18446744073709551615", "--seed") == UINT64_MAX);
    CHECK(parse_int<int>("3", "--n", 1, 3) == 3);
    CHECK_THROWS_WITH_AS(parse_int<int>("3x", "--n"), "--n: expected an integer, got '3x'", Error);
    CHECK_THROWS_WITH_AS(parse_int<int>("", "--n"), "--n: expected an integer, got ''", Error);
    CHECK_THROWS_WITH_AS(parse_int<int>(" 3", "--n"), "--n: expected an integer, got ' 3'", Error);
    CHECK_THROWS_WITH_AS(parse_int<int>("+3", "--n"), "--n: expected an integer, got '+3'", Error);
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
