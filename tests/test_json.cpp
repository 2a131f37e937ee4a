// tempo::json: valid documents, every error class with its message, limits, the writer.
#include "tempo/io/json.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

using tempo::json::Node;
using tempo::json::Number;
using tempo::json::parse;
using tempo::json::Type;
using tempo::json::Value;

namespace {

// The message of the Error that parsing `text` throws, or "" when it parses.
std::string parse_error(std::string_view text, tempo::json::ParseOptions options = {}) {
    try {
        parse(text, "t.json", options);
    } catch (const tempo::Error& e) {
        return e.what();
    }
    return "";
}

template <typename F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const tempo::Error& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST_CASE("scalars and containers") {
    CHECK(parse("null").is_null());
    CHECK(parse(" true ").as_bool());
    CHECK_FALSE(parse("\n\tfalse\r\n").as_bool());
    CHECK(parse("-12.5e1").as_double() == -125.0);
    CHECK(parse("\"hi\"").as_string() == "hi");
    CHECK(parse("[]").as_array().empty());
    CHECK(parse("{}").as_object().empty());

    Value v = parse(R"({"b": [1, "x", null, {"c": true}], "a": {}, "": 0})");
    REQUIRE(v.is_object());
    const auto& members = v.as_object();
    REQUIRE(members.size() == 3);
    // Insertion order is kept, not sorted.
    CHECK(members[0].key == "b");
    CHECK(members[1].key == "a");
    CHECK(members[2].key == "");
    const Value* b = v.find("b");
    REQUIRE(b);
    CHECK(b->size() == 4);
    CHECK(b->as_array()[1].as_string() == "x");
    CHECK(b->as_array()[2].type() == Type::Null);
    CHECK(b->as_array()[3].find("c")->as_bool());
    CHECK(v.find("missing") == nullptr);
    CHECK(b->find("c") == nullptr); // not an object
}

TEST_CASE("numbers are exact") {
    CHECK(parse("0.1").as_double() == 0.1);
    CHECK(parse("1.7976931348623157e308").as_double() == std::numeric_limits<double>::max());
    CHECK(parse("4.9406564584124654e-324").as_double() ==
          std::numeric_limits<double>::denorm_min());
    CHECK(parse("2.2250738585072014E-308").as_double() == std::numeric_limits<double>::min());
    CHECK(parse("-0").as_double() == 0.0);
    CHECK(std::signbit(parse("-0.0").as_double()));
    CHECK(parse("1E+2").as_double() == 100.0);
    CHECK(parse("1e-2").as_double() == 0.01);
    // Below the smallest subnormal rounds to zero (keeping the sign), as strtod does.
    CHECK(parse("1e-400").as_double() == 0.0);
    CHECK(std::signbit(parse("-1e-400").as_double()));
    CHECK(parse("0.0000000000000000000000000000000000000001e-300").as_double() == 0.0);
    // Many digits are still rounded correctly.
    CHECK(parse("3.14159265358979323846264338327950288419716939937510").as_double() == M_PI);
}

TEST_CASE("integers keep their exact value, overflow is detected") {
    CHECK(parse("9007199254740993").as_int64() == 9007199254740993LL); // not a double
    CHECK(parse("9223372036854775807").as_int64() == std::numeric_limits<std::int64_t>::max());
    CHECK(parse("-9223372036854775808").as_int64() == std::numeric_limits<std::int64_t>::min());
    CHECK(parse("18446744073709551615").as_uint64() == std::numeric_limits<std::uint64_t>::max());
    CHECK(parse("9223372036854775808").as_uint64() == (std::uint64_t{1} << 63));
    CHECK(parse("0").as_uint64() == 0);
    CHECK(parse("-0").as_int64() == 0);
    CHECK(parse("-0").as_uint64() == 0);
    CHECK(parse("17").as_number().integer == Number::Int::Signed);
    CHECK(parse("17.0").as_number().integer == Number::Int::None);
    CHECK(parse("1e3").as_number().integer == Number::Int::None);

    CHECK(error_of([] { parse("9223372036854775808").as_int64(); }) ==
          "integer out of range of int64");
    CHECK(error_of([] { parse("-9223372036854775809").as_int64(); }) ==
          "integer out of range of int64");
    CHECK(error_of([] { parse("18446744073709551616").as_uint64(); }) ==
          "integer out of range of uint64");
    CHECK(error_of([] { parse("-9223372036854775809").as_uint64(); }) ==
          "integer out of range of uint64");
    // An integer too big for int64 is still a fine double.
    CHECK(parse("18446744073709551616").as_double() == 18446744073709551616.0);
    CHECK(error_of([] { parse("-1").as_uint64(); }) == "expected an unsigned integer, got -1");
    CHECK(error_of([] { parse("2.0").as_uint64(); }) == "expected an unsigned integer, got 2.0");
    CHECK(error_of([] { parse("1e3").as_int64(); }) == "expected an integer, got 1000.0");
    CHECK(error_of([] { parse("2.5").as_int64(); }) == "expected an integer, got 2.5");
    CHECK(error_of([] { parse("\"7\"").as_int64(); }) == "expected an integer, got a string");
}

TEST_CASE("strings: escapes, unicode, surrogate pairs") {
    CHECK(parse(R"("a\"b\\c\/d\be\ff\ng\rh\ti")").as_string() == "a\"b\\c/d\be\ff\ng\rh\ti");
    CHECK(parse(R"("\u0041\u00e9\u20AC")").as_string() == "A\xC3\xA9\xE2\x82\xAC");
    CHECK(parse(R"("\ud83d\ude00")").as_string() == "\xF0\x9F\x98\x80"); // U+1F600
    CHECK(parse(R"("\uDBFF\uDFFF")").as_string() == "\xF4\x8F\xBF\xBF"); // U+10FFFF
    CHECK(parse(R"("\u0000")").as_string() == std::string(1, '\0'));
    // Raw UTF-8 of every length passes through.
    CHECK(parse("\"h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9F\x98\x80\"").as_string() ==
          "h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9F\x98\x80");
    CHECK(parse("\"\x7F\"").as_string() == "\x7F"); // DEL need not be escaped
}

TEST_CASE("syntax errors name line, column and reason") {
    CHECK(parse_error("") == "t.json: line 1, column 1: empty document");
    CHECK(parse_error("  \n ") == "t.json: line 2, column 2: empty document");
    CHECK(parse_error("[") ==
          "t.json: line 1, column 2: unexpected end of input, expected a value");
    CHECK(parse_error("[1") == "t.json: line 1, column 3: unexpected end of input in an array");
    CHECK(parse_error("{\"a\":1") ==
          "t.json: line 1, column 7: unexpected end of input in an object");
    CHECK(parse_error("{") == "t.json: line 1, column 2: unexpected end of input in an object");
    CHECK(parse_error("[1 2]") ==
          "t.json: line 1, column 4: expected ',' or ']' in an array, got character '2'");
    CHECK(parse_error("{\"a\":1 \"b\":2}") ==
          "t.json: line 1, column 8: expected ',' or '}' in an object, got character '\"'");
    CHECK(parse_error("{\"a\" 1}") ==
          "t.json: line 1, column 6: expected ':' after an object key, got character '1'");
    CHECK(parse_error("{1:2}") ==
          "t.json: line 1, column 2: expected a string key, got character '1'");
    CHECK(parse_error("{'a':2}") ==
          "t.json: line 1, column 2: expected a string key, got character '''");
    CHECK(parse_error("[1,]") ==
          "t.json: line 1, column 4: unexpected character ']', expected a value");
    CHECK(parse_error("{\"a\":1,}") ==
          "t.json: line 1, column 8: expected a string key, got character '}'");
    CHECK(parse_error("[,1]") ==
          "t.json: line 1, column 2: unexpected character ',', expected a value");
    CHECK(parse_error("1 2") ==
          "t.json: line 1, column 3: unexpected character '2' after the value");
    CHECK(parse_error("{} x") ==
          "t.json: line 1, column 4: unexpected character 'x' after the value");
    CHECK(parse_error("tru") == "t.json: line 1, column 1: invalid literal");
    CHECK(parse_error("nulll") ==
          "t.json: line 1, column 5: unexpected character 'l' after the value");
    CHECK(parse_error("True") ==
          "t.json: line 1, column 1: unexpected character 'T', expected a value");
    CHECK(parse_error("NaN") ==
          "t.json: line 1, column 1: unexpected character 'N', expected a value");
    CHECK(parse_error("// c\n1") ==
          "t.json: line 1, column 1: unexpected character '/', expected a value");
    CHECK(parse_error("\xEF\xBB\xBF{}") ==
          "t.json: line 1, column 1: unexpected byte 0xEF, expected a value");
    CHECK(parse_error("[1]\x0C") ==
          "t.json: line 1, column 4: unexpected byte 0x0C after the value");
    // Lines and columns: columns count characters, not bytes.
    CHECK(parse_error("{\n  \"k\": [1,\n     2,, 3]\n}") ==
          "t.json: line 3, column 8: unexpected character ',', expected a value");
    CHECK(parse_error("[\"\xC3\xA9\xC3\xA9\", x]") ==
          "t.json: line 1, column 8: unexpected character 'x', expected a value");
}

TEST_CASE("number errors") {
    CHECK(parse_error("01") == "t.json: line 1, column 1: invalid number, leading zero");
    CHECK(parse_error("-01") == "t.json: line 1, column 1: invalid number, leading zero");
    CHECK(parse_error("-") == "t.json: line 1, column 2: invalid number, expected a digit");
    CHECK(parse_error("-a") == "t.json: line 1, column 2: invalid number, expected a digit");
    CHECK(parse_error("+1") ==
          "t.json: line 1, column 1: unexpected character '+', expected a value");
    CHECK(parse_error(".5") ==
          "t.json: line 1, column 1: unexpected character '.', expected a value");
    CHECK(parse_error("1.") ==
          "t.json: line 1, column 3: invalid number, expected a digit after '.'");
    CHECK(parse_error("1.e5") ==
          "t.json: line 1, column 3: invalid number, expected a digit after '.'");
    CHECK(parse_error("1e") ==
          "t.json: line 1, column 3: invalid number, expected a digit in the exponent");
    CHECK(parse_error("1e+") ==
          "t.json: line 1, column 4: invalid number, expected a digit in the exponent");
    CHECK(parse_error("[1e400]") == "t.json: line 1, column 2: number out of range of a double");
    CHECK(parse_error("-1.8e308") == "t.json: line 1, column 1: number out of range of a double");
    CHECK(parse_error("1e99999999999999999999") ==
          "t.json: line 1, column 1: number out of range of a double");
    CHECK(parse_error("0.001e312") == "t.json: line 1, column 1: number out of range of a double");
    CHECK(parse_error("0x10") ==
          "t.json: line 1, column 2: unexpected character 'x' after the value");
    CHECK(parse_error("Infinity") ==
          "t.json: line 1, column 1: unexpected character 'I', expected a value");
    CHECK(parse_error("1.5.2") ==
          "t.json: line 1, column 4: unexpected character '.' after the value");
}

TEST_CASE("string errors") {
    CHECK(parse_error("\"abc") == "t.json: line 1, column 5: unexpected end of input in a string");
    CHECK(parse_error("\"abc\\") ==
          "t.json: line 1, column 6: unexpected end of input in a string");
    CHECK(parse_error("\"a\tb\"") ==
          "t.json: line 1, column 3: unescaped control character in a string");
    CHECK(parse_error("\"a\nb\"") ==
          "t.json: line 1, column 3: unescaped control character in a string");
    CHECK(parse_error(std::string("\"a\0b\"", 5)) ==
          "t.json: line 1, column 3: unescaped control character in a string");
    CHECK(parse_error(R"("\q")") == "t.json: line 1, column 2: invalid escape '\\q'");
    CHECK(parse_error(R"("\x41")") == "t.json: line 1, column 2: invalid escape '\\x'");
    CHECK(parse_error("\"\\\x01\"") ==
          "t.json: line 1, column 2: invalid escape, backslash followed by byte 0x01");
    CHECK(parse_error(R"("\u12")") ==
          "t.json: line 1, column 2: invalid \\u escape, expected 4 hex digits");
    CHECK(parse_error(R"("\u12G4")") ==
          "t.json: line 1, column 2: invalid \\u escape, expected 4 hex digits");
    CHECK(parse_error(R"("\U0041")") == "t.json: line 1, column 2: invalid escape '\\U'");
    CHECK(parse_error(R"("x\ud800")") ==
          "t.json: line 1, column 3: unpaired high surrogate in a \\u escape");
    CHECK(parse_error(R"("\ud800\u0041")") ==
          "t.json: line 1, column 2: unpaired high surrogate in a \\u escape");
    CHECK(parse_error(R"("\ud800\ud800")") ==
          "t.json: line 1, column 2: unpaired high surrogate in a \\u escape");
    CHECK(parse_error(R"("\ud800\u12")") ==
          "t.json: line 1, column 8: invalid \\u escape, expected 4 hex digits");
    CHECK(parse_error(R"("\udc00")") ==
          "t.json: line 1, column 2: unpaired low surrogate in a \\u escape");
}

TEST_CASE("invalid UTF-8 is rejected") {
    const char* cases[] = {
        "\"\x80\"",             // lone continuation byte
        "\"\xC0\xAF\"",         // overlong '/'
        "\"\xC1\xBF\"",         // overlong
        "\"\xE0\x80\xAF\"",     // overlong 3-byte
        "\"\xF0\x80\x80\xAF\"", // overlong 4-byte
        "\"\xED\xA0\x80\"",     // UTF-16 surrogate D800 encoded
        "\"\xF4\x90\x80\x80\"", // above U+10FFFF
        "\"\xF5\x80\x80\x80\"", // invalid lead byte
        "\"\xFF\"",             // invalid byte
        "\"\xC3\"",             // truncated at the quote
        "\"\xE2\x82\"",         // truncated 3-byte
    };
    for (const char* c : cases) {
        INFO(c);
        CHECK(parse_error(c) == "t.json: line 1, column 2: invalid UTF-8 in a string");
    }
    CHECK(parse_error("\"\xC3") == "t.json: line 1, column 2: invalid UTF-8 in a string");
    // Outside strings only ASCII is valid at all.
    CHECK(parse_error("[\xC3\xA9]") ==
          "t.json: line 1, column 2: unexpected byte 0xC3, expected a value");
    CHECK(tempo::json::utf8_error_offset("ok \xE2\x9C\x93") == std::string_view::npos);
    CHECK(tempo::json::utf8_error_offset("ok \xE2\x9C") == 3);
}

TEST_CASE("duplicate keys are rejected, small and large objects") {
    CHECK(parse_error("{\n  \"dtype\": \"F32\",\n  \"shape\": [], \"dtype\": \"F16\"}") ==
          "t.json: line 3, column 16: duplicate key \"dtype\"");
    CHECK(parse_error("{\"a\":{\"x\":1,\"x\":2}}") ==
          "t.json: line 1, column 13: duplicate key \"x\"");
    // The same key in different objects is fine.
    CHECK(parse_error("[{\"a\":1},{\"a\":2}]").empty());
    // Keys compare after unescaping.
    CHECK(parse_error(R"({"a":1,"\u0061":2})") == "t.json: line 1, column 8: duplicate key \"a\"");

    // Past the linear-scan size the hash set takes over; duplicates must still be found,
    // whether the first copy was before or after the switch.
    for (int first : {0, 5, 15, 16, 40}) {
        std::string text = "{";
        for (int i = 0; i < 50; ++i) text += "\"k" + std::to_string(i) + "\":" + "1,";
        std::size_t at = text.size();
        text += "\"k" + std::to_string(first) + "\":2}";
        std::string expected = "t.json: line 1, column " + std::to_string(at + 1) +
                               ": duplicate key \"k" + std::to_string(first) + "\"";
        CHECK(parse_error(text) == expected);
    }
    std::string many = "{";
    for (int i = 0; i < 5000; ++i) many += (i ? ",\"" : "\"") + std::to_string(i) + "\":" + "0";
    many += "}";
    CHECK(parse(many).size() == 5000);
}

TEST_CASE("nesting depth is limited") {
    std::string ok = std::string(128, '[') + std::string(128, ']');
    CHECK(parse_error(ok).empty());
    std::string deep = std::string(129, '[') + std::string(129, ']');
    CHECK(parse_error(deep) == "t.json: line 1, column 129: nesting deeper than 128 levels");
    std::string objects;
    for (int i = 0; i < 129; ++i) objects += "{\"a\":";
    CHECK(parse_error(objects) == "t.json: line 1, column 641: nesting deeper than 128 levels");
    // Hostile depth fails cleanly instead of overflowing the stack.
    std::string hostile(1'000'000, '[');
    CHECK(parse_error(hostile) == "t.json: line 1, column 129: nesting deeper than 128 levels");
    tempo::json::ParseOptions shallow;
    shallow.max_depth = 2;
    CHECK(parse_error("[[1]]", shallow).empty());
    CHECK(parse_error("[[[1]]]", shallow) ==
          "t.json: line 1, column 3: nesting deeper than 2 levels");
}

TEST_CASE("first_line offsets line numbers for JSON Lines") {
    tempo::json::ParseOptions o;
    o.first_line = 17;
    CHECK(parse_error("{\"a\": tru}", o) == "t.json: line 17, column 7: invalid literal");
}

TEST_CASE("Node names the path of a bad field") {
    Value doc = parse(R"({"layers": [{"dim": 4}, {"dim": -4, "act": 3}],
                         "w": {"shape": [2, 3, "x"]}, "odd key": true, "f": 1e300})");
    Node root(doc, "model.json");
    CHECK(root["layers"][0]["dim"].as_uint64() == 4);
    CHECK(root["layers"].as_array().size() == 2);
    CHECK(error_of([&] { root["layers"][1]["dim"].as_uint64(); }) ==
          "model.json.layers[1].dim: expected an unsigned integer, got -4");
    CHECK(error_of([&] { root["layers"][1]["act"].as_string(); }) ==
          "model.json.layers[1].act: expected a string, got a number");
    CHECK(error_of([&] { root["w"]["shape"][2].as_uint64(); }) ==
          "model.json.w.shape[2]: expected an unsigned integer, got a string");
    CHECK(error_of([&] { root["w"]["shape"][3]; }) ==
          "model.json.w.shape: index 3 out of range, array has 3 elements");
    CHECK(error_of([&] { root["w"]["shape"].as_array(2); }) ==
          "model.json.w.shape: expected 2 elements, got 3");
    CHECK(error_of([&] { root["missing"]; }) == "model.json: missing key \"missing\"");
    CHECK(error_of([&] { root["odd key"].as_double(); }) ==
          "model.json[\"odd key\"]: expected a number, got a boolean");
    CHECK(error_of([&] { root["layers"]["dim"]; }) ==
          "model.json.layers: expected an object, got an array");
    CHECK(error_of([&] { root["w"][0]; }) == "model.json.w: expected an array, got an object");
    CHECK(error_of([&] { root["f"].as_float(); }) ==
          "model.json.f: number 1e+300 out of range of float");
    CHECK(error_of([&] { root["layers"][1].only_keys({"dim"}); }) ==
          "model.json.layers[1]: unknown key \"act\"");
    CHECK(error_of([&] { root.fail("custom reason"); }) == "model.json: custom reason");
    CHECK(!root.find("nope"));
    CHECK(root.find("w"));
    CHECK(Node(doc, "")["w"].path() == "w");
    // A Node keeps its path after its parent is gone.
    Node shape = root["w"]["shape"];
    CHECK(shape.path() == "model.json.w.shape");
    CHECK(shape[1].as_int64() == 3);
}

