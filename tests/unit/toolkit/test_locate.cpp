// find_real_nvcc: the tools' view of locate_real_nvcc (the front end's rules are tested in
// tests/unit/frontend/test_locate_shim.cpp).
#include "fake_nvcc.h"
#include "toolkit/locate.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

using namespace forge;
using namespace forge::toolkit;

namespace {

using toolkit_test::fake_nvcc;

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
