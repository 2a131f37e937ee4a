// tempo::Error — the one exception type tempo throws: what went wrong and where.
#pragma once

#include <stdexcept>
#include <string>

namespace tempo {

class Error : public std::runtime_error {
public:
    // `where` names the place (file, line, tensor, field); `reason` says what is wrong.
    Error(std::string where, std::string reason)
        : std::runtime_error(where.empty() ? reason : where + ": " + reason),
          where_(std::move(where)), reason_(std::move(reason)) {}

    const std::string& where() const noexcept { return where_; }
    const std::string& reason() const noexcept { return reason_; }

private:
    std::string where_;
    std::string reason_;
};

} // namespace tempo
