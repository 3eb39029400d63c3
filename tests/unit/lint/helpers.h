// What the lint's rule tests share: inline sources linted against a list and a GPU table read the
// way `nvcc-forge lint` reads policy/gpus.yml, retired CCs included (tests/fixtures/lint/gpus.yml:
// its Tegra flags, Kepler as retired, and no 8.8 or 10.1, so the cases read as the Ada and Orin
// failures they model).
#pragma once

#include "lint/lint.h"
#include "policy/policy_file.h"

#include <algorithm>
#include <filesystem>
#include <gtest/gtest.h>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace forge::lint::test {

inline const std::vector<arch::Gpu>& test_gpus() {
    static const std::vector<arch::Gpu> gpus = [] {
        auto g = policy::load_gpus(std::filesystem::path(FORGE_TEST_FIXTURES) / "lint" / "gpus.yml",
                                   policy::Retired::Include);
        EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().to_string());
        return g.ok() ? *g : std::vector<arch::Gpu>{};
    }();
    return gpus;
}

inline arch::ArchList L(std::string_view text) {
    auto r = arch::ArchList::parse(text, "test");
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
    return r.ok() ? *r : arch::ArchList{};
}

// (line, rule, needs): what the tests assert exactly.
using Hit = std::tuple<int, std::string, std::string>;

inline std::vector<Hit> hits(const std::vector<LintFinding>& found) {
    std::vector<Hit> out;
    for (const auto& f : found)
        out.emplace_back(f.line, f.rule, f.needs);
    std::sort(out.begin(), out.end());
    return out;
}

inline std::vector<LintFinding> cu(std::string_view text, std::string_view list,
                                   const MacroTable& macros = MacroTable{}) {
    return lint_source_text("k.cu", text, L(list), macros, test_gpus());
}

inline std::vector<Hit> cu_hits(std::string_view text, std::string_view list) {
    return hits(cu(text, list));
}

inline std::vector<Hit> build_hits(std::string_view path, std::string_view text,
                                   std::string_view list) {
    return hits(lint_build_text(path, text, L(list), test_gpus()));
}

constexpr std::string_view kNoAda = "8.0 8.6 9.0+PTX";
constexpr std::string_view kWithAda = "8.0 8.6 8.9 9.0+PTX";

} // namespace forge::lint::test
