#include "verify/gate.h"

#include "support.h"

#include <gtest/gtest.h>

using namespace forge;
using namespace forge::verify;

namespace {

using forge::verify::test::entry;

binary::Extension ext(std::initializer_list<binary::Entry> entries) {
    binary::Extension x;
    x.file = "ext.cpython-312-x86_64-linux-gnu.so"; // a Python extension module: always judged
    x.entries = entries;
    return x;
}

arch::ArchList list(std::string_view s) {
    return *arch::ArchList::parse(s);
}

std::vector<arch::Gpu> gpus(std::initializer_list<int> sms) {
    std::vector<arch::Gpu> out;
    for (int sm : sms)
        out.push_back(arch::Gpu{sm, {}, false, {}});
    return out;
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

TEST(Gate, AStubCountsAsKernelLessEvenWithoutAKernelCount) {
    // A device-link stub the reader flagged without reading its sections (a compressed cubin,
    // kernels unknown) is still no device code: the flag alone decides.
    binary::Entry stub = entry("sm_80", 0, true);
    stub.kernels.reset();
    auto r = verify_extension(ext({stub}), list("8.0"), {});
    EXPECT_FALSE(r.device_code);
    EXPECT_FALSE(r.pass);
    EXPECT_EQ(r.stub_only, (std::vector<std::string>{"sm_80"}));
    EXPECT_TRUE(r.sass.empty());
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

TEST(Gate, ArchSpecificPtxIsNotTheForwardTail) {
    // compute_90a JITs onto 9.0 only: it cannot satisfy 9.0+PTX, and the GPUs above are lost.
    Options o;
    o.gpus = gpus({80, 90, 100, 120});
    auto r = verify_extension(ext({entry("sm_80"), entry("sm_90a"), entry("compute_90a")}),
                              list("8.0 9.0+PTX"), o);
    EXPECT_FALSE(r.pass);
    EXPECT_EQ(r.missing_ptx, (std::vector<std::string>{"compute_90"}));
    EXPECT_NE(check(r, "ptx")->detail.find("compute_90a"), std::string::npos);
    ASSERT_EQ(r.lost.size(), 2u);
    EXPECT_EQ(r.lost[0].sm, 100);
    EXPECT_EQ(r.lost[0].promised, arch::Tier::Jit);
    EXPECT_EQ(r.lost[0].actual, arch::Tier::Dead);
    // the same for a family PTX against a plain +PTX
    auto f = verify_extension(ext({entry("sm_100f"), entry("compute_100f")}), list("10.0+PTX"), o);
    EXPECT_EQ(f.missing_ptx, (std::vector<std::string>{"compute_100"}));
}

TEST(Gate, FoldingKeepsCoverage) {
    // sageattention's wheel against a list with 10.0 and 12.0: sm_100a runs on 10.0 only, so
    // 10.3 (B300) is lost; sm_120a with sm_121a keeps 12.x; sm_90a is all of major 9.
    Options o;
    o.gpus = gpus({90, 100, 103, 120, 121});
    auto r = verify_extension(
        ext({entry("sm_90a"), entry("sm_100a"), entry("sm_120a"), entry("sm_121a")}),
        list("9.0 10.0 12.0 12.1"), o);
    EXPECT_FALSE(r.pass);
    EXPECT_EQ(r.missing_sass, (std::vector<std::string>{"sm_100"}));
    ASSERT_EQ(r.lost.size(), 1u);
    EXPECT_EQ(r.lost[0].sm, 103);
    EXPECT_NE(r.lost[0].describe().find("10.3"), std::string::npos);
    // the sass check names the suffixed cubin that folds to the missing one, and only that one
    const std::string detail = check(r, "sass")->detail;
    EXPECT_NE(detail.find("(sm_100a does not cover every CC sm_100 runs on)"), std::string::npos)
        << detail;
    // without sm_121a, sm_120a no longer stands in for 12.0 either
    auto r2 = verify_extension(ext({entry("sm_120a")}), list("12.0"), o);
    EXPECT_EQ(r2.missing_sass, (std::vector<std::string>{"sm_120"}));
    // a family cubin covers its family
    EXPECT_TRUE(verify_extension(ext({entry("sm_100f")}), list("10.0"), o).pass);
    // and an a cubin of a one-CC major stands in
    EXPECT_TRUE(verify_extension(ext({entry("sm_90a")}), list("9.0"), o).pass);
}

TEST(Gate, PtxWithoutKernelsDoesNotCount) {
    auto r = verify_extension(ext({entry("sm_80"), entry("sm_90"), entry("compute_90", 0)}),
                              list("8.0 9.0+PTX"), {});
    EXPECT_FALSE(r.pass);
    EXPECT_EQ(r.missing_ptx, (std::vector<std::string>{"compute_90"}));
    EXPECT_EQ(r.ptx_without_kernels, (std::vector<std::string>{"compute_90"}));
    EXPECT_EQ(r.kernels.at("compute_90"), 0);
    EXPECT_TRUE(verify_extension(ext({entry("sm_80"), entry("sm_90"), entry("compute_90", 2)}),
                                 list("8.0 9.0+PTX"), {})
                    .pass);
}

TEST(Gate, WaiverShownOnItsCheck) {
    Options o;
    o.waivers.push_back({*arch::parse_target("sm_100"), "--allow-missing"});
    auto r = verify_extension(ext({entry("sm_80"), entry("sm_90")}), list("8.0 9.0 10.0"), o);
    EXPECT_TRUE(r.pass);
    const Check* sass = check(r, "sass");
    ASSERT_EQ(sass->waived.size(), 1u);
    EXPECT_EQ(sass->waived[0], "sm_100 — --allow-missing");
    EXPECT_EQ(sass->detail, "2 of 3 cubin arch(es) as asked");
    ASSERT_EQ(r.lost.size(), 1u); // the GPU the waiver costs, marked as waived
    EXPECT_TRUE(r.lost[0].waived);
}

TEST(Gate, HostOnlyLibrariesAreListedNotJudged) {
    binary::Extension gomp;
    gomp.file = "w.whl";
    gomp.member = "pkg.libs/libgomp-a34b3233.so.1.0.0";
    auto r = verify_extension(gomp, list("8.0"), {});
    EXPECT_TRUE(r.host_only);
    EXPECT_TRUE(r.pass);
    EXPECT_EQ(r.source, "none"); // nothing was measured
    // a Python extension module without device code still fails
    binary::Extension c;
    c.file = "w.whl";
    c.member = "pkg/_C.cpython-312-x86_64-linux-gnu.so";
    EXPECT_FALSE(verify_extension(c, list("8.0"), {}).pass);
    // so does an object file without device code, and a module inside *.libs/ is host-only
    binary::Extension obj;
    obj.file = "k.o";
    EXPECT_FALSE(verify_extension(obj, list("8.0"), {}).pass);
    EXPECT_FALSE(is_python_extension("pkg.libs/_C.cpython-312-x86_64-linux-gnu.so"));
    EXPECT_TRUE(is_python_extension("pkg/_C.abi3.so"));
    EXPECT_TRUE(is_python_extension("pkg/_C.cp312-win_amd64.pyd"));
}

TEST(Gate, VerdictNeedsAJudgedExtensionOrTheAllowance) {
    binary::Extension gomp;
    gomp.file = "w.whl";
    gomp.member = "pkg.libs/libgomp.so.1";
    auto host = verify_extension(gomp, list("8.0"), {});
    auto good = verify_extension(ext({entry("sm_80")}), list("8.0"), {});
    EXPECT_TRUE(verdict({good, host}, {}).pass);
    Verdict none = verdict({}, {});
    EXPECT_FALSE(none.pass);
    EXPECT_NE(none.reason.find("no extension module"), std::string::npos);
    EXPECT_FALSE(verdict({host}, {}).pass);
    Options allow;
    allow.allow_pure_python = true;
    Verdict ok = verdict({}, allow);
    EXPECT_TRUE(ok.pass);
    EXPECT_NE(ok.reason.find("allow_pure_python"), std::string::npos);
}

namespace {

binary::Entry embedded(std::string_view target, std::uint64_t container) {
    binary::Entry e = entry(target);
    e.found = binary::Found::Embedded;
    e.section = ".ldata";
    e.fatbin_offset = container;
    return e;
}

} // namespace

// cuFFT's shape (docs/fatbin-format.md, "Fatbins outside the registered sections"): a kernel-less
// registered cubin, and the real code in containers the library loads itself.
TEST(Gate, EmbeddedContainersAreReportedApartUnlessJudged) {
    const binary::Extension x =
        ext({entry("sm_52", 0, true), embedded("sm_87", 0x100), embedded("lto_50", 0x200),
             embedded("compute_70", 0x300), embedded("sm_87", 0x400)});
    auto r = verify_extension(x, list("8.7"), {});
    EXPECT_FALSE(r.pass);
    EXPECT_FALSE(r.device_code);
    EXPECT_EQ(r.missing_sass, std::vector<std::string>{"sm_87"});
    EXPECT_TRUE(r.ptx.empty()) << "embedded PTX is not judged";
    EXPECT_FALSE(r.embedded.judged);
    EXPECT_EQ(r.embedded.containers, 4u);
    EXPECT_EQ(r.embedded.entries, 4u);
    EXPECT_EQ(r.embedded.sections, std::vector<std::string>{".ldata"});
    EXPECT_EQ(r.embedded.sass, std::vector<std::string>{"sm_87"});
    EXPECT_EQ(r.embedded.ptx, std::vector<std::string>{"compute_70"});
    EXPECT_EQ(r.embedded.lto, std::vector<std::string>{"lto_50"});
    const Check* device = check(r, "device-code");
    ASSERT_NE(device, nullptr);
    EXPECT_NE(device->detail.find("4 embedded fatbin container(s)"), std::string::npos)
        << device->detail;

    Options judge;
    judge.judge_embedded = true;
    r = verify_extension(x, list("8.7"), judge);
    EXPECT_TRUE(r.embedded.judged);
    EXPECT_TRUE(r.missing_sass.empty());
    EXPECT_EQ(r.ptx, std::vector<std::string>{"compute_70"});
    EXPECT_EQ(r.extra, std::vector<std::string>{"compute_70"});

    // A host library whose only GPU code is embedded is host-only unless that code is judged.
    binary::Extension lib;
    lib.file = "libcufft.so.11";
    lib.entries = {embedded("sm_80", 0x100)};
    EXPECT_TRUE(is_host_only(lib));
    EXPECT_FALSE(is_host_only(lib, true));
    EXPECT_EQ(classify(lib).sass.size(), 0u);
    EXPECT_EQ(classify(lib, true).sass.size(), 1u);
}
