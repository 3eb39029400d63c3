// ToolkitCaps of nvcc 13.0.88, built by the probe's parsers from that nvcc's captured output
// (tests/fixtures/toolkit/nvcc-13.0/*.txt), so unit tests need no toolkit and still use the real
// lists.
#pragma once

#include "../files.h"
#include "../joined.h"
#include "nvcc/cmdline.h"
#include "toolkit/probe.h"

#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>

namespace forge::nvcc::testing {

using toolkit::ToolkitCaps;

// One file of nvcc 13.0's captured output: "version.txt", "list-gpu-code.txt", "help.txt".
inline std::string read_data(const std::string& name) {
    return forge::test::slurp(
        forge::test::joined({FORGE_TEST_SOURCE_DIR, "/fixtures/toolkit/nvcc-13.0/", name}));
}

inline ToolkitCaps caps13() {
    ToolkitCaps caps;
    auto rel = toolkit::parse_nvcc_version(read_data("version.txt"));
    EXPECT_TRUE(rel.ok());
    if (rel) caps.version = *rel;
    caps.default_sm = toolkit::default_sm_for(caps.version.major);
    auto plain = toolkit::parse_target_list(read_data("list-gpu-code.txt"));
    auto all = toolkit::parse_help_gpu_codes(read_data("help.txt"));
    EXPECT_TRUE(plain.ok() && all.ok());
    if (plain) caps.emittable = *plain;
    if (all) caps.emittable.insert(all->begin(), all->end());
    return caps;
}

inline arch::Target T(std::string_view name) {
    auto t = arch::parse_target(name);
    EXPECT_TRUE(t.ok()) << name;
    return t ? *t : arch::Target{};
}

inline std::set<arch::Target> Ts(std::initializer_list<std::string_view> names) {
    std::set<arch::Target> out;
    for (auto n : names)
        out.insert(T(n));
    return out;
}

inline std::string names(const std::set<arch::Target>& ts) {
    std::string s;
    for (const auto& t : ts)
        s += (s.empty() ? "" : " ") + t.name();
    return s;
}

} // namespace forge::nvcc::testing
