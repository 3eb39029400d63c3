// The C-family rules (lint/source_rules.h): gate forms, the device-by-device "declared" check,
// FP8 and the feature macros.
#include "helpers.h"
#include "lint/lex.h"
#include "lint/lint.h"

#include <gtest/gtest.h>

#include <tuple>

using namespace forge;
using namespace forge::lint;
using namespace forge::lint::test;

TEST(LintGate, EveryComparisonFormNeedsAda) {
    const std::vector<std::string> forms = {
        "#if __CUDA_ARCH__ >= 890",
        "#if __CUDA_ARCH__ > 860",
        "#if 890 <= __CUDA_ARCH__",
        "#if 860 < __CUDA_ARCH__",
        "#if (__CUDA_ARCH__ >= 890)",
        "#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__) >= (890)",
        "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 890",
        "#if __CUDA_ARCH__ == 890",
        "#if __CUDA_ARCH__ != 890",
        "#if !(__CUDA_ARCH__ <= 880)",
        "#if __CUDA_ARCH__ >= 890u",
        "#elif __CUDA_ARCH__ >= 890",
        "  if constexpr (__CUDA_ARCH__ >= 890) {}",
    };
    for (const auto& form : forms) {
        std::string src = "// line 1\n" + form + "\n#endif\n";
        EXPECT_EQ(cu_hits(src, kNoAda), (std::vector<Hit>{{2, "arch-gate", "8.9"}})) << form;
        EXPECT_TRUE(cu(src, kWithAda).empty()) << form;
    }
}

TEST(LintGate, FindingCarriesPatternAndTheStubWhy) {
    auto found = cu("#if __CUDA_ARCH__ >= 890\n#endif\n", kNoAda);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].file, "k.cu");
    EXPECT_EQ(found[0].pattern, "__CUDA_ARCH__ >= 890");
    EXPECT_NE(found[0].why.find("CC 8.9 loads the sm_86 cubin"), std::string::npos) << found[0].why;
    EXPECT_NE(found[0].why.find("(__CUDA_ARCH__ 860 < 890)"), std::string::npos) << found[0].why;
    EXPECT_NE(found[0].why.find("stub"), std::string::npos);
    EXPECT_NE(found[0].why.find("cudaErrorLaunchFailure"), std::string::npos);
}

TEST(LintGate, ContinuationLineReportsTheMacroLine) {
    EXPECT_EQ(
        cu_hits("int a;\n#if defined(__CUDA_ARCH__) && \\\n    __CUDA_ARCH__ >= \\\n 890\n#endif\n",
                kNoAda),
        (std::vector<Hit>{{3, "arch-gate", "8.9"}}));
}

TEST(LintGate, MacrosFromTheFileAndFromOtherFiles) {
    std::string src = "#define ARCH_SM89 890\n#define MY_ARCH ARCH_SM89\n"
                      "#if __CUDA_ARCH__ >= MY_ARCH\n#endif\n";
    auto found = cu(src, kNoAda);
    ASSERT_EQ(hits(found), (std::vector<Hit>{{3, "arch-gate", "8.9"}}));
    EXPECT_EQ(found[0].pattern, "__CUDA_ARCH__ >= MY_ARCH");
    EXPECT_NE(found[0].why.find("MY_ARCH = 890"), std::string::npos) << found[0].why;

    MacroTable header;
    header.collect(blank_c_like("#pragma once\n#define ARCH_SM90 (900)\n"), "csrc/arch.cuh");
    EXPECT_EQ(header.value("ARCH_SM90"), 900);
    EXPECT_EQ(header.where("ARCH_SM90"), "csrc/arch.cuh:2");
    // 9.0 devices JIT the compute_89 PTX: compiled with 890, below the 900 gate
    auto h = cu("#if __CUDA_ARCH__ >= ARCH_SM90\n#endif\n", "8.0 8.9+PTX", header);
    ASSERT_EQ(hits(h), (std::vector<Hit>{{1, "arch-gate", "9.0"}}));
    EXPECT_NE(h[0].why.find("csrc/arch.cuh:2"), std::string::npos) << h[0].why;
    EXPECT_NE(h[0].why.find("JIT-compiles the compute_89 PTX"), std::string::npos) << h[0].why;
    EXPECT_NE(h[0].why.find("also CC 10.0 (compute_89)"), std::string::npos) << h[0].why;
    EXPECT_TRUE(cu("#if __CUDA_ARCH__ >= ARCH_SM90\n#endif\n", "8.0 8.9 9.0", header).empty());
}

