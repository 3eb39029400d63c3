// Settings a build fixes (launcher arguments, a bound shim) over the environment; the bound
// shim's identity as the caches see it; a shim's nvcc named as the real one.
#include "../temp_dir.h"
#include "core/sha256.h"
#include "frontend/config.h"
#include "frontend/settings.h"
#include "frontend/shim.h"
#include "toolkit/locate.h"

#include "../files.h"
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace forge;
using namespace forge::frontend;

namespace {

using forge::test::slurp;
using forge::test::write_exe;

} // namespace

TEST(Settings, ThePolicyIsReplacedWholeAndTheEnvironmentsValuesAreNamed) {
    FrontendEnv env;
    env.arch_list = "8.0";
    env.package = "flash_attn";
    env.mode = "observe";
    env.log = "/tmp/log";
    ASSERT_TRUE(bind_settings(env, {"NVCC_FORGE_ARCH_LIST=8.0 9.0", "NVCC_FORGE_MODE=inject"},
                              "the launcher's arguments")
                    .ok());
    EXPECT_EQ(env.arch_list, "8.0 9.0");
    EXPECT_EQ(env.package, ""); // a bound policy is the whole policy
    EXPECT_EQ(env.mode, "inject");
    EXPECT_EQ(env.log, "/tmp/log"); // LOG was not fixed: the environment's stays
    EXPECT_EQ(env.bound_by, "the launcher's arguments");
    EXPECT_EQ(env.env_not_used,
              (std::vector<std::string>{"NVCC_FORGE_ARCH_LIST=8.0", "NVCC_FORGE_PACKAGE=flash_attn",
                                        "NVCC_FORGE_MODE=observe"}));
    // The same values as the environment's are not "not used".
    FrontendEnv same;
    same.arch_list = "9.0";
    ASSERT_TRUE(bind_settings(same, {"NVCC_FORGE_ARCH_LIST=9.0"}, "x").ok());
    EXPECT_TRUE(same.env_not_used.empty());
    // MODE alone leaves the environment's policy in place.
    FrontendEnv mode_only;
    mode_only.arch_list = "9.0";
    ASSERT_TRUE(bind_settings(mode_only, {"NVCC_FORGE_MODE=strict"}, "x").ok());
    EXPECT_EQ(mode_only.arch_list, "9.0");
}

TEST(Settings, UnknownOrUnfixableNamesAreErrors) {
    for (const char* bad : {"NVCC_FORGE_BOGUS=1", "NVCC_FORGE_REAL_NVCC=/x", "NVCC_FORGE_DEPTH=1",
                            "NVCC_FORGE_CACHE_DIR=/x", "NVCC_FORGE_=1"}) {
        FrontendEnv env;
        auto st = bind_settings(env, {bad}, "the launcher's arguments");
        ASSERT_FALSE(st.ok()) << bad;
        EXPECT_NE(st.error().to_string().find("the launcher's arguments"), std::string::npos);
    }
    EXPECT_TRUE(is_setting_arg("NVCC_FORGE_ARCH_LIST=9.0"));
    EXPECT_FALSE(is_setting_arg("NVCC_FORGE_ARCH_LIST"));
    EXPECT_FALSE(is_setting_arg("/usr/local/cuda/bin/nvcc"));
}

