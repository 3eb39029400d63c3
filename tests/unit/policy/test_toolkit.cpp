#include "helpers.h"

#include "policy/toolkit.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace forge;
using namespace forge::policy;
using namespace forge::policy::test;

namespace {

std::string read(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

struct EnvGuard {
    std::string name;
    std::optional<std::string> old;
    EnvGuard(std::string n, const std::string& value) : name(std::move(n)) {
        if (const char* v = std::getenv(name.c_str())) old = v;
        ::setenv(name.c_str(), value.c_str(), 1);
    }
    ~EnvGuard() {
        if (old)
            ::setenv(name.c_str(), old->c_str(), 1);
        else
            ::unsetenv(name.c_str());
    }
};

// A stand-in nvcc that prints captured real output (13.0 --version / --help / --list-gpu-code).
std::filesystem::path fake_nvcc(const std::string& version_dir, bool with_help) {
    auto dir =
        std::filesystem::temp_directory_path() / ("forge_fake_nvcc_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto path = dir / "nvcc";
    std::ofstream out(path);
    std::string fx = fixtures() + "/" + version_dir;
    out << "#!/bin/sh\ncase \"$1\" in\n"
        << "  --version) cat '" << fx << "/version.txt' ;;\n"
        << "  --help) " << (with_help ? "cat '" + fx + "/help.txt'" : "echo 'no help here'")
        << " ;;\n"
        << "  --list-gpu-code) cat '" << fx << "/list-gpu-code.txt' ;;\n"
        << "  *) exit 1 ;;\nesac\n";
    out.close();
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path;
}

} // namespace

TEST(ToolkitParsers, VersionFromRealOutput) {
    EXPECT_EQ(*parse_nvcc_version(read(fixtures() + "/nvcc-13.0/version.txt")), "13.0.88");
    EXPECT_EQ(*parse_nvcc_version(read(fixtures() + "/nvcc-13.2/version.txt")), "13.2.86");
    EXPECT_EQ(*parse_nvcc_version("Cuda compilation tools, release 12.4"), "12.4");
    EXPECT_FALSE(parse_nvcc_version("gcc (Debian 12.2.0-14) 12.2.0").ok());
}

TEST(ToolkitParsers, HelpAllowedValuesIncludeSuffixedTargets) {
    auto targets = parse_help_targets(read(fixtures() + "/nvcc-13.0/help.txt"));
    EXPECT_TRUE(targets.count(*arch::parse_target("sm_90a")));
    EXPECT_TRUE(targets.count(*arch::parse_target("compute_100f")));
    EXPECT_TRUE(targets.count(*arch::parse_target("lto_121a")));
    EXPECT_TRUE(targets.count(*arch::parse_target("sm_88")));
    EXPECT_FALSE(targets.count(*arch::parse_target("sm_70")));
    EXPECT_FALSE(targets.count(*arch::parse_target("sm_101")));
    // --help's other "Allowed values" lists (e.g. -cudart none/shared/static) add nothing
    EXPECT_EQ(targets.size(), 23u * 3u);
    auto plain = parse_list_gpu_code(read(fixtures() + "/nvcc-13.0/list-gpu-code.txt"));
    EXPECT_EQ(plain.size(), 12u);
    EXPECT_TRUE(plain.count(*arch::parse_target("sm_110")));
    EXPECT_TRUE(parse_help_targets("no such option").empty());
}

TEST(ToolkitProbe, ReadsAFakeNvcc) {
    auto nvcc = fake_nvcc("nvcc-13.0", true);
    auto tk = probe_toolkit(nvcc);
    ASSERT_TRUE(tk.ok()) << tk.error().to_string();
    EXPECT_EQ(tk->cuda, "13.0");
    EXPECT_EQ(tk->full_version, "13.0.88");
    EXPECT_TRUE(tk->emittable.count(*arch::parse_target("sm_100f")));
    // without usable --help, --list-gpu-code gives the plain targets
    auto nohelp = fake_nvcc("nvcc-13.2", false);
    auto tk2 = probe_toolkit(nohelp);
    ASSERT_TRUE(tk2.ok()) << tk2.error().to_string();
    EXPECT_EQ(tk2->cuda, "13.2");
    EXPECT_TRUE(tk2->emittable.count(*arch::parse_target("compute_121")));
    EXPECT_FALSE(tk2->emittable.count(*arch::parse_target("sm_90a")));
    std::filesystem::remove_all(nvcc.parent_path());
}

TEST(ToolkitProbe, FindRealNvccHonoursTheEnvironment) {
    auto nvcc = fake_nvcc("nvcc-13.0", true);
    {
        EnvGuard env("NVCC_FORGE_REAL_NVCC", nvcc.string());
        auto found = find_real_nvcc();
        ASSERT_TRUE(found.ok());
        EXPECT_EQ(*found, nvcc);
    }
    {
        EnvGuard env("NVCC_FORGE_REAL_NVCC", "/nonexistent/nvcc");
        auto found = find_real_nvcc();
        ASSERT_FALSE(found.ok());
        EXPECT_EQ(found.error().key, "NVCC_FORGE_REAL_NVCC");
    }
    {
        EnvGuard unset_real("NVCC_FORGE_REAL_NVCC", "");
        EnvGuard path("PATH", nvcc.parent_path().string() + ":/usr/bin");
        auto found = find_real_nvcc();
        ASSERT_TRUE(found.ok());
        EXPECT_EQ(*found, nvcc);
    }
    std::filesystem::remove_all(nvcc.parent_path());
}

TEST(ToolkitProbe, ResolveWithoutCudaUsesTheProbedToolkit) {
    ResolveRequest req;
    ToolkitInfo tk;
    tk.nvcc = "/fake/nvcc";
    tk.cuda = "13.0";
    tk.full_version = "13.0.88";
    // a toolkit that cannot emit sm_75: the probe, not the table, clamps
    for (int sm : {80, 86, 90, 100, 120})
        for (auto k : {arch::Kind::Sass, arch::Kind::Ptx})
            tk.emittable.insert(arch::Target{k, sm, arch::Suffix::None});
    req.toolkit = tk;
    auto r = resolve_loaded(req, shipped(), nullptr, gpus());
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->cuda, "13.0");
    EXPECT_EQ(r->list.to_string(), "8.0 8.6 9.0+PTX 10.0 12.0+PTX");
    ASSERT_EQ(r->clamped.size(), 1u);
    EXPECT_NE(r->clamped[0].reason.find("nvcc 13.0.88 cannot emit sm_75"), std::string::npos);
    EXPECT_NE(r->nvcc_source.find("/fake/nvcc"), std::string::npos);
}

TEST(RunCapture, ErrorsAreValues) {
    EXPECT_FALSE(run_capture({"/nonexistent/binary"}).ok());
    EXPECT_FALSE(run_capture({"/bin/false"}).ok());
    auto echo = run_capture({"/bin/echo", "a;b", "$HOME"}); // no shell: nothing expands
    ASSERT_TRUE(echo.ok());
    EXPECT_EQ(*echo, "a;b $HOME\n");
}
