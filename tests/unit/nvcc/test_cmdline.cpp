// parse_invocation(): targets, phases, passthrough reasons, option-argument traps, options files
// and NVCC_*_FLAGS. Expected values are nvcc 13.0.88 `-dryrun` observations; the integration
// test (tests/integration/nvcc) checks the same table against the real nvcc.
// inject(): what is appended, what is never touched, -dlto restatement, device links, clamp.
// tests/integration/nvcc runs the rewritten argv through the real `nvcc -dryrun`.
#include "caps_fixture.h"
#include "nvcc/options.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>

namespace forge::nvcc {
namespace {

using testing::caps13;
using testing::names;
using testing::Ts;

Result<Invocation> parse(std::vector<std::string> argv, const std::string& pre = "",
                         const std::string& app = "", const std::string& cwd = "",
                         const toolkit::ToolkitCaps& caps = caps13()) {
    return parse_invocation(argv, pre, app, cwd, caps);
}

std::string requested(std::vector<std::string> argv, const std::string& pre = "",
                      const std::string& app = "") {
    auto inv = parse(std::move(argv), pre, app);
    if (!inv) return "ERROR: " + inv.error().to_string();
    return names(inv->requested);
}

TEST(Caps, FromNvcc13Output) {
    auto caps = caps13();
    EXPECT_EQ(caps.version.major, 13);
    EXPECT_EQ(caps.version.minor, 0);
    EXPECT_EQ(caps.default_sm, 75);
    EXPECT_TRUE(caps.emittable.contains(testing::T("sm_90a")));
    EXPECT_TRUE(caps.emittable.contains(testing::T("compute_100f")));
    EXPECT_TRUE(caps.emittable.contains(testing::T("lto_121f")));
    EXPECT_TRUE(caps.emittable.contains(testing::T("sm_110")));
    EXPECT_FALSE(caps.emittable.contains(testing::T("sm_72")));
    EXPECT_FALSE(caps.emittable.contains(testing::T("sm_101"))); // renamed sm_110 in 13.0
    // 12 plain CCs, a for 90..121 (6), f for 100..121 (5), each as sm_, compute_ and lto_.
    EXPECT_EQ(caps.emittable.size(), (12u + 6u + 5u) * 3);
    EXPECT_EQ(toolkit::default_sm_for(12), 52);
    EXPECT_EQ(toolkit::default_sm_for(11), 52);
}

TEST(Targets, DefaultWhenNoTargetFlag) {
    auto inv = parse({"-c", "k.cu", "-o", "k.o"});
    ASSERT_TRUE(inv.ok());
    EXPECT_FALSE(inv->targets_explicit);
    EXPECT_EQ(names(inv->requested), "sm_75 compute_75");
    EXPECT_EQ(inv->phase, Phase::Compile);
    EXPECT_EQ(inv->no_device, NoDeviceReason::None);
    EXPECT_EQ(inv->output, "k.o");
    EXPECT_EQ(inv->sources, std::vector<std::string>{"k.cu"});
    // CUDA 12's default is sm_52: the model follows the caps, not a constant.
    auto caps12 = caps13();
    caps12.version.major = 12;
    caps12.default_sm = toolkit::default_sm_for(12);
    auto old = parse({"-c", "k.cu"}, "", "", "", caps12);
    ASSERT_TRUE(old.ok());
    EXPECT_EQ(names(old->requested), "sm_52 compute_52");
}

TEST(Targets, ArchShorthands) {
    EXPECT_EQ(requested({"-c", "k.cu", "-arch=sm_80"}), "sm_80 compute_80");
    EXPECT_EQ(requested({"-c", "k.cu", "-arch", "sm_80"}), "sm_80 compute_80");
    EXPECT_EQ(requested({"-c", "k.cu", "--gpu-architecture=sm_80"}), "sm_80 compute_80");
    EXPECT_EQ(requested({"-c", "k.cu", "--gpu-architecture", "sm_80"}), "sm_80 compute_80");
    EXPECT_EQ(requested({"-c", "k.cu", "-arch=compute_80"}), "compute_80");
    EXPECT_EQ(requested({"-c", "k.cu", "-arch=sm_90a"}), "sm_90a compute_90 compute_90a");
    EXPECT_EQ(requested({"-c", "k.cu", "-arch=compute_90a"}), "compute_90 compute_90a");
    EXPECT_EQ(requested({"-c", "k.cu", "-arch=sm_100f"}), "sm_100f compute_100 compute_100f");
    EXPECT_EQ(requested({"-dc", "k.cu", "-arch=lto_80"}), "lto_80");
    EXPECT_EQ(requested({"-dc", "k.cu", "-arch=lto_90a"}), "lto_90 lto_90a");
    EXPECT_EQ(requested({"-c", "k.cu", "-arch=all"}),
              "sm_75 sm_80 sm_86 sm_87 sm_88 sm_89 sm_90 sm_100 sm_103 sm_110 sm_120 sm_121 "
              "compute_120");
    EXPECT_EQ(requested({"-c", "k.cu", "-arch=all-major"}),
              "sm_75 sm_80 sm_90 sm_100 sm_110 sm_120 compute_120");
}

TEST(Targets, Native) {
    auto inv = parse({"-c", "k.cu", "-arch=native"});
    ASSERT_TRUE(inv.ok());
    EXPECT_TRUE(inv->uses_native);
    EXPECT_EQ(names(inv->requested), "sm_75 compute_75"); // no GPU: nvcc's default
    ASSERT_EQ(inv->warnings.size(), 1u);
    EXPECT_NE(inv->warnings[0].find("native"), std::string::npos);
    auto caps = caps13();
    caps.native_sm = 90;
    auto h200 = parse({"-c", "k.cu", "-arch=native"}, "", "", "", caps);
    ASSERT_TRUE(h200.ok());
    EXPECT_EQ(names(h200->requested), "sm_90"); // SASS only, no PTX
    EXPECT_FALSE(parse({"-c", "k.cu"})->uses_native);
}

TEST(Targets, GencodeSpellings) {
    const std::string want = "sm_80 compute_80";
    for (std::vector<std::string> argv : {
             std::vector<std::string>{"-gencode", "arch=compute_80,code=[sm_80,compute_80]"},
             {"-gencode=arch=compute_80,code=[sm_80,compute_80]"},
             {"--generate-code", "arch=compute_80,code=[sm_80,compute_80]"},
             {"--generate-code=arch=compute_80,code=[sm_80,compute_80]"},
             {"-gencode", "arch=compute_80,code=\"sm_80,compute_80\""},
             {"-gencode=arch=compute_80,code=\"sm_80,compute_80\""},
             {"-gencode", "code=[sm_80,compute_80],arch=compute_80"},
             {"-gencode", "arch=compute_80, code=[sm_80,compute_80]"},
             {"-gencode", "arch=compute_80,code=sm_80", "-gencode",
              "arch=compute_80,code=compute_80"},
             {"-gencode", "arch=compute_80,code=[sm_80]",
              "-gencode=arch=compute_80,code=[compute_80]"},
             {"-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_80,code=sm_80",
              "--generate-code=arch=compute_80,code=compute_80"},
         }) {
        argv.insert(argv.begin(), {"-c", "k.cu"});
        EXPECT_EQ(requested(argv), want) << argv[2];
    }
    EXPECT_EQ(requested({"-c", "k.cu", "-gencode", "arch=compute_80,code=[sm_80,sm_86,sm_89]"}),
              "sm_80 sm_86 sm_89");
    EXPECT_EQ(requested({"-c", "k.cu", "-gencode", "arch=compute_90a,code=sm_90a"}), "sm_90a");
    EXPECT_EQ(requested({"-c", "k.cu", "-gencode", "arch=compute_90,code=sm_90a"}), "sm_90a");
    // A family arch rewrites a plain code into the family image [obs: elf sm=103f].
    EXPECT_EQ(requested({"-c", "k.cu", "-gencode", "arch=compute_100f,code=sm_103"}), "sm_103f");
    EXPECT_EQ(requested({"-c", "k.cu", "-gencode", "arch=compute_100f,code=sm_103a"}), "sm_103a");
    EXPECT_EQ(requested({"-c", "k.cu", "-gencode", "arch=compute_100,code=sm_100f"}), "sm_100f");
    EXPECT_EQ(requested({"-c", "k.cu", "-gencode", "arch=compute_120f,code=sm_121f"}), "sm_121f");
    EXPECT_EQ(requested({"-dc", "k.cu", "-gencode", "arch=compute_90,code=[compute_90,lto_90]"}),
              "compute_90 lto_90");
}

TEST(Targets, CodeListsAndMixing) {
    EXPECT_EQ(requested({"-c", "k.cu", "-arch=compute_80", "-code=sm_80,sm_86"}), "sm_80 sm_86");
    EXPECT_EQ(requested({"-c", "k.cu", "-arch=compute_80", "-code=sm_80,compute_80"}),
              "sm_80 compute_80");
    EXPECT_EQ(
        requested({"-c", "k.cu", "-arch", "compute_80", "-code", "sm_80", "--gpu-code=sm_86"}),
        "sm_80 sm_86"); // -code accumulates
    EXPECT_EQ(requested({"-c", "k.cu", "-arch=compute_90a", "-code=sm_90a"}), "sm_90a");
    // An lto_ arch stands for its virtual arch with -code and in -gencode [obs].
    EXPECT_EQ(requested({"-c", "k.cu", "-arch=lto_90", "-code=sm_90"}), "sm_90");
    EXPECT_EQ(requested({"-dc", "k.cu", "-arch=lto_90", "-code=sm_90,lto_90"}), "sm_90 lto_90");
    EXPECT_EQ(requested({"-c", "k.cu", "-gencode", "arch=lto_90,code=sm_90"}), "sm_90");
    EXPECT_EQ(requested({"-c", "k.cu", "-arch=compute_100f", "-code=sm_103"}), "sm_103f");
    // -arch is last-wins, -gencode accumulates, mixing is additive.
    EXPECT_EQ(requested({"-c", "k.cu", "-arch=sm_80", "-arch=sm_86"}), "sm_86 compute_86");
    EXPECT_EQ(requested({"-c", "k.cu", "-arch=sm_80", "-gencode", "arch=compute_90,code=sm_90"}),
              "sm_80 sm_90 compute_80");
    auto mix = parse({"-c", "k.cu", "-arch=all", "-gencode", "arch=compute_90a,code=sm_90a"});
    ASSERT_TRUE(mix.ok());
    EXPECT_TRUE(mix->requested.contains(testing::T("sm_90a")));
    EXPECT_TRUE(mix->requested.contains(testing::T("sm_121")));
    EXPECT_TRUE(mix->has_a_target);
    EXPECT_FALSE(mix->arch_specific); // -arch=all's plain targets: the source is generic
}

// A TU is arch-specific only when every target it asks for is `a` (docs/arch-rules.md, "Which
// TUs get targets added").
TEST(Targets, ArchSpecificOnlyWhenEveryTargetIsA) {
    auto a = parse({"-c", "k.cu", "-gencode", "arch=compute_90a,code=sm_90a"});
    ASSERT_TRUE(a.ok());
    EXPECT_TRUE(a->arch_specific);
    EXPECT_TRUE(a->has_a_target);
    EXPECT_FALSE(a->has_f_target);
    // SageAttention's Hopper module: several `a` cubins, an `a` PTX, still only `a`.
    EXPECT_TRUE(parse({"-c", "k.cu", "-gencode", "arch=compute_90a,code=sm_90a", "-gencode",
                       "arch=compute_100a,code=[sm_100a,compute_100a]"})
                    ->arch_specific);
    EXPECT_TRUE(parse({"-c", "k.cu", "-gencode", "arch=compute_90,code=sm_90a"})->arch_specific);
    EXPECT_TRUE(parse({"-c", "k.cu", "-arch=compute_90a", "-code=sm_90a"})->arch_specific);
    // An `a` device link of `a` objects.
    EXPECT_TRUE(parse({"-dlink", "a.o", "-o", "l.o", "-gencode", "arch=compute_90a,code=sm_90a"})
                    ->arch_specific);
}

TEST(Targets, FamilyAndPlainTargetsAreGeneric) {
    // flash-attention's ladder on CUDA 13.0: plain, f cubins from a plain code, newest-CC PTX.
    auto fa =
        parse({"-c", "k.cu", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
               "arch=compute_90,code=sm_90", "-gencode", "arch=compute_100f,code=sm_100",
               "-gencode", "arch=compute_120f,code=sm_120", "-gencode",
               "arch=compute_110f,code=sm_110", "-gencode", "arch=compute_120,code=compute_120"});
    ASSERT_TRUE(fa.ok());
    EXPECT_FALSE(fa->arch_specific);
    EXPECT_TRUE(fa->has_f_target);
    EXPECT_FALSE(fa->has_a_target);
    EXPECT_EQ(requested({"-c", "k.cu", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
                         "arch=compute_100f,code=sm_100", "-gencode",
                         "arch=compute_120,code=compute_120"}),
              "sm_80 sm_100f compute_120");
    // f targets alone: an f cubin runs on a whole family, its source is not pinned to one CC.
    EXPECT_FALSE(
        parse({"-c", "k.cu", "-gencode", "arch=compute_100f,code=sm_100f"})->arch_specific);
    EXPECT_FALSE(parse({"-c", "k.cu", "-gencode", "arch=compute_120f,code=sm_120"})->arch_specific);
    // `a` beside a plain target: the plain pass compiles the same source generically.
    EXPECT_FALSE(parse({"-c", "k.cu", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
                        "arch=compute_90a,code=sm_90a"})
                     ->arch_specific);
    // `-arch=sm_90a` runs a plain compute_90 pass and embeds its PTX [dryrun].
    auto shorthand = parse({"-c", "k.cu", "-arch=sm_90a"});
    ASSERT_TRUE(shorthand.ok());
    EXPECT_TRUE(shorthand->has_a_target);
    EXPECT_TRUE(shorthand->requested.contains(testing::T("compute_90")));
    EXPECT_FALSE(shorthand->arch_specific);
    EXPECT_FALSE(parse({"-c", "k.cu", "-arch=sm_90"})->arch_specific);
    EXPECT_FALSE(parse({"-c", "k.cu", "-arch=all"})->arch_specific);
    EXPECT_FALSE(parse({"-c", "k.cu"})->arch_specific); // nvcc's default: sm_75 + compute_75
}

TEST(Targets, Dlto) {
    auto inv = parse({"-dc", "-dlto", "k.cu", "-arch=sm_80"});
    ASSERT_TRUE(inv.ok());
    EXPECT_TRUE(inv->dlto);
    EXPECT_TRUE(inv->rdc);
    EXPECT_EQ(names(inv->requested), "compute_80 lto_80");
    EXPECT_EQ(requested({"-dc", "--lto", "k.cu", "-arch=sm_80"}), "compute_80 lto_80");
    EXPECT_EQ(requested({"-dc", "--dlink-time-opt", "k.cu", "-arch=compute_80"}),
              "compute_80 lto_80");
    EXPECT_EQ(requested({"-dc", "-dlto", "k.cu", "-arch=sm_90a"}),
              "compute_90 compute_90a lto_90 lto_90a");
    EXPECT_EQ(requested({"-dc", "-dlto", "k.cu"}), "compute_75 lto_75");
    EXPECT_EQ(requested({"-c", "-dlto", "k.cu", "-arch=sm_80"}), "compute_80 lto_80");
    // Compile and link in one call: the link makes SASS from the LTO-IR [obs].
    EXPECT_EQ(requested({"-dlto", "k.cu", "-o", "app", "-arch=sm_80"}), "sm_80 compute_80 lto_80");
    EXPECT_EQ(requested({"-dlto", "k.cu", "-o", "app"}), "sm_75 compute_75 lto_75");
    // -dlto with -gencode/-code at compile is fatal in nvcc.
    EXPECT_FALSE(parse({"-dc", "-dlto", "k.cu", "-gencode", "arch=compute_90,code=lto_90"}).ok());
    // At device link it is what CMake's IPO does.
    EXPECT_EQ(requested({"-dlink", "-dlto", "a.o",
                         "--generate-code=arch=compute_80,code=[compute_80,sm_80]", "-o", "d.o"}),
              "sm_80");
}

TEST(Targets, DeviceLinkYieldsSassOnly) {
    auto inv = parse({"-dlink", "a.o", "b.o", "-o", "d.o", "-arch=sm_80"});
    ASSERT_TRUE(inv.ok());
    EXPECT_EQ(inv->phase, Phase::DeviceLink);
    EXPECT_EQ(inv->no_device, NoDeviceReason::None);
    EXPECT_EQ(inv->objects, (std::vector<std::string>{"a.o", "b.o"}));
    EXPECT_EQ(names(inv->requested), "sm_80");
    EXPECT_TRUE(inv->device_link_only);
    auto compile_and_dlink = parse({"-dlink", "k.cu", "-o", "d.o", "-arch=sm_80"});
    ASSERT_TRUE(compile_and_dlink.ok());
    EXPECT_FALSE(compile_and_dlink->device_link_only);
    EXPECT_EQ(requested({"-dlink", "a.o", "-o", "d.o"}), "sm_75");
    EXPECT_EQ(requested({"-dlink", "a.o", "-o", "d.o", "-arch=sm_90a"}), "sm_90a");
    EXPECT_EQ(requested({"-dlink", "a.o", "-o", "d.o", "-arch=compute_80"}), "");
    EXPECT_EQ(requested({"a.o", "-o", "app", "-arch=sm_90"}), "sm_90"); // host link device-links
    auto link = parse({"a.o", "b.a", "-o", "app"});
    ASSERT_TRUE(link.ok());
    EXPECT_EQ(link->phase, Phase::Link);
    EXPECT_EQ(link->no_device, NoDeviceReason::None);
}

TEST(Targets, MalformedSpecsAreErrorsNamingTheToken) {
    struct Case {
        std::vector<std::string> argv;
        std::string key;
    };
    for (const auto& c : std::vector<Case>{
             {{"-code=sm_80"}, "-code=sm_80"},
             {{"-arch=sm_80", "-code=sm_80"}, "-arch=sm_80"},
             {{"-gencode", "arch=compute_80,code=sm_80,sm_86"}, "-gencode"},
             {{"-gencode=arch=compute_80,code=[]"}, "-gencode=arch=compute_80,code=[]"},
             {{"-gencode=arch=sm_80,code=sm_80"}, "-gencode=arch=sm_80,code=sm_80"},
             {{"-gencode=arch=compute_80,code=sm_80,arch=compute_90"},
              "-gencode=arch=compute_80,code=sm_80,arch=compute_90"},
             {{"-gencode=arch=compute_80"}, "-gencode=arch=compute_80"},
             {{"-gencode=code=sm_80"}, "-gencode=code=sm_80"},
             {{"-gencode=arch=compute_90,code=sm_80"}, "-gencode=arch=compute_90,code=sm_80"},
             {{"-gencode=arch=compute_90a,code=sm_90"}, "-gencode=arch=compute_90a,code=sm_90"},
             {{"-gencode=arch=compute_100f,code=sm_110f"},
              "-gencode=arch=compute_100f,code=sm_110f"},
             {{"-gencode=arch=compute_80,code=compute_86"},
              "-gencode=arch=compute_80,code=compute_86"},
             {{"-gencode=arch=all,code=sm_80"}, "-gencode=arch=all,code=sm_80"},
             {{"-gencode", "arch=compute_80,code=[sm_80, sm_86]"}, "-gencode"},
             {{"-arch=sm_80,sm_86"}, "-arch=sm_80,sm_86"},
             {{"-arch=80"}, "-arch=80"},
             {{"-arch=SM_80"}, "-arch=SM_80"},
             {{"-arch=sm_80a"}, "-arch=sm_80a"},
             {{"-arch=all", "-code=sm_80"}, "-arch=all"},
         }) {
        std::vector<std::string> argv = {"-c", "k.cu"};
        argv.insert(argv.end(), c.argv.begin(), c.argv.end());
        auto inv = parse(argv);
        ASSERT_FALSE(inv.ok()) << c.argv.back();
        EXPECT_EQ(inv.error().key, c.key) << inv.error().to_string();
    }
    // nvcc ignores target flags where it compiles nothing: `--version -arch=bogus` is fine.
    auto v = parse({"--version", "-arch=bogus"});
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->no_device, NoDeviceReason::Version);
}

// The argument of any value-taking option is never a target, a flag or an input.
TEST(Traps, OptionArgumentsAreNeverTargetsOrInputs) {
    int checked = 0;
    for (const auto& o : option_table()) {
        if (o.arg != ArgKind::Required) continue;
        if (o.role == Role::OptionsFile || o.role == Role::GpuArch || o.role == Role::GpuCode ||
            o.role == Role::GenCode || o.role == Role::Language)
            continue;
        for (auto sp : {o.long_name, o.short_name}) {
            if (sp.empty()) continue;
            ++checked;
            auto inv = parse({std::string(sp), "-arch=sm_90", "-c", "k.cu"});
            ASSERT_TRUE(inv.ok()) << sp;
            EXPECT_EQ(names(inv->requested), "sm_75 compute_75") << sp;
            EXPECT_FALSE(inv->targets_explicit) << sp;
            auto in = parse({std::string(sp), "other.cu", "-c", "k.cu"});
            ASSERT_TRUE(in.ok()) << sp;
            EXPECT_EQ(in->sources, std::vector<std::string>{"k.cu"}) << sp;
            auto ph = parse({std::string(sp), "-ptx", "-c", "k.cu"});
            ASSERT_TRUE(ph.ok()) << sp;
            EXPECT_EQ(ph->phase, Phase::Compile) << sp; // "-ptx" was the argument
        }
    }
    EXPECT_GT(checked, 120);
}

TEST(Traps, KnownCases) {
    // -Xptxas's argument goes to ptxas [obs: compiles sm_80].
    EXPECT_EQ(requested({"-Xptxas", "-arch=sm_86", "-arch=sm_80", "-c", "k.cu"}),
              "sm_80 compute_80");
    EXPECT_EQ(requested({"-Xcompiler", "-march=native", "-c", "k.cu"}), "sm_75 compute_75");
    EXPECT_EQ(requested({"-Xnvlink", "-arch=sm_86", "-c", "k.cu"}), "sm_75 compute_75");
    EXPECT_EQ(requested({"--ptxas-options=-arch=sm_86", "-c", "k.cu"}), "sm_75 compute_75");
    EXPECT_EQ(requested({"-Xcicc", "-arch", "-c", "k.cu"}), "sm_75 compute_75");
    auto o = parse({"-c", "k.cu", "-o", "-arch.o"});
    ASSERT_TRUE(o.ok());
    EXPECT_EQ(o->output, "-arch.o");
    EXPECT_FALSE(o->targets_explicit);
    // Unknown options (forwarded to the host compiler) never take an argument.
    auto u = parse({"-forward-unknown-to-host-compiler", "-fPIC", "extra.cu", "-c", "k.cu"});
    ASSERT_TRUE(u.ok());
    EXPECT_EQ(u->sources, (std::vector<std::string>{"extra.cu", "k.cu"}));
    // Attached values: -lineinfo is a flag, -lfoo a library, -Ifoo.cu an include dir.
    auto a = parse({"-lineinfo", "-lcuda", "-Idir.cu", "-DARCH=sm_90", "-c", "k.cu"});
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->sources, std::vector<std::string>{"k.cu"});
    EXPECT_FALSE(a->targets_explicit);
    // -x cu applies to every input wherever it stands; -x c++ turns .cu into host code.
    auto x = parse({"-c", "h.cpp", "-arch=sm_90", "-x", "cu"});
    ASSERT_TRUE(x.ok());
    EXPECT_EQ(x->sources, std::vector<std::string>{"h.cpp"});
    EXPECT_EQ(x->no_device, NoDeviceReason::None);
    auto xc = parse({"-x", "c++", "-c", "k.cu"});
    ASSERT_TRUE(xc.ok());
    EXPECT_EQ(xc->no_device, NoDeviceReason::HostOnly);
    EXPECT_EQ(parse({"--x=cu", "-c", "h.cc"})->no_device, NoDeviceReason::None);
}

