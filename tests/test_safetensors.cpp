// tempo::io::SafeTensors: round trip on numpy-written fixtures, and a table of malformed files
// each rejected with its reason.
#include "tempo/io/safetensors.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

using tempo::io::SafeTensors;

namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in, "cannot open " << path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string le64(std::uint64_t n) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(n >> (8 * i));
    return s;
}

// A file made of `header` (its length written in front) and a `buffer_bytes` long buffer.
std::string file(const std::string& header, std::size_t buffer_bytes = 0) {
    return le64(header.size()) + header + std::string(buffer_bytes, '\0');
}

// A header entry "name":{"dtype":…,"shape":…,"data_offsets":[begin,end]}.
std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  std::uint64_t begin, std::uint64_t end) {
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
           ",\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(end) + "]}";
}

std::string parse_error(const std::string& bytes) {
    try {
        SafeTensors::parse(bytes, "bad.safetensors");
    } catch (const tempo::Error& e) {
        return e.what();
    }
    return "";
}

std::uint32_t bits_of(float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
}

const std::string kFixtures = std::string(TEMPO_FIXTURES_DIR) + "/safetensors/";

} // namespace

TEST_CASE("numpy-written fixtures read back exactly") {
    const tempo::json::Value manifest =
        tempo::json::parse(read_file(kFixtures + "expected.json"), "expected.json");
    REQUIRE(manifest.size() == 3);
    for (const tempo::json::Member& file_entry : manifest.as_object()) {
        INFO(file_entry.key);
        const tempo::json::Node want(file_entry.value, file_entry.key);
        const SafeTensors st = SafeTensors::load(kFixtures + file_entry.key);
        // Parsing the same bytes from memory gives the same tensors.
        const SafeTensors mem =
            SafeTensors::parse(read_file(kFixtures + file_entry.key), file_entry.key);
        CHECK(st.label() == kFixtures + file_entry.key);

        SafeTensors::Metadata metadata;
        for (const tempo::json::Member& m : want["metadata"].as_object())
            metadata[m.key] = m.value.as_string();
        CHECK(st.metadata() == metadata);

        const auto& tensors = want["tensors"].as_object();
        CHECK(st.size() == tensors.size());
        CHECK(mem.names() == st.names());
        for (const tempo::json::Member& t : tensors) {
            INFO(t.key);
            const tempo::json::Node info = want["tensors"].child(t);
            REQUIRE(st.has(t.key));
            const tempo::io::Tensor& got = st.tensor(t.key);
            CHECK(got.name() == t.key);
            CHECK(got.dtype() == info["dtype"].as_string());
            std::vector<std::size_t> shape;
            for (const tempo::json::Value& d : info["shape"].as_array())
                shape.push_back(d.as_uint64());
            CHECK(got.shape() == shape);
            CHECK(got.rank() == shape.size());
            const auto& bits = info["bits"].as_array();
            REQUIRE(got.numel() == bits.size());
            CHECK(reinterpret_cast<std::uintptr_t>(got.data()) % tempo::kAlignment == 0);
            for (std::size_t i = 0; i < bits.size(); ++i) {
                CHECK(bits_of(got.data()[i]) == bits[i].as_uint64());
                CHECK(bits_of(mem.tensor(t.key).data()[i]) == bits[i].as_uint64());
            }
        }
    }
}

TEST_CASE("fixture details: scalar, zero-size, F16 specials, metadata") {
    const SafeTensors st = SafeTensors::load(kFixtures + "basic.safetensors");
    CHECK(st.names() == std::vector<std::string>{"brain", "empty", "half", "half_empty",
                                                 "layers.0.weight", "matrix", "scalar", "vector"});
    CHECK(st.tensor("scalar").shape().empty());
    CHECK(st.tensor("scalar").numel() == 1);
    CHECK(st.tensor("empty").shape() == std::vector<std::size_t>{2, 0, 3});
    CHECK(st.tensor("empty").numel() == 0);
    CHECK(st.tensor("half_empty").numel() == 0);
    const float* half = st.tensor("half", {2, 3}).data();
    CHECK(half[0] == 65504.0f);
    CHECK(bits_of(half[1]) == 0x80000000u);  // -0.0
    CHECK(half[2] == std::ldexp(1.0f, -24)); // smallest F16 subnormal
    CHECK(half[3] == std::numeric_limits<float>::infinity());
    CHECK(half[4] == -2.5f);
    CHECK(st.metadata("tempo.format") == "1");
    CHECK(st.metadata("note") == "h\xC3\xA9llo \xE2\x9C\x93 \"quoted\" \\ \xF0\x9F\x98\x80");
    CHECK(st.has_metadata("tempo.model"));
    CHECK_FALSE(st.has_metadata("tempo.card"));
    CHECK_FALSE(st.has("nope"));

    const SafeTensors empty = SafeTensors::load(kFixtures + "empty.safetensors");
    CHECK(empty.size() == 0);
    CHECK(empty.metadata().empty());
}