TEST(LintGate, UnknownAndFunctionLikeMacrosAreNotGuessed) {
    EXPECT_TRUE(cu("#if __CUDA_ARCH__ >= MIN_ARCH_FROM_CMDLINE\n#endif\n", kNoAda).empty());
    EXPECT_TRUE(cu("#define SM(x) 890\n#if __CUDA_ARCH__ >= SM\n#endif\n", kNoAda).empty());
    MacroTable m;
    m.collect(blank_c_like("#define A B\n#define B A\n#define C \"890\"\n"), "x.h");
    EXPECT_FALSE(m.value("A").has_value()); // alias loop
    EXPECT_FALSE(m.value("C").has_value()); // a string, blanked
}

TEST(LintGate, NestedConditionsAndIfZero) {
    std::string src = "#if defined(__CUDA_ARCH__)\n"
                      "#  if __CUDA_ARCH__ >= 900\n"   // 2: declared (9.0)
                      "#  elif __CUDA_ARCH__ >= 890\n" // 3: Ada
                      "#  endif\n"
                      "#endif\n"
                      "#if 0\n"
                      "#  if __CUDA_ARCH__ >= 890\n" // 7: dead code
                      "__nv_fp8_e4m3 dead;\n"
                      "#  endif\n"
                      "#else\n"
                      "__nv_fp8_e5m2 live;\n" // 11
                      "#endif\n";
    EXPECT_EQ(cu_hits(src, kNoAda),
              (std::vector<Hit>{{3, "arch-gate", "8.9"}, {11, "fp8-type", "8.9"}}));
}

TEST(LintGate, ExactlyNeedsThatArchItself) {
    // A100 JITs the compute_75 PTX: value 750, not the 800 the code is for.
    EXPECT_EQ(cu_hits("#if __CUDA_ARCH__ == 800\n#endif\n", "7.5+PTX 8.6"),
              (std::vector<Hit>{{1, "arch-gate", "8.0"}}));
    EXPECT_TRUE(cu("#if __CUDA_ARCH__ == 800\n#endif\n", "7.5 8.6").empty()); // A100 unreached
    EXPECT_TRUE(cu("#if __CUDA_ARCH__ == 800\n#endif\n", "8.0 8.6").empty());
}

TEST(LintGate, UnreachedGpusAreCoveragesBusiness) {
    // No 8.x image at all: Ampere/Ada are dead, not stubbed.
    EXPECT_TRUE(cu("#if __CUDA_ARCH__ >= 800\n#endif\n", "7.5 9.0").empty());
    // ...but a PTX tail reaches them with the old branch.
    EXPECT_EQ(cu_hits("#if __CUDA_ARCH__ >= 800\n#endif\n", "7.5+PTX 9.0"),
              (std::vector<Hit>{{1, "arch-gate", "8.0"}}));
}

TEST(LintGate, TegraAndEveryStubbedGpuNamed) {
    // Orin 8.7 does not run sm_80; it JITs compute_80 (value 800 < 870). Ada loads sm_80.
    auto found = cu("#if __CUDA_ARCH__ >= 870\n#endif\n", "8.0+PTX 9.0");
    ASSERT_EQ(hits(found), (std::vector<Hit>{{1, "arch-gate", "8.7"}}));
    EXPECT_NE(found[0].why.find("also CC 8.9 (sm_80)"), std::string::npos) << found[0].why;
    EXPECT_TRUE(cu("#if __CUDA_ARCH__ >= 870\n#endif\n", "8.0 8.7 8.9 9.0").empty());
}

