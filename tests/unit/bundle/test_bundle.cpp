// The bundle header (render/parse), the nvcc steps, the layout file and verify-bundle's checks.
#include "bundle/build.h"
#include "bundle/header.h"
#include "bundle/verify.h"
#include "toolkit/probe.h"

#include "../replace_once.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <unistd.h>

using namespace forge;
using namespace forge::bundle;
using forge::toolkit::parse_version_text;
using forge::toolkit::Toolkit;

using forge::test::replace_once;

namespace {

Bundle sample_bundle() {
    Bundle b;
    b.symbol = "cond_kernel";
    BundleBlob first{"12.8.93", {90, 100, 120}, {}};
    for (int i = 0; i < 37; ++i)
        first.data.push_back(static_cast<std::uint8_t>(i * 7 + 0x50));
    BundleBlob second{"13.0.88", {110}, {0xff, 0x00, 0x10}};
    b.blobs = {first, second};
    return b;
}

std::string render(const Bundle& b) {
    auto h = render_bundle_header(b);
    EXPECT_TRUE(h.ok()) << h.error().to_string();
    return h.ok() ? *h : std::string();
}

void expect_same(const Bundle& a, const Bundle& b) {
    EXPECT_EQ(a.symbol, b.symbol);
    ASSERT_EQ(a.blobs.size(), b.blobs.size());
    for (std::size_t i = 0; i < a.blobs.size(); ++i) {
        EXPECT_EQ(a.blobs[i].toolkit, b.blobs[i].toolkit) << i;
        EXPECT_EQ(a.blobs[i].sms, b.blobs[i].sms) << i;
        EXPECT_EQ(a.blobs[i].data, b.blobs[i].data) << i;
    }
}

Error parse_error_of(const std::string& text) {
    auto b = parse_bundle_header(text, "h.h");
    EXPECT_FALSE(b.ok()) << "parsed:\n" << text;
    return b.ok() ? Error() : b.error();
}

} // namespace

TEST(BundleHeaderTest, RoundTripsThroughTheParser) {
    const Bundle b = sample_bundle();
    const std::string text = render(b);
    auto back = parse_bundle_header(text, "h.h");
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    expect_same(b, *back);
}

TEST(BundleHeaderTest, IsDeterministicAndCarriesNoPathsOrTimes) {
    const std::string a = render(sample_bundle()), b = render(sample_bundle());
    EXPECT_EQ(a, b);
    EXPECT_EQ(a.find('/' + std::string("tmp")), std::string::npos);
    EXPECT_FALSE(std::regex_search(a, std::regex(R"(\d{4}-\d{2}-\d{2}|\d\d:\d\d:\d\d)")));
    EXPECT_NE(a.find("#ifndef NVCC_FORGE_BUNDLE_COND_KERNEL_H_"), std::string::npos);
    EXPECT_NE(a.find("cond_kernel_blobs[2]"), std::string::npos);
    EXPECT_NE(a.find("{\"12.8.93\", cond_kernel_blob0_sms, 3, cond_kernel_blob0, "
                     "sizeof(cond_kernel_blob0)}"),
              std::string::npos);
}

TEST(BundleHeaderTest, ParsesAfterReflowing) {
    // What clang-format may do to a committed header: other line breaks and indentation anywhere
    // between tokens, and comments added.
    const Bundle b = sample_bundle();
    std::string text = render(b);
    std::string reflowed;
    int commas = 0;
    for (char c : text) {
        reflowed += c;
        if (c == ',' && ++commas % 5 == 0) reflowed += "\n        ";
        if (c == '{') reflowed += "\n  // comment {0x99}\n";
    }
    reflowed = std::regex_replace(reflowed, std::regex(R"(\] = )"), "]\n    =\n");
    auto back = parse_bundle_header(reflowed, "h.h");
    ASSERT_TRUE(back.ok()) << back.error().to_string() << "\n" << reflowed;
    expect_same(b, *back);
}