TEST(Phases, DetectedFromFlags) {
    struct Case {
        std::vector<std::string> argv;
        Phase phase;
    };
    for (const auto& c : std::vector<Case>{
             {{"-c", "k.cu"}, Phase::Compile},
             {{"--compile", "k.cu"}, Phase::Compile},
             {{"-dc", "k.cu"}, Phase::CompileRdc},
             {{"--device-c", "k.cu"}, Phase::CompileRdc},
             {{"-rdc=true", "-c", "k.cu"}, Phase::CompileRdc},
             {{"-rdc", "true", "-c", "k.cu"}, Phase::CompileRdc},
             {{"-rdc=false", "-c", "k.cu"}, Phase::Compile},
             {{"-dlink", "a.o"}, Phase::DeviceLink},
             {{"--device-link", "a.o"}, Phase::DeviceLink},
             {{"k.cu", "-o", "app"}, Phase::Link},
             {{"-ptx", "k.cu"}, Phase::Ptx},
             {{"--ptx", "k.cu"}, Phase::Ptx},
             {{"-cubin", "k.cu"}, Phase::Cubin},
             {{"-fatbin", "k.cu"}, Phase::Fatbin},
             {{"-optix-ir", "k.cu"}, Phase::OtherSingleTarget},
             {{"-ltoir", "-dlto", "k.cu"}, Phase::OtherSingleTarget},
             {{"-dw", "k.cu"}, Phase::Compile},
             {{"-cuda", "k.cu"}, Phase::Compile},
             {{"-lib", "k.cu"}, Phase::Compile},
             // Several phase flags: the earliest step wins [obs].
             {{"-c", "-ptx", "k.cu"}, Phase::Ptx},
             {{"-cubin", "-ptx", "k.cu"}, Phase::Ptx},
             {{"-c", "-fatbin", "k.cu"}, Phase::Fatbin},
             {{"-dlink", "-c", "k.cu"}, Phase::CompileRdc},
             {{"-c", "-dc", "k.cu"}, Phase::CompileRdc},
         }) {
        auto inv = parse(c.argv);
        ASSERT_TRUE(inv.ok()) << c.argv[0];
        EXPECT_EQ(inv->phase, c.phase) << c.argv[0] << " " << phase_string(inv->phase);
    }
    EXPECT_TRUE(parse({"-dryrun", "-c", "k.cu"})->dryrun);
    EXPECT_TRUE(parse({"--dryrun", "-c", "k.cu"})->dryrun);
    EXPECT_FALSE(parse({"-c", "k.cu"})->dryrun);
    EXPECT_EQ(parse({"-dryrun", "-c", "k.cu"})->no_device, NoDeviceReason::None);
}

