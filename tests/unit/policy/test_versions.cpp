#include "policy/versions.h"

#include "core/version.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/utsname.h>

using namespace forge::policy;

TEST(Versions, CudaSpellingsFoldToMajorMinor) {
    EXPECT_EQ(*normalize_cuda("12.8"), "12.8");
    EXPECT_EQ(*normalize_cuda("12.8.1"), "12.8");
    EXPECT_EQ(*normalize_cuda("12.8.93"), "12.8");
    EXPECT_EQ(*normalize_cuda("cu128"), "12.8");
    EXPECT_EQ(*normalize_cuda("cu130"), "13.0");
    EXPECT_EQ(*normalize_cuda("13"), "13.0");
    for (const char* bad : {"", "twelve", "12.x", "cu12", "-1", "12..8a"}) {
        auto r = normalize_cuda(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_EQ(r.error().key, bad);
        EXPECT_EQ(r.error().exit_code, forge::kExitInput);
    }
}

// Issue 40: the dotted spellings are read by core/version.h's parse_cuda_version, the one parser
// of "X.Y"/"X.Y.Z". normalize_cuda's own reader folded an empty or fourth part away ("12." and
// "12..3" were 12.0, "12.8.93.1" 12.8) and stopped at a part of five digits ("12.12345" was 12.0).
TEST(Versions, CudaDottedSpellingsAreTheOneParsers) {
    for (const char* bad : {"12.", "12..3", "12.8.", "12.8.93.1", ".8", "0.9", "12.8+"}) {
        auto r = normalize_cuda(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_EQ(r.error().key, bad);
        EXPECT_EQ(r.error().message,
                  fmt::format("bad CUDA version '{}': expected a CUDA version like 12.8, 12.8.1 "
                              "or cu128",
                              bad));
    }
    EXPECT_EQ(*normalize_cuda("12.12345"), "12.12345");
    EXPECT_EQ(*normalize_cuda("012.08"), "12.8");
    for (const char* same : {"12.8", "12.8.1", "13.0", "9.2.148"}) {
        auto one = forge::parse_cuda_version(same);
        ASSERT_TRUE(one.ok()) << same;
        EXPECT_EQ(*normalize_cuda(same), fmt::format("{}.{}", one->major, one->minor)) << same;
    }
}

TEST(Versions, TorchVersionBecomesMinor) {
    EXPECT_EQ(*normalize_torch("2.9"), "2.9");
    EXPECT_EQ(*normalize_torch("2.9.1"), "2.9");
    EXPECT_EQ(*normalize_torch("2.9.1+cu128"), "2.9");
    EXPECT_EQ(*normalize_torch("2.10.0a0+git1234"), "2.10");
    EXPECT_FALSE(normalize_torch("2").ok());
    EXPECT_FALSE(normalize_torch("latest").ok());
}

TEST(Versions, PythonAndPlatform) {
    EXPECT_EQ(*normalize_python("3.12"), "3.12");
    EXPECT_EQ(*normalize_python("3.12.4"), "3.12");
    EXPECT_EQ(*normalize_python("cp312"), "3.12");
    EXPECT_FALSE(normalize_python("3").ok());
    EXPECT_EQ(*normalize_platform("linux_aarch64"), "linux_aarch64");
    EXPECT_EQ(*normalize_platform("manylinux_2_28_x86_64"), "linux_x86_64");
    EXPECT_EQ(*normalize_platform("manylinux2014_aarch64"), "linux_aarch64");
    EXPECT_EQ(*normalize_platform("win_amd64"), "win_amd64");
    auto bad = normalize_platform("linux_arm64");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("linux_aarch64"), std::string::npos);
}

TEST(Versions, TheDefaultPlatformIsTheBuildHosts) {
    // The binary's own machine, as the kernel names it (under qemu-aarch64: aarch64).
    struct utsname u {};
    ASSERT_EQ(::uname(&u), 0);
    const std::string machine = u.machine;
    const std::string want =
        machine == "aarch64" || machine == "arm64" ? "linux_aarch64" : "linux_x86_64";
    EXPECT_EQ(host_platform(), want);
    EXPECT_TRUE(normalize_platform(host_platform()).ok());
}

TEST(Versions, NumericOrder) {
    EXPECT_TRUE(version_less("12.9", "12.10"));
    EXPECT_TRUE(version_less("12.8", "13.0"));
    EXPECT_FALSE(version_less("13.0", "12.9"));
    EXPECT_TRUE(version_less("2.9", "2.11"));
}
