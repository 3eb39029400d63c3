// Toolkit discovery over fake CUDA roots and the CUDA version type (toolkit/discover.h).
#include "toolkit/discover.h"
#include "toolkit/probe.h"

#include "../fake_toolkit.h"

#include <gtest/gtest.h>

#include "../files.h"
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace forge;
using forge::test::fake_toolkit;
using forge::test::sass;
using namespace forge::toolkit;

namespace {

using forge::test::write_exe;

const char* kNvcc130Version = "nvcc: NVIDIA (R) Cuda compiler driver\n"
                              "Copyright (c) 2005-2025 NVIDIA Corporation\n"
                              "Built on Wed_Aug_20_01:58:59_PM_PDT_2025\n"
                              "Cuda compilation tools, release 13.0, V13.0.88\n"
                              "Build cuda_13.0.r13.0/compiler.36424714_0\n";

} // namespace

TEST(ToolkitVersionTest, ParsesFullVersionFromNvccOutput) {
    auto v = parse_nvcc_version(kNvcc130Version);
    ASSERT_TRUE(v.ok()) << v.error().to_string();
    EXPECT_EQ(v->full(), "13.0.88");
    EXPECT_EQ(v->release(), "13.0");
    auto v12 = parse_nvcc_version("Cuda compilation tools, release 12.8, V12.8.93\n");
    ASSERT_TRUE(v12.ok());
    EXPECT_LT(*v12, *v);
}

TEST(ToolkitVersionTest, RejectsOutputThatIsNotNvcc) {
    EXPECT_FALSE(parse_nvcc_version("nvcc-forge 0.1.0\n").ok());
    EXPECT_FALSE(parse_nvcc_version("").ok());
    // release and V-string disagree: not a toolkit we can trust
    EXPECT_FALSE(parse_nvcc_version("release 12.8, V13.0.88").ok());
}

TEST(ToolkitVersionTest, VersionOrderIsNumericNotLexical) {
    EXPECT_LT(parse_version_text("12.9").value(), parse_version_text("12.10").value());
    EXPECT_LT(parse_version_text("12.8.61").value(), parse_version_text("12.8.93").value());
    EXPECT_FALSE(parse_version_text("12").ok());
    EXPECT_FALSE(parse_version_text("v12.8").ok());
}

// ---- discovery over fake toolkits ---------------------------------------------------------------

namespace {

struct TempTree {
    fs::path root;
    TempTree() {
        std::string tmpl = (fs::temp_directory_path() / "forge-toolkits-XXXXXX").string();
        root = ::mkdtemp(tmpl.data());
    }
    ~TempTree() {
        std::error_code ec;
        fs::remove_all(root, ec);
    }
};

// A CUDA root whose bin/nvcc answers like nvcc `version` would, with a ptxas beside it.
fs::path fake_cuda(const fs::path& root, const std::string& version, const std::string& sms) {
    std::string release = version.substr(0, version.rfind('.'));
    std::string help_values;
    std::string list;
    for (std::size_t pos = 0; pos < sms.size();) {
        auto end = sms.find(' ', pos);
        if (end == std::string::npos) end = sms.size();
        std::string sm = sms.substr(pos, end - pos);
        help_values += "'sm_" + sm + "','sm_" + sm + "a','compute_" + sm + "',";
        list += "echo sm_" + sm + "\n";
        pos = end + 1;
    }
    help_values.pop_back();
    // nvcc --help quotes every value ('sm_90a'): a here-document keeps the quotes.
    const std::string script = "#!/bin/sh\ncase \"$1\" in\n"
                               "--version) echo 'Cuda compilation tools, release " +
                               release + ", V" + version +
                               "';;\n-dryrun) echo '#$ _HERE_=" + (root / "bin").string() +
                               "';;\n--list-gpu-code)\n" + list +
                               ";;\n--help) cat <<'EOF'\nUsage\n--gpu-code <code>\n"
                               "        Allowed values for this option:  " +
                               help_values + ".\n--next-option\nEOF\n;;\nesac\n";
    write_exe(root / "bin" / "nvcc", script);
    write_exe(root / "bin" / "ptxas", "#!/bin/sh\nexit 0\n");
    return root;
}

DiscoveryInputs bare_inputs(const fs::path& tree) {
    DiscoveryInputs in;
    in.usr_local = (tree / "usr_local").string(); // empty: nothing from the real /usr/local
    return in;
}

} // namespace

