#include "helpers.h"

#include "toolkit/probe.h"

#include "../replace_once.h"

#include <algorithm>
#include <filesystem>
#include <set>

using namespace forge;
using namespace forge::policy;
using namespace forge::policy::test;
using forge::test::replace_once;

namespace {

const char* kMinimal = R"(build_epoch: 3
arch_policy:
  "12.8": {list: "8.0;9.0+PTX", reason: "r"}
arch_policy_aarch64:
  "12.8": {list: "8.0", reason: "r"}
nvcc_supported:
  "12.8": {codes: "sm_80 sm_90", read_from: "t", reason: "r"}
torch_runnable:
  "12.8": {releases: "2.9", sass: "8.0 9.0", reason: "r"}
)";

Error parse_error(const std::string& text) {
    auto r = parse_policy(text, "p.yml");
    EXPECT_FALSE(r.ok()) << "expected an error for:\n" << text;
    return r.ok() ? Error{} : r.error();
}

} // namespace

TEST(PolicyFile, MinimalLoads) {
    auto p = parse_policy(kMinimal, "p.yml");
    ASSERT_TRUE(p.ok()) << p.error().to_string();
    EXPECT_EQ(p->build_epoch, 3);
    EXPECT_EQ(p->arch_policy.at("12.8").list.to_string(), "8.0 9.0+PTX");
    EXPECT_EQ(p->arch_policy.at("12.8").line, 3);
    EXPECT_EQ(p->sha256.size(), 64u);
    // compute_/lto_ are implied by the sm_ codes.
    EXPECT_TRUE(p->nvcc_supported.at("12.8").emittable.count(
        arch::Target{arch::Kind::Ptx, 90, arch::Suffix::None}));
}

TEST(PolicyFile, UnknownKeysAreErrorsWithFileAndLine) {
    // top level typo
    auto e = parse_error(std::string(kMinimal) +
                         "arch_exception:\n  \"12.8/2.9\": {list: \"8.0\", reason: r}\n");
    EXPECT_EQ(e.file, "p.yml");
    EXPECT_EQ(e.line, 10);
    EXPECT_EQ(e.key, "arch_exception");
    EXPECT_NE(e.to_string().find("p.yml:10"), std::string::npos);
    // a row field typo
    e = parse_error(replace_once(kMinimal, "reason: \"r\"}\narch_policy_aarch64",
                                 "reasn: \"r\"}\narch_policy_aarch64"));
    EXPECT_EQ(e.line, 3);
    EXPECT_EQ(e.key, "reasn");
    // a nested by_torch typo
    e = parse_error(replace_once(
        kMinimal, "sass: \"8.0 9.0\", reason: \"r\"}",
        "sass: \"8.0 9.0\", reason: \"r\", by_torch: {\"2.9\": {sas: \"8.0\", reason: x}}}"));
    EXPECT_EQ(e.key, "sas");
    EXPECT_EQ(e.line, 9);
}

TEST(PolicyFile, EveryRowNeedsAReason) {
    auto e = parse_error(replace_once(kMinimal, "{list: \"8.0;9.0+PTX\", reason: \"r\"}",
                                      "{list: \"8.0;9.0+PTX\"}"));
    EXPECT_EQ(e.line, 3);
    EXPECT_NE(e.message.find("reason"), std::string::npos);
    e = parse_error(replace_once(kMinimal, "read_from: \"t\", reason: \"r\"",
                                 "read_from: \"t\", reason: \" \""));
    EXPECT_NE(e.message.find("empty"), std::string::npos);
    e = parse_error(replace_once(kMinimal, "{codes: \"sm_80 sm_90\", read_from: \"t\", ",
                                 "{codes: \"sm_80 sm_90\", "));
    EXPECT_NE(e.message.find("read_from"), std::string::npos);
}

TEST(PolicyFile, BadTokensAndKeysNameWhere) {
    auto e = parse_error(replace_once(kMinimal, "8.0;9.0+PTX", "8.0;9.O+PTX"));
    EXPECT_EQ(e.key, "9.O+PTX");
    EXPECT_EQ(e.line, 3);
    EXPECT_NE(e.message.find("arch_policy[12.8]"), std::string::npos);
    e = parse_error(replace_once(kMinimal, "\"12.8\": {list: \"8.0;9.0+PTX\"",
                                 "\"12.8.1\": {list: \"8.0;9.0+PTX\""));
    EXPECT_EQ(e.key, "arch_policy[12.8.1]");
    e = parse_error(replace_once(kMinimal, "build_epoch: 3", "build_epoch: three"));
    EXPECT_EQ(e.key, "build_epoch");
    EXPECT_EQ(e.line, 1);
    e = parse_error(replace_once(kMinimal, "codes: \"sm_80 sm_90\"", "codes: \"sm_80 9.0\""));
    EXPECT_NE(e.message.find("'9.0'"), std::string::npos);
    e = parse_error(replace_once(kMinimal, "releases: \"2.9\"", "releases: \"2.9.1\""));
    EXPECT_NE(e.message.find("2.9.1"), std::string::npos);
}

