// tempo::json — a small, strict RFC 8259 JSON parser, a checked accessor (Node) that names the
// path of every bad field, and a writer for strings and numbers.
//
// Strict means: one value per document, no comments, no trailing commas, no byte order mark,
// no NaN/Infinity, no leading zeros, no duplicate object keys, UTF-8 validated (no overlong
// forms, no surrogates), unpaired \u surrogates rejected, numbers that overflow a double
// rejected, nesting deeper than a limit rejected. Errors throw tempo::Error naming the
// document, line and column: "model.json: line 3, column 14: duplicate key \"dtype\"".
#pragma once

#include "tempo/core/error.hpp"

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

namespace tempo::json {

enum class Type : std::uint8_t { Null, Bool, Number, String, Array, Object };

// A number keeps its double value and, when its literal was an integer (no fraction, no
// exponent), the exact integer, so 9007199254740993 is not rounded on the way to an int64.
struct Number {
    enum class Int : std::uint8_t {
        None,     // the literal had a fraction or an exponent
        Signed,   // fits int64 (bits holds the two's complement value)
        Unsigned, // above INT64_MAX, fits uint64
        Overflow  // an integer literal outside both
    };
    double value = 0.0;
    std::uint64_t bits = 0;
    Int integer = Int::None;
};

struct Member;

namespace detail {
[[noreturn]] inline void fail(const std::string& where, std::string reason) {
    throw Error(where, std::move(reason));
}
} // namespace detail

class Value {
public:
    using Array = std::vector<Value>;
    using Object = std::vector<Member>;

    Value() noexcept = default;
    Value(std::nullptr_t) noexcept {}
    Value(bool b) noexcept : data_(b) {}
    Value(Number n) noexcept : data_(n) {}
    Value(double d) noexcept : data_(Number{d, 0, Number::Int::None}) {}
    Value(std::string s) : data_(std::move(s)) {}
    Value(const char* s) : data_(std::string(s)) {}
    Value(Array a) : data_(std::move(a)) {}
    Value(Object o) : data_(std::move(o)) {}
    // Integers keep their exact value, as parsed integer literals do.
    template <typename I,
              std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
    Value(I i) noexcept : data_(exact(i)) {}

    Type type() const noexcept { return static_cast<Type>(data_.index()); }
    bool is_null() const noexcept { return type() == Type::Null; }
    bool is_bool() const noexcept { return type() == Type::Bool; }
    bool is_number() const noexcept { return type() == Type::Number; }
    bool is_string() const noexcept { return type() == Type::String; }
    bool is_array() const noexcept { return type() == Type::Array; }
    bool is_object() const noexcept { return type() == Type::Object; }

    // Checked accessors: the wrong type throws Error(where, "expected …, got …").
    bool as_bool(const std::string& where = {}) const {
        if (!is_bool()) mismatch(where, "a boolean");
        return std::get<bool>(data_);
    }
    const Number& as_number(const std::string& where = {}) const {
        if (!is_number()) mismatch(where, "a number");
        return std::get<Number>(data_);
    }
    double as_double(const std::string& where = {}) const { return as_number(where).value; }
    std::int64_t as_int64(const std::string& where = {}) const;
    std::uint64_t as_uint64(const std::string& where = {}) const;
    const std::string& as_string(const std::string& where = {}) const {
        if (!is_string()) mismatch(where, "a string");
        return std::get<std::string>(data_);
    }
    const Array& as_array(const std::string& where = {}) const {
        if (!is_array()) mismatch(where, "an array");
        return std::get<Array>(data_);
    }
    const Object& as_object(const std::string& where = {}) const {
        if (!is_object()) mismatch(where, "an object");
        return std::get<Object>(data_);
    }
    Array& as_array() { return const_cast<Array&>(std::as_const(*this).as_array()); }
    Object& as_object() { return const_cast<Object&>(std::as_const(*this).as_object()); }

    // Linear lookup (objects are small); nullptr when not an object or the key is absent.
    const Value* find(std::string_view key) const noexcept;
    // Elements of an array, members of an object, 0 otherwise.
    std::size_t size() const noexcept;

