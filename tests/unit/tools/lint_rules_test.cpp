// The lint's rules on inline sources (tools/lint.h): gate forms, the device-by-device
// "declared" check, FP8, feature macros, build-file targets and the build-script scan.
#include "tools/lint.h"
#include "tools/lint_lex.h"

#include <gtest/gtest.h>

#include <tuple>

using namespace forge;
using namespace forge::tools;

namespace {

arch::ArchList L(std::string_view text) {
    auto r = arch::ArchList::parse(text, "test");
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
    return r.ok() ? *r : arch::ArchList{};
}

// (line, rule, needs): what the tests assert exactly.
using Hit = std::tuple<int, std::string, std::string>;

std::vector<Hit> hits(const std::vector<LintFinding>& found) {
    std::vector<Hit> out;
    for (const auto& f : found)
        out.emplace_back(f.line, f.rule, f.needs);
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<LintFinding> cu(std::string_view text, std::string_view list,
                            const MacroTable& macros = MacroTable{}) {
    return lint_source_text("k.cu", text, L(list), macros);
}

std::vector<Hit> cu_hits(std::string_view text, std::string_view list) {
    return hits(cu(text, list));
}

std::vector<Hit> build_hits(std::string_view path, std::string_view text, std::string_view list) {
    return hits(lint_build_text(path, text, L(list)));
}

constexpr std::string_view kNoAda = "8.0 8.6 9.0+PTX";
constexpr std::string_view kWithAda = "8.0 8.6 8.9 9.0+PTX";

} // namespace

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

TEST(LintBuild, ExplicitTargetsOutsideComments) {
    std::string py = "flags = [\"-gencode=arch=compute_90a,code=sm_90a\", \"sm_80\"]  # sm_100a\n"
                     "name = \"kernel_sm_90\"  # an identifier, not a target\n"
                     "bad = \"sm_80a sm_5\"\n"
                     "lto = \"-gencode=arch=compute_100,code=lto_100\"\n";
    EXPECT_EQ(build_hits("setup.py", py, "8.0 9.0"),
              (std::vector<Hit>{{1, "explicit-target", "9.0a"},
                                {1, "script-emits-gencode", ""},
                                {4, "explicit-target", "10.0"},
                                {4, "script-emits-gencode", ""}}));
    EXPECT_EQ(build_hits("setup.py", py, "8.0 9.0a 10.0"),
              (std::vector<Hit>{{1, "script-emits-gencode", ""}, {4, "script-emits-gencode", ""}}));
    // a plain target is declared by any suffix of its SM; an `a` target only by `a`
    EXPECT_EQ(build_hits("build.sh", "nvcc -arch=sm_100f x.cu\n", "10.0a"),
              (std::vector<Hit>{{1, "script-emits-gencode", ""}}));
    // sm_110f and compute_110f are one finding: declaring 11.0 covers both
    EXPECT_EQ(build_hits("build.sh", "nvcc -gencode arch=compute_110f,code=sm_110f x.cu\n", "10.0"),
              (std::vector<Hit>{{1, "explicit-target", "11.0"}, {1, "script-emits-gencode", ""}}));
}

TEST(LintBuild, ArchListStrings) {
    std::string py = "os.environ[\"TORCH_CUDA_ARCH_LIST\"] = \"3.7+PTX;5.0;7.5\"\n" // 1
                     "num = \"90a\"\n"                                              // 2
                     "cuda = \"12.8\"\n"                                            // 3
                     "pythons = [\"3.8\", \"3.9\"]\n"                               // 4
                     "pair = \"8.0 8.6\"\n"                                         // 5
                     "versions = \"3.8 3.9\"\n";                                    // 6
    EXPECT_EQ(build_hits("setup.py", py, "7.5 8.0"),
              (std::vector<Hit>{{1, "explicit-target", "3.7"},
                                {1, "explicit-target", "5.0"},
                                {1, "script-writes-arch-list", ""},
                                {2, "explicit-target", "9.0a"},
                                {5, "explicit-target", "8.6"}}));
}

TEST(LintBuild, HasSmGatesButNotTheirAssignment) {
    std::string py = "HAS_SM89 = False\nif x:\n    HAS_SM89 = True\nif HAS_SM89 or HAS_SM90:\n"
                     "    pass\n";
    EXPECT_EQ(build_hits("setup.py", py, "8.0 9.0"),
              (std::vector<Hit>{{4, "build-arch-gate", "8.9"}}));
    EXPECT_TRUE(build_hits("setup.py", py, "8.0 8.9 9.0").empty());
}

TEST(LintScript, PythonReadsAndWrites) {
    std::string py = "a = os.environ.get(\"TORCH_CUDA_ARCH_LIST\")\n"                 // 1 r
                     "b = os.getenv('TORCH_CUDA_ARCH_LIST', '')\n"                    // 2 r
                     "if \"TORCH_CUDA_ARCH_LIST\" in os.environ:\n"                   // 3 r
                     "    os.environ[\"TORCH_CUDA_ARCH_LIST\"] = \"8.0\"\n"           // 4 w
                     "os.environ.setdefault(\"TORCH_CUDA_ARCH_LIST\", \"8.0\")\n"     // 5 w
                     "os.environ.pop(\"TORCH_CUDA_ARCH_LIST\", None)\n"               // 6 w
                     "del os.environ[\"TORCH_CUDA_ARCH_LIST\"]\n"                     // 7 w
                     "env = dict(os.environ, TORCH_CUDA_ARCH_LIST=\"9.0\")\n"         // 8 w
                     "subprocess.run(cmd, env={\"TORCH_CUDA_ARCH_LIST\": \"9.0\"})\n" // 9 w
                     "print(\"set TORCH_CUDA_ARCH_LIST to pick archs\")\n"            // 10
                     "# os.environ[\"TORCH_CUDA_ARCH_LIST\"] = \"x\"\n"               // 11
                     "archs = os.getenv(\"FLASH_ATTN_CUDA_ARCHS\", \"80;90\")\n"      // 12 knob
                     "if os.environ[\"TORCH_CUDA_ARCH_LIST\"] == \"\":\n";            // 13 r
    EXPECT_EQ(build_hits("setup.py", py, "8.0 9.0"),
              (std::vector<Hit>{{1, "script-reads-arch-list", ""},
                                {2, "script-reads-arch-list", ""},
                                {3, "script-reads-arch-list", ""},
                                {4, "script-writes-arch-list", ""},
                                {5, "script-writes-arch-list", ""},
                                {6, "script-writes-arch-list", ""},
                                {7, "script-writes-arch-list", ""},
                                {8, "script-writes-arch-list", ""},
                                {9, "script-writes-arch-list", ""},
                                {12, "script-own-arch-knob", ""},
                                {13, "script-reads-arch-list", ""}}));
}

TEST(LintScript, ShellAndMakefile) {
    std::string sh = "export TORCH_CUDA_ARCH_LIST=\"8.0;9.0\"\n" // 1 w (+ "8.0;9.0" declared)
                     "echo $TORCH_CUDA_ARCH_LIST\n"              // 2 r
                     "TORCH_CUDA_ARCH_LIST=9.0 python setup.py bdist_wheel\n" // 3 w
                     "unset TORCH_CUDA_ARCH_LIST\n"                           // 4 w
                     "# export TORCH_CUDA_ARCH_LIST=7.5\n"                    // 5
                     "echo \"${TORCH_CUDA_ARCH_LIST:-8.0}\"\n"                // 6 r
                     "gcc -march=native x.c\n";                               // 7
    EXPECT_EQ(build_hits("build.sh", sh, "8.0 9.0"),
              (std::vector<Hit>{{1, "script-writes-arch-list", ""},
                                {2, "script-reads-arch-list", ""},
                                {3, "script-writes-arch-list", ""},
                                {4, "script-writes-arch-list", ""},
                                {6, "script-reads-arch-list", ""}}));
    std::string mk =
        "NVCC_GENCODE ?= -gencode=arch=compute_80,code=sm_80 # -gencode=arch=compute_120a\n"
        "COMPUTE ?= 75\n"
        "all:\n\tnvcc $(NVCC_GENCODE) -arch compute_$(COMPUTE) x.cu\n";
    EXPECT_EQ(build_hits("Makefile", mk, "8.0"),
              (std::vector<Hit>{{1, "script-emits-gencode", ""}, {4, "script-emits-gencode", ""}}));
}

TEST(LintScript, CMakeArchitecturesAndEnv) {
    std::string cm = "set(CMAKE_CUDA_ARCHITECTURES 80 90a-real)\n"         // 1
                     "set(CMAKE_CUDA_ARCHITECTURES ${TORCH_ARCHS})\n"      // 2
                     "set_property(TARGET k PROPERTY CUDA_ARCHITECTURES\n" // 3
                     "  100a-real\n"                                       // 4
                     "  120a-real)\n"                                      // 5
                     "if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)\n"          // 6
                     "endif()\n"                                           // 7
                     "set(TORCH_CUDA_ARCH_LIST \"8.0\")\n"                 // 8 w
                     "if(TORCH_CUDA_ARCH_LIST)\n"                          // 9 r
                     "set(A \"$ENV{FLASH_ATTN_CUDA_ARCHS}\")\n"            // 10 knob
                     "set(CMAKE_CUDA_ARCHITECTURES native)\n";             // 11
    EXPECT_EQ(build_hits("CMakeLists.txt", cm, "8.0 9.0 10.0"),
              (std::vector<Hit>{{1, "explicit-target", "9.0a"},
                                {1, "script-sets-cuda-architectures", ""},
                                {3, "script-sets-cuda-architectures", ""},
                                {4, "explicit-target", "10.0a"},
                                {5, "explicit-target", "12.0a"},
                                {8, "script-writes-arch-list", ""},
                                {9, "script-reads-arch-list", ""},
                                {10, "script-own-arch-knob", ""},
                                {11, "script-sets-cuda-architectures", ""}}));
}

TEST(LintScript, VllmStylePerSourceArchLists) {
    std::string cm =
        "cuda_archs_loose_intersection(SCALED_MM_ARCHS \"9.0a;\" \"${CUDA_ARCHS}\")\n"
        "cuda_archs_loose_intersection(FP4_ARCHS \"10.0f;11.0f;12.0f\" \"${CUDA_ARCHS}\")\n";
    EXPECT_EQ(build_hits("CMakeLists.txt", cm, "8.0 9.0 10.0 12.0"),
              (std::vector<Hit>{{1, "explicit-target", "9.0a"}, {2, "explicit-target", "11.0"}}));
    EXPECT_TRUE(build_hits("CMakeLists.txt", cm, "8.0 9.0a 10.0 11.0 12.0").empty());
}

TEST(LintScript, FilesThatAreNotBuildFilesOrSources) {
    EXPECT_TRUE(
        lint_build_text("README.md", "-gencode arch=compute_90a,code=sm_90a\n", L("8.0")).empty());
    EXPECT_TRUE(
        lint_source_text("notes.txt", "__nv_fp8_e4m3 x;\n", L("8.0"), MacroTable{}).empty());
    EXPECT_TRUE(is_c_source("a/b.CUH"));
    EXPECT_TRUE(is_build_file("x/CMakeLists.txt"));
    EXPECT_TRUE(is_build_file("cmake/cuda.cmake"));
    EXPECT_TRUE(is_build_file("pyproject.toml"));
    EXPECT_FALSE(is_build_file("CMakeCache.txt"));
}

TEST(LintIgnore, ParseAndMatch) {
    auto a = parse_lint_ignore("csrc/fp8/*.cu", "pkg.yml");
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->glob, "csrc/fp8/*.cu");
    EXPECT_EQ(a->rule, "");
    auto b = parse_lint_ignore(" csrc/x.cu:fp8-type ", "pkg.yml");
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->entry, "csrc/x.cu:fp8-type");
    EXPECT_EQ(b->glob, "csrc/x.cu");
    EXPECT_EQ(b->rule, "fp8-type");

    auto bad = parse_lint_ignore("csrc/x.cu:fp8-types", "packages/p/arch_override.yml");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().key, "csrc/x.cu:fp8-types");
    EXPECT_EQ(bad.error().exit_code, kExitInput);
    EXPECT_NE(bad.error().to_string().find("packages/p/arch_override.yml"), std::string::npos);
    EXPECT_NE(bad.error().to_string().find("fp8-types"), std::string::npos);
    EXPECT_FALSE(parse_lint_ignore("  ", "x").ok());

    LintFinding f{"csrc/fp8/gemm.cu", 3, "fp8-type", "e4m3", "8.9", "", ""};
    EXPECT_TRUE(ignore_matches(*a, f));
    EXPECT_FALSE(ignore_matches(*b, f));
    f.file = "csrc/x.cu";
    EXPECT_TRUE(ignore_matches(*b, f));
    f.rule = "arch-gate";
    EXPECT_FALSE(ignore_matches(*b, f));
}

TEST(LintIgnore, GlobSemantics) {
    EXPECT_TRUE(glob_match("csrc/*.cu", "csrc/a.cu"));
    EXPECT_FALSE(glob_match("csrc/*.cu", "csrc/sub/a.cu")); // * stays in one component
    EXPECT_TRUE(glob_match("csrc/**/*.cu", "csrc/a.cu"));
    EXPECT_TRUE(glob_match("csrc/**/*.cu", "csrc/x/y/a.cu"));
    EXPECT_TRUE(glob_match("third_party/**", "third_party/cutlass/include/a.h"));
    EXPECT_TRUE(glob_match("third_party", "third_party/cutlass/a.h")); // plain directory
    EXPECT_FALSE(glob_match("third_party", "third_party_x/a.h"));
    EXPECT_TRUE(glob_match("*.cuh", "deep/dir/k.cuh")); // no '/': the file name anywhere
    EXPECT_TRUE(glob_match("setup.py", "setup.py"));
    EXPECT_FALSE(glob_match("setup.py", "setup.pyc"));
    EXPECT_TRUE(glob_match("k?.cu", "k1.cu"));
    EXPECT_FALSE(glob_match("csrc/?", "csrc/ab"));
}