TEST_CASE("writer: escaping and round trip") {
    using tempo::json::quote;
    CHECK(quote("plain") == "\"plain\"");
    CHECK(quote("a\"b\\c\n\t\x01\x1F") == "\"a\\\"b\\\\c\\n\\t\\u0001\\u001f\"");
    CHECK(quote("h\xC3\xA9 \xF0\x9F\x98\x80") == "\"h\xC3\xA9 \xF0\x9F\x98\x80\"");
    // Malformed UTF-8 becomes U+FFFD so the output stays valid JSON.
    CHECK(quote("a\xFF"
                "b\xC3") == "\"a\xEF\xBF\xBD"
                            "b\xEF\xBF\xBD\"");
    CHECK(quote(std::string("\0", 1)) == "\"\\u0000\"");

    std::string out;
    tempo::json::write_number(out, 0.1);
    CHECK(out == "0.1");
    out.clear();
    tempo::json::write_number(out, 0.1f);
    CHECK(out == "0.1");
    CHECK_THROWS_AS(tempo::json::write_number(out, std::nan("")), tempo::Error);
    CHECK_THROWS_AS(tempo::json::write_number(out, -HUGE_VALF), tempo::Error);
    CHECK(error_of([] { Value(HUGE_VAL).as_int64(); }) == "expected an integer, got inf");

    const std::string text = R"({"a":[1,-2,0.5,1e+300,true,false,null],"b":{"c":"\u00e9\n"},)"
                             R"("big":18446744073709551615,"min":-9223372036854775808})";
    Value v = parse(text);
    std::string dumped = tempo::json::dump(v);
    CHECK(dumped == "{\"a\":[1,-2,0.5,1e+300,true,false,null],\"b\":{\"c\":\"\xC3\xA9\\n\"},"
                    "\"big\":18446744073709551615,\"min\":-9223372036854775808}");
    CHECK(tempo::json::dump(parse(dumped)) == dumped);
    // Values built in C++ (as the CLI does) write integers exactly.
    Value built(Value::Object{{"n", -3},
                              {"u", std::uint64_t{18446744073709551615u}},
                              {"x", 0.25},
                              {"s", "t"},
                              {"a", Value::Array{true, nullptr}}});
    CHECK(tempo::json::dump(built) ==
          "{\"n\":-3,\"u\":18446744073709551615,\"x\":0.25,\"s\":\"t\",\"a\":[true,null]}");
    CHECK(Value(std::int64_t{-5}).as_int64() == -5);
    CHECK(Value(7u).as_uint64() == 7);
    // Every string survives quote → parse.
    std::string all;
    for (int c = 1; c < 128; ++c) all += static_cast<char>(c);
    all += "\xE2\x9C\x93";
    CHECK(parse(quote(all)).as_string() == all);
}