TEST(Settings, TrailerRoundTripsAndOnlyAFullFooterCounts) {
    const fs::path dir = forge::test::temp_dir("settings_trailer");
    const std::vector<std::string> s{"NVCC_FORGE_ARCH_LIST=8.0 9.0+PTX", "NVCC_FORGE_MODE=inject"};
    write_exe(dir / "exe", std::string("\x7f"
                                       "ELF...image...",
                                       14) +
                               shim_trailer(s));
    auto back = read_shim_settings(dir / "exe");
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, s);
    // Comment lines are identity only.
    write_exe(dir / "c", "image" + shim_trailer({"NVCC_FORGE_MODE=inject", "# wrapper: x"}));
    EXPECT_EQ(*read_shim_settings(dir / "c"), std::vector<std::string>{"NVCC_FORGE_MODE=inject"});
    // No trailer, a cut one, a length past the start of the file: none.
    write_exe(dir / "plain", "just an executable");
    EXPECT_FALSE(read_shim_settings(dir / "plain").has_value());
    const std::string t = shim_trailer(s);
    write_exe(dir / "cut", "image" + t.substr(0, t.size() - 1));
    EXPECT_FALSE(read_shim_settings(dir / "cut").has_value());
    write_exe(dir / "short", t.substr(t.size() - 34));
    EXPECT_FALSE(read_shim_settings(dir / "short").has_value());
    EXPECT_FALSE(read_shim_settings(dir / "missing").has_value());
}

TEST(Settings, ABoundShimIsAnotherCompilerPerPolicyAndTheSameForTheSamePolicy) {
    const fs::path root = forge::test::temp_dir("settings_bind");
    write_exe(root / "nvcc-forge", "the wrapper's bytes");
    write_exe(root / "cuda" / "bin" / "nvcc", "#!/bin/sh\n");
    const fs::path shim = root / "shim";
    ShimPlan plan{root / "cuda", shim, root / "nvcc-forge", {}};
    ASSERT_TRUE(make_shim(plan).ok());
    EXPECT_TRUE(fs::is_symlink(shim / "bin" / "nvcc")); // unbound
    EXPECT_FALSE(fs::exists(shim / "bin" / kShimPolicyFile));

    auto stat_of = [&] {
        struct stat st {};
        EXPECT_EQ(::stat((shim / "bin" / "nvcc").c_str(), &st), 0);
        return std::make_pair(static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL +
                                  st.st_mtim.tv_nsec,
                              slurp(shim / "bin" / "nvcc"));
    };
    const std::vector<std::string> a{"NVCC_FORGE_ARCH_LIST=8.0 9.0", "NVCC_FORGE_MODE=inject"};
    const std::vector<std::string> b{"NVCC_FORGE_ARCH_LIST=8.0 8.9", "NVCC_FORGE_MODE=inject"};
    ASSERT_TRUE(bind_shim(shim, root / "nvcc-forge", a).ok());
    const auto first = stat_of();
    EXPECT_FALSE(fs::is_symlink(shim / "bin" / "nvcc"));
    EXPECT_EQ(first.second.rfind("the wrapper's bytes", 0), 0u);
    EXPECT_EQ(*read_shim_settings(shim / "bin" / "nvcc"), a);
    EXPECT_EQ(slurp(shim / "bin" / kShimPolicyFile),
              "NVCC_FORGE_ARCH_LIST=8.0 9.0\nNVCC_FORGE_MODE=inject\n");
    ASSERT_TRUE(bind_shim(shim, root / "nvcc-forge", b).ok());
    const auto second = stat_of();
    EXPECT_NE(second.first, first.first);   // ccache's compiler_check=mtime
    EXPECT_NE(second.second, first.second); // compiler_check=content, sccache
    ASSERT_TRUE(bind_shim(shim, root / "nvcc-forge", a).ok());
    EXPECT_EQ(stat_of(), first); // the first policy's objects are hits again
    // Unbinding goes back to the symlink and drops the policy file.
    ASSERT_TRUE(bind_shim(shim, root / "nvcc-forge", {}).ok());
    EXPECT_TRUE(fs::is_symlink(shim / "bin" / "nvcc"));
    EXPECT_FALSE(fs::exists(shim / "bin" / kShimPolicyFile));
}

