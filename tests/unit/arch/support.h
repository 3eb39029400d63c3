// The arch tests' shared helper: an arch list parsed as a test expects it to parse.
#pragma once

#include "arch/arch.h"

#include <gtest/gtest.h>

#include <string_view>

namespace forge::arch::test {

inline ArchList parse_ok(std::string_view text) {
    auto r = ArchList::parse(text, "test");
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
    return r.ok() ? *r : ArchList{};
}

} // namespace forge::arch::test
