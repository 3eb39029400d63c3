// A variant of a valid input for a test: `from`'s first occurrence in `s` replaced by `to`.
#pragma once

#include <gtest/gtest.h>
#include <string>

namespace forge::test {

// A `from` that is not there fails the calling test: the variant would be the valid input itself.
inline std::string replace_once(std::string s, const std::string& from, const std::string& to) {
    auto pos = s.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    if (pos != std::string::npos) s.replace(pos, from.size(), to);
    return s;
}

} // namespace forge::test