TEST(PolicyFile, DuplicateKeysAndSyntaxErrors) {
    auto e = parse_error(
        replace_once(kMinimal, "arch_policy_aarch64:\n",
                     "arch_policy_aarch64:\n  \"12.8\": {list: \"9.0\", reason: \"r\"}\n"));
    EXPECT_NE(e.message.find("duplicate"), std::string::npos);
    EXPECT_EQ(e.line, 6);
    e = parse_error("arch_policy: {\n  \"12.8\": [unclosed\n");
    EXPECT_TRUE(e.line.has_value());
    EXPECT_NE(e.message.find("YAML"), std::string::npos);
    auto missing = load_policy("/nonexistent/arch_policy.yml");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().file, "/nonexistent/arch_policy.yml");
}

TEST(PolicyFile, ExceptionsMayOnlyAdd) {
    std::string text =
        std::string(kMinimal) +
        "arch_exceptions:\n  \"12.8/2.9\": {list: \"7.5;8.0;9.0+PTX\", reason: \"adds\"}\n";
    ASSERT_TRUE(parse_policy(text, "p.yml").ok());
    // drops 9.0's PTX: an exception read as a drop-list says the opposite of what a cell builds
    auto e =
        parse_error(std::string(kMinimal) +
                    "arch_exceptions:\n  \"12.8/2.9\": {list: \"7.5;8.0;9.0\", reason: \"x\"}\n");
    EXPECT_EQ(e.key, "arch_exceptions[12.8/2.9]");
    EXPECT_EQ(e.line, 11);
    EXPECT_NE(e.message.find("compute_90"), std::string::npos);
    e = parse_error(std::string(kMinimal) +
                    "arch_exceptions:\n  \"12.8-2.9\": {list: \"8.0\", reason: \"x\"}\n");
    EXPECT_NE(e.message.find("<cuda>/<torch minor>"), std::string::npos);
    e = parse_error(std::string(kMinimal) +
                    "arch_exceptions:\n  \"12.6/2.9\": {list: \"8.0\", reason: \"x\"}\n");
    EXPECT_NE(e.message.find("no arch_policy[12.6]"), std::string::npos);
}

// ---- the shipped policy ----

TEST(ShippedPolicy, RowsAreTheIssuesRows) {
    const auto& p = shipped();
    for (const char* cuda : {"12.4", "12.6"})
        EXPECT_EQ(p.arch_policy.at(cuda).list.to_string(), "6.0 7.0 7.5 8.0 8.6 9.0+PTX") << cuda;
    for (const char* cuda : {"12.8", "12.9", "13.0", "13.2"})
        EXPECT_EQ(p.arch_policy.at(cuda).list.to_string(), "7.5 8.0 8.6 9.0+PTX 10.0 12.0+PTX")
            << cuda;
    std::set<std::string> keys;
    for (const auto& [k, row] : p.arch_exceptions) {
        keys.insert(k);
        EXPECT_EQ(row.list.to_string(), "7.0 7.5 8.0 8.6 9.0+PTX 10.0 12.0+PTX") << k;
    }
    EXPECT_EQ(keys, (std::set<std::string>{"12.8/2.8", "12.8/2.9", "12.8/2.10", "12.9/2.8",
                                           "12.9/2.9", "12.9/2.10"}));
    EXPECT_EQ(p.arch_policy_aarch64.at("12.6").list.to_string(), "8.0 9.0+PTX");
    for (const char* cuda : {"12.8", "12.9"})
        EXPECT_EQ(p.arch_policy_aarch64.at(cuda).list.to_string(), "8.0 9.0+PTX 10.0 12.0+PTX");
    for (const char* cuda : {"13.0", "13.2"})
        EXPECT_EQ(p.arch_policy_aarch64.at(cuda).list.to_string(),
                  "8.0 9.0+PTX 10.0 11.0 12.0+PTX");
    EXPECT_EQ(p.arch_policy_aarch64.count("12.4"), 0u);
    EXPECT_GE(p.build_epoch, 1);
    // Every row has a reason (the loader enforces it; this guards the enforcement being removed).
    for (const auto* table : {&p.arch_policy, &p.arch_exceptions, &p.arch_policy_aarch64})
        for (const auto& [k, row] : *table)
            EXPECT_FALSE(row.reason.empty()) << k;
}

