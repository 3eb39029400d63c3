// Which numbers the lint takes for compute capabilities, and which CC it suggests for an `a`/`f`
// comparison: both are read off the GPU table it is handed (policy/gpus.yml, retired CCs
// included), not a list of the lint's own.
#include "helpers.h"
#include "lint/lint.h"
#include "policy/policy_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace forge;
using namespace forge::lint;
using namespace forge::lint::test;

namespace {

std::vector<arch::Gpu> without(std::vector<arch::Gpu> gpus, int sm) {
    std::erase_if(gpus, [&](const arch::Gpu& g) { return g.sm == sm; });
    return gpus;
}

std::vector<Hit> setup_py(std::string_view text, const std::vector<arch::Gpu>& gpus) {
    return hits(lint_build_text("setup.py", text, L("8.0 9.0"), gpus));
}

const std::vector<arch::Gpu>& shipped(policy::Retired retired) {
    static const auto load = [](policy::Retired r) {
        auto g = policy::load_gpus(
            std::filesystem::path(FORGE_TEST_SOURCE_DIR) / ".." / "policy" / "gpus.yml", r);
        EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().to_string());
        return g.ok() ? *g : std::vector<arch::Gpu>{};
    };
    static const std::vector<arch::Gpu> with = load(policy::Retired::Include);
    static const std::vector<arch::Gpu> skip = load(policy::Retired::Skip);
    return retired == policy::Retired::Include ? with : skip;
}

} // namespace

TEST(LintKnownCcs, BuildScriptCcsComeFromTheTable) {
    const std::string gate = "if HAS_SM89:\n    pass\n";
    const std::string list = "archs = \"8.9;9.0\"\n";
    EXPECT_EQ(setup_py(gate, test_gpus()), (std::vector<Hit>{{1, "build-arch-gate", "8.9"}}));
    EXPECT_EQ(setup_py(list, test_gpus()), (std::vector<Hit>{{1, "explicit-target", "8.9"}}));
    // A table without 8.9: HAS_SM89 is a stray number and "8.9;9.0" not an arch list.
    const auto no_ada = without(test_gpus(), 89);
    EXPECT_TRUE(setup_py(gate, no_ada).empty());
    EXPECT_TRUE(setup_py(list, no_ada).empty());
}

TEST(LintKnownCcs, RetiredCcsAreKnown) {
    const std::string py = "os.environ[\"TORCH_CUDA_ARCH_LIST\"] = \"3.7+PTX;5.0;7.5\"\n";
    const std::vector<Hit> kepler = {{1, "explicit-target", "3.7"},
                                     {1, "explicit-target", "5.0"},
                                     {1, "explicit-target", "7.5"},
                                     {1, "script-writes-arch-list", ""}};
    EXPECT_EQ(setup_py(py, test_gpus()), kepler);
    // Without 3.7 the string is not an arch list; only the write is left.
    EXPECT_EQ(setup_py(py, without(test_gpus(), 37)),
              (std::vector<Hit>{{1, "script-writes-arch-list", ""}}));
    // The bundled table: Kepler lives under `retired:`, which only the lint's load includes.
    EXPECT_EQ(setup_py(py, shipped(policy::Retired::Include)), kepler);
    EXPECT_EQ(setup_py(py, shipped(policy::Retired::Skip)),
              (std::vector<Hit>{{1, "script-writes-arch-list", ""}}));
}

TEST(LintKnownCcs, BundledTableKnowsTheCcsWithoutADesktopPart) {
    // 8.8 and 10.1 are entries of policy/gpus.yml, so a script naming them names an arch.
    const auto& gpus = shipped(policy::Retired::Include);
    EXPECT_EQ(setup_py("if HAS_SM88:\n    pass\n", gpus),
              (std::vector<Hit>{{1, "build-arch-gate", "8.8"}}));
    EXPECT_EQ(setup_py("archs = \"10.1a\"\n", gpus),
              (std::vector<Hit>{{1, "explicit-target", "10.1a"}}));
}

TEST(LintKnownCcs, SuggestedCcIsTheTablesNextCurrentPart) {
    const std::string src = "#if __CUDA_ARCH_FAMILY_SPECIFIC__ > 1000\n#endif\n";
    auto needs = [&](const std::vector<arch::Gpu>& gpus) {
        auto found = lint_source_text("k.cu", src, L("10.0f"), MacroTable{}, gpus);
        return found.size() == 1 ? found[0].needs : std::string("(none)");
    };
    EXPECT_EQ(needs(test_gpus()), "10.3f");
    // The suggestion follows the table: without 10.3 the next part is Thor (11.0).
    EXPECT_EQ(needs(without(test_gpus(), 103)), "11.0f");
    // A 10.1 with a product of its own is the next part; one whose products a later CC lists
    // again (Thor, renamed 11.0) or with none (8.8) is not: the bundled table suggests 10.3 too.
    auto with_101 = test_gpus();
    with_101.push_back(arch::Gpu{101, {"Some SoC"}, true, {}, false});
    EXPECT_EQ(needs(with_101), "10.1f");
    with_101.back().products = {"Jetson AGX Thor"};
    EXPECT_EQ(needs(with_101), "10.3f");
    EXPECT_EQ(needs(shipped(policy::Retired::Include)), "10.3f");
    EXPECT_EQ(lint_source_text("k.cu", "#if __CUDA_ARCH_SPECIFIC__ > 870\n#endif\n", L("8.0 9.0"),
                               MacroTable{}, shipped(policy::Retired::Include))
                  .at(0)
                  .needs,
              "8.9a");
}

TEST(LintKnownCcs, GateChecksSkipRetiredParts) {
    // An sm_35 cubin would run on a 3.7 part, but no supported nvcc builds either: no finding.
    const auto list = L("3.5 5.0");
    EXPECT_TRUE(check_gate(370, false, list, test_gpus()).declared);
    auto active = test_gpus();
    for (auto& g : active)
        g.retired = false;
    const GateCheck check = check_gate(370, false, list, active);
    EXPECT_FALSE(check.declared);
    EXPECT_EQ(check.needs, "3.7");
}