TEST(DiscoverToolkitsTest, FindsEverySourceAndDedupsByRealpath) {
    TempTree t;
    fake_cuda(t.root / "usr_local" / "cuda-12.8", "12.8.93", "90 100 120");
    fs::create_directory_symlink(t.root / "usr_local" / "cuda-12.8", t.root / "usr_local" / "cuda");
    fake_cuda(t.root / "site" / "nvidia" / "cu13", "13.1.115", "90 110");
    fake_cuda(t.root / "home13", "13.0.88", "90 110 120");
    auto in = bare_inputs(t.root);
    in.site_dirs = {(t.root / "site").string()};
    in.cuda_home = (t.root / "home13").string();
    in.path_env = (t.root / "usr_local" / "cuda" / "bin").string() + ":/nonexistent";
    in.candidates_env =
        (t.root / "home13" / "bin" / "nvcc").string() + ":" + (t.root / "missing").string();

    auto report = discover_toolkits(in);
    ASSERT_EQ(report.toolkits.size(), 3u);
    EXPECT_EQ(report.toolkits[0].version.full(), "12.8.93"); // sorted by version
    EXPECT_EQ(report.toolkits[1].version.full(), "13.0.88");
    EXPECT_EQ(report.toolkits[2].version.full(), "13.1.115");
    // cuda-12.8 seen three ways (PATH through the cuda symlink, cuda-*, cuda): one toolkit
    EXPECT_EQ(report.toolkits[0].nvcc,
              fs::canonical(t.root / "usr_local/cuda-12.8/bin/nvcc").string());
    EXPECT_GE(report.toolkits[0].found_via.size(), 2u);
    EXPECT_EQ(report.toolkits[1].found_via.front(), "NVCC_FORGE_NVCC_CANDIDATES");
    EXPECT_TRUE(report.toolkits[2].can_emit_sass(110));
    EXPECT_FALSE(report.toolkits[0].can_emit_sass(110));
    const auto sass0 = report.toolkits[0].sass();
    EXPECT_NE(std::find(sass0.begin(), sass0.end(), sass(90, arch::Suffix::Specific)), sass0.end());
    bool noted_missing = false;
    for (const auto& s : report.skipped)
        noted_missing |= s.find("missing") != std::string::npos;
    EXPECT_TRUE(noted_missing);
}

TEST(DiscoverToolkitsTest, CandidateRootDirectoryAndBinDirectoryBothWork) {
    TempTree t;
    fake_cuda(t.root / "a", "12.8.93", "90");
    fake_cuda(t.root / "b", "13.0.88", "110");
    auto in = bare_inputs(t.root);
    in.candidates_env = (t.root / "a").string() + ":" + (t.root / "b" / "bin").string();
    auto report = discover_toolkits(in);
    ASSERT_EQ(report.toolkits.size(), 2u);
}