TEST(ShippedPolicy, NvccSupportedMatchesWhatToolkitsEmit) {
    const auto& p = shipped();
    auto has = [&](const char* cuda, const char* target) {
        return p.nvcc_supported.at(cuda).emittable.count(*arch::parse_target(target)) > 0;
    };
    for (const char* cuda : {"12.4", "12.6", "12.8", "12.9", "13.0", "13.2"}) {
        ASSERT_TRUE(p.nvcc_supported.count(cuda)) << cuda;
        EXPECT_FALSE(p.nvcc_supported.at(cuda).read_from.empty());
        EXPECT_TRUE(has(cuda, "sm_90a")) << cuda;
    }
    EXPECT_TRUE(has("12.8", "sm_70"));
    EXPECT_FALSE(has("13.0", "sm_70")); // CUDA 13 dropped sm_50..sm_72
    EXPECT_FALSE(has("12.6", "sm_100"));
    EXPECT_TRUE(has("12.8", "sm_101"));  // Thor's 12.x name
    EXPECT_FALSE(has("13.0", "sm_101")); // ... renamed sm_110
    EXPECT_TRUE(has("13.0", "sm_110"));
    EXPECT_FALSE(has("12.8", "sm_100f")); // family targets arrived in 12.9
    EXPECT_TRUE(has("12.9", "sm_100f"));
    EXPECT_FALSE(has("12.8", "sm_121"));
    EXPECT_TRUE(has("12.9", "compute_121"));
}

TEST(ShippedPolicy, NvccSupported130EqualsTheInstalledToolkit) {
    const std::filesystem::path nvcc = "/usr/local/cuda/bin/nvcc";
    if (!std::filesystem::exists(nvcc)) GTEST_SKIP() << "no CUDA toolkit at /usr/local/cuda";
    auto tk = toolkit::probe_toolkit(nvcc.string());
    ASSERT_TRUE(tk.ok()) << tk.error().to_string();
    if (tk->version.release() != "13.0")
        GTEST_SKIP() << "installed toolkit is " << tk->version.release();
    EXPECT_EQ(tk->emittable, shipped().nvcc_supported.at("13.0").emittable);
}

TEST(ShippedPolicy, TorchRunnableCarriesTheAdrVariations) {
    const auto& t = shipped().torch_runnable;
    auto sass = [&](const char* cuda, const char* torch, int sm) {
        const auto& b = t.at(cuda).build_for(torch);
        return std::count(b.targets.begin(), b.targets.end(),
                          arch::Target{arch::Kind::Sass, sm, arch::Suffix::None}) > 0;
    };
    auto ptx120 = [&](const char* cuda, const char* torch) {
        const auto& b = t.at(cuda).build_for(torch);
        return std::count(b.targets.begin(), b.targets.end(),
                          arch::Target{arch::Kind::Ptx, 120, arch::Suffix::None}) > 0;
    };
    EXPECT_FALSE(sass("12.8", "2.7", 70));
    EXPECT_TRUE(sass("12.8", "2.8", 70));
    EXPECT_TRUE(sass("12.8", "2.10", 70));
    EXPECT_FALSE(sass("12.8", "2.11", 70));
    EXPECT_TRUE(sass("12.9", "2.10", 70));
    EXPECT_FALSE(sass("12.9", "2.11", 70));
    EXPECT_FALSE(sass("12.9", "2.12", 70));
    EXPECT_TRUE(ptx120("12.8", "2.7"));
    EXPECT_FALSE(ptx120("12.8", "2.9"));
    EXPECT_TRUE(ptx120("12.9", "2.11"));
    EXPECT_FALSE(ptx120("12.9", "2.12"));
    EXPECT_TRUE(ptx120("13.0", "2.10"));
    EXPECT_FALSE(ptx120("13.0", "2.11"));
    EXPECT_FALSE(ptx120("13.2", "2.12"));
    EXPECT_FALSE(ptx120("12.4", "2.6"));
    EXPECT_TRUE(sass("12.4", "2.6", 50));
    EXPECT_FALSE(sass("13.0", "2.9", 70));
}

