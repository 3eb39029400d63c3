// Random command lines from a pool of real tokens: parse_invocation() and inject() never crash,
// and whatever inject() writes re-parses to a superset of what was asked plus what it added.
#include "caps_fixture.h"

#include "../seed.h"

#include <gtest/gtest.h>
#include <random>

namespace forge::nvcc {
namespace {

TEST(Properties, RandomCommandLines) {
    const std::vector<std::string> pool = {"-c",
                                           "-dc",
                                           "-dlink",
                                           "-ptx",
                                           "-cubin",
                                           "-fatbin",
                                           "-E",
                                           "-M",
                                           "-MD",
                                           "-o",
                                           "k.o",
                                           "k.cu",
                                           "h.cpp",
                                           "a.o",
                                           "-arch=sm_80",
                                           "-arch",
                                           "sm_90a",
                                           "compute_80",
                                           "-arch=all",
                                           "-arch=native",
                                           "-arch=compute_90",
                                           "-code=sm_90",
                                           "-code",
                                           "sm_80,compute_80",
                                           "-gencode",
                                           "arch=compute_80,code=sm_80",
                                           "arch=compute_100f,code=[sm_103,compute_100f]",
                                           "-gencode=arch=compute_37,code=sm_37",
                                           "--generate-code=arch=compute_120,code=[sm_120]",
                                           "-dlto",
                                           "-rdc=true",
                                           "-x",
                                           "cu",
                                           "-Xptxas",
                                           "-Xcompiler",
                                           "-fPIC",
                                           "-DX=1",
                                           "-I",
                                           "inc",
                                           "-lineinfo",
                                           "-t",
                                           "4",
                                           "--version",
                                           "-dryrun",
                                           "-optf",
                                           "-lcudart",
                                           "-O3"};
    const std::vector<arch::Target> want = {testing::T("sm_80"),      testing::T("sm_90"),
                                            testing::T("compute_90"), testing::T("sm_90a"),
                                            testing::T("sm_120"),     testing::T("compute_120")};
    const auto caps = testing::caps13();
    std::mt19937 rng(forge::test::test_seed(12345));
    int parsed = 0, injected = 0;
    for (int round = 0; round < 4000; ++round) {
        std::vector<std::string> argv;
        const int n = static_cast<int>(rng() % 9);
        for (int i = 0; i < n; ++i)
            argv.push_back(pool[rng() % pool.size()]);
        auto inv = parse_invocation(argv, "", "", "/nonexistent", caps);
        if (!inv) continue;
        ++parsed;
        std::vector<arch::Target> missing;
        for (const auto& t : want)
            if (rng() % 2) missing.push_back(t);
        const bool clamp = rng() % 2;
        Rewrite rw = inject(*inv, missing, clamp, caps);
        if (rw.injected.empty() && rw.clamped.empty()) {
            EXPECT_EQ(rw.argv, argv);
            continue;
        }
        ++injected;
        auto again = parse_invocation(rw.argv, "", "", "/nonexistent", caps);
        std::string line;
        for (const auto& a : argv)
            line += a + " ";
        line += " => ";
        for (const auto& a : rw.argv)
            line += a + " ";
        line += " requested-after: ";
        if (again) line += testing::names(again->requested);
        line += " missing: ";
        line += testing::names({missing.begin(), missing.end()});
        ASSERT_TRUE(again.ok()) << line << " -> " << again.error().to_string();
        for (const auto& t : rw.injected)
            EXPECT_TRUE(again->requested.contains(t)) << line << t.name();
        if (!clamp)
            for (const auto& t : inv->requested)
                EXPECT_TRUE(again->requested.contains(t)) << line << t.name();
    }
    EXPECT_GT(parsed, 1000);
    EXPECT_GT(injected, 200);
}

} // namespace
} // namespace forge::nvcc
