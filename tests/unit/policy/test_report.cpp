#include "helpers.h"

#include "policy/report.h"

#include <regex>

using namespace forge;
using namespace forge::policy;
using namespace forge::policy::test;

namespace {

Resolution row128() {
    ResolveRequest req;
    req.platform = "linux_x86_64"; // the x86 lane on any host (the default is the host's)
    req.cuda = "12.8";
    auto r = resolve_loaded(req, shipped(), nullptr, gpus());
    if (!r) throw std::runtime_error(r.error().to_string());
    return *r;
}

} // namespace

TEST(Report, CoverageJsonIsKeyedByCc) {
    auto j = coverage_json(coverage_report(row128(), gpus()));
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j.size(), gpus_for(gpus(), "linux_x86_64", "12.8").size());
    EXPECT_FALSE(j.contains("11.0")); // Thor is an aarch64 part
    EXPECT_FALSE(j.contains("8.7"));  // Orin too
    EXPECT_EQ(j["8.9"]["tier"], "native");
    EXPECT_EQ(j["10.3"]["tier"], "native");
    EXPECT_EQ(j["12.1"]["tier"], "native");
    EXPECT_EQ(j["7.0"]["tier"], "dead");
    EXPECT_EQ(j["10.3"]["products"][0], "B300");
    EXPECT_EQ(j["8.9"]["via"], nlohmann::ordered_json::array({"sm_80", "sm_86"}));
    // On aarch64 (CUDA 13.0 names Thor 11.0): compute_120 cannot JIT down to Thor, only the 9.0
    // PTX net reaches it (docs/arch-rules.md); Orin is Tegra and dead.
    Resolution arm = row128();
    arm.platform = "linux_aarch64";
    arm.cuda = "13.0";
    auto a = coverage_json(coverage_report(arm, gpus()));
    EXPECT_EQ(a["11.0"]["tier"], "jit");
    EXPECT_EQ(a["11.0"]["via"], nlohmann::ordered_json::array({"compute_90"}));
    EXPECT_EQ(a["8.7"]["tier"], "dead");
    EXPECT_EQ(a["8.7"]["tegra"], true);
    EXPECT_NE(a["8.7"]["why"].get<std::string>().find("Tegra"), std::string::npos);
}

TEST(Report, TextAndMarkdownSayExclusionsAndGapsInWords) {
    auto r = row128();
    auto text = coverage_text(r, coverage_report(r, gpus()));
    EXPECT_NE(text.find("Excluded"), std::string::npos);
    EXPECT_NE(text.find("Tesla V100"), std::string::npos);
    EXPECT_NE(text.find("jit:    none"), std::string::npos);
    // a list without the second PTX gets a finding
    Resolution bare = r;
    bare.list = *arch::ArchList::parse("8.0 12.0+PTX");
    auto report = coverage_report(bare, gpus());
    auto md = coverage_markdown(bare, report);
    EXPECT_NE(md.find("| 10.0 | dead |"), std::string::npos);
    EXPECT_NE(md.find("**Finding:** major 9 has no cubin and no PTX below it: add +PTX on 8.0"),
              std::string::npos);
    EXPECT_NE(coverage_text(bare, report).find("FINDING: major 10"), std::string::npos);
    // aarch64 on 13.0: Thor's major 11 is a gap too, netted by the 9.0 PTX of the row
    Resolution arm = r;
    arm.platform = "linux_aarch64";
    arm.cuda = "13.0";
    auto arm_text = coverage_text(arm, coverage_report(arm, gpus()));
    EXPECT_NE(arm_text.find("jit:    11.0"), std::string::npos);
    EXPECT_NE(arm_text.find("major 11 has no cubin; compute_90 PTX"), std::string::npos);
}

TEST(Report, ResolutionJsonHasTheContractKeys) {
    ResolveRequest req;
    req.platform = "linux_x86_64"; // the x86 lane on any host (the default is the host's)
    req.cuda = "12.8";
    req.torch = "2.11";
    auto pkg = parse_arch_override("arch_list: \"7.0 8.0\"\n", "p.yml");
    ASSERT_TRUE(pkg.ok());
    pkg->name = "volta";
    auto r = resolve_loaded(req, shipped(), &*pkg, gpus());
    ASSERT_TRUE(r.ok());
    auto j = resolution_json(*r);
    for (const char* key : {"arch_list", "tokens", "source", "clamped", "cuda", "torch", "platform",
                            "package", "targets", "ptx_added", "build_epoch", "policy_sha256"})
        EXPECT_TRUE(j.contains(key)) << key;
    EXPECT_EQ(j["arch_list"], "8.0+PTX");
    EXPECT_EQ(j["tokens"].size(), 1u);
    EXPECT_EQ(j["ptx_added"], nlohmann::ordered_json::array({"8.0"}));
    EXPECT_EQ(j["clamped"][0]["token"], "7.0");
    EXPECT_EQ(j["targets"], nlohmann::ordered_json::array({"sm_80", "compute_80"}));
    EXPECT_EQ(j["policy_sha256"], shipped().sha256);
}