TEST_CASE("lookup errors name the file and the tensor") {
    const SafeTensors st = SafeTensors::load(kFixtures + "basic.safetensors");
    const std::string label = kFixtures + "basic.safetensors";
    auto what = [](auto&& f) -> std::string {
        try {
            f();
        } catch (const tempo::Error& e) {
            return e.what();
        }
        return "";
    };
    CHECK(what([&] { st.tensor("w"); }) == label + ": no tensor \"w\"");
    CHECK(what([&] { st.metadata("tempo.card"); }) == label + ": no metadata \"tempo.card\"");
    CHECK(what([&] {
              st.tensor("matrix", {4, 3});
          }) == label + ": tensor \"matrix\": expected shape [4, 3], file has [3, 4]");
    CHECK(what([&] { st.tensor("scalar").expect_shape({1}); }) ==
          label + ": tensor \"scalar\": expected shape [1], file has []");
    CHECK(what([&] { SafeTensors::load("no/such/file.safetensors"); }) ==
          "no/such/file.safetensors: cannot open: No such file or directory");
    CHECK(what([&] { SafeTensors::load(TEMPO_TEST_TMP_DIR); }) ==
          std::string(TEMPO_TEST_TMP_DIR) + ": cannot read: Is a directory");
}

TEST_CASE("valid edge cases") {
    // Trailing spaces pad the header, as writers do for alignment; the buffer may be empty.
    CHECK(SafeTensors::parse(file("{}      "), "x").size() == 0);
    CHECK(SafeTensors::parse(file("{ \n}"), "x").size() == 0);
    const std::string raw = file("{" + entry("w", "F32", "[1]", 0, 4) + "}", 4);
    CHECK(SafeTensors::parse(raw.data(), raw.size(), "raw").tensor("w").data()[0] == 0.0f);
    CHECK(SafeTensors::parse(file("{\"__metadata__\":{}}"), "x").metadata().empty());

    // Tensors listed out of buffer order; zero-size tensors anywhere on a boundary.
    std::string h = "{" + entry("b", "F32", "[2]", 8, 16) + "," +
                    entry("z", "F32", "[0, 5]", 8, 8) + "," + entry("a", "BF16", "[2, 2]", 0, 8) +
                    "," + entry("y", "F16", "[0]", 16, 16) + "," + entry("x", "F16", "[0]", 0, 0) +
                    "}";
    std::string bytes = file(h, 16);
    const std::size_t buf = 8 + h.size();
    bytes[buf + 0] = static_cast<char>(0x80); // a[0] = BF16 0x3F80 = 1.0
    bytes[buf + 1] = 0x3F;
    bytes[buf + 11] = static_cast<char>(0xC0); // b[0] = F32 0xC0000000 = -2.0
    SafeTensors st = SafeTensors::parse(bytes, "x");
    CHECK(st.size() == 5);
    CHECK(st.tensor("a").data()[0] == 1.0f);
    CHECK(st.tensor("a").data()[1] == 0.0f);
    CHECK(st.tensor("b").data()[0] == -2.0f);
    CHECK(st.tensor("z").shape() == std::vector<std::size_t>{0, 5});

    // Names are arbitrary UTF-8, escapes included.
    std::string u = "{\"\\u00e9\\ud83d\\ude00.w\":{\"dtype\":\"F32\",\"shape\":[],"
                    "\"data_offsets\":[0,4]}}";
    CHECK(SafeTensors::parse(file(u, 4), "x").has("\xC3\xA9\xF0\x9F\x98\x80.w"));

    // A huge dimension is fine when another one is 0 and the product never overflows.
    std::string zero = "{" + entry("w", "F32", "[0, 18446744073709551615]", 0, 0) + "}";
    CHECK(SafeTensors::parse(file(zero), "x").tensor("w").numel() == 0);
}

