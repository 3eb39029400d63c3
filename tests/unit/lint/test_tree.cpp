// lint_tree on fixture trees written after the real patterns (tests/fixtures/lint/): the
// flash-attention ladder, the SageAttention whitelist, the pointnet2_ops override, NATTEN-style
// arch-specific CMake targets, a clean tree; plus lint_ignore, the walk and its errors.
#include "../in_child.h"
#include "helpers.h"
#include "lint/lint.h"
#include "lint/report.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <tuple>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace forge;
using namespace forge::lint;

namespace {

const fs::path kFixtures = fs::path(FORGE_TEST_FIXTURES) / "lint";

// The farm's default x86 row for CUDA 12.8 without the opt-in 8.9.
constexpr std::string_view kPolicyNoAda = "8.0 8.6 9.0 10.0 12.0+PTX";

using forge::lint::test::L;

using TreeHit = std::tuple<std::string, int, std::string, std::string>; // file, line, rule, needs

std::vector<TreeHit> hits(const LintReport& r, bool include_ignored = true) {
    std::vector<TreeHit> out;
    for (const auto& f : r.findings)
        if (include_ignored || !f.ignored()) out.emplace_back(f.file, f.line, f.rule, f.needs);
    return out;
}

LintReport lint_at(const fs::path& root, std::string_view list,
                   std::vector<std::string> ignore = {}) {
    LintOptions o;
    o.list = L(list);
    o.ignore = std::move(ignore);
    auto r = lint_tree(root, o);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
    return r.ok() ? *r : LintReport{};
}

class TempTree {
  public:
    TempTree() {
        path_ = fs::path(FORGE_TEST_BINARY_DIR) /
                ("lint_tree_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
        fs::remove_all(path_);
        fs::create_directories(path_);
    }
    ~TempTree() {
        std::error_code ec;
        fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
        fs::remove_all(path_, ec);
    }
    void write(const std::string& rel, std::string_view text) {
        fs::create_directories((path_ / rel).parent_path());
        std::ofstream(path_ / rel, std::ios::binary) << text;
    }
    [[nodiscard]] const fs::path& path() const { return path_; }

  private:
    fs::path path_;
    static inline int counter_ = 0;
};

constexpr std::string_view kAdaGate = "#if __CUDA_ARCH__ >= 890\n#endif\n";

} // namespace

TEST(LintTree, FlashAttentionLadder) {
    auto r = lint_at(kFixtures / "ladder", kPolicyNoAda);
    std::vector<TreeHit> expected = {
        {"setup.py", 10, "script-own-arch-knob", ""}, {"setup.py", 15, "script-emits-gencode", ""},
        {"setup.py", 16, "script-emits-gencode", ""}, {"setup.py", 18, "script-emits-gencode", ""},
        {"setup.py", 19, "script-emits-gencode", ""}, {"setup.py", 21, "script-emits-gencode", ""},
        {"setup.py", 22, "script-emits-gencode", ""}, {"setup.py", 24, "script-emits-gencode", ""},
        {"setup.py", 25, "explicit-target", "11.0"}, // the ladder builds Thor; the list lacks it
        {"setup.py", 25, "script-emits-gencode", ""}, {"setup.py", 27, "script-emits-gencode", ""},
        {"setup.py", 28, "script-emits-gencode", ""},
    };
    EXPECT_EQ(hits(r), expected);
    EXPECT_EQ(r.files_scanned, 3);
    EXPECT_EQ(r.active_count(), expected.size());
}

TEST(LintTree, SageAttentionWhitelistWithoutAda) {
    auto r = lint_at(kFixtures / "whitelist", kPolicyNoAda);
    std::vector<TreeHit> expected = {
        {"csrc/qattn/attn_sm80.cu", 4, "arch-gate",
         "8.9"}, // ARCH_SM89 <= __CUDA_ARCH__ (header macro)
        {"csrc/qattn/attn_sm89.cu", 9, "arch-gate", "8.9"},
        {"csrc/qattn/attn_sm89.cu", 10, "fp8-type", "8.9"},
        {"csrc/qattn/attn_sm90.cu", 6, "arch-feature", "9.0a"},
        {"setup.py", 16, "script-reads-arch-list", ""},
        {"setup.py", 37, "explicit-target", "9.0a"},
        {"setup.py", 38, "script-emits-gencode", ""},
        {"setup.py", 41, "build-arch-gate", "8.9"},
        {"setup.py", 45, "build-arch-gate", "8.9"},
    };
    EXPECT_EQ(hits(r), expected);
    // the comment, block comment and printf mentioning e4m3/e5m2/__CUDA_ARCH__ >= 890 never match
    for (const auto& f : r.findings)
        if (f.file == "csrc/qattn/attn_sm89.cu") EXPECT_TRUE(f.line == 9 || f.line == 10) << f.line;
    const auto& gate = r.findings[0];
    EXPECT_EQ(gate.pattern, "__CUDA_ARCH__ >= ARCH_SM89");
    EXPECT_NE(gate.why.find("csrc/arch.cuh:3"), std::string::npos) << gate.why;
}

TEST(LintTree, DeclaringTheArchsSilencesTheArchFindings) {
    auto r = lint_at(kFixtures / "whitelist", "8.0 8.6 8.9 9.0a 10.0 12.0+PTX");
    // What is left is the script deciding for itself, which no list fixes.
    EXPECT_EQ(hits(r), (std::vector<TreeHit>{{"setup.py", 16, "script-reads-arch-list", ""},
                                             {"setup.py", 38, "script-emits-gencode", ""}}));
}

TEST(LintTree, Pointnet2OverrideOfTheArchList) {
    auto r = lint_at(kFixtures / "override", "7.5 8.0 8.6 9.0 10.0 12.0+PTX");
    EXPECT_EQ(hits(r), (std::vector<TreeHit>{{"setup.py", 16, "explicit-target", "3.7"},
                                             {"setup.py", 16, "explicit-target", "5.0"},
                                             {"setup.py", 16, "explicit-target", "6.0"},
                                             {"setup.py", 16, "explicit-target", "6.1"},
                                             {"setup.py", 16, "explicit-target", "6.2"},
                                             {"setup.py", 16, "explicit-target", "7.0"},
                                             {"setup.py", 16, "script-writes-arch-list", ""}}));
    EXPECT_NE(r.findings.back().pattern.find("os.environ[\"TORCH_CUDA_ARCH_LIST\"] = "),
              std::string::npos)
        << r.findings.back().pattern;
}

TEST(LintTree, ArchSpecificCMakeTargets) {
    auto r = lint_at(kFixtures / "cmake_specific", "8.0 9.0 10.0 12.0+PTX");
    EXPECT_EQ(hits(r),
              (std::vector<TreeHit>{{"CMakeLists.txt", 7, "explicit-target", "9.0a"},
                                    {"CMakeLists.txt", 7, "script-sets-cuda-architectures", ""},
                                    {"CMakeLists.txt", 8, "explicit-target", "9.0a"},
                                    {"CMakeLists.txt", 8, "script-emits-gencode", ""},
                                    {"CMakeLists.txt", 10, "script-reads-arch-list", ""},
                                    {"CMakeLists.txt", 11, "script-reads-arch-list", ""},
                                    {"CMakeLists.txt", 13, "explicit-target", "9.0a"},
                                    {"CMakeLists.txt", 13, "script-writes-arch-list", ""},
                                    {"csrc/hopper/fna_sm90.cu", 3, "arch-feature", "9.0a"}}));
    auto declared = lint_at(kFixtures / "cmake_specific", "8.0 9.0a 10.0 12.0+PTX");
    for (const auto& f : declared.findings)
        EXPECT_TRUE(f.rule.starts_with("script-")) << f.rule;
    EXPECT_EQ(declared.findings.size(), 5u);
}

TEST(LintTree, CleanTree) {
    auto r = lint_at(kFixtures / "clean", "8.0 8.6 9.0+PTX");
    EXPECT_TRUE(r.findings.empty()) << lint_to_text(r, L("8.0"));
    EXPECT_EQ(r.files_scanned, 3);
    EXPECT_EQ(r.active_count(), 0u);
}

TEST(LintTree, LintIgnoreSilencesVisibly) {
    auto r =
        lint_at(kFixtures / "whitelist", kPolicyNoAda,
                {"csrc/qattn/*.cu:fp8-type", "csrc/**:arch-gate", "setup.py", "third_party/**"});
    ASSERT_EQ(r.findings.size(), 9u); // still all reported
    EXPECT_EQ(r.active_count(), 1u);
    EXPECT_EQ(r.ignored_count(), 8u);
    for (const auto& f : r.findings) {
        if (f.rule == "fp8-type")
            EXPECT_EQ(f.ignored_by, "csrc/qattn/*.cu:fp8-type");
        else if (f.rule == "arch-gate")
            EXPECT_EQ(f.ignored_by, "csrc/**:arch-gate");
        else if (f.file == "setup.py")
            EXPECT_EQ(f.ignored_by, "setup.py");
        else
            EXPECT_FALSE(f.ignored()) << f.file << ":" << f.line;
    }
    EXPECT_EQ(hits(r, false),
              (std::vector<TreeHit>{{"csrc/qattn/attn_sm90.cu", 6, "arch-feature", "9.0a"}}));
    EXPECT_EQ(r.unused_ignores, (std::vector<std::string>{"third_party/**"}));

    std::string text = lint_to_text(r, L(kPolicyNoAda));
    EXPECT_NE(text.find("csrc/qattn/attn_sm89.cu:10: fp8-type: __nv_fp8_e4m3 (needs 8.9; list has "
                        "8.0 8.6 9.0 10.0 12.0+PTX) \u2014 ignored (lint_ignore: "
                        "csrc/qattn/*.cu:fp8-type)"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("lint: 1 finding, 8 ignored"), std::string::npos) << text;
    EXPECT_NE(text.find("lint_ignore entry 'third_party/**' matched no finding"),
              std::string::npos);

    auto json = lint_to_json(r);
    ASSERT_TRUE(json.is_array());
    ASSERT_EQ(json.size(), 9u);
    EXPECT_EQ(json[0]["file"], "csrc/qattn/attn_sm80.cu");
    EXPECT_EQ(json[0]["line"], 4);
    EXPECT_EQ(json[0]["rule"], "arch-gate");
    EXPECT_EQ(json[0]["needs"], "8.9");
    EXPECT_EQ(json[0]["ignored"], true);
    EXPECT_EQ(json[0]["ignored_by"], "csrc/**:arch-gate");
    EXPECT_EQ(json[3]["ignored"], false);
    EXPECT_TRUE(json[3]["ignored_by"].is_null());
    EXPECT_TRUE(json[4]["needs"].is_null()); // script rules need no arch
    EXPECT_FALSE(json[3]["why"].get<std::string>().empty());
}

TEST(LintTree, BadIgnoreEntryAndMissingRootAreInputErrors) {
    LintOptions o;
    o.list = L("8.0");
    o.ignore = {"csrc/x.cu:fp8"};
    o.ignore_origin = "packages/demo/arch_override.yml lint_ignore";
    auto r = lint_tree(kFixtures / "clean", o);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().exit_code, kExitInput);
    EXPECT_EQ(r.error().key, "csrc/x.cu:fp8");
    EXPECT_NE(r.error().to_string().find("packages/demo/arch_override.yml"), std::string::npos);

    o.ignore.clear();
    auto missing = lint_tree(kFixtures / "no_such_tree", o);
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().exit_code, kExitInput);
    EXPECT_NE(missing.error().file.find("no_such_tree"), std::string::npos);
}