    // "a string", "an array", … for messages.
    static const char* describe(Type t) noexcept {
        switch (t) {
        case Type::Null:
            return "null";
        case Type::Bool:
            return "a boolean";
        case Type::Number:
            return "a number";
        case Type::String:
            return "a string";
        case Type::Array:
            return "an array";
        case Type::Object:
            return "an object";
        }
        return "?";
    }

private:
    template <typename I>
    static Number exact(I i) noexcept {
        constexpr auto int64_max =
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
        bool fits = std::is_signed_v<I> || static_cast<std::uint64_t>(i) <= int64_max;
        return Number{static_cast<double>(i), static_cast<std::uint64_t>(i),
                      fits ? Number::Int::Signed : Number::Int::Unsigned};
    }
    [[noreturn]] void mismatch(const std::string& where, const char* expected) const {
        detail::fail(where, std::string("expected ") + expected + ", got " + describe(type()));
    }
    std::variant<std::nullptr_t, bool, Number, std::string, Array, Object> data_;
};

// A key and its value; objects keep their members in insertion order.
struct Member {
    std::string key;
    Value value;
};

inline const Value* Value::find(std::string_view key) const noexcept {
    if (!is_object()) return nullptr;
    for (const Member& m : std::get<Object>(data_))
        if (m.key == key) return &m.value;
    return nullptr;
}

inline std::size_t Value::size() const noexcept {
    if (is_array()) return std::get<Array>(data_).size();
    if (is_object()) return std::get<Object>(data_).size();
    return 0;
}

// ---------------------------------------------------------------------------------------
// Writing

namespace detail {

// Length of the well-formed UTF-8 sequence at s[i] (1–4), or 0 when it is malformed:
// truncated, overlong, a surrogate, or above U+10FFFF.
inline std::size_t utf8_sequence(std::string_view s, std::size_t i) noexcept {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned c = byte(i);
    if (c < 0x80) return 1;
    std::size_t n;
    unsigned lo = 0x80, hi = 0xBF; // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0; // overlong
        if (c == 0xED) hi = 0x9F; // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90; // overlong
        if (c == 0xF4) hi = 0x8F; // above U+10FFFF
    } else {
        return 0;
    }
    if (s.size() - i < n) return 0;
    if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
    for (std::size_t k = 2; k < n; ++k)
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
    return n;
}

inline void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

} // namespace detail

// Offset of the first byte that is not well-formed UTF-8, or npos when all of `s` is.
inline std::size_t utf8_error_offset(std::string_view s) noexcept {
    for (std::size_t i = 0; i < s.size();) {
        std::size_t n = detail::utf8_sequence(s, i);
        if (n == 0) return i;
        i += n;
    }
    return std::string_view::npos;
}

// Appends `s` as a quoted JSON string. Malformed UTF-8 bytes (from a file name, say) become
// U+FFFD so the output is always valid JSON.
inline void write_string(std::string& out, std::string_view s) {
    static constexpr char hex[] = "0123456789abcdef";
    out += '"';
    for (std::size_t i = 0; i < s.size();) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80) {
            std::size_t n = detail::utf8_sequence(s, i);
            if (n == 0) {
                out += "\xEF\xBF\xBD";
                ++i;
            } else {
                out.append(s, i, n);
                i += n;
            }
            continue;
        }
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\b':
            out += "\\b";
            break;
        case '\f':
            out += "\\f";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            if (c < 0x20) {
                out += "\\u00";
                out += hex[c >> 4];
                out += hex[c & 0xF];
            } else {
                out += static_cast<char>(c);
            }
        }
        ++i;
    }
    out += '"';
}

inline std::string quote(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 2);
    write_string(out, s);
    return out;
}

// Appends the shortest text that reads back as exactly `d`. JSON has no NaN or infinity.
inline void write_number(std::string& out, double d) {
    if (!std::isfinite(d)) detail::fail("json writer", "cannot write a non-finite number");
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, d);
    out.append(buf, r.ptr);
}
// A float's own shortest text ("0.1", not "0.10000000149011612"); reads back as the same float.
inline void write_number(std::string& out, float f) {
    if (!std::isfinite(f)) detail::fail("json writer", "cannot write a non-finite number");
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, f);
    out.append(buf, r.ptr);
}