TEST(BundleHeaderTest, RejectsBadSymbolsAndEmptyBundles) {
    Bundle b = sample_bundle();
    for (const char* bad : {"", "9lives", "my-kernel", "a b"}) {
        b.symbol = bad;
        EXPECT_FALSE(render_bundle_header(b).ok()) << bad;
    }
    b = sample_bundle();
    b.blobs[1].data.clear();
    EXPECT_FALSE(render_bundle_header(b).ok());
    b.blobs.clear();
    EXPECT_FALSE(render_bundle_header(b).ok());
}

TEST(BundleHeaderTest, StructuralLiesAreErrorsWithLines) {
    const std::string good = render(sample_bundle());
    // the table says 3 SMs, the array holds 2
    Error e = parse_error_of(
        replace_once(good, "_blob0_sms[3] = {90, 100, 120}", "_blob0_sms[2] = {90, 100}"));
    EXPECT_TRUE(e.line.has_value());
    EXPECT_NE(e.message.find("3 SMs"), std::string::npos) << e.to_string();
    // declared size disagrees with the bytes listed
    e = parse_error_of(replace_once(good, "cond_kernel_blob1[3]", "cond_kernel_blob1[4]"));
    EXPECT_NE(e.message.find("declares 4"), std::string::npos) << e.to_string();
    // not a byte
    e = parse_error_of(replace_once(good, "0xff,", "0x1ff,"));
    EXPECT_NE(e.message.find("not a byte"), std::string::npos) << e.to_string();
    // the table points at one array and takes the size of another
    e = parse_error_of(replace_once(good, "cond_kernel_blob1, sizeof(cond_kernel_blob1)",
                                    "cond_kernel_blob1, sizeof(cond_kernel_blob0)"));
    EXPECT_NE(e.message.find("sizeof"), std::string::npos) << e.to_string();
    // an array the table does not use
    e = parse_error_of(replace_once(
        good, "static const nvcc_forge_fatbin_blob",
        "static const unsigned char stray[1] = {1};\nstatic const nvcc_forge_fatbin_blob"));
    EXPECT_NE(e.message.find("stray"), std::string::npos) << e.to_string();
    EXPECT_GT(e.line.value_or(0), 10);
    // no table at all; a foreign declaration; a C string with escapes
    parse_error_of("static const unsigned char x[] = {1};\n");
    parse_error_of(good + "static const float f = 1;\n");
    parse_error_of(replace_once(good, "\"13.0.88\"", "\"13.0\\n\""));
    parse_error_of(replace_once(good, "};\nstatic const size_t", "\nstatic const size_t"));
}

TEST(BundleStepsTest, WholeProgramIsOneFatbinCompileWithOneGencodePerSm) {
    BundleOptions o;
    o.source = "/src/k.cu";
    o.nvcc_args = {"-O3"};
    auto steps = bundle_steps(o, {90, 120}, "d.o", "d.fatbin");
    ASSERT_EQ(steps.size(), 1u);
    EXPECT_EQ(steps[0], (std::vector<std::string>{
                            "-fatbin", "-gencode", "arch=compute_90,code=sm_90", "-gencode",
                            "arch=compute_120,code=sm_120", "-O3", "-o", "d.fatbin", "/src/k.cu"}));
}

TEST(BundleStepsTest, RdcCompilesRelocatableThenDeviceLinksWithLibraries) {
    BundleOptions o;
    o.source = "k.cu";
    o.rdc = true;
    o.devlink_libs = {"cudadevrt"};
    auto steps = bundle_steps(o, {110}, "d.o", "d.fatbin");
    ASSERT_EQ(steps.size(), 2u);
    EXPECT_EQ(steps[0],
              (std::vector<std::string>{"-rdc=true", "-c", "-gencode",
                                        "arch=compute_110,code=sm_110", "-o", "d.o", "k.cu"}));
    EXPECT_EQ(steps[1], (std::vector<std::string>{"-dlink", "-fatbin", "-gencode",
                                                  "arch=compute_110,code=sm_110", "-o", "d.fatbin",
                                                  "d.o", "-lcudadevrt"}));
}