TEST(Passthrough, NoDeviceReasons) {
    struct Case {
        std::vector<std::string> argv;
        NoDeviceReason reason;
    };
    for (const auto& c : std::vector<Case>{
             {{"--version"}, NoDeviceReason::Version},
             {{"-V"}, NoDeviceReason::Version},
             {{"--version", "-arch=sm_90", "-c", "k.cu"}, NoDeviceReason::Version},
             {{"-h"}, NoDeviceReason::Help},
             {{"--help"}, NoDeviceReason::Help},
             {{"--list-gpu-arch"}, NoDeviceReason::ListGpu},
             {{"--list-gpu-code"}, NoDeviceReason::ListGpu},
             {{"-arch-ls"}, NoDeviceReason::ListGpu},
             {{"-code-ls"}, NoDeviceReason::ListGpu},
             {{"-E", "k.cu"}, NoDeviceReason::Preprocess},
             {{"--preprocess", "k.cu", "-arch=sm_90"}, NoDeviceReason::Preprocess},
             {{"-M", "k.cu"}, NoDeviceReason::Preprocess},
             {{"-MM", "k.cu"}, NoDeviceReason::Preprocess},
             {{"--generate-dependencies", "k.cu"}, NoDeviceReason::Preprocess},
             {{"-MD", "-MF", "k.d", "-c", "k.cu"}, NoDeviceReason::None},
             {{"-MMD", "-c", "k.cu"}, NoDeviceReason::None},
             {{"--generate-dependencies-with-compile", "-c", "k.cu"}, NoDeviceReason::None},
             {{"-c", "h.cpp", "-arch=sm_90"}, NoDeviceReason::HostOnly},
             {{"-c", "a.c", "b.cc", "c.cxx"}, NoDeviceReason::HostOnly},
             {{"-lib", "a.o", "-o", "liba.a"}, NoDeviceReason::HostOnly},
             {{"--keep", "--keep-dir", "tmp", "-v", "CMakeCUDACompilerId.cu"},
              NoDeviceReason::CMakeCompilerId},
             {{"-c", "/x/CMakeFiles/4.4/CompilerIdCUDA/CMakeCUDACompilerId.cu"},
              NoDeviceReason::CMakeCompilerId},
             {{"-v", "__cmake_determine_cuda"}, NoDeviceReason::CMakeCompilerId},
             {{}, NoDeviceReason::NoInput},
             {{"-arch=sm_90", "-c"}, NoDeviceReason::NoInput},
         }) {
        auto inv = parse(c.argv);
        ASSERT_TRUE(inv.ok()) << (c.argv.empty() ? "" : c.argv[0]);
        EXPECT_EQ(inv->no_device, c.reason)
            << (c.argv.empty() ? "" : c.argv[0]) << ": " << no_device_string(inv->no_device);
    }
}