TEST(DiscoverToolkitsTest, TheWrapperItselfNeverCounts) {
    TempTree t;
    fake_cuda(t.root / "real", "13.0.88", "90");
    // a copy of "this binary" named nvcc, first on PATH
    fake_cuda(t.root / "wrap", "13.0.88", "90 100"); // other bytes than the real one
    auto in = bare_inputs(t.root);
    in.path_env = (t.root / "wrap" / "bin").string() + ":" + (t.root / "real" / "bin").string();
    in.self_exe = fs::canonical(t.root / "wrap" / "bin" / "nvcc").string();
    auto report = discover_toolkits(in);
    ASSERT_EQ(report.toolkits.size(), 1u);
    EXPECT_EQ(report.toolkits[0].root, fs::canonical(t.root / "real").string());

    // A byte-identical copy (not a symlink, another path) of the running binary is the wrapper
    // too. The copy is a working toolkit on its own (its -dryrun names its own directory), so
    // only the byte comparison can reject it.
    fake_cuda(t.root / "copy", "13.0.88", "90 100");
    in.path_env = (t.root / "copy" / "bin").string();
    fs::create_directories(t.root / "self");
    in.self_exe = (t.root / "self" / "nvcc-forge").string();
    // Control: the same size, other bytes: a toolkit.
    std::string bytes;
    {
        std::ifstream f(t.root / "copy" / "bin" / "nvcc", std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
    std::string other = bytes;
    other.back() = other.back() == '\n' ? ' ' : '\n';
    std::ofstream(in.self_exe, std::ios::binary) << other;
    auto control = discover_toolkits(in);
    ASSERT_EQ(control.toolkits.size(), 1u);
    EXPECT_EQ(control.toolkits[0].root, fs::canonical(t.root / "copy").string());
    std::ofstream(in.self_exe, std::ios::binary | std::ios::trunc) << bytes;
    auto copy = discover_toolkits(in);
    EXPECT_TRUE(copy.toolkits.empty()) << copy.toolkits[0].root;
    bool said = false;
    for (const auto& s : copy.skipped)
        said |= s.find("nvcc-forge itself") != std::string::npos;
    EXPECT_TRUE(said);
}

TEST(DiscoverToolkitsTest, ALauncherScriptIsTheToolkitItRuns) {
    // /usr/local/bin/nvcc on the CI image is `exec /usr/local/cuda-13.0/bin/nvcc "$@"`.
    TempTree t;
    fake_cuda(t.root / "cuda-13.0", "13.0.88", "90");
    write_exe(t.root / "bin" / "nvcc",
              "#!/bin/sh\nexec " + (t.root / "cuda-13.0" / "bin" / "nvcc").string() + " \"$@\"\n");
    write_exe(t.root / "bin" / "ptxas", "#!/bin/sh\n");
    auto in = bare_inputs(t.root);
    in.path_env = (t.root / "bin").string();
    in.cuda_home = (t.root / "cuda-13.0").string();
    auto report = discover_toolkits(in);
    ASSERT_EQ(report.toolkits.size(), 1u);
    EXPECT_EQ(report.toolkits[0].nvcc,
              fs::canonical(t.root / "cuda-13.0" / "bin" / "nvcc").string());
    EXPECT_EQ(report.toolkits[0].found_via, (std::vector<std::string>{"CUDA_HOME", "PATH"}));
}

TEST(DiscoverToolkitsTest, AnNvccWithoutPtxasBesideItIsAWrapper) {
    TempTree t;
    write_exe(t.root / "ccache" / "nvcc",
              "#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.88'\n");
    auto in = bare_inputs(t.root);
    in.path_env = (t.root / "ccache").string();
    auto report = discover_toolkits(in);
    EXPECT_TRUE(report.toolkits.empty());
    ASSERT_EQ(report.skipped.size(), 1u);
    EXPECT_NE(report.skipped[0].find("no ptxas"), std::string::npos) << report.skipped[0];
}

TEST(DiscoverToolkitsTest, BrokenNvccIsSkippedWithReasonNotFatal) {
    TempTree t;
    write_exe(t.root / "bad" / "bin" / "nvcc", "#!/bin/sh\necho garbage\n");
    write_exe(t.root / "bad" / "bin" / "ptxas", "#!/bin/sh\n");
    fake_cuda(t.root / "good", "13.0.88", "90");
    auto in = bare_inputs(t.root);
    in.candidates_env = (t.root / "bad").string() + ":" + (t.root / "good").string();
    auto report = discover_toolkits(in);
    ASSERT_EQ(report.toolkits.size(), 1u);
    ASSERT_EQ(report.skipped.size(), 1u);
    EXPECT_NE(report.skipped[0].find("bad"), std::string::npos);
}

TEST(DiscoverToolkitsTest, JsonHasTheContractKeys) {
    std::vector<Toolkit> tks{fake_toolkit("13.0.88", {90, 110}, "/usr/local/cuda-13.0/bin/nvcc")};
    tks[0].emittable.insert({arch::Kind::Ptx, 90});
    const std::string json = toolkits_to_json(tks);
    for (const char* needle :
         {"\"version\": \"13.0.88\"", "\"path\": \"/usr/local/cuda-13.0/bin/nvcc\"", "\"sass\": [",
          "\"sm_110\"", "\"ptx\": [", "\"compute_90\""})
        EXPECT_NE(json.find(needle), std::string::npos) << needle << "\n" << json;
}

TEST(ProbeRealToolkitTest, Cuda13AtUsrLocal) {
    if (!fs::exists("/usr/local/cuda/bin/nvcc")) GTEST_SKIP() << "no /usr/local/cuda";
    auto tk = probe_installed("/usr/local/cuda/bin/nvcc");
    ASSERT_TRUE(tk.ok()) << tk.error().to_string();
    EXPECT_GE(tk->version.major, 13);
    EXPECT_TRUE(tk->can_emit_sass(110));
    EXPECT_FALSE(tk->can_emit_sass(60)); // dropped in 13.0
    const auto all_sass = tk->sass();
    EXPECT_NE(std::find(all_sass.begin(), all_sass.end(), sass(100, arch::Suffix::Family)),
              all_sass.end());
    EXPECT_EQ(tk->nvcc, fs::canonical("/usr/local/cuda/bin/nvcc").string());
}