TEST(LintGate, CheckGateUsesTheGivenGpus) {
    // Only a 12.1 device: the 12.0 cubin serves it and passes a >= 1200 gate.
    std::vector<arch::Gpu> gpus = {{121, {}, false, {}}};
    EXPECT_TRUE(check_gate(1210, true, L("12.0"), gpus).declared == false);
    EXPECT_EQ(check_gate(1210, true, L("12.0"), gpus).needs, "12.1");
    EXPECT_TRUE(check_gate(1200, true, L("12.0"), gpus).declared);
    EXPECT_TRUE(check_gate(890, true, L("8.0"), gpus).declared); // no Ada in this fleet
}

TEST(LintGate, TegraComesFromTheGpuTable) {
    // The same 8.7 part, once marked tegra (it cannot load sm_80, so it JITs compute_80) and once
    // not (it loads the sm_80 cubin): the lint reads the flag, it keeps no Tegra list.
    std::vector<arch::Gpu> tegra = {{87, {}, true, {}}, {89, {}, false, {}}};
    std::vector<arch::Gpu> desktop = {{87, {}, false, {}}, {89, {}, false, {}}};
    auto jit = check_gate(870, true, L("8.0+PTX 9.0"), tegra);
    auto cubin = check_gate(870, true, L("8.0+PTX 9.0"), desktop);
    ASSERT_FALSE(jit.declared);
    ASSERT_FALSE(cubin.declared);
    EXPECT_NE(jit.detail.find("CC 8.7 JIT-compiles the compute_80 PTX"), std::string::npos)
        << jit.detail;
    EXPECT_NE(cubin.detail.find("CC 8.7 loads the sm_80 cubin"), std::string::npos) << cubin.detail;
    // A Tegra cubin serves only its SoC: with sm_87 the one 8.x cubin, Ada is unreached (no
    // finding); were 8.7 a desktop CC, Ada would load it and miss an `== 890` gate.
    EXPECT_TRUE(check_gate(890, false, L("8.7 9.0"), tegra).declared);
    auto desk = check_gate(890, false, L("8.7 9.0"), desktop);
    EXPECT_FALSE(desk.declared);
    EXPECT_EQ(desk.needs, "8.9");
}

TEST(LintGate, NvTargetMacros) {
    EXPECT_EQ(cu_hits("NV_IF_TARGET(NV_PROVIDES_SM_89, (f();));\n", kNoAda),
              (std::vector<Hit>{{1, "arch-gate", "8.9"}}));
    EXPECT_EQ(cu_hits("NV_IF_TARGET(NV_IS_EXACTLY_SM_86, (f();));\n", "8.0 9.0"),
              (std::vector<Hit>{{1, "arch-gate", "8.6"}}));
    EXPECT_TRUE(cu("NV_IF_TARGET(NV_PROVIDES_SM_89, (f();));\n", kWithAda).empty());
}

TEST(LintFp8, TypesIntrinsicsAndAsmButNotProse) {
    std::string src = "// e4m3 in a comment\n"              // 1
                      "#include <cuda_fp8.h>\n"             // 2
                      "__nv_fp8_e4m3 a; __nv_fp8_e5m2 b;\n" // 3: one per line
                      "auto s = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);\n" // 4
                      "printf(\"e5m2 unsupported\");\n"                                 // 5
                      "using T = cutlass::float_e4m3_t;\n"                              // 6
                      "asm(\"cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\" : \"=h\"(r) : \"f\"(a), "
                      "\"f\"(b));\n"      // 7
                      "int fp8_count;\n"; // 8: not FP8 code
    EXPECT_EQ(cu_hits(src, kNoAda), (std::vector<Hit>{{3, "fp8-type", "8.9"},
                                                      {4, "fp8-type", "8.9"},
                                                      {6, "fp8-type", "8.9"},
                                                      {7, "fp8-type", "8.9"}}));
    EXPECT_TRUE(cu(src, kWithAda).empty());
    auto found = cu(src, kNoAda);
    EXPECT_EQ(found[0].pattern, "__nv_fp8_e4m3");
}