class OptionsFiles : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = std::filesystem::path(FORGE_TEST_BINARY_DIR) / "nvcc-optf" /
               ::testing::UnitTest::GetInstance()->current_test_info()->name();
        std::filesystem::remove_all(dir_);
        std::filesystem::create_directories(dir_ / "sub");
    }
    void write(const std::string& rel, const std::string& text) {
        std::ofstream(dir_ / rel, std::ios::binary) << text;
    }
    Result<Invocation> run(std::vector<std::string> argv, const std::string& app = "") {
        return parse_invocation(argv, "", app, dir_.string(), caps13());
    }
    std::filesystem::path dir_;
};

TEST_F(OptionsFiles, AllSpellingsExpandInPlace) {
    write("t.rsp", "-arch=sm_86\n");
    for (std::vector<std::string> argv : {std::vector<std::string>{"-optf", "t.rsp"},
                                          {"-optf=t.rsp"},
                                          {"--options-file", "t.rsp"},
                                          {"--options-file=t.rsp"}}) {
        argv.insert(argv.end(), {"-c", "k.cu"});
        auto inv = run(argv);
        ASSERT_TRUE(inv.ok()) << inv.error().to_string();
        EXPECT_EQ(names(inv->requested), "sm_86 compute_86") << argv[0];
        ASSERT_EQ(inv->effective.size(), 3u);
        EXPECT_EQ(inv->effective[0].text, "-arch=sm_86");
        EXPECT_EQ(inv->effective[0].source, Arg::Source::OptionsFile);
        EXPECT_EQ(inv->effective[0].origin, (dir_ / "t.rsp").string());
        EXPECT_EQ(inv->effective[0].argv_index, -1);
        EXPECT_EQ(inv->effective[1].argv_index, static_cast<int>(argv.size()) - 2);
        EXPECT_EQ(inv->argv, argv); // the original is kept as given
    }
}