TEST(Settings, EachPolicyBindsAShimOfItsOwnThatNoLaterBindingRewrites) {
    // Two builds at once under one root (CI cells): a cache took the identity of the nvcc its
    // call started with, so the file it then runs must still be that nvcc (frontend/shim.h).
    const fs::path root = forge::test::temp_dir("settings_policy_shims");
    write_exe(root / "nvcc-forge", "the wrapper's bytes");
    write_exe(root / "cuda" / "bin" / "nvcc", "#!/bin/sh\n");
    const fs::path shim = root / "shim";
    ASSERT_TRUE(make_shim({root / "cuda", shim, root / "nvcc-forge", {}}).ok());
    const std::vector<std::string> a{"NVCC_FORGE_ARCH_LIST=8.0 9.0", "NVCC_FORGE_MODE=inject"};
    const std::vector<std::string> b{"NVCC_FORGE_ARCH_LIST=8.0 8.9", "NVCC_FORGE_MODE=inject"};
    auto pa = bind_policy_shim(shim, root / "nvcc-forge", a);
    ASSERT_TRUE(pa.ok()) << pa.error().to_string();
    EXPECT_EQ(pa->parent_path(), shim / kBoundShimsDir);
    EXPECT_TRUE(is_shim(*pa));
    EXPECT_EQ(*read_shim_settings(*pa / "bin" / "nvcc"), a);
    struct stat before {};
    ASSERT_EQ(::stat((*pa / "bin" / "nvcc").c_str(), &before), 0);
    // A second name holds A's file: a rewrite cannot get its inode back (a freed inode is handed
    // to the next file, and the shim's mtime is its identity's, the same on every rewrite).
    const fs::path held = root / "held-nvcc";
    ASSERT_EQ(::link((*pa / "bin" / "nvcc").c_str(), held.c_str()), 0);
    auto pb = bind_policy_shim(shim, root / "nvcc-forge", b);
    ASSERT_TRUE(pb.ok());
    EXPECT_NE(*pb, *pa);
    EXPECT_EQ(*read_shim_settings(*pb / "bin" / "nvcc"), b);
    // A's shim is still A's, the same file: not rewritten by B's binding nor by A's again.
    // A bound shim names its root, spelled with a trailing slash too.
    auto again = bind_policy_shim(pb->string() + "/", root / "nvcc-forge", a);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *pa);
    struct stat after {};
    ASSERT_EQ(::stat((*pa / "bin" / "nvcc").c_str(), &after), 0);
    EXPECT_EQ(after.st_ino, before.st_ino);
    struct stat kept {};
    ASSERT_EQ(::stat(held.c_str(), &kept), 0);
    EXPECT_EQ(kept.st_ino, after.st_ino) << "A's shim was rewritten by a later binding";
    EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
    EXPECT_EQ(*read_shim_settings(*pa / "bin" / "nvcc"), a);
    // The root stays unbound, and no scratch directory is left.
    EXPECT_TRUE(fs::is_symlink(shim / "bin" / "nvcc"));
    int entries = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(shim / kBoundShimsDir))
        ++entries;
    EXPECT_EQ(entries, 2);
    // Not a shim root: an error, nothing made.
    EXPECT_FALSE(bind_policy_shim(root / "cuda", root / "nvcc-forge", a).ok());
}