TEST(LintFeature, ArchSpecificFeatureMacros) {
    EXPECT_EQ(cu_hits("#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n#endif\n", "8.0 9.0"),
              (std::vector<Hit>{{1, "arch-feature", "9.0a"}}));
    EXPECT_TRUE(cu("#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n#endif\n", "8.0 9.0a").empty());
    EXPECT_EQ(cu_hits("#ifdef __CUDA_ARCH_FEAT_SM100_ALL\n#endif\n", "10.0 10.0f"),
              (std::vector<Hit>{{1, "arch-feature", "10.0a"}}));
    EXPECT_EQ(cu_hits("#if __CUDA_ARCH_HAS_FEATURE__(SM120_ALL)\n#endif\n", "12.0"),
              (std::vector<Hit>{{1, "arch-feature", "12.0a"}}));
    EXPECT_EQ(cu_hits("NV_IF_TARGET(NV_HAS_FEATURE_SM_90a, (g();));\n", "9.0"),
              (std::vector<Hit>{{1, "arch-feature", "9.0a"}}));
    EXPECT_EQ(cu_hits("NV_IF_TARGET(NV_HAS_FEATURE_SM_100f, (g();));\n", "10.0"),
              (std::vector<Hit>{{1, "arch-feature", "10.0f"}}));
    EXPECT_TRUE(cu("NV_IF_TARGET(NV_HAS_FEATURE_SM_100f, (g();));\n", "10.0f").empty());
    EXPECT_TRUE(cu("NV_IF_TARGET(NV_HAS_FEATURE_SM_100f, (g();));\n", "10.0a").empty());
    EXPECT_EQ(cu_hits("#if defined(CUTLASS_ARCH_MMA_SM90A_ENABLED)\n#endif\n", "9.0"),
              (std::vector<Hit>{{1, "arch-feature", "9.0a"}}));
}

TEST(LintFeature, SpecificAndFamilyMacros) {
    // Bare: any a target (f for the family macro) declares it.
    EXPECT_EQ(cu_hits("#ifdef __CUDA_ARCH_SPECIFIC__\n#endif\n", "9.0 10.0f"),
              (std::vector<Hit>{{1, "arch-specific-macro", "*a"}}));
    EXPECT_TRUE(cu("#ifdef __CUDA_ARCH_SPECIFIC__\n#endif\n", "9.0a").empty());
    EXPECT_EQ(cu_hits("#ifdef __CUDA_ARCH_FAMILY_SPECIFIC__\n#endif\n", "9.0 10.0"),
              (std::vector<Hit>{{1, "arch-specific-macro", "*f"}}));
    EXPECT_TRUE(cu("#ifdef __CUDA_ARCH_FAMILY_SPECIFIC__\n#endif\n", "10.0f").empty());
    // With a comparison on the line, that arch: nvcc defines FAMILY=1200 for sm_120f.
    const char* fam =
        "#if defined(__CUDA_ARCH_FAMILY_SPECIFIC__) && __CUDA_ARCH__ >= 1000\n#endif\n";
    EXPECT_EQ(cu_hits(fam, "10.0 12.0"), (std::vector<Hit>{{1, "arch-specific-macro", "10.0f"}}));
    EXPECT_TRUE(cu(fam, "10.0 12.0f").empty());
    EXPECT_EQ(cu_hits("#if __CUDA_ARCH_SPECIFIC__ == 1000\n#endif\n", "10.0f"),
              (std::vector<Hit>{{1, "arch-specific-macro", "10.0a"}}));
    EXPECT_TRUE(cu("#if __CUDA_ARCH_SPECIFIC__ == 1000\n#endif\n", "10.0a").empty());
    // the predicate decides: `< 1100` is met by a 10.0f image, not by 12.0f
    EXPECT_TRUE(cu("#if __CUDA_ARCH_FAMILY_SPECIFIC__ < 1100\n#endif\n", "10.0f 12.0").empty());
    EXPECT_EQ(cu_hits("#if __CUDA_ARCH_FAMILY_SPECIFIC__ < 1100\n#endif\n", "10.0 12.0f"),
              (std::vector<Hit>{{1, "arch-specific-macro", "*f"}}));
    EXPECT_EQ(cu_hits("#if __CUDA_ARCH_FAMILY_SPECIFIC__ > 1000\n#endif\n", "10.0f"),
              (std::vector<Hit>{{1, "arch-specific-macro", "10.3f"}})); // next real CC
}
