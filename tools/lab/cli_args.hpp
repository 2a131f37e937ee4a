// The lab's command lines: the tool's number parsers, and how a lab command reports an error.
#pragma once

#include "../cli/args.hpp"

#include <exception>
#include <string>

namespace tempo::lab {

using cli::parse_int;
using cli::parse_real;

// The line a lab command prints for an error: the message, after "<command>: " unless the
// message already starts with the command's name (its options' errors do).
inline std::string lab_error_line(const std::string& command, const std::exception& e) {
    const std::string what = e.what();
    return what.rfind("tempo lab", 0) == 0 ? what : command + ": " + what;
}

} // namespace tempo::lab