TEST(Report, MatrixCoversEveryPolicyCell) {
    auto cells = policy_matrix(shipped(), nullptr, gpus());
    std::size_t expected = 0;
    for (const auto& [cuda, row] : shipped().arch_policy)
        expected += shipped().torch_runnable.at(cuda).releases.size();
    for (const auto& [cuda, row] : shipped().arch_policy_aarch64) {
        auto it = shipped().torch_runnable_aarch64.find(cuda);
        // one cell per torch build read, one torch-less cell where none was
        expected += it == shipped().torch_runnable_aarch64.end() ? 1 : it->second.releases.size();
    }
    EXPECT_EQ(cells.size(), expected);
    for (const auto& c : cells)
        EXPECT_TRUE(c.resolution.has_value()) << c.cuda << "/" << c.torch << ": " << c.error;
    auto html = matrix_html(shipped(), cells, gpus(), "t <&> t");
    EXPECT_EQ(html.find("<script"), std::string::npos);
    EXPECT_EQ(html.find("http://"), std::string::npos);
    EXPECT_EQ(html.find("https://"), std::string::npos);
    EXPECT_EQ(html.find("<link"), std::string::npos);
    EXPECT_NE(html.find("t &lt;&amp;&gt; t"), std::string::npos);
    EXPECT_NE(html.find("<style>"), std::string::npos);
    // one grid cell per GPU of each policy cell, and an empty grey one for a column of its lane
    // that the cell does not have (Thor's other name)
    auto count = [&](const std::string& needle) {
        std::size_t n = 0;
        for (auto pos = html.find(needle); pos != std::string::npos;
             pos = html.find(needle, pos + 1))
            ++n;
        return n;
    };
    std::size_t rows = 0;
    for (const auto& c : cells)
        rows += c.coverage.rows.size();
    EXPECT_EQ(count("<td class=\"t "), rows);
    std::size_t arm_cells = 0;
    for (const auto& c : cells)
        arm_cells += c.platforms.front() == "linux_aarch64";
    EXPECT_EQ(count("<td class=\"na\""), arm_cells); // 10.1 or 11.0, one per aarch64 row
    EXPECT_EQ(count("<table class=\"grid\">"), 2u);  // one table per lane
    EXPECT_NE(html.find("dead (torch)"), std::string::npos);
    EXPECT_NE(html.find("class=\"t x\""), std::string::npos); // a torch-dead grid cell
    EXPECT_NE(html.find("excluded: 5.0"), std::string::npos);
    EXPECT_NE(html.find("torch clamp not applied"), std::string::npos);
    // the Volta flicker is visible: 12.8/2.9 runs V100 natively, 12.8/2.11 does not
    auto json = matrix_json(cells);
    for (const auto& cell : json) {
        if (cell["platforms"][0] != "linux_x86_64") continue;
        if (cell["cuda"] == "12.8" && cell["torch"] == "2.9")
            EXPECT_EQ(cell["coverage"]["7.0"]["tier"], "native");
        if (cell["cuda"] == "12.8" && cell["torch"] == "2.11")
            EXPECT_EQ(cell["coverage"]["7.0"]["tier"], "dead (torch)");
    }
}

TEST(Report, MatrixShowsFailedCellsInsteadOfHidingThem) {
    auto pkg = parse_arch_override("arch_list: \"12.0\"\n", "p.yml");
    ASSERT_TRUE(pkg.ok());
    pkg->name = "blackwell_only";
    auto cells = policy_matrix(shipped(), &*pkg, gpus());
    bool saw_error = false;
    for (const auto& c : cells)
        if (!c.resolution) {
            saw_error = true;
            EXPECT_NE(c.error.find("collapses"), std::string::npos);
        }
    EXPECT_TRUE(saw_error); // 12.4/12.6 cannot emit sm_120
    auto html = matrix_html(shipped(), cells, gpus(), "x");
    EXPECT_NE(html.find("class=\"err\""), std::string::npos);
}