// ---- layout and verification -----------------------------------------------------------------

namespace {

BundleLayout layout_of(const std::string& yaml) {
    auto l = parse_bundle_layout(yaml, "layout.yml");
    EXPECT_TRUE(l.ok()) << l.error().to_string();
    return l.ok() ? *l : BundleLayout{};
}

const char* kGoodLayout = "blobs:\n"
                          "  - {toolkit: \"12.8\", sms: [90, 100, 120]}\n"
                          "  - {toolkit: \"13.0\", sms: [110]}\n";

binary::Entry cubin(int sm, std::optional<std::string> toolkit) {
    binary::Entry e;
    e.target = {arch::Kind::Sass, sm};
    e.toolkit = std::move(toolkit);
    return e;
}

// Stands in for the binary reader: what each blob "contains", by blob index.
BlobReader fake_reader(std::vector<std::vector<binary::Entry>> per_blob) {
    return [per_blob](const BundleBlob& blob,
                      const std::string&) -> Result<std::vector<binary::Entry>> {
        for (std::size_t i = 0; i < per_blob.size(); ++i)
            if (blob.toolkit == (i == 0 ? "12.8.93" : "13.0.88")) return per_blob[i];
        return Error("unknown blob");
    };
}

std::vector<std::vector<binary::Entry>> honest_contents() {
    binary::Entry ptx;
    ptx.target = {arch::Kind::Ptx, 90};
    return {{cubin(90, "12.8"), cubin(100, "12.8"), cubin(120, "12.8"), ptx}, {cubin(110, "13.0")}};
}

bool any_contains(const std::vector<std::string>& v, const std::string& needle) {
    for (const auto& s : v)
        if (s.find(needle) != std::string::npos) return true;
    return false;
}

} // namespace

TEST(BundleLayoutTest, ParsesInOrderAndRejectsWithLines) {
    auto l = layout_of(kGoodLayout);
    ASSERT_EQ(l.blobs.size(), 2u);
    EXPECT_EQ(l.blobs[0].toolkit, "12.8");
    EXPECT_EQ(l.blobs[0].sms, (std::vector<int>{90, 100, 120}));
    EXPECT_EQ(l.blobs[1].line, 3);

    struct Bad {
        const char* yaml;
        int line;
    };
    for (const Bad& bad : {Bad{"blobs:\n  - {toolkit: \"12\", sms: [90]}\n", 2},
                           Bad{"blobs:\n  - {toolkit: \"12.8\", sms: 90}\n", 2},
                           Bad{"blobs:\n  - {toolkit: \"12.8\", sms: [90, 90]}\n", 2},
                           Bad{"blobs:\n  - {toolkit: \"12.8\", sms: [hopper]}\n", 2},
                           Bad{"blobs:\n  - toolkit: \"12.8\"\n    sm: [90]\n", 3},
                           Bad{"blobs: []\n", 1}, Bad{"layout:\n  - x\n", 1}}) {
        auto r = parse_bundle_layout(bad.yaml, "layout.yml");
        ASSERT_FALSE(r.ok()) << bad.yaml;
        EXPECT_EQ(r.error().file, "layout.yml");
        EXPECT_EQ(r.error().line.value_or(-1), bad.line) << bad.yaml << r.error().to_string();
    }
}

