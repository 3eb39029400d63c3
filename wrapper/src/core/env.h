// An environment variable as text, for the places where unset and empty mean the same.
#pragma once

#include <cstdlib>
#include <string>

namespace forge {

// The variable's value; "" when it is unset.
inline std::string getenv_str(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
}

} // namespace forge