TEST_F(OptionsFiles, CommaListsNestingAndCwdRelativePaths) {
    // [obs] sub/n.rsp's `-optf o1.rsp` opens ./o1.rsp (the cwd), not sub/o1.rsp.
    write("o1.rsp", "-gencode=arch=compute_90,code=[sm_90,compute_90]\n");
    write("sub/n.rsp", "-optf o1.rsp");
    write("sub/o1.rsp", "-arch=sm_80");
    write("files.rsp", "k.cu -c\n");
    auto inv = run({"--options-file", "sub/n.rsp,files.rsp", "-arch=sm_86"});
    ASSERT_TRUE(inv.ok()) << inv.error().to_string();
    EXPECT_EQ(names(inv->requested), "sm_86 sm_90 compute_86 compute_90");
    EXPECT_EQ(inv->sources, std::vector<std::string>{"k.cu"}); // inputs in files count
    EXPECT_EQ(inv->phase, Phase::Compile);
}

TEST_F(OptionsFiles, Tokenizer) {
    // Double quotes group and are removed; `\ ` escapes a space; single quotes are literal.
    write("q.rsp", "-DX=\"a b\" -DY=a\\ b \"-DW=1\" -DS='x' -c\tk.cu\r\n-o \"out dir/k.o\"");
    auto inv = run({"-optf", "q.rsp"});
    ASSERT_TRUE(inv.ok()) << inv.error().to_string();
    std::vector<std::string> texts;
    for (const auto& a : inv->effective)
        texts.push_back(a.text);
    EXPECT_EQ(texts, (std::vector<std::string>{"-DX=a b", "-DY=a b", "-DW=1", "-DS='x'", "-c",
                                               "k.cu", "-o", "out dir/k.o"}));
    EXPECT_EQ(inv->output, "out dir/k.o");
    // A backslash makes any next character literal and is removed [obs: `c\d` -> `cd`,
    // `\\,b` reaches nvcc's list splitter as `\,b`].
    write("b.rsp", "-DQ=c\\d -DR=\\\\,b -DV=a\\\"b -c k.cu");
    auto b = run({"-optf", "b.rsp"});
    ASSERT_TRUE(b.ok()) << b.error().to_string();
    EXPECT_EQ(b->effective[0].text, "-DQ=cd");
    EXPECT_EQ(b->effective[1].text, "-DR=\\,b");
    EXPECT_EQ(b->effective[2].text, "-DV=a\"b");
    // An unbalanced double quote is fatal to nvcc ("Stray '\"' character"): an error naming the
    // file.
    write("u.rsp", "-DA=\"b");
    auto u = run({"-optf", "u.rsp", "-c", "k.cu"});
    ASSERT_FALSE(u.ok());
    EXPECT_EQ(u.error().file, (dir_ / "u.rsp").string());
    // Quotes are stripped there, so `code="sm_90,compute_90"` breaks inside an options file [obs].
    write("g.rsp", "-gencode=arch=compute_90,code=\"sm_90,compute_90\"");
    EXPECT_FALSE(run({"-optf", "g.rsp", "-c", "k.cu"}).ok());
    // Single quotes do not group: `'a b'` is two tokens, `b'` becomes an input.
    write("s.rsp", "-DFOO='a b'");
    auto s = run({"-optf", "s.rsp", "-c", "k.cu"});
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->effective[1].text, "b'");
}

