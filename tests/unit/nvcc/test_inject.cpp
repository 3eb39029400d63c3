// inject(): what is appended, what is never touched, -dlto restatement, device links, clamp.
// tests/integration/nvcc runs the rewritten argv through the real `nvcc -dryrun`.
#include "caps_fixture.h"

#include <gtest/gtest.h>

namespace forge::nvcc {
namespace {

using testing::caps13;
using testing::names;
using testing::T;

Invocation parsed(std::vector<std::string> argv, const std::string& pre = "",
                  const std::string& app = "") {
    auto inv = parse_invocation(argv, pre, app, "", caps13());
    EXPECT_TRUE(inv.ok()) << inv.error().to_string();
    return inv ? *inv : Invocation{};
}

std::vector<arch::Target> targets(std::initializer_list<std::string_view> ns) {
    std::vector<arch::Target> out;
    for (auto n : ns)
        out.push_back(T(n));
    return out;
}

using Argv = std::vector<std::string>;

TEST(Inject, AppendsGencodesAtTheEnd) {
    auto inv = parsed({"-c", "k.cu", "-o", "k.o", "-arch=sm_80"});
    auto rw = inject(inv, targets({"sm_90", "compute_90", "sm_120"}), false, caps13());
    EXPECT_EQ(rw.argv,
              (Argv{"-c", "k.cu", "-o", "k.o", "-arch=sm_80", "-gencode",
                    "arch=compute_90,code=sm_90", "-gencode", "arch=compute_120,code=sm_120",
                    "-gencode", "arch=compute_90,code=compute_90"}));
    EXPECT_EQ(rw.injected, targets({"sm_90", "sm_120", "compute_90"}));
    EXPECT_TRUE(rw.clamped.empty());
    for (const auto& a : rw.argv)
        EXPECT_FALSE(a.starts_with("-arch=sm_9")) << a; // never -arch
}

TEST(Inject, ADanglingOptionKeepsItsValue) {
    // `-Xcompiler` last in argv takes its value from NVCC_APPEND_FLAGS; the gencodes go before it.
    auto inv = parsed({"-c", "k.cu", "-arch=sm_80", "-Xcompiler"}, "", "-fPIC");
    auto rw = inject(inv, targets({"sm_90"}), false, caps13());
    EXPECT_EQ(rw.argv, (Argv{"-c", "k.cu", "-arch=sm_80", "-gencode", "arch=compute_90,code=sm_90",
                             "-Xcompiler"}));
    // A value-taking option with its value in argv is not dangling.
    auto o = inject(parsed({"-c", "k.cu", "-o", "k.o"}), targets({"sm_90"}), false, caps13());
    EXPECT_EQ(Argv(o.argv.begin(), o.argv.begin() + 4), (Argv{"-c", "k.cu", "-o", "k.o"}));
}

TEST(Inject, NeverDuplicatesAnImage) {
    auto inv = parsed({"-c", "k.cu", "-arch=sm_80", "-gencode", "arch=compute_86,code=sm_86"});
    auto rw = inject(inv, targets({"sm_80", "compute_80", "sm_86", "sm_89"}), false, caps13());
    EXPECT_EQ(rw.injected, targets({"sm_89"}));
    EXPECT_EQ(rw.argv.size(), inv.argv.size() + 2);
    // Nothing missing: argv untouched.
    auto same = inject(inv, targets({"sm_80"}), false, caps13());
    EXPECT_EQ(same.argv, inv.argv);
    EXPECT_TRUE(same.injected.empty());
}

TEST(Inject, NeverInjectsWhatNvccCannotEmit) {
    auto inv = parsed({"-c", "k.cu", "-arch=sm_80"});
    auto rw = inject(inv, targets({"sm_101", "sm_70", "sm_90"}), false, caps13());
    EXPECT_EQ(rw.injected, targets({"sm_90"}));
    EXPECT_EQ(rw.argv.size(), inv.argv.size() + 2);
    ASSERT_EQ(rw.notes.size(), 2u);
    EXPECT_NE(rw.notes[0].find("sm_101"), std::string::npos);
    EXPECT_NE(rw.notes[1].find("sm_70"), std::string::npos);
}

TEST(Inject, ArchSpecificAndFamilyTargetsAreExplicit) {
    auto inv = parsed({"-c", "k.cu", "-arch=sm_80"});
    auto rw = inject(inv, targets({"sm_90a", "sm_100f", "compute_120f"}), false, caps13());
    EXPECT_EQ(Argv(rw.argv.begin() + 3, rw.argv.end()),
              (Argv{"-gencode", "arch=compute_90a,code=sm_90a", "-gencode",
                    "arch=compute_100f,code=sm_100f", "-gencode",
                    "arch=compute_120f,code=compute_120f"}));
}

TEST(Inject, DefaultTargetIsKeptWhenTheUserReliedOnIt) {
    // Any explicit target turns nvcc's default off, so the default is stated explicitly.
    auto inv = parsed({"-c", "k.cu"});
    auto rw = inject(inv, targets({"sm_90"}), false, caps13());
    EXPECT_EQ(rw.argv,
              (Argv{"-c", "k.cu", "-gencode", "arch=compute_75,code=sm_75", "-gencode",
                    "arch=compute_75,code=compute_75", "-gencode", "arch=compute_90,code=sm_90"}));
    EXPECT_EQ(rw.injected, targets({"sm_90"}));
    EXPECT_FALSE(rw.notes.empty());
}

TEST(Inject, NeverWhereNvccAllowsOneTargetOrNoDeviceCode) {
    for (Argv argv : {Argv{"-ptx", "k.cu", "-arch=sm_80"}, Argv{"-cubin", "k.cu", "-arch=sm_80"},
                      Argv{"-optix-ir", "k.cu"}, Argv{"-ltoir", "-dlto", "k.cu"}, Argv{"--version"},
                      Argv{"-E", "k.cu"}, Argv{"-M", "k.cu"}, Argv{"-c", "h.cpp"},
                      Argv{"-v", "CMakeCUDACompilerId.cu"}, Argv{"--list-gpu-arch"}}) {
        auto inv = parsed(argv);
        auto rw = inject(inv, targets({"sm_90", "compute_90"}), true, caps13());
        EXPECT_EQ(rw.argv, argv) << argv[0];
        EXPECT_TRUE(rw.injected.empty()) << argv[0];
    }
}

TEST(Inject, DeviceLinkGetsSassOnly) {
    auto inv = parsed({"-dlink", "a.o", "-o", "d.o", "-arch=sm_80"});
    auto rw = inject(inv, targets({"sm_90", "compute_90"}), false, caps13());
    EXPECT_EQ(rw.argv, (Argv{"-dlink", "a.o", "-o", "d.o", "-arch=sm_80", "-gencode",
                             "arch=compute_90,code=sm_90"}));
    EXPECT_EQ(rw.injected, targets({"sm_90"}));
    // A default dlink (sm_75) keeps sm_75 when sm_90 is added.
    auto def = inject(parsed({"a.o", "-o", "app"}), targets({"sm_90"}), false, caps13());
    EXPECT_EQ(def.argv, (Argv{"a.o", "-o", "app", "-gencode", "arch=compute_75,code=sm_75",
                              "-gencode", "arch=compute_90,code=sm_90"}));
}

TEST(Inject, DltoCompileIsRestatedAsGencodes) {
    // -dlto conflicts with -gencode, so -dlto/-arch become code=[compute_X,lto_X] gencodes.
    auto inv = parsed({"-dc", "-dlto", "k.cu", "-o", "k.o", "-arch=sm_80"});
    auto rw = inject(inv, targets({"sm_90", "sm_80"}), false, caps13());
    EXPECT_EQ(rw.argv, (Argv{"-dc", "k.cu", "-o", "k.o", "-gencode",
                             "arch=compute_80,code=[compute_80,lto_80]", "-gencode",
                             "arch=compute_90,code=[compute_90,lto_90]"}));
    EXPECT_EQ(rw.injected, targets({"compute_90", "lto_90"}));
    // Separate-argument -arch and the default.
    auto sep = inject(parsed({"-dc", "--dlink-time-opt", "k.cu", "-arch", "sm_90a"}),
                      targets({"sm_100"}), false, caps13());
    EXPECT_EQ(sep.argv, (Argv{"-dc", "k.cu", "-gencode", "arch=compute_90,code=[compute_90,lto_90]",
                              "-gencode", "arch=compute_90a,code=[compute_90a,lto_90a]", "-gencode",
                              "arch=compute_100,code=[compute_100,lto_100]"}));
    auto def = inject(parsed({"-dc", "-dlto", "k.cu"}), targets({"compute_90"}), false, caps13());
    EXPECT_EQ(def.argv, (Argv{"-dc", "k.cu", "-gencode", "arch=compute_75,code=[compute_75,lto_75]",
                              "-gencode", "arch=compute_90,code=compute_90"}));
    // -dlto from the environment cannot be rewritten: nothing is injected, and it says why.
    auto env = parsed({"-dc", "k.cu", "-arch=sm_80"}, "", "-dlto");
    auto no = inject(env, targets({"sm_90"}), false, caps13());
    EXPECT_EQ(no.argv, env.argv);
    EXPECT_TRUE(no.injected.empty());
    ASSERT_FALSE(no.notes.empty());
    EXPECT_NE(no.notes.back().find("NVCC_APPEND_FLAGS"), std::string::npos);
    // A -dlto compile that also links in the same call: rewriting -dlto would change the link, so
    // nothing is injected.
    for (Argv argv : {Argv{"-dlto", "k.cu", "-o", "app", "-arch=sm_80"},
                      Argv{"-dlink", "-dlto", "k.cu", "-o", "d.o"}}) {
        auto inv = parsed(argv);
        auto rw = inject(inv, targets({"sm_90"}), false, caps13());
        EXPECT_EQ(rw.argv, argv);
        EXPECT_TRUE(rw.injected.empty());
        EXPECT_FALSE(rw.notes.empty());
    }
    // At device link -dlto and -gencode go together: plain append.
    auto dl = inject(parsed({"-dlink", "-dlto", "a.o", "-arch=sm_80", "-o", "d.o"}),
                     targets({"sm_90"}), false, caps13());
    EXPECT_EQ(dl.argv.back(), "arch=compute_90,code=sm_90");
    EXPECT_EQ(dl.argv[1], "-dlto");
}

TEST(Clamp, RemovesOnlyTargetsNvccCannotEmit) {
    // pointnet2_ops-style list on CUDA 13: compute_37 is fatal to nvcc.
    auto inv = parsed({"-c", "k.cu", "-DX=1", "-gencode", "arch=compute_37,code=sm_37", "-O2",
                       "-gencode=arch=compute_80,code=sm_80", "-gencode",
                       "arch=compute_37,code=compute_37"});
    auto rw = inject(inv, targets({"sm_90"}), true, caps13());
    EXPECT_EQ(rw.argv, (Argv{"-c", "k.cu", "-DX=1", "-O2", "-gencode=arch=compute_80,code=sm_80",
                             "-gencode", "arch=compute_90,code=sm_90"}));
    EXPECT_EQ(rw.clamped, (std::vector<std::string>{"-gencode arch=compute_37,code=sm_37",
                                                    "-gencode arch=compute_37,code=compute_37"}));
    EXPECT_EQ(names({rw.clamped_targets.begin(), rw.clamped_targets.end()}), "sm_37 compute_37");
    EXPECT_EQ(rw.injected, targets({"sm_90"}));
    // Without clamp the user's tokens stay (observe).
    auto keep = inject(inv, targets({"sm_90"}), false, caps13());
    EXPECT_EQ(Argv(keep.argv.begin(), keep.argv.begin() + inv.argv.size()), inv.argv);
    EXPECT_TRUE(keep.clamped.empty());
}

TEST(Clamp, RewritesAMixedCodeList) {
    auto inv = parsed({"-c", "k.cu", "-gencode", "arch=compute_80,code=[sm_80,sm_101,compute_80]",
                       "-gencode=arch=compute_100,code=[sm_100,sm_101a]"});
    auto rw = inject(inv, {}, true, caps13());
    EXPECT_EQ(rw.argv, (Argv{"-c", "k.cu", "-gencode", "arch=compute_80,code=[sm_80,compute_80]",
                             "-gencode=arch=compute_100,code=sm_100"}));
    EXPECT_EQ(names({rw.clamped_targets.begin(), rw.clamped_targets.end()}), "sm_101 sm_101a");
    EXPECT_EQ(rw.clamped.size(), 2u);
    // -code lists too; an unemittable -arch takes its -code tokens with it.
    auto code = inject(parsed({"-c", "k.cu", "-arch=compute_80", "-code=sm_80,sm_101"}), {}, true,
                       caps13());
    EXPECT_EQ(code.argv, (Argv{"-c", "k.cu", "-arch=compute_80", "-code=sm_80"}));
    auto arch = inject(parsed({"-c", "k.cu", "-arch", "compute_50", "-code", "sm_50,sm_52",
                               "-gencode", "arch=compute_80,code=sm_80"}),
                       {}, true, caps13());
    EXPECT_EQ(arch.argv, (Argv{"-c", "k.cu", "-gencode", "arch=compute_80,code=sm_80"}));
    EXPECT_EQ(arch.clamped, (std::vector<std::string>{"-arch compute_50", "-code sm_50,sm_52"}));
    auto shorthand =
        inject(parsed({"-c", "k.cu", "-arch=sm_37"}), targets({"sm_80"}), true, caps13());
    EXPECT_EQ(shorthand.argv, (Argv{"-c", "k.cu", "-gencode", "arch=compute_80,code=sm_80"}));
}

TEST(Clamp, EverythingClampedLeavesOnlyThePolicyTargets) {
    auto inv = parsed({"-c", "k.cu", "-gencode", "arch=compute_50,code=[sm_50,compute_50]"});
    auto rw = inject(inv, targets({"sm_80", "compute_80"}), true, caps13());
    // No default sm_75 slips in: the policy's targets replace the clamped ones.
    EXPECT_EQ(rw.argv, (Argv{"-c", "k.cu", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
                             "arch=compute_80,code=compute_80"}));
    EXPECT_EQ(rw.injected, targets({"sm_80", "compute_80"}));
}

TEST(Clamp, TokensOutsideArgvAreReportedNotTouched) {
    auto inv = parsed({"-c", "k.cu"}, "", "-gencode arch=compute_37,code=sm_37");
    auto rw = inject(inv, targets({"sm_80"}), true, caps13());
    EXPECT_TRUE(rw.clamped.empty());
    ASSERT_FALSE(rw.notes.empty());
    EXPECT_NE(rw.notes.front().find("NVCC_APPEND_FLAGS"), std::string::npos);
}

} // namespace
} // namespace forge::nvcc