inline void write(std::string& out, const Value& v);

// Compact JSON text (no spaces) of `v`; integers keep their exact value.
inline std::string dump(const Value& v) {
    std::string out;
    write(out, v);
    return out;
}

inline void write(std::string& out, const Value& v) {
    switch (v.type()) {
    case Type::Null:
        out += "null";
        break;
    case Type::Bool:
        out += v.as_bool() ? "true" : "false";
        break;
    case Type::Number: {
        const Number& n = v.as_number();
        char buf[32];
        if (n.integer == Number::Int::Signed) {
            out.append(buf,
                       std::to_chars(buf, buf + sizeof buf, static_cast<std::int64_t>(n.bits)).ptr);
        } else if (n.integer == Number::Int::Unsigned) {
            out.append(buf, std::to_chars(buf, buf + sizeof buf, n.bits).ptr);
        } else {
            write_number(out, n.value);
        }
        break;
    }
    case Type::String:
        write_string(out, v.as_string());
        break;
    case Type::Array: {
        out += '[';
        bool first = true;
        for (const Value& e : v.as_array()) {
            if (!first) out += ',';
            first = false;
            write(out, e);
        }
        out += ']';
        break;
    }
    case Type::Object: {
        out += '{';
        bool first = true;
        for (const Member& m : v.as_object()) {
            if (!first) out += ',';
            first = false;
            write_string(out, m.key);
            out += ':';
            write(out, m.value);
        }
        out += '}';
        break;
    }
    }
}

// ---------------------------------------------------------------------------------------
// Number accessors

namespace detail {
inline std::string number_text(const Number& n) {
    std::string s;
    if (n.integer == Number::Int::Signed) {
        s = std::to_string(static_cast<std::int64_t>(n.bits));
    } else if (n.integer == Number::Int::Unsigned) {
        s = std::to_string(n.bits);
    } else if (!std::isfinite(n.value)) { // only a Value built in C++ can hold these
        s = std::isnan(n.value) ? "nan" : n.value < 0 ? "-inf" : "inf";
    } else {
        write_number(s, n.value);
        // Shortest form of 2.0 is "2"; say that the literal was not an integer.
        if (s.find_first_of(".e") == std::string::npos) s += ".0";
    }
    return s;
}
} // namespace detail

inline std::int64_t Value::as_int64(const std::string& where) const {
    if (!is_number()) mismatch(where, "an integer");
    const Number& n = std::get<Number>(data_);
    switch (n.integer) {
    case Number::Int::Signed:
        return static_cast<std::int64_t>(n.bits);
    case Number::Int::None:
        detail::fail(where, "expected an integer, got " + detail::number_text(n));
    default:
        detail::fail(where, "integer out of range of int64");
    }
}

inline std::uint64_t Value::as_uint64(const std::string& where) const {
    if (!is_number()) mismatch(where, "an unsigned integer");
    const Number& n = std::get<Number>(data_);
    switch (n.integer) {
    case Number::Int::Unsigned:
        return n.bits;
    case Number::Int::Signed:
        if (static_cast<std::int64_t>(n.bits) >= 0) return n.bits;
        [[fallthrough]];
    case Number::Int::None:
        detail::fail(where, "expected an unsigned integer, got " + detail::number_text(n));
    default:
        detail::fail(where, "integer out of range of uint64");
    }
}

// ---------------------------------------------------------------------------------------
// Parsing

struct ParseOptions {
    std::size_t max_depth = 128; // arrays and objects nested deeper are rejected
    std::size_t first_line = 1;  // line number of the text's first line (JSON Lines)
};

namespace detail {

class Parser {
public:
    Parser(std::string_view text, std::string_view where, const ParseOptions& options)
        : s_(text), where_(where), options_(options) {}