TEST(Gpus, ShippedTableHasTheCcsAndTegraFlags) {
    std::set<int> ccs, tegra;
    for (const auto& g : gpus()) {
        ccs.insert(g.sm);
        if (g.tegra) tegra.insert(g.sm);
    }
    for (int sm :
         {50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 110, 120, 121})
        EXPECT_TRUE(ccs.count(sm)) << sm;
    EXPECT_EQ(tegra, (std::set<int>{53, 62, 72, 87, 101}));
    auto product = [&](int sm, const std::string& name) {
        for (const auto& g : gpus())
            if (g.sm == sm)
                return std::find(g.products.begin(), g.products.end(), name) != g.products.end();
        return false;
    };
    EXPECT_TRUE(product(103, "B300"));
    EXPECT_TRUE(product(121, "GB10 (DGX Spark)"));
    EXPECT_TRUE(product(110, "Jetson AGX Thor"));
    EXPECT_TRUE(product(87, "Jetson AGX Orin"));
    EXPECT_TRUE(
        std::is_sorted(gpus().begin(), gpus().end(), [](auto& a, auto& b) { return a.sm < b.sm; }));
}

TEST(Gpus, ShippedRetiredKeplerOnlyWhenAsked) {
    for (const auto& g : gpus())
        EXPECT_FALSE(g.retired || g.sm < 50) << g.sm; // what coverage, resolve and verify read
    auto all = load_gpus(shipped_gpus(), Retired::Include);
    ASSERT_TRUE(all.ok()) << all.error().to_string();
    std::set<int> retired;
    for (const auto& g : *all)
        if (g.retired) retired.insert(g.sm);
    EXPECT_EQ(retired, (std::set<int>{35, 37}));
    EXPECT_EQ(all->size(), gpus().size() + 2);
    EXPECT_TRUE(
        std::is_sorted(all->begin(), all->end(), [](auto& a, auto& b) { return a.sm < b.sm; }));
}

TEST(Gpus, RetiredSection) {
    const char* yml = "gpus:\n  \"8.0\": {products: [A100]}\n"
                      "retired:\n  \"3.7\": {products: [K80], note: \"no CUDA 12 nvcc\"}\n";
    auto skip = parse_gpus(yml, "g.yml");
    ASSERT_TRUE(skip.ok()) << skip.error().to_string();
    ASSERT_EQ(skip->size(), 1u);
    EXPECT_EQ(skip->front().sm, 80);
    auto all = parse_gpus(yml, "g.yml", Retired::Include);
    ASSERT_TRUE(all.ok()) << all.error().to_string();
    ASSERT_EQ(all->size(), 2u);
    EXPECT_EQ(all->front().sm, 37);
    EXPECT_TRUE(all->front().retired);
    EXPECT_EQ(all->front().note, "no CUDA 12 nvcc");
    EXPECT_FALSE(all->back().retired);
    // A retired part gets no Tegra reasoning, so the key is unknown there.
    auto e = parse_gpus("gpus:\n  \"8.0\": {products: []}\n"
                        "retired:\n  \"3.7\": {products: [], tegra: true}\n",
                        "g.yml");
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.error().key, "tegra");
    EXPECT_EQ(e.error().line, 4);
    // Checked even when skipped, and a CC lives in one section only.
    e = parse_gpus("gpus:\n  \"8.0\": {products: []}\nretired:\n  \"37\": {products: []}\n",
                   "g.yml");
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.error().line, 4);
    e = parse_gpus("gpus:\n  \"8.0\": {products: []}\nretired:\n  \"8.0\": {products: []}\n",
                   "g.yml", Retired::Include);
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.error().line, 4);
    EXPECT_NE(e.error().message.find("listed once"), std::string::npos);
}

TEST(Gpus, StrictParsing) {
    auto ok = parse_gpus(
        "gpus:\n  \"8.7\": {products: [Orin], tegra: true}\n  \"8.0\": {products: []}\n", "g.yml");
    ASSERT_TRUE(ok.ok()) << ok.error().to_string();
    ASSERT_EQ(ok->size(), 2u);
    EXPECT_EQ(ok->front().sm, 80);
    EXPECT_TRUE(ok->back().tegra);
    auto e = parse_gpus("gpus:\n  \"8.7\": {products: [Orin], tegar: true}\n", "g.yml");
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.error().key, "tegar");
    EXPECT_EQ(e.error().line, 2);
    e = parse_gpus("gpus:\n  \"87\": {products: []}\n", "g.yml");
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.error().line, 2);
    e = parse_gpus("gpus:\n  \"8.7\": {products: [], tegra: maybe}\n", "g.yml");
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.error().message.find("true or false"), std::string::npos);
}
