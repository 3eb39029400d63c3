// The build-script rules (lint/build_rules.h): targets named in build files, arch-list strings,
// HAS_SMxx gates and scripts that read, write or replace TORCH_CUDA_ARCH_LIST.
#include "helpers.h"
#include "lint/lex.h"
#include "lint/lint.h"
#include "lint/report.h"

#include <gtest/gtest.h>

#include <tuple>

using namespace forge;
using namespace forge::lint;
using namespace forge::lint::test;

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
    EXPECT_TRUE(lint_build_text("README.md", "-gencode arch=compute_90a,code=sm_90a\n", L("8.0"),
                                test_gpus())
                    .empty());
    EXPECT_TRUE(
        lint_source_text("notes.txt", "__nv_fp8_e4m3 x;\n", L("8.0"), MacroTable{}, test_gpus())
            .empty());
    EXPECT_TRUE(is_c_source("a/b.CUH"));
    EXPECT_TRUE(is_build_file("x/CMakeLists.txt"));
    EXPECT_TRUE(is_build_file("cmake/cuda.cmake"));
    EXPECT_TRUE(is_build_file("pyproject.toml"));
    EXPECT_FALSE(is_build_file("CMakeCache.txt"));
}

namespace {

std::vector<LintFinding> split_findings(std::string_view py, std::string_view list,
                                        std::string_view sep) {
    auto all = lint_build_text("setup.py", py, L(list), test_gpus(), sep);
    std::erase_if(all, [](const LintFinding& f) { return f.rule != "script-splits-arch-list"; });
    return all;
}

} // namespace

TEST(LintBuild, SplitsArchListOnSeparatorsTheExportDoesNotUse) {
    const std::string sage = "env = os.getenv(\"TORCH_CUDA_ARCH_LIST\", \"\").strip()\n"
                             "for item in env.replace(\",\", \";\").split(\";\"):\n"
                             "    pass\n";
    auto f = split_findings(sage, "8.0 9.0+PTX", " ");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].line, 2);
    EXPECT_NE(f[0].why.find("exported space-separated ('8.0 9.0+PTX')"), std::string::npos);
    EXPECT_NE(f[0].why.find("sees 1 token ('8.0 9.0+PTX') instead of 2"), std::string::npos);
    EXPECT_NE(f[0].why.find("arch_list_separator: \";\""), std::string::npos);
    EXPECT_TRUE(split_findings(sage, "8.0 9.0+PTX", ";").empty());
    EXPECT_TRUE(split_findings(sage, "8.0 9.0+PTX", ",").empty());
    // The flash_attn mirror image: a plain .split() straight off the read meets the ';' form.
    const std::string plain = "archs = os.environ[\"TORCH_CUDA_ARCH_LIST\"].split()\n";
    f = split_findings(plain, "8.0 9.0", ";");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0].why.find("sees 1 token ('8.0;9.0')"), std::string::npos);
    EXPECT_TRUE(split_findings(plain, "8.0 9.0", " ").empty());
    // A script that handles the space form too, a split the lint cannot follow, another variable.
    EXPECT_TRUE(split_findings("a = os.getenv(\"TORCH_CUDA_ARCH_LIST\")\n"
                               "b = a.replace(\" \", \";\").split(\";\")\n"
                               "c = re.split(r\"[;, ]\", a)\nd = other.split(\";\")\n",
                               "8.0 9.0", " ")
                    .empty());
    // One arch in the list still shows what a longer list would become.
    f = split_findings("x = os.getenv(\"TORCH_CUDA_ARCH_LIST\").split(\",\")\n", "8.0", " ");
    ASSERT_EQ(f.size(), 1u);
}

TEST(LintBuild, LadderLinesFormOneBlock) {
    const std::string py = "cc_flag = []\n"                                         // 1
                           "if a:\n"                                                // 2
                           "    cc_flag.append(\"-gencode\")\n"                     // 3
                           "    cc_flag.append(\"arch=compute_80,code=sm_80\")\n"   // 4
                           "if b:\n"                                                // 5
                           "    cc_flag.append(\"-gencode\")\n"                     // 6
                           "    cc_flag.append(\"arch=compute_110,code=sm_110\")\n" // 7
                           "\n\n\n\n"                                               // 8-11
                           "x = [\"-gencode=arch=compute_90,code=compute_90\"]\n";  // 12
    auto found = lint_build_text("setup.py", py, L("8.0 9.0+PTX"), test_gpus());
    for (const auto& f : found) {
        if (f.line <= 7) {
            EXPECT_EQ(std::pair(f.block_first, f.block_last), std::pair(3, 7)) << f.line;
            EXPECT_EQ(f.block_summary, "emits sm_80 sm_110; the list wants sm_90 compute_90 that "
                                       "it lacks; it adds sm_110 beyond the list");
        } else {
            EXPECT_EQ(f.block_first, 0) << "a lone line is not a block: " << f.line;
        }
    }
    LintReport report;
    report.findings = found;
    report.files_scanned = 1;
    const std::string text = lint_to_text(report, L("8.0 9.0+PTX"));
    EXPECT_NE(text.find("setup.py:3-7: script-emits-gencode: a target block of lines 3-7: emits"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.find("setup.py:4:"), std::string::npos) << text;
    EXPECT_NE(text.find("setup.py:12: script-emits-gencode:"), std::string::npos) << text;
    EXPECT_NE(text.find("lint: 2 findings"), std::string::npos) << text;
    // A block whose every line is ignored is one ignored finding.
    for (auto& f : report.findings)
        if (f.block_first != 0) f.ignored_by = "setup.py";
    EXPECT_NE(lint_to_text(report, L("8.0 9.0+PTX")).find("lint: 1 finding, 1 ignored"),
              std::string::npos);
}