TEST_CASE("every F16 and BF16 value converts exactly") {
    std::string h = "{" + entry("h", "F16", "[65536]", 0, 131072) + "," +
                    entry("b", "BF16", "[65536]", 131072, 262144) + "}";
    std::string bytes = file(h, 262144);
    const std::size_t buf = 8 + h.size();
    for (std::size_t i = 0; i < 65536; ++i) {
        for (std::size_t part : {std::size_t{0}, std::size_t{131072}}) {
            bytes[buf + part + 2 * i] = static_cast<char>(i & 0xFF);
            bytes[buf + part + 2 * i + 1] = static_cast<char>(i >> 8);
        }
    }
    const SafeTensors st = SafeTensors::parse(bytes, "x");
    const float* h16 = st.tensor("h").data();
    const float* b16 = st.tensor("b").data();
    std::size_t mismatches = 0;
    for (std::uint32_t i = 0; i < 65536; ++i) {
        // Reference: the definition of binary16, evaluated in double.
        const double sign = (i & 0x8000) ? -1.0 : 1.0;
        const int exponent = (i >> 10) & 0x1F;
        const std::uint32_t mantissa = i & 0x3FF;
        if (exponent == 31) {
            bool ok = mantissa ? std::isnan(h16[i]) && (bits_of(h16[i]) >> 13 & 0x3FF) == mantissa
                               : h16[i] == sign * HUGE_VALF;
            mismatches += !ok || std::signbit(h16[i]) != (sign < 0);
        } else {
            const double want = exponent ? sign * std::ldexp(1024.0 + mantissa, exponent - 25)
                                         : sign * std::ldexp(double(mantissa), -24);
            mismatches += static_cast<double>(h16[i]) != want || std::signbit(h16[i]) != (sign < 0);
        }
        mismatches += bits_of(b16[i]) != i << 16;
    }
    CHECK(mismatches == 0);
}

TEST_CASE("every dtype of the format other than F32/F16/BF16 is unsupported, not unknown") {
    for (const char* dtype :
         {"F64", "C64", "I64", "U64", "I32", "U32", "I16", "U16", "I8", "U8", "BOOL", "F8_E5M2",
          "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F6_E2M3", "F6_E3M2", "F4"}) {
        INFO(dtype);
        CHECK(parse_error(file("{" + entry("w", dtype, "[0]", 0, 0) + "}")) ==
              "bad.safetensors: tensor \"w\": unsupported dtype \"" + std::string(dtype) +
                  "\" (tempo reads F32, F16 and BF16)");
    }
    for (const char* dtype : {"", "F8", "FLOAT", "BF16 ", "f16", "Q4_0"}) {
        INFO(dtype);
        CHECK(parse_error(file("{" + entry("w", dtype, "[0]", 0, 0) + "}")) ==
              "bad.safetensors: tensor \"w\": unknown dtype \"" + std::string(dtype) + "\"");
    }
}

