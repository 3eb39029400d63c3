// An environment variable as text: the one place the tool reads the environment
// (layout.environment_read_by_core fails on a std::getenv elsewhere).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace forge {

// The variable's value; "" when it is unset (for the places where unset and empty mean the same).
inline std::string getenv_str(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
}

// The variable's value; nullopt when it is unset (set and empty is "": a CI system's variable).
inline std::optional<std::string> getenv_opt(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
}

// The variable's value; nullopt when it is unset or empty (a path setting: empty is no setting).
inline std::optional<std::string> getenv_nonempty(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? std::optional<std::string>(v) : std::nullopt;
}

} // namespace forge