TEST(BundleLayoutTest, IsReadWithTheStrictYamlRules) {
    // a key given twice would otherwise be read as its first value, silently
    auto dup = parse_bundle_layout("blobs:\n  - toolkit: \"12.8\"\n    toolkit: \"13.0\"\n"
                                   "    sms: [90]\n",
                                   "layout.yml");
    ASSERT_FALSE(dup.ok());
    EXPECT_EQ(dup.error().line.value_or(-1), 3) << dup.error().to_string();
    EXPECT_NE(dup.error().message.find("duplicate key"), std::string::npos) << dup.error().message;
    auto unknown =
        parse_bundle_layout("blobs:\n  - {toolkit: \"12.8\", sms: [90], sm: 1}\n", "layout.yml");
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().key, "sm");
    EXPECT_NE(unknown.error().message.find("allowed: toolkit, sms"), std::string::npos)
        << unknown.error().message;
    auto top =
        parse_bundle_layout("blobs:\n  - {toolkit: \"12.8\", sms: [90]}\nextra: 1\n", "layout.yml");
    ASSERT_FALSE(top.ok());
    EXPECT_EQ(top.error().line.value_or(-1), 3) << top.error().to_string();
}

TEST(BundleLayoutTest, OrNewerWordingIsAccepted) {
    // the layout wording "CUDA 13.0+": that release or a later one
    auto l = layout_of("blobs:\n  - {toolkit: \"12.8\", sms: [90, 100, 120]}\n"
                       "  - {toolkit: \"13.0+\", sms: [110]}\n");
    ASSERT_EQ(l.blobs.size(), 2u);
    EXPECT_EQ(l.blobs[1].toolkit, "13.0");
    EXPECT_TRUE(l.blobs[1].or_newer);
    EXPECT_TRUE(l.blobs[1].accepts("13.0"));
    EXPECT_TRUE(l.blobs[1].accepts("13.2.51"));
    EXPECT_FALSE(l.blobs[1].accepts("12.9"));
    EXPECT_FALSE(l.blobs[0].accepts("13.0")); // an exact release stays exact
    auto check = verify_bundle(sample_bundle(), l, "h.h", fake_reader(honest_contents()));
    ASSERT_TRUE(check.ok()) << check.error().to_string();
    EXPECT_TRUE(check->mismatches.empty()) << check->mismatches.front();
}

TEST(BundleLayoutTest, AVersionTooLargeForAnIntIsRefusedNotThrown) {
    // std::stoi threw on these (issue 40): a layout's toolkit and a bundle's release are input.
    auto r =
        parse_bundle_layout("blobs:\n  - {toolkit: \"99999999999.0+\", sms: [90]}\n", "layout.yml");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().line.value_or(-1), 2) << r.error().to_string();
    auto l = layout_of("blobs:\n  - {toolkit: \"13.0+\", sms: [110]}\n");
    EXPECT_FALSE(l.blobs[0].accepts("99999999999.0"));
    EXPECT_FALSE(l.blobs[0].accepts("13.99999999999"));
}

TEST(VerifyBundleTest, HonestBundlePasses) {
    auto check = verify_bundle(sample_bundle(), layout_of(kGoodLayout), "h.h",
                               fake_reader(honest_contents()));
    ASSERT_TRUE(check.ok()) << check.error().to_string();
    EXPECT_TRUE(check->mismatches.empty()) << check->mismatches.front();
    EXPECT_EQ(check->passed.size(), 4u);
}

TEST(VerifyBundleTest, Sm120BuiltByNewerToolkitIsCaught) {
    // the load-bearing fact: sm_120 must be a 12.8 cubin, not 13.x (INVALID_IMAGE on 570 drivers)
    auto contents = honest_contents();
    contents[0][2] = cubin(120, "13.0");
    auto check =
        verify_bundle(sample_bundle(), layout_of(kGoodLayout), "h.h", fake_reader(contents));
    ASSERT_TRUE(check.ok());
    ASSERT_EQ(check->mismatches.size(), 1u);
    EXPECT_NE(check->mismatches[0].find("sm_120 cubin"), std::string::npos) << check->mismatches[0];
    EXPECT_NE(check->mismatches[0].find("built by CUDA 13.0"), std::string::npos)
        << check->mismatches[0];
}

