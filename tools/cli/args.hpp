// The `tempo` tool's command lines: numbers read whole and range-checked (std::stoi would take
// "3x" as 3 and report only "stoi" for "x").
#pragma once

#include "tempo/core/error.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>

namespace tempo::cli {

namespace detail {
// " in [lo, hi]", or " ≥ lo" when the type's largest value is the only upper bound.
inline std::string number_range(double lo, double hi, bool unbounded_above) {
    char buf[96];
    if (unbounded_above)
        std::snprintf(buf, sizeof buf, " ≥ %.15g", lo);
    else
        std::snprintf(buf, sizeof buf, " in [%.15g, %.15g]", lo, hi);
    return buf;
}
} // namespace detail

// The integer `text` spells, in [lo, hi]; else an Error naming `what` (the option) and the text.
template <class Int>
Int parse_int(const std::string& text, const std::string& what,
              Int lo = std::numeric_limits<Int>::min(), Int hi = std::numeric_limits<Int>::max()) {
    static_assert(std::is_integral_v<Int>);
    // strtoull would wrap "-1" around, and strtoll skips leading space: allow neither.
    bool ok = !text.empty() && (text[0] == '-' ? std::is_signed_v<Int> && text.size() > 1
                                               : text[0] >= '0' && text[0] <= '9');
    Int v = 0;
    if (ok) {
        char* end = nullptr;
        errno = 0;
        if constexpr (std::is_signed_v<Int>) {
            const long long x = std::strtoll(text.c_str(), &end, 10);
            ok = x >= static_cast<long long>(lo) && x <= static_cast<long long>(hi);
            v = static_cast<Int>(x);
        } else {
            const unsigned long long x = std::strtoull(text.c_str(), &end, 10);
            ok = x >= static_cast<unsigned long long>(lo) &&
                 x <= static_cast<unsigned long long>(hi);
            v = static_cast<Int>(x);
        }
        ok = ok && *end == 0 && errno != ERANGE;
    }
    if (!ok) {
        const bool no_upper = hi == std::numeric_limits<Int>::max();
        const bool whole_range = no_upper && lo == std::numeric_limits<Int>::min();
        throw Error(what,
                    "expected an integer" +
                        (whole_range ? std::string()
                                     : detail::number_range(static_cast<double>(lo),
                                                            static_cast<double>(hi), no_upper)) +
                        ", got '" + text + "'");
    }
    return v;
}

// The finite number `text` spells, in [lo, hi]; else an Error naming `what` and the text (and
// `alternative`, a word the caller also accepts).
inline double parse_real(const std::string& text, const std::string& what, double lo, double hi,
                         const std::string& alternative = {}) {
    char* end = nullptr;
    errno = 0;
    const bool plain = !text.empty() && text[0] != ' ' && text[0] != '\t';
    const double v = plain ? std::strtod(text.c_str(), &end) : 0;
    if (!plain || *end != 0 || errno == ERANGE || !std::isfinite(v) || v < lo || v > hi)
        throw Error(what,
                    "expected a number" +
                        detail::number_range(lo, hi, hi >= std::numeric_limits<double>::max()) +
                        (alternative.empty() ? "" : " or " + alternative) + ", got '" + text + "'");
    return v;
}

} // namespace tempo::cli