TEST(LintTree, WalkSkipsVcsBuildBinaryHugeAndLinks) {
    TempTree t;
    t.write("src/a.cu", kAdaGate);
    t.write(".git/hooks/x.cu", kAdaGate);
    t.write("build/gen/b.cu", kAdaGate);
    t.write("pkg.egg-info/c.cu", kAdaGate);
    t.write("node_modules/d.cu", kAdaGate);
    t.write("src/notes.txt", kAdaGate); // neither a source nor a build file
    t.write("src/bin.cu", std::string("#if __CUDA_ARCH__ >= 890\n\0\n", 28));
    t.write("src/huge.cu", std::string(kAdaGate) + std::string(4096, ' '));
    fs::create_symlink(t.path() / "src/a.cu", t.path() / "src/link.cu");
    LintOptions o;
    o.list = L("8.0 8.6");
    o.max_file_bytes = 1024;
    auto r = lint_tree(t.path(), o);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(hits(*r), (std::vector<TreeHit>{{"src/a.cu", 1, "arch-gate", "8.9"}}));
    ASSERT_EQ(r->skipped.size(), 1u);
    EXPECT_NE(r->skipped[0].find("src/huge.cu"), std::string::npos) << r->skipped[0];
    EXPECT_FALSE(r->unreadable);
}