    Value document() {
        skip_ws();
        if (pos_ == s_.size()) error(pos_, "empty document");
        Value v = value(0);
        skip_ws();
        if (pos_ != s_.size()) error(pos_, "unexpected " + describe_at(pos_) + " after the value");
        return v;
    }

private:
    [[noreturn]] void error(std::size_t at, std::string reason) const {
        // Line and column are computed only here, so the hot path counts nothing.
        std::size_t line = options_.first_line, column = 1;
        for (std::size_t i = 0; i < at && i < s_.size(); ++i) {
            unsigned char c = static_cast<unsigned char>(s_[i]);
            if (c == '\n') {
                ++line;
                column = 1;
            } else if ((c & 0xC0) != 0x80) { // columns count characters, not UTF-8 bytes
                ++column;
            }
        }
        std::string where(where_);
        where += ": line " + std::to_string(line) + ", column " + std::to_string(column);
        throw Error(std::move(where), std::move(reason));
    }

    std::string describe_at(std::size_t i) const {
        if (i >= s_.size()) return "end of input";
        unsigned char c = static_cast<unsigned char>(s_[i]);
        if (c >= 0x21 && c < 0x7F) return std::string("character '") + static_cast<char>(c) + "'";
        static constexpr char hex[] = "0123456789ABCDEF";
        return std::string("byte 0x") + hex[c >> 4] + hex[c & 0xF];
    }

    void skip_ws() noexcept {
        while (pos_ < s_.size()) {
            char c = s_[pos_];
            if (c != ' ' && c != '\n' && c != '\t' && c != '\r') break;
            ++pos_;
        }
    }

    Value value(std::size_t depth) {
        if (pos_ == s_.size()) error(pos_, "unexpected end of input, expected a value");
        switch (s_[pos_]) {
        case '{':
            return object(depth + 1);
        case '[':
            return array(depth + 1);
        case '"': {
            std::string str;
            string(str);
            return Value(std::move(str));
        }
        case 't':
            return literal("true", Value(true));
        case 'f':
            return literal("false", Value(false));
        case 'n':
            return literal("null", Value());
        default:
            if (s_[pos_] == '-' || (s_[pos_] >= '0' && s_[pos_] <= '9')) return number();
            error(pos_, "unexpected " + describe_at(pos_) + ", expected a value");
        }
    }

    Value literal(std::string_view word, Value v) {
        if (s_.substr(pos_, word.size()) != word) error(pos_, "invalid literal");
        pos_ += word.size();
        return v;
    }

    void enter(std::size_t depth) const {
        if (depth > options_.max_depth)
            error(pos_, "nesting deeper than " + std::to_string(options_.max_depth) + " levels");
    }

    Value array(std::size_t depth) {
        enter(depth);
        ++pos_; // '['
        skip_ws();
        if (pos_ < s_.size() && s_[pos_] == ']') {
            ++pos_;
            return Value(Value::Array());
        }
        // Elements gather in a scratch vector kept per depth, so an array costs one exact
        // allocation instead of a chain of regrowths.
        if (scratch_.size() < depth) scratch_.resize(depth);
        for (;;) {
            skip_ws();
            Value element = value(depth);
            scratch_[depth - 1].push_back(std::move(element));
            skip_ws();
            if (pos_ == s_.size()) error(pos_, "unexpected end of input in an array");
            if (s_[pos_] == ',') {
                ++pos_;
            } else if (s_[pos_] == ']') {
                ++pos_;
                Value::Array& gathered = scratch_[depth - 1];
                Value::Array items(std::make_move_iterator(gathered.begin()),
                                   std::make_move_iterator(gathered.end()));
                gathered.clear();
                return Value(std::move(items));
            } else {
                error(pos_, "expected ',' or ']' in an array, got " + describe_at(pos_));
            }
        }
    }

    // Duplicate keys are found by a linear scan while an object is small and by a hash set of
    // member indices once it grows, so a hostile header with a million keys stays linear.
    struct KeyHash {
        const Value::Object* members;
        std::size_t operator()(std::size_t i) const noexcept {
            return std::hash<std::string_view>()((*members)[i].key);
        }
    };
    struct KeyEq {
        const Value::Object* members;
        bool operator()(std::size_t a, std::size_t b) const noexcept {
            return (*members)[a].key == (*members)[b].key;
        }
    };
    static constexpr std::size_t kLinearKeys = 16;

