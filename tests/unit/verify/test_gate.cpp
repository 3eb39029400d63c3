#include "verify/gate.h"

#include <gtest/gtest.h>

using namespace forge;
using namespace forge::verify;

namespace {

binary::Entry entry(std::string_view name, int kernels = 1, bool stub = false) {
    binary::Entry e;
    e.file = "ext.so";
    e.section = ".nv_fatbin";
    e.target = *arch::parse_target(name);
    if (e.target.kind == arch::Kind::Sass) e.kernels = kernels;
    e.stub = stub;
    return e;
}

binary::Extension ext(std::initializer_list<binary::Entry> entries) {
    binary::Extension x;
    x.file = "ext.so";
    x.entries = entries;
    return x;
}

arch::ArchList list(std::string_view s) {
    return *arch::ArchList::parse(s);
}

const Check* check(const ExtensionReport& r, std::string_view name) {
    for (const auto& c : r.checks)
        if (c.name == name) return &c;
    return nullptr;
}

} // namespace

TEST(Gate, ExactMatchPasses) {
    auto r = verify_extension(ext({entry("sm_80"), entry("sm_90"), entry("compute_90")}),
                              list("8.0 9.0+PTX"), {});
    EXPECT_TRUE(r.pass);
    EXPECT_TRUE(r.missing_sass.empty());
    EXPECT_TRUE(r.extra.empty());
    EXPECT_EQ(r.source, "native");
}

TEST(Gate, MissingConsumerAmpereFailsEvenWithFamilyPresent) {
    // The old hole: the family check alone passes when one sm_80 survives.
    auto r = verify_extension(ext({entry("sm_80"), entry("sm_90"), entry("compute_90")}),
                              list("8.0 8.6 8.9 9.0+PTX"), {});
    EXPECT_FALSE(r.pass);
    EXPECT_TRUE(check(r, "family")->ok);
    EXPECT_FALSE(check(r, "sass")->ok);
    EXPECT_EQ(r.missing_sass, (std::vector<std::string>{"sm_86", "sm_89"}));
}

TEST(Gate, FamilyCheckFailsOnAbsentMajor) {
    auto r = verify_extension(ext({entry("sm_80"), entry("sm_90"), entry("compute_120")}),
                              list("8.0 9.0 10.0 12.0+PTX"), {});
    EXPECT_FALSE(check(r, "family")->ok);
    EXPECT_EQ(r.missing_families, (std::vector<std::string>{"sm_10x", "sm_12x"}));
}

TEST(Gate, MissingPtxTailFails) {
    auto r = verify_extension(ext({entry("sm_80"), entry("sm_90")}), list("8.0 9.0+PTX"), {});
    EXPECT_FALSE(r.pass);
    EXPECT_EQ(r.missing_ptx, (std::vector<std::string>{"compute_90"}));
}

TEST(Gate, SuffixFoldingOneWayOnly) {
    // sm_90a satisfies a plain 9.0 ...
    auto r = verify_extension(ext({entry("sm_90a"), entry("sm_100f")}), list("9.0 10.0"), {});
    EXPECT_TRUE(r.pass) << r.checks.size();
    // ... but a plain sm_90 does not satisfy an asked 9.0a.
    auto r2 = verify_extension(ext({entry("sm_90")}), list("9.0a"), {});
    EXPECT_EQ(r2.missing_sass, (std::vector<std::string>{"sm_90a"}));
}

TEST(Gate, ExtraFailsUnlessAllowed) {
    auto e = ext({entry("sm_80"), entry("sm_75"), entry("compute_80")});
    auto r = verify_extension(e, list("8.0"), {});
    EXPECT_FALSE(r.pass);
    EXPECT_EQ(r.extra, (std::vector<std::string>{"sm_75", "compute_80"}));
    Options o;
    o.allow_extra = true;
    EXPECT_TRUE(verify_extension(e, list("8.0"), o).pass);
}

TEST(Gate, NoDeviceCodeFailsUnlessPurePythonAllowed) {
    auto r = verify_extension(ext({}), list("8.0"), {});
    EXPECT_FALSE(r.pass);
    EXPECT_FALSE(check(r, "device-code")->ok);
    Options o;
    o.allow_pure_python = true;
    EXPECT_TRUE(verify_extension(ext({}), list("8.0"), o).pass);
}

TEST(Gate, KernelLessCubinsAreNotDeviceCode) {
    // nvlink's stub plus a TU without kernels: "cuobjdump lists sm_80" proves nothing.
    auto r = verify_extension(ext({entry("sm_80", 0, true), entry("sm_80", 0)}), list("8.0"), {});
    EXPECT_FALSE(r.device_code);
    EXPECT_FALSE(r.pass);
    EXPECT_EQ(r.stub_only, (std::vector<std::string>{"sm_80"}));
}

TEST(Gate, ArchWhoseKernelsVanishedStandsOut) {
    auto r = verify_extension(ext({entry("sm_80", 3), entry("sm_90", 0)}), list("8.0 9.0"), {});
    EXPECT_FALSE(r.pass);
    EXPECT_EQ(r.missing_sass, (std::vector<std::string>{"sm_90"}));
    EXPECT_EQ(r.kernels.at("sm_80"), 3);
    EXPECT_EQ(r.kernels.at("sm_90"), 0);
    EXPECT_NE(check(r, "sass")->detail.find("kernels vanished"), std::string::npos);
}

TEST(Gate, WaiversAreUsedAndPrinted) {
    Options o;
    o.waivers.push_back({*arch::parse_target("sm_100"), "--allow-missing"});
    auto r = verify_extension(ext({entry("sm_80"), entry("sm_90")}), list("8.0 9.0 10.0"), o);
    EXPECT_TRUE(r.pass);
    ASSERT_EQ(r.waived.size(), 1u);
    EXPECT_NE(r.waived[0].find("sm_100"), std::string::npos);
    EXPECT_NE(r.waived[0].find("--allow-missing"), std::string::npos);
    // an unused waiver is not reported as used
    auto r2 = verify_extension(ext({entry("sm_80"), entry("sm_90"), entry("sm_100")}),
                               list("8.0 9.0 10.0"), o);
    EXPECT_TRUE(r2.waived.empty());
}

TEST(Gate, MaxToolkit) {
    auto e = ext({entry("sm_120"), entry("sm_90")});
    e.entries[0].toolkit = "13.0";
    e.entries[1].toolkit = "12.8";
    Options o;
    o.max_toolkit.push_back(*parse_max_toolkit("120=12.8"));
    auto r = verify_extension(e, list("9.0 12.0"), o);
    EXPECT_FALSE(r.pass);
    ASSERT_EQ(r.toolkit_violations.size(), 1u);
    EXPECT_NE(r.toolkit_violations[0].find("sm_120"), std::string::npos);
    e.entries[0].toolkit = "12.8";
    EXPECT_TRUE(verify_extension(e, list("9.0 12.0"), o).pass);
    e.entries[0].toolkit.reset();
    EXPECT_FALSE(verify_extension(e, list("9.0 12.0"), o).pass); // unknown is not a pass
    EXPECT_FALSE(parse_max_toolkit("120").ok());
    EXPECT_FALSE(parse_max_toolkit("120=x").ok());
    EXPECT_TRUE(parse_max_toolkit("*=12.8").ok());
}
