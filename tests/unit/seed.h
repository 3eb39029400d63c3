// A randomized test's rng seed: FORGE_TEST_SEED when set (to replay a failure), else the
// test's fixed default, so CI runs are reproducible. It is printed and recorded in the XML report.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <gtest/gtest.h>
#include <iostream>
#include <string>

namespace forge::test {

inline std::uint32_t test_seed(std::uint32_t fixed) {
    std::uint32_t seed = fixed;
    if (const char* env = std::getenv("FORGE_TEST_SEED"); env != nullptr && *env != '\0')
        seed = static_cast<std::uint32_t>(std::strtoul(env, nullptr, 0));
    std::cout << "random seed " << seed << " (replay with FORGE_TEST_SEED=" << seed << ")\n";
    ::testing::Test::RecordProperty("seed", std::to_string(seed));
    return seed;
}

} // namespace forge::test