    Value object(std::size_t depth) {
        enter(depth);
        ++pos_; // '{'
        Value::Object members;
        std::optional<std::unordered_set<std::size_t, KeyHash, KeyEq>> index;
        skip_ws();
        if (pos_ < s_.size() && s_[pos_] == '}') {
            ++pos_;
            return Value(std::move(members));
        }
        for (;;) {
            skip_ws();
            if (pos_ == s_.size()) error(pos_, "unexpected end of input in an object");
            if (s_[pos_] != '"') error(pos_, "expected a string key, got " + describe_at(pos_));
            std::size_t key_at = pos_;
            std::string key;
            string(key);
            skip_ws();
            if (pos_ == s_.size() || s_[pos_] != ':')
                error(pos_, "expected ':' after an object key, got " + describe_at(pos_));
            ++pos_;
            skip_ws();
            members.push_back(Member{std::move(key), value(depth)});
            bool duplicate = false;
            if (index) {
                duplicate = !index->insert(members.size() - 1).second;
            } else {
                for (std::size_t i = 0; i + 1 < members.size() && !duplicate; ++i)
                    duplicate = members[i].key == members.back().key;
                if (!duplicate && members.size() == kLinearKeys) {
                    index.emplace(2 * kLinearKeys, KeyHash{&members}, KeyEq{&members});
                    for (std::size_t i = 0; i < members.size(); ++i) index->insert(i);
                }
            }
            if (duplicate) error(key_at, "duplicate key " + quote(members.back().key));
            skip_ws();
            if (pos_ == s_.size()) error(pos_, "unexpected end of input in an object");
            if (s_[pos_] == ',') {
                ++pos_;
            } else if (s_[pos_] == '}') {
                ++pos_;
                return Value(std::move(members));
            } else {
                error(pos_, "expected ',' or '}' in an object, got " + describe_at(pos_));
            }
        }
    }

    static int hex_digit(char c) noexcept {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    }

    std::uint32_t hex4(std::size_t at) const {
        // `at` is the backslash of a \uXXXX escape.
        if (s_.size() - at < 6) error(at, "invalid \\u escape, expected 4 hex digits");
        std::uint32_t v = 0;
        for (std::size_t k = 2; k < 6; ++k) {
            int d = hex_digit(s_[at + k]);
            if (d < 0) error(at, "invalid \\u escape, expected 4 hex digits");
            v = v * 16 + static_cast<std::uint32_t>(d);
        }
        return v;
    }

    void string(std::string& out) {
        ++pos_; // opening quote
        for (;;) {
            // Copy the run of plain ASCII in one append, so clean strings cost one allocation.
            std::size_t run = pos_;
            while (run < s_.size()) {
                unsigned char c = static_cast<unsigned char>(s_[run]);
                if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
                ++run;
            }
            out.append(s_, pos_, run - pos_);
            pos_ = run;
            if (pos_ == s_.size()) error(pos_, "unexpected end of input in a string");
            unsigned char c = static_cast<unsigned char>(s_[pos_]);
            if (c == '"') {
                ++pos_;
                return;
            }
            if (c < 0x20) error(pos_, "unescaped control character in a string");
            if (c >= 0x80) {
                std::size_t n = utf8_sequence(s_, pos_);
                if (n == 0) error(pos_, "invalid UTF-8 in a string");
                out.append(s_, pos_, n);
                pos_ += n;
                continue;
            }
            escape(out);
        }
    }