TEST(VerifyBundleTest, WrongLayoutToolkitOrSmListIsCaught) {
    auto wrong_tk = verify_bundle(sample_bundle(),
                                  layout_of("blobs:\n  - {toolkit: \"12.9\", sms: [90, 100, 120]}\n"
                                            "  - {toolkit: \"13.0\", sms: [110]}\n"),
                                  "h.h", fake_reader(honest_contents()));
    ASSERT_TRUE(wrong_tk.ok());
    EXPECT_TRUE(any_contains(wrong_tk->mismatches,
                             "the header's table says CUDA 12.8.93, the layout expects 12.9"));
    EXPECT_TRUE(any_contains(wrong_tk->mismatches, "sm_90 cubin"));

    auto wrong_sms = verify_bundle(sample_bundle(),
                                   layout_of("blobs:\n  - {toolkit: \"12.8\", sms: [90, 120]}\n"
                                             "  - {toolkit: \"13.0\", sms: [100, 110]}\n"),
                                   "h.h", fake_reader(honest_contents()));
    ASSERT_TRUE(wrong_sms.ok());
    EXPECT_TRUE(any_contains(wrong_sms->mismatches, "blob 0 (layout.yml:2): sm_100 cubin"));
    EXPECT_TRUE(any_contains(wrong_sms->mismatches, "blob 1 (layout.yml:3): no sm_100 cubin"));
}

TEST(VerifyBundleTest, TableThatLiesAboutItsBlobIsCaught) {
    Bundle b = sample_bundle();
    b.blobs[0].sms = {90, 100}; // table drifted from what is baked in
    auto check = verify_bundle(b,
                               layout_of("blobs:\n  - {toolkit: \"12.8\", sms: [90, 100]}\n"
                                         "  - {toolkit: \"13.0\", sms: [110]}\n"),
                               "h.h", fake_reader(honest_contents()));
    ASSERT_TRUE(check.ok());
    EXPECT_TRUE(any_contains(check->mismatches, "holds SASS for sm_90 sm_100 sm_120"));
}

TEST(VerifyBundleTest, BlobCountUnknownToolkitAndUnreadableBlob) {
    auto count = verify_bundle(sample_bundle(),
                               layout_of("blobs:\n  - {toolkit: \"12.8\", sms: [90, 100, 120]}\n"),
                               "h.h", fake_reader(honest_contents()));
    ASSERT_TRUE(count.ok());
    EXPECT_TRUE(any_contains(count->mismatches, "2 blob(s)"));

    auto contents = honest_contents();
    contents[1][0].toolkit.reset();
    auto unknown =
        verify_bundle(sample_bundle(), layout_of(kGoodLayout), "h.h", fake_reader(contents));
    ASSERT_TRUE(unknown.ok());
    EXPECT_TRUE(any_contains(unknown->mismatches, "records no build toolkit"));

    Bundle b = sample_bundle();
    b.blobs[1].toolkit = "13.0.99"; // the fake reader cannot read it
    auto unreadable =
        verify_bundle(b, layout_of(kGoodLayout), "h.h", fake_reader(honest_contents()));
    EXPECT_FALSE(unreadable.ok());
}

TEST(VerifyBundleTest, DefaultReaderRejectsBytesThatAreNotAFatbin) {
    // sample_bundle()'s bytes are no fatbin: unusable input, naming the header and the blob
    auto check = verify_bundle(sample_bundle(), layout_of(kGoodLayout), "h.h");
    ASSERT_FALSE(check.ok());
    EXPECT_NE(check.error().to_string().find("h.h[blob 0]"), std::string::npos)
        << check.error().to_string();
}

// ---- build_bundle over a fake nvcc -----------------------------------------------------------

