// The nvcc steps of a bundle and building it with each toolkit (bundle/build.cpp).
#include "bundle/build.h"
#include "toolkit/probe.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace forge;
using namespace forge::bundle;
using forge::toolkit::parse_version_text;
using forge::toolkit::Toolkit;

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