TEST_F(OptionsFiles, MissingFileIsAnErrorNamingIt) {
    auto inv = run({"-optf", "missing.rsp", "-c", "k.cu"});
    ASSERT_FALSE(inv.ok());
    EXPECT_NE(inv.error().to_string().find("missing.rsp"), std::string::npos);
    EXPECT_EQ(inv.error().file, (dir_ / "missing.rsp").string());
    EXPECT_EQ(inv.error().key, "-optf");
    // Nested: the inner name is reported.
    write("outer.rsp", "-optf=inner-missing.rsp");
    auto nested = run({"-optf", "outer.rsp"});
    ASSERT_FALSE(nested.ok());
    EXPECT_NE(nested.error().message.find("inner-missing.rsp"), std::string::npos);
    // A file that includes itself ends with an error, not a hang or a crash.
    write("loop.rsp", "-optf loop.rsp");
    auto loop = run({"-optf", "loop.rsp"});
    ASSERT_FALSE(loop.ok());
    EXPECT_NE(loop.error().message.find("nested"), std::string::npos);
    // An -optf argument of another option is not an options file.
    auto o = run({"-o", "-optf", "-c", "k.cu"});
    ASSERT_TRUE(o.ok());
    EXPECT_EQ(o->output, "-optf");
}

TEST(EnvFlags, PrependAndAppend) {
    auto inv = parse({"-c", "k.cu", "-arch=sm_80"}, "-ccbin=g++  -DA=1", "-arch=sm_86");
    ASSERT_TRUE(inv.ok());
    EXPECT_EQ(names(inv->requested), "sm_86 compute_86"); // APPEND comes last: it wins
    ASSERT_EQ(inv->effective.size(), 6u);
    EXPECT_EQ(inv->effective[0].source, Arg::Source::PrependEnv);
    EXPECT_EQ(inv->effective[0].origin, "NVCC_PREPEND_FLAGS");
    EXPECT_EQ(inv->effective[1].text, "-DA=1");
    EXPECT_EQ(inv->effective[5].source, Arg::Source::AppendEnv);
    EXPECT_EQ(requested({"-c", "k.cu", "-arch=sm_80"}, "-arch=sm_86"), "sm_80 compute_80");
    EXPECT_EQ(requested({"-c", "k.cu"}, "", "-gencode arch=compute_90,code=sm_90"), "sm_90");
    // The env tokenizer keeps double quotes, so the quoted code list works there [obs].
    EXPECT_EQ(requested({"-c", "k.cu"}, "", "-gencode=arch=compute_80,code=\"sm_80,compute_80\""),
              "sm_80 compute_80");
    auto q = parse({"-c", "k.cu"}, "-DZ=\"q r\"s");
    ASSERT_TRUE(q.ok());
    EXPECT_EQ(q->effective[0].text, "-DZ=\"q r\"s");
    // Unbalanced quotes there are fatal too.
    auto stray = parse({"-c", "k.cu"}, "", "-DA=\"b");
    ASSERT_FALSE(stray.ok());
    EXPECT_EQ(stray.error().file, "NVCC_APPEND_FLAGS");
    // Backslashes are kept in env tokens (nvcc's list splitter sees them).
    EXPECT_EQ(parse({"-c", "k.cu"}, "-DA=x\\y")->effective[0].text, "-DA=x\\y");
    // An env value can hold an options file too.
    auto err = parse({"-c", "k.cu"}, "", "-optf /nonexistent/forge.rsp");
    ASSERT_FALSE(err.ok());
    EXPECT_EQ(err.error().file, "/nonexistent/forge.rsp");
}