namespace {

namespace fs = std::filesystem;

struct FakeNvcc {
    fs::path dir;
    Toolkit toolkit;
    // The fake writes its argv and NVCC_APPEND_FLAGS into the -o file, so the blob shows both.
    explicit FakeNvcc(const std::string& body) {
        std::string tmpl = (fs::temp_directory_path() / "forge-bundle-XXXXXX").string();
        dir = ::mkdtemp(tmpl.data());
        fs::path nvcc = dir / "nvcc";
        std::ofstream(nvcc) << "#!/bin/sh\n" << body;
        fs::permissions(nvcc, fs::perms::owner_all);
        toolkit.version = parse_version_text("12.8.93").value();
        toolkit.nvcc = nvcc.string();
    }
    ~FakeNvcc() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
};

const char* kEchoToOutput =
    "out=''\nprev=''\nfor a in \"$@\"; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n"
    "echo \"args: $*\" > \"$out\"\necho \"append: ${NVCC_APPEND_FLAGS:-unset}\" >> "
    "\"$out\"\necho \"cwd: $(basename \"$(pwd)\")\" >> \"$out\"\n";

std::string blob_text(const BundleBlob& b) {
    return std::string(b.data.begin(), b.data.end());
}

} // namespace

TEST(BuildBundleTest, RunsEachToolkitInItsOwnDirWithoutUserNvccFlags) {
    FakeNvcc fake(kEchoToOutput);
    const fs::path src = fake.dir / "k.cu";
    std::ofstream(src) << "// kernel\n";
    ToolkitPlan plan;
    plan.groups.push_back({&fake.toolkit, {90, 120}});
    BundleOptions o;
    o.source = src.string();
    ::setenv("NVCC_APPEND_FLAGS", "-gencode arch=compute_75,code=sm_75", 1);
    std::string log;
    auto b = build_bundle(o, plan, "k", &log);
    ::unsetenv("NVCC_APPEND_FLAGS");
    ASSERT_TRUE(b.ok()) << b.error().to_string();
    ASSERT_EQ(b->blobs.size(), 1u);
    EXPECT_EQ(b->blobs[0].toolkit, "12.8.93");
    EXPECT_EQ(b->blobs[0].sms, (std::vector<int>{90, 120}));
    const std::string text = blob_text(b->blobs[0]);
    EXPECT_NE(text.find("args: -fatbin -gencode arch=compute_90,code=sm_90 -gencode "
                        "arch=compute_120,code=sm_120 "
                        "-o device.fatbin " +
                        src.string()),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("append: unset"), std::string::npos) << text;
    EXPECT_NE(text.find("cwd: blob0"), std::string::npos) << text;
    EXPECT_NE(log.find(fake.toolkit.nvcc + " -fatbin"), std::string::npos) << log;
}

TEST(BuildBundleTest, FailedCompileIsAnErrorWithCommandAndOutput) {
    FakeNvcc fake("echo 'k.cu(3): error: identifier \"oops\" is undefined'\nexit 1\n");
    const fs::path src = fake.dir / "k.cu";
    std::ofstream(src) << "oops\n";
    ToolkitPlan plan;
    plan.groups.push_back({&fake.toolkit, {90}});
    BundleOptions o;
    o.source = src.string();
    auto b = build_bundle(o, plan, "k");
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.error().exit_code, kExitInput);
    const std::string msg = b.error().to_string();
    EXPECT_NE(msg.find("CUDA 12.8.93"), std::string::npos) << msg;
    EXPECT_NE(msg.find("identifier \"oops\""), std::string::npos) << msg;
    EXPECT_NE(msg.find("arch=compute_90,code=sm_90"), std::string::npos) << msg;
}

TEST(BuildBundleTest, MissingSourceIsAnError) {
    FakeNvcc fake(kEchoToOutput);
    ToolkitPlan plan;
    plan.groups.push_back({&fake.toolkit, {90}});
    BundleOptions o;
    o.source = (fake.dir / "absent.cu").string();
    auto b = build_bundle(o, plan, "k");
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.error().file, o.source);
}
