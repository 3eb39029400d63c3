// find_real_nvcc: the tools' view of locate_real_nvcc (the front end's rules are tested in
// tests/unit/frontend/test_locate_shim.cpp).
#include "toolkit/locate.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

using namespace forge;
using namespace forge::toolkit;

namespace {

std::string fixtures() {
    return std::string(FORGE_TEST_FIXTURES) + "/toolkit";
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