    void escape(std::string& out) {
        std::size_t at = pos_; // the backslash
        if (at + 1 == s_.size()) error(at + 1, "unexpected end of input in a string");
        char e = s_[at + 1];
        pos_ += 2;
        switch (e) {
        case '"':
            out += '"';
            return;
        case '\\':
            out += '\\';
            return;
        case '/':
            out += '/';
            return;
        case 'b':
            out += '\b';
            return;
        case 'f':
            out += '\f';
            return;
        case 'n':
            out += '\n';
            return;
        case 'r':
            out += '\r';
            return;
        case 't':
            out += '\t';
            return;
        case 'u':
            break;
        default:
            if (e > 0x20 && e < 0x7F) error(at, std::string("invalid escape '\\") + e + "'");
            error(at, "invalid escape, backslash followed by " + describe_at(at + 1));
        }
        std::uint32_t cp = hex4(at);
        pos_ = at + 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF) error(at, "unpaired low surrogate in a \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (s_.substr(pos_, 2) != "\\u") error(at, "unpaired high surrogate in a \\u escape");
            std::uint32_t low = hex4(pos_);
            if (low < 0xDC00 || low > 0xDFFF) error(at, "unpaired high surrogate in a \\u escape");
            pos_ += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        append_utf8(out, cp);
    }

    static bool digit(char c) noexcept { return c >= '0' && c <= '9'; }

    Value number() {
        const std::size_t start = pos_;
        const std::size_t n = s_.size();
        std::size_t i = pos_;
        bool negative = false;
        if (s_[i] == '-') {
            negative = true;
            ++i;
        }
        const std::size_t int_begin = i;
        if (i == n || !digit(s_[i])) error(i, "invalid number, expected a digit");
        if (s_[i] == '0') {
            ++i;
            if (i < n && digit(s_[i])) error(start, "invalid number, leading zero");
        } else {
            while (i < n && digit(s_[i])) ++i;
        }
        const std::size_t int_end = i;
        bool integral = true;
        std::size_t frac_begin = i, frac_end = i;
        if (i < n && s_[i] == '.') {
            integral = false;
            frac_begin = ++i;
            if (i == n || !digit(s_[i])) error(i, "invalid number, expected a digit after '.'");
            while (i < n && digit(s_[i])) ++i;
            frac_end = i;
        }
        long long exponent = 0;
        if (i < n && (s_[i] == 'e' || s_[i] == 'E')) {
            integral = false;
            ++i;
            bool exp_negative = false;
            if (i < n && (s_[i] == '+' || s_[i] == '-')) exp_negative = s_[i++] == '-';
            if (i == n || !digit(s_[i]))
                error(i, "invalid number, expected a digit in the exponent");
            for (; i < n && digit(s_[i]); ++i)
                if (exponent < 1'000'000'000) exponent = exponent * 10 + (s_[i] - '0');
            if (exp_negative) exponent = -exponent;
        }
        pos_ = i;

        Number num;
        const char* first = s_.data() + start;
        const char* last = s_.data() + i;
        auto r = std::from_chars(first, last, num.value);
        if (r.ec == std::errc::result_out_of_range) {
            // Out of range is either above DBL_MAX or below the smallest subnormal; the
            // decimal exponent of the first significant digit says which.
            long long lead = static_cast<long long>(int_end - int_begin) - 1;
            if (s_[int_begin] == '0') {
                lead = -1;
                for (std::size_t k = frac_begin; k < frac_end && s_[k] == '0'; ++k) --lead;
            }
            if (lead + exponent >= 0) error(start, "number out of range of a double");
            num.value = negative ? -0.0 : 0.0;
        } else if (r.ec != std::errc() || r.ptr != last) {
            error(start, "invalid number");
        }

        if (integral) {
            std::uint64_t magnitude = 0;
            auto ri = std::from_chars(s_.data() + int_begin, last, magnitude);
            if (ri.ec == std::errc::result_out_of_range) {
                num.integer = Number::Int::Overflow;
            } else if (negative) {
                constexpr std::uint64_t limit = std::uint64_t{1} << 63;
                if (magnitude > limit) {
                    num.integer = Number::Int::Overflow;
                } else {
                    num.integer = Number::Int::Signed;
                    num.bits = std::uint64_t{0} - magnitude; // two's complement of -magnitude
                }
            } else {
                num.bits = magnitude;
                num.integer = magnitude <= static_cast<std::uint64_t>(
                                               std::numeric_limits<std::int64_t>::max())
                                  ? Number::Int::Signed
                                  : Number::Int::Unsigned;
            }
        }
        return Value(num);
    }

    std::string_view s_;
    std::string_view where_;
    const ParseOptions& options_;
    std::size_t pos_ = 0;
    std::vector<Value::Array> scratch_; // per nesting depth, see array()
};

} // namespace detail

// Parses one JSON document; `where` names it in errors ("model.json", "programs.jsonl").
inline Value parse(std::string_view text, std::string_view where = "json",
                   const ParseOptions& options = {}) {
    return detail::Parser(text, where, options).document();
}

// ---------------------------------------------------------------------------------------
// Node: a value together with its path, for loaders that must say which field is wrong:
//   Node root(doc, "model.json");
//   root["layers"][2]["dim"].as_uint64();  // "model.json.layers[2].dim: expected …"

class Node {
public:
    Node(const Value& value, std::string path) : value_(&value), path_(std::move(path)) {}