TEST_CASE("malformed files are rejected with their reason") {
    struct Case {
        const char* name;
        std::string bytes;
        std::string fragment;
    };
    const std::string w8 = entry("w", "F32", "[2]", 0, 8);
    std::string deep = "{\"__metadata__\":";
    for (int i = 0; i < 200; ++i) deep += "[";
    const std::string valid = file("{" + w8 + "}", 8);

    const std::vector<Case> cases = {
        {"empty file", "", "file too short (0 bytes) to hold the 8-byte header length"},
        {"shorter than 8 bytes", std::string(7, '\0'), "file too short (7 bytes)"},
        {"header length past EOF", le64(100) + "{}",
         "header length 100 runs past the end of the file (10 bytes)"},
        {"truncated header", valid.substr(0, 20), "runs past the end of the file (20 bytes)"},
        {"header length over cap", le64(100'000'001) + "{}",
         "header length 100000001 exceeds the limit of 100000000 bytes"},
        {"header length 2^64-1", le64(~std::uint64_t{0}) + "{}",
         "header length 18446744073709551615 exceeds the limit"},
        {"zero header length", le64(0), "header does not start with '{'"},
        {"header starts with a space", file(" {}"), "header does not start with '{'"},
        {"header is an array", file("[]"), "header does not start with '{'"},
        {"header is a string", file("\"{}\""), "header does not start with '{'"},
        {"header not UTF-8", file("{\"\xFF\":1}"), "header is not valid UTF-8 (byte 2 of"},
        {"header overlong UTF-8", file("{\"w\xC0\xAF\":1}"), "header is not valid UTF-8 (byte 3"},
        {"bad JSON", file("{\"w\":"),
         "bad.safetensors: header: line 1, column 6: unexpected end of input, expected a value"},
        {"trailing comma", file("{" + w8 + ",}", 8), "expected a string key, got character '}'"},
        {"garbage after header object", file("{} x"),
         "header: line 1, column 4: unexpected character 'x' after the value"},
        {"tensor entry not an object", file("{\"w\":5}"),
         "bad.safetensors: tensor \"w\": expected an object, got a number"},
        {"unknown dtype", file("{" + entry("w", "F17", "[2]", 0, 8) + "}", 8),
         "bad.safetensors: tensor \"w\": unknown dtype \"F17\""},
        {"lowercase dtype", file("{" + entry("w", "f32", "[2]", 0, 8) + "}", 8),
         "tensor \"w\": unknown dtype \"f32\""},
        {"unsupported F64", file("{" + entry("w", "F64", "[1]", 0, 8) + "}", 8),
         "tensor \"w\": unsupported dtype \"F64\" (tempo reads F32, F16 and BF16)"},
        {"unsupported I64", file("{" + entry("w", "I64", "[1]", 0, 8) + "}", 8),
         "unsupported dtype \"I64\""},
        {"unsupported I32", file("{" + entry("w", "I32", "[2]", 0, 8) + "}", 8),
         "unsupported dtype \"I32\""},
        {"unsupported U8", file("{" + entry("w", "U8", "[8]", 0, 8) + "}", 8),
         "unsupported dtype \"U8\""},
        {"unsupported BOOL", file("{" + entry("w", "BOOL", "[8]", 0, 8) + "}", 8),
         "unsupported dtype \"BOOL\""},
        {"unsupported F4", file("{" + entry("w", "F4", "[16]", 0, 8) + "}", 8),
         "unsupported dtype \"F4\""},
        {"dtype not a string",
         file("{\"w\":{\"dtype\":32,\"shape\":[2],\"data_offsets\":[0,8]}}", 8),
         "tensor \"w\".dtype: expected a string, got a number"},
        {"shape/offset size mismatch", file("{" + entry("w", "F32", "[2, 3]", 0, 20) + "}", 20),
         "tensor \"w\": shape [2, 3] of F32 needs 24 bytes, data_offsets [0, 20] hold 20"},
        {"F16 odd size", file("{" + entry("h", "F16", "[3]", 0, 5) + "}", 5),
         "tensor \"h\": shape [3] of F16 needs 6 bytes, data_offsets [0, 5] hold 5"},
        {"overlapping offsets",
         file("{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[2]", 4, 12) + "}",
              12),
         "tensor \"b\": data_offsets [4, 12] overlap tensor \"a\" (data_offsets [0, 8])"},
        {"two tensors, same bytes",
         file("{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[2]", 0, 8) + "}", 8),
         "tensor \"b\": data_offsets [0, 8] overlap tensor \"a\""},
        {"zero-size tensor inside another",
         file("{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("z", "F32", "[0]", 4, 4) + "}", 8),
         "tensor \"z\": data_offsets [4, 4] overlap tensor \"a\""},
        {"hole between tensors",
         file("{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[2]", 12, 20) + "}",
              20),
         "hole in the data buffer: bytes [8, 12) belong to no tensor (before tensor \"b\")"},
        {"first tensor not at 0", file("{" + entry("a", "F32", "[2]", 4, 12) + "}", 12),
         "hole in the data buffer: bytes [0, 4)"},
        {"trailing bytes", file("{" + w8 + "}", 12),
         "trailing bytes: the data buffer has 12 bytes, tensors cover 8"},
        {"bytes but no tensors", file("{}", 4),
         "trailing bytes: the data buffer has 4 bytes, tensors cover 0"},
        {"truncated buffer", valid.substr(0, valid.size() - 1),
         "tensor \"w\": data_offsets [0, 8] run past the end of the data buffer (7 bytes)"},
        {"offsets past end",
         file("{" + entry("w", "F32", "[1099511627776]", 0, 4398046511104) + "}", 8),
         "data_offsets [0, 4398046511104] run past the end of the data buffer (8 bytes)"},
        {"begin > end", file("{" + entry("w", "F32", "[2]", 8, 0) + "}", 8),
         "tensor \"w\": data_offsets [8, 0]: begin is after end"},
        {"shape product overflow",
         file("{" + entry("w", "F32", "[4294967296, 4294967296]", 0, 8) + "}", 8),
         "tensor \"w\": shape [4294967296, 4294967296] overflows the element count"},
        {"bytes overflow", file("{" + entry("w", "F32", "[4611686018427387904]", 0, 8) + "}", 8),
         "shape [4611686018427387904] overflows the element count"},
        {"overflow before a zero dim",
         file("{" + entry("w", "F32", "[4294967296, 4294967296, 0]", 0, 0) + "}"),
         "overflows the element count"},
        {"dim beyond uint64",
         file("{" + entry("w", "F32", "[18446744073709551616]", 0, 8) + "}", 8),
         "tensor \"w\".shape[0]: integer out of range of uint64"},
        {"negative shape entry", file("{" + entry("w", "F32", "[2, -1]", 0, 8) + "}", 8),
         "tensor \"w\".shape[1]: expected an unsigned integer, got -1"},
        {"float shape entry", file("{" + entry("w", "F32", "[2.0]", 0, 8) + "}", 8),
         "tensor \"w\".shape[0]: expected an unsigned integer, got 2.0"},
        {"exponent shape entry", file("{" + entry("w", "F32", "[2e0]", 0, 8) + "}", 8),
         "tensor \"w\".shape[0]: expected an unsigned integer, got 2.0"},
        {"shape not an array", file("{" + entry("w", "F32", "2", 0, 8) + "}", 8),
         "tensor \"w\".shape: expected an array, got a number"},
        {"three data_offsets",
         file("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,8]}}", 8),
         "tensor \"w\".data_offsets: expected 2 elements, got 3"},
        {"negative data_offsets",
         file("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}}", 8),
         "tensor \"w\".data_offsets[0]: expected an unsigned integer, got -8"},
        {"duplicate tensor keys", file("{" + w8 + "," + w8 + "}", 8),
         "header: line 1, column 55: duplicate key \"w\""},
        {"duplicate metadata keys", file("{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}"),
         "header: line 1, column 26: duplicate key \"k\""},
        {"duplicate __metadata__", file("{\"__metadata__\":{},\"__metadata__\":{}}"),
         "duplicate key \"__metadata__\""},
        {"non-string metadata value", file("{\"__metadata__\":{\"k\":1}}"),
         "bad.safetensors: __metadata__.k: expected a string, got a number"},
        {"metadata value an object", file("{\"__metadata__\":{\"tempo.x\":{}}}"),
         "__metadata__[\"tempo.x\"]: expected a string, got an object"},
        {"metadata not an object", file("{\"__metadata__\":[\"a\"]}"),
         "bad.safetensors: __metadata__: expected an object, got an array"},
        {"metadata null", file("{\"__metadata__\":null}"),
         "__metadata__: expected an object, got null"},
        {"missing dtype", file("{\"w\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8),
         "tensor \"w\": missing key \"dtype\""},
        {"missing shape", file("{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8),
         "tensor \"w\": missing key \"shape\""},
        {"missing data_offsets", file("{\"w\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8),
         "tensor \"w\": missing key \"data_offsets\""},
        {"extra field",
         file("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"extra\":1}}", 8),
         "tensor \"w\": unknown key \"extra\""},
        {"deep nesting", file(deep), "nesting deeper than 128 levels"},
        {"unpaired surrogate in a name", file("{\"\\ud800\":{}}"),
         "header: line 1, column 3: unpaired high surrogate"},
    };
    CHECK(cases.size() >= 30);
    for (const Case& c : cases) {
        INFO(std::string(c.name));
        std::string message = parse_error(c.bytes);
        INFO(message);
        CHECK(message.rfind("bad.safetensors: ", 0) == 0);
        CHECK(message.find(c.fragment) != std::string::npos);
    }
    // NUL bytes are not JSON whitespace; the reference rejects them as padding too.
    CHECK(parse_error(file(std::string("{}\0\0", 4))) ==
          "bad.safetensors: header: line 1, column 3: unexpected byte 0x00 after the value");
}

TEST_CASE("no input crashes: every truncation and many byte mutations of a fixture") {
    // Run under the sanitizers this shows there is no UB; each outcome is a file or an Error.
    const std::string good = read_file(kFixtures + "basic.safetensors");
    std::size_t accepted = 0, rejected = 0;
    auto attempt = [&](const std::string& bytes) {
        try {
            SafeTensors::parse(bytes, "m");
            ++accepted;
        } catch (const tempo::Error&) {
            ++rejected;
        }
    };
    for (std::size_t n = 0; n < good.size(); ++n) attempt(good.substr(0, n));
    for (std::size_t i = 0; i < good.size(); ++i) {
        for (unsigned char v : {0x00, 0x01, 0x22, 0x2C, 0x30, 0x39, 0x5B, 0x7B, 0x7D, 0x80, 0xFF}) {
            std::string bytes = good;
            bytes[i] = static_cast<char>(v);
            attempt(bytes);
        }
    }
    CHECK(rejected > 0);
    CHECK(accepted > 0); // mutations inside the data buffer keep the file valid
}