TEST(LintTree, SingleFileAndDeterministicOrder) {
    TempTree t;
    t.write("z.cu", kAdaGate);
    t.write("a/b.cu", kAdaGate);
    t.write("a/a.cu", std::string("\n") + std::string(kAdaGate));
    auto r = lint_at(t.path(), "8.0 8.6");
    EXPECT_EQ(hits(r), (std::vector<TreeHit>{{"a/a.cu", 2, "arch-gate", "8.9"},
                                             {"a/b.cu", 1, "arch-gate", "8.9"},
                                             {"z.cu", 1, "arch-gate", "8.9"}}));
    auto one = lint_at(t.path() / "z.cu", "8.0 8.6");
    EXPECT_EQ(hits(one), (std::vector<TreeHit>{{"z.cu", 1, "arch-gate", "8.9"}}));
}

TEST(LintTree, UnreadableFileMakesTheScanIncomplete) {
    TempTree t;
    t.write("a.cu", kAdaGate);
    t.write("b.cu", kAdaGate);
    fs::permissions(t.path() / "b.cu", fs::perms::none);
    // Root reads a file whatever its mode (and CI runs as root): the scan then runs in a child
    // that drops to nobody (65534), and reports back through a pipe.
    const bool root = ::geteuid() == 0;
    if (root) {
        fs::permissions(t.path(), fs::perms::owner_all | fs::perms::group_read |
                                      fs::perms::group_exec | fs::perms::others_read |
                                      fs::perms::others_exec);
        fs::permissions(t.path() / "a.cu", fs::perms::owner_read | fs::perms::owner_write |
                                               fs::perms::group_read | fs::perms::others_read);
    }
    const auto child = forge::test::in_child([&] {
        if (root && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
        if (std::FILE* probe = std::fopen((t.path() / "b.cu").c_str(), "r")) {
            std::fclose(probe);
            ::_exit(4); // still readable: the test would prove nothing
        }
        auto r = lint_at(t.path(), "8.0 8.6");
        std::string out = r.unreadable ? "unreadable\n" : "readable\n";
        for (const auto& [file, line, rule, needs] : hits(r))
            out += "hit " + file + ":" + std::to_string(line) + ":" + rule + ":" + needs + "\n";
        for (const auto& s : r.skipped)
            out += "skipped " + s + "\n";
        return out;
    });
    const int status = child.status;
    const std::string& got = child.out;
    fs::permissions(t.path() / "b.cu", fs::perms::owner_all);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "child status " << status << " (3: cannot drop privileges, 4: b.cu still readable)";
    EXPECT_EQ(got.substr(0, got.find('\n')), "unreadable") << got;
    EXPECT_NE(got.find("hit a.cu:1:arch-gate:8.9\n"), std::string::npos) << got;
    EXPECT_EQ(got.find("hit b.cu"), std::string::npos) << got;
    EXPECT_NE(got.find("skipped "), std::string::npos) << got;
    EXPECT_NE(got.find("b.cu", got.find("skipped ")), std::string::npos) << got;
}
