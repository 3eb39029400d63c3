#include "helpers.h"

#include "policy/report.h"

#include <regex>

using namespace forge;
using namespace forge::policy;
using namespace forge::policy::test;

namespace {

Resolution row128() {
    ResolveRequest req;
    req.cuda = "12.8";
    auto r = resolve_loaded(req, shipped(), nullptr, gpus());
    if (!r) throw std::runtime_error(r.error().to_string());
    return *r;
}

} // namespace

TEST(Report, CoverageJsonIsKeyedByCc) {
    auto j = coverage_json(coverage_report(row128().list, gpus()));
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j.size(), gpus().size());
    EXPECT_EQ(j["11.0"]["tier"], "jit");
    // compute_120 cannot JIT down to Thor: only the 9.0 PTX net reaches it (docs/arch-rules.md)
    EXPECT_EQ(j["11.0"]["via"], nlohmann::ordered_json::array({"compute_90"}));
    EXPECT_EQ(j["8.9"]["tier"], "native");
    EXPECT_EQ(j["10.3"]["tier"], "native");
    EXPECT_EQ(j["12.1"]["tier"], "native");
    EXPECT_EQ(j["7.0"]["tier"], "dead");
    EXPECT_EQ(j["8.7"]["tier"], "dead");
    EXPECT_EQ(j["8.7"]["tegra"], true);
    EXPECT_NE(j["8.7"]["why"].get<std::string>().find("Tegra"), std::string::npos);
    EXPECT_EQ(j["10.3"]["products"][0], "B300");
    EXPECT_EQ(j["8.9"]["via"], nlohmann::ordered_json::array({"sm_80", "sm_86"}));
}

TEST(Report, TextAndMarkdownSayExclusionsAndGapsInWords) {
    auto r = row128();
    auto text = coverage_text(r, coverage_report(r.list, gpus()));
    EXPECT_NE(text.find("Excluded"), std::string::npos);
    EXPECT_NE(text.find("Tesla V100"), std::string::npos);
    EXPECT_NE(text.find("jit:    10.1 11.0"), std::string::npos);
    EXPECT_NE(text.find("major 11 has no cubin; compute_90 PTX"), std::string::npos);
    // a list without the second PTX gets a finding
    Resolution bare = r;
    bare.list = *arch::ArchList::parse("8.0 12.0+PTX");
    auto report = coverage_report(bare.list, gpus());
    auto md = coverage_markdown(bare, report);
    EXPECT_NE(md.find("| 11.0 | dead |"), std::string::npos);
    EXPECT_NE(md.find("**Finding:** major 9 has no cubin and no PTX below it: add +PTX on 8.0"),
              std::string::npos);
    EXPECT_NE(coverage_text(bare, report).find("FINDING: major 10"), std::string::npos);
}

TEST(Report, ResolutionJsonHasTheContractKeys) {
    ResolveRequest req;
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
    expected +=
        shipped().arch_policy_aarch64.size(); // no aarch64 torch table: one cell per CUDA row
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
    // one grid cell per GPU per policy cell
    std::size_t grid = 0;
    for (auto pos = html.find("<td class=\"t "); pos != std::string::npos;
         pos = html.find("<td class=\"t ", pos + 1))
        ++grid;
    EXPECT_EQ(grid, cells.size() * gpus().size());
    EXPECT_NE(html.find("excluded: 5.0"), std::string::npos);
    EXPECT_NE(html.find("torch clamp not applied"), std::string::npos);
    // the Volta flicker is visible: 12.8/2.9 runs V100 natively, 12.8/2.11 does not
    auto json = matrix_json(cells);
    for (const auto& cell : json) {
        if (cell["cuda"] == "12.8" && cell["torch"] == "2.9")
            EXPECT_EQ(cell["coverage"]["7.0"]["tier"], "native");
        if (cell["cuda"] == "12.8" && cell["torch"] == "2.11")
            EXPECT_EQ(cell["coverage"]["7.0"]["tier"], "dead");
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