TEST_CASE("a JSON Lines row of features parses") {
    std::string line = "{\"features\": [";
    for (int r = 0; r < 5; ++r) {
        line += r ? ",[" : "[";
        for (int c = 0; c < 164; ++c) line += (c ? "," : "") + std::to_string(r * 0.25 + c * 1e-3);
        line += "]";
    }
    line += "], \"leaf_ids\": [3, 5]}";
    Value v = parse(line, "programs.jsonl");
    Node features = Node(v, "programs.jsonl")["features"];
    CHECK(features.as_array().size() == 5);
    CHECK(features[4][163].as_double() == doctest::Approx(1.0 + 0.163));
}

TEST_CASE("no input crashes: truncations and byte mutations of a document") {
    // Under the sanitizers this shows there is no UB; each outcome is a value or an Error.
    const std::string doc =
        "{\"a\": [1, -2.5e-3, true, null, \"x\\u00e9\\ud83d\\ude00\\n\"],\n"
        " \"b\": {\"c\": [[], {}], \"d\": 18446744073709551616, \"\xC3\xA9\": 0}}";
    std::size_t ok = 0, failed = 0;
    auto attempt = [&](const std::string& text) {
        try {
            parse(text, "m");
            ++ok;
        } catch (const tempo::Error&) {
            ++failed;
        }
    };
    for (std::size_t n = 0; n <= doc.size(); ++n) attempt(doc.substr(0, n));
    for (std::size_t i = 0; i < doc.size(); ++i) {
        for (unsigned char v : {0x00, 0x09, 0x22, 0x2C, 0x2D, 0x30, 0x3A, 0x5B, 0x5C, 0x5D, 0x65,
                                0x7B, 0x7D, 0x80, 0xC3, 0xED, 0xFF}) {
            std::string text = doc;
            text[i] = static_cast<char>(v);
            attempt(text);
        }
    }
    CHECK(ok > 0);
    CHECK(failed > 0);
}