// Issue 36, 12: options files that fan out without a cycle (depth 7, fan-out 10: 10^7 arguments,
// 57 s and 1.58 GB) or that never end (/dev/zero) are bounded: an error naming the file, never an
// abort.
TEST_F(OptionsFiles, ExpansionIsBounded) {
    for (int level = 0; level < 7; ++level) {
        std::string text;
        for (int k = 0; k < 10; ++k)
            text += level < 6 ? fmt::format("-optf f{}.rsp\n", level + 1) : "-DX\n";
        write(fmt::format("f{}.rsp", level), text);
    }
    auto fan = run({"-optf", "f0.rsp", "-c", "k.cu"});
    ASSERT_FALSE(fan.ok());
    EXPECT_NE(fan.error().message.find("options files read for one command line"),
              std::string::npos)
        << fan.error().to_string();
    EXPECT_EQ(fan.error().exit_code, kExitInput);
    for (auto argv : {std::vector<std::string>{"-optf", "/dev/zero", "-c", "k.cu"}}) {
        auto zero = run(argv);
        ASSERT_FALSE(zero.ok());
        EXPECT_NE(zero.error().message.find("options files add up to more than"), std::string::npos)
            << zero.error().to_string();
        EXPECT_EQ(zero.error().file, "/dev/zero");
    }
    auto prepended =
        parse_invocation({"-c", "k.cu"}, "-optf /dev/zero", "", dir_.string(), caps13());
    ASSERT_FALSE(prepended.ok());
    // A wide file within the bounds still expands (300 arguments, three levels).
    write("w.rsp", "-optf v.rsp -optf v.rsp -optf v.rsp\n");
    std::string hundred;
    for (int k = 0; k < 100; ++k)
        hundred += "-DY ";
    write("v.rsp", hundred);
    auto wide = run({"-optf", "w.rsp", "-c", "k.cu"});
    ASSERT_TRUE(wide.ok()) << wide.error().to_string();
    EXPECT_EQ(wide->effective.size(), 302u);
}

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