// The bound shim's identity is the settings, the wrapper's size and mtime (core/file_stamp.h's
// fields, written as stat(2) gives them: seconds, a dot, nanoseconds) and the real nvcc; not the
// wrapper's device, inode or ctime, so a copy of one nvcc-forge that keeps its mtime gets the same
// shim, and its copy the same mtime for ccache (frontend/shim.cpp, bound_identity).
TEST(Settings, ABoundShimsIdentityIsTheWrappersSizeAndMtimeOnly) {
    const fs::path root = forge::test::temp_dir("settings_shim_identity");
    write_exe(root / "nvcc-forge", "the wrapper's bytes");
    write_exe(root / "cuda" / "bin" / "nvcc", "#!/bin/sh\n");
    const fs::path shim = root / "shim";
    ASSERT_TRUE(make_shim({root / "cuda", shim, root / "nvcc-forge", {}}).ok());
    const std::vector<std::string> a{"NVCC_FORGE_ARCH_LIST=8.0 9.0", "NVCC_FORGE_MODE=inject"};
    const fs::path real = fs::canonical(root / "cuda" / "bin" / "nvcc");
    // Before 1970 too: tv_sec -2 with tv_nsec 500000000 is 1.5 s before the epoch.
    for (const timespec mtime : {timespec{1700000000, 123}, timespec{-2, 500000000}}) {
        const fs::path wrapper = root / fmt::format("nvcc-forge.{}", mtime.tv_sec);
        fs::copy_file(root / "nvcc-forge", wrapper);
        const timespec times[2] = {mtime, mtime};
        ASSERT_EQ(::utimensat(AT_FDCWD, wrapper.c_str(), times, 0), 0);
        const std::string identity = fmt::format("{}|{}|{}.{}|{}", shim_trailer(a), 19,
                                                 mtime.tv_sec, mtime.tv_nsec, real.string());
        auto first = bind_policy_shim(shim, wrapper, a);
        ASSERT_TRUE(first.ok()) << first.error().to_string();
        EXPECT_EQ(first->filename(), sha256_hex(identity).substr(0, 16));
        // Another inode (a copy with the mtime kept) and another ctime: the same shim.
        const fs::path moved = wrapper.string() + ".copy";
        fs::copy_file(wrapper, moved);
        ASSERT_EQ(::utimensat(AT_FDCWD, moved.c_str(), times, 0), 0);
        fs::permissions(moved, fs::perms::owner_all);
        auto second = bind_policy_shim(shim, moved, a);
        ASSERT_TRUE(second.ok());
        EXPECT_EQ(*second, *first);
    }
}

TEST(Settings, AShimsNvccNamedAsTheRealOneLeadsToItsMarker) {
    // CMAKE_CUDA_COMPILER=<shim>/bin/nvcc handed to the tools as NVCC_FORGE_REAL_NVCC, and a shim
    // met on PATH: the real nvcc its marker names, never the shim's copy of the wrapper.
    const fs::path root = forge::test::temp_dir("settings_marker");
    write_exe(root / "self", "wrapper");
    write_exe(root / "cuda" / "bin" / "nvcc", "#!/bin/sh\n");
    write_exe(root / "shim" / "bin" / "nvcc", "a bound copy");
    std::ofstream(root / "shim" / "bin" / toolkit::kRealNvccMarker)
        << (root / "cuda" / "bin" / "nvcc").string() << "\n";
    toolkit::LocateInput in;
    in.argv0 = "nvcc-forge";
    in.self = root / "self";
    in.default_cuda_bin = "";
    in.real_nvcc_env = (root / "shim" / "bin" / "nvcc").string();
    auto r = toolkit::locate_real_nvcc(in);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->nvcc, root / "cuda" / "bin" / "nvcc");
    in.real_nvcc_env.clear();
    in.path_env = (root / "shim" / "bin").string();
    r = toolkit::locate_real_nvcc(in);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->nvcc, root / "cuda" / "bin" / "nvcc");
    EXPECT_FALSE(toolkit::usable_nvcc(root / "shim" / "bin" / "nvcc", root / "self"));
}

// Issue 36, 9: a value is one line: a newline would write a second setting into a shim's trailer
// and .nvcc-forge-policy (the shim then ran in observe).
TEST(Settings, AControlCharacterInAValueIsAnError) {
    for (const char* bad : {"NVCC_FORGE_PACKAGE=flash_attn\nNVCC_FORGE_MODE=observe",
                            "NVCC_FORGE_ARCH_LIST=9.0\r", "NVCC_FORGE_LOG=/tmp/x\x1b[2J"}) {
        FrontendEnv env;
        auto st = bind_settings(env, {bad}, "the shim /s");
        ASSERT_FALSE(st.ok()) << bad;
        EXPECT_NE(st.error().message.find("holds a control character"), std::string::npos)
            << st.error().to_string();
        EXPECT_EQ(st.error().message.find('\n'), std::string::npos) << "shown escaped";
        EXPECT_TRUE(env.mode.empty());
    }
}