    const Value& value() const noexcept { return *value_; }
    const std::string& path() const noexcept { return path_; }
    Type type() const noexcept { return value_->type(); }

    bool as_bool() const { return value_->as_bool(path_); }
    double as_double() const { return value_->as_double(path_); }
    std::int64_t as_int64() const { return value_->as_int64(path_); }
    std::uint64_t as_uint64() const { return value_->as_uint64(path_); }
    const std::string& as_string() const { return value_->as_string(path_); }
    const Value::Array& as_array() const { return value_->as_array(path_); }
    const Value::Object& as_object() const { return value_->as_object(path_); }

    // A finite double (JSON cannot hold others; kept for symmetry with as_float).
    float as_float() const {
        double d = as_double();
        if (!(std::fabs(d) <= static_cast<double>(std::numeric_limits<float>::max())))
            fail("number " + detail::number_text(value_->as_number()) + " out of range of float");
        return static_cast<float>(d);
    }

    // Member `key` of an object; throws naming the key when it is absent.
    Node operator[](std::string_view key) const {
        std::optional<Node> n = find(key);
        if (!n) fail("missing key " + quote(key));
        return *n;
    }
    std::optional<Node> find(std::string_view key) const {
        for (const Member& m : as_object())
            if (m.key == key) return child(m);
        return std::nullopt;
    }
    // Element `i` of an array; throws when out of range.
    Node operator[](std::size_t i) const {
        const Value::Array& a = as_array();
        if (i >= a.size())
            fail("index " + std::to_string(i) + " out of range, array has " +
                 std::to_string(a.size()) + " elements");
        return Node(a[i], path_ + "[" + std::to_string(i) + "]");
    }
    Node child(const Member& m) const { return Node(m.value, key_path(m.key)); }

    // Array of exactly `n` elements, else throws "expected 2 elements, got 3".
    const Value::Array& as_array(std::size_t n) const {
        const Value::Array& a = as_array();
        if (a.size() != n)
            fail("expected " + std::to_string(n) + " elements, got " + std::to_string(a.size()));
        return a;
    }

    // Throws naming the first member whose key is not in `allowed`.
    void only_keys(std::initializer_list<std::string_view> allowed) const {
        for (const Member& m : as_object()) {
            bool known = false;
            for (std::string_view k : allowed) known = known || k == m.key;
            if (!known) fail("unknown key " + quote(m.key));
        }
    }

    [[noreturn]] void fail(std::string reason) const { detail::fail(path_, std::move(reason)); }

private:
    // `.name` for identifier-like keys, `["any key"]` otherwise.
    std::string key_path(const std::string& key) const {
        bool ident = !key.empty() && !(key[0] >= '0' && key[0] <= '9');
        for (char c : key)
            ident = ident && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                              (c >= '0' && c <= '9') || c == '_');
        if (!ident) return path_ + "[" + quote(key) + "]";
        return path_.empty() ? key : path_ + "." + key;
    }

    const Value* value_;
    std::string path_;
};

} // namespace tempo::json
