// The shadow CUDA root (frontend/shim.cpp) and the shell quoting of the scripts it writes.
#include "../wrapper_layout.h"
#include "frontend/shim.h"
#include "toolkit/locate.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>

namespace fs = std::filesystem;
using namespace forge;
using namespace forge::frontend;
using namespace forge::toolkit;

namespace {

using forge::test::Layout;
using forge::test::write_exe;

} // namespace

TEST(Shim, BuildsAShadowRootAndRefusesForeignDirectories) {
    Layout l("shim");
    fs::path cuda = l.root / "cuda";
    fs::create_directories(cuda / "include");
    std::ofstream(cuda / "include" / "cuda_runtime.h") << "//";
    fs::create_directories(cuda / "lib");
    fs::create_symlink("lib", cuda / "lib64");
    write_exe(cuda / "bin" / "ptxas");
    std::ofstream(cuda / "bin" / "nvcc.profile") << "TOP = $(_HERE_)/..\n";
    ShimPlan plan{cuda, l.root / "shim", l.self};
    ASSERT_TRUE(make_shim(plan).ok());
    fs::path shim = l.root / "shim";
    EXPECT_TRUE(is_shim(shim));
    EXPECT_TRUE(fs::is_symlink(shim / "include"));
    EXPECT_TRUE(fs::exists(shim / "include" / "cuda_runtime.h"));
    EXPECT_TRUE(fs::exists(shim / "lib64"));
    EXPECT_FALSE(fs::is_symlink(shim / "bin"));
    EXPECT_TRUE(fs::is_directory(shim / "bin"));
    EXPECT_TRUE(same_file(shim / "bin" / "nvcc", l.self));
    EXPECT_TRUE(same_file(shim / "bin" / "ptxas", cuda / "bin" / "ptxas"));
    std::string recorded;
    std::getline(std::ifstream(shim / "bin" / kRealNvccMarker), recorded);
    EXPECT_EQ(recorded, (cuda / "bin" / "nvcc").string());

    // The wrapper started as <shim>/bin/nvcc finds the real one through the marker.
    auto in = l.input("");
    in.argv0 = (shim / "bin" / "nvcc").string();
    in.cuda_home_env = shim.string();
    auto r = locate_real_nvcc(in);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->nvcc, cuda / "bin" / "nvcc");

    // Refresh keeps working; a stale link disappears.
    fs::remove(cuda / "bin" / "ptxas");
    ASSERT_TRUE(make_shim(plan).ok());
    EXPECT_FALSE(fs::is_symlink(shim / "bin" / "ptxas"));

    fs::create_directories(l.root / "foreign");
    std::ofstream(l.root / "foreign" / "keep.txt") << "mine";
    auto foreign = make_shim({cuda, l.root / "foreign", l.self});
    ASSERT_FALSE(foreign.ok());
    EXPECT_TRUE(fs::exists(l.root / "foreign" / "keep.txt"));
    EXPECT_FALSE(make_shim({l.root / "nothing", l.root / "shim2", l.self}).ok());
    // A CUDA root whose nvcc is the wrapper cannot be shimmed.
    EXPECT_FALSE(make_shim({shim, l.root / "shim3", l.self}).ok());
}

TEST(ShellQuote, SurvivesEvalForAnyBytes) {
    const std::string nasty = "a b'c\"d$HOME`x`\\e;f\n*";
    std::string cmd = "printf %s " + shell_quote(nasty);
    FILE* p = ::popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    std::array<char, 256> buf{};
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0)
        out.append(buf.data(), n);
    ::pclose(p);
    EXPECT_EQ(out, nasty);
    EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}
