// Finding the real nvcc without finding ourselves (locate_real_nvcc, the front end's rules), the
// depth marker, and find_real_nvcc: the tools' view of locate_real_nvcc.
#include "../wrapper_layout.h"
#include "fake_nvcc.h"
#include "toolkit/locate.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace forge;
using namespace forge::toolkit;
namespace fs = std::filesystem;

namespace {

using forge::test::Layout;
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

TEST(Locate, SkipsItselfOnPathComparingFilesNotNames) {
    Layout l("locate_path");
    auto r = locate_real_nvcc(l.input(l.wrapdir.string() + ":" + l.realdir.string()));
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->nvcc, l.realdir / "nvcc");
    EXPECT_EQ(r->how, "PATH");
}

TEST(Locate, ASecondSymlinkUnderAnotherNameIsStillItself) {
    Layout l("locate_alias");
    fs::create_directories(l.root / "alias");
    fs::create_symlink(l.wrapdir / "nvcc", l.root / "alias" / "nvcc"); // link to a link
    auto r = locate_real_nvcc(l.input((l.root / "alias").string() + ":" + l.realdir.string()));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->nvcc, l.realdir / "nvcc");
}

TEST(Locate, OwnDirTwiceOnPathAndNoRealNvccIsAnErrorListingWhereItLooked) {
    Layout l("locate_loop");
    auto in =
        l.input(l.wrapdir.string() + ":" + l.wrapdir.string() + ":" + (l.wrapdir / ".").string());
    in.cuda_home_env = (l.root / "nocuda").string();
    in.default_cuda_bin = (l.root / "none" / "nvcc").string();
    auto r = locate_real_nvcc(in);
    ASSERT_FALSE(r.ok());
    const auto msg = r.error().message;
    EXPECT_NE(msg.find("is nvcc-forge itself"), std::string::npos) << msg;
    EXPECT_NE(msg.find("CUDA_HOME"), std::string::npos) << msg;
    EXPECT_NE(msg.find((l.root / "none" / "nvcc").string()), std::string::npos) << msg;
    // The same directory three ways is looked at once.
    EXPECT_EQ(msg.find("PATH:"), msg.rfind("PATH:")) << msg;
}

TEST(Locate, FallsBackToCudaHomeThenDefault) {
    Layout l("locate_fallback");
    auto in = l.input(l.wrapdir.string());
    in.cuda_home_env = (l.root / "cuda").string();
    auto r = locate_real_nvcc(in);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->how, "CUDA_HOME");
    in.cuda_home_env = l.wrapdir.parent_path().string() + "/wrap-is-not-a-root";
    in.default_cuda_bin = (l.realdir / "nvcc").string();
    r = locate_real_nvcc(in);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->how, "default");
}

TEST(Locate, CudaHomeThatIsTheWrapperIsSkipped) {
    Layout l("locate_cudahome_self");
    auto in = l.input("");
    in.cuda_home_env = l.wrapdir.parent_path().string(); // .../wrap has no bin/
    fs::create_directories(l.root / "shimroot" / "bin");
    fs::create_symlink(l.self, l.root / "shimroot" / "bin" / "nvcc");
    in.cuda_home_env = (l.root / "shimroot").string();
    auto r = locate_real_nvcc(in);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("is nvcc-forge itself"), std::string::npos);
}

TEST(Locate, ExplicitEnvWinsAndMustNotBeItself) {
    Layout l("locate_env");
    auto in = l.input(l.wrapdir.string());
    in.real_nvcc_env = (l.realdir / "nvcc").string();
    auto r = locate_real_nvcc(in);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->how, "NVCC_FORGE_REAL_NVCC");
    in.real_nvcc_env = (l.wrapdir / "nvcc").string();
    in.cuda_home_env = (l.root / "cuda").string(); // would work, but an explicit setting is binding
    r = locate_real_nvcc(in);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("NVCC_FORGE_REAL_NVCC"), std::string::npos);
}

TEST(Locate, MarkerBesideTheInvokedSymlink) {
    Layout l("locate_marker");
    std::ofstream(l.wrapdir / kRealNvccMarker) << (l.realdir / "nvcc").string() << "\n";
    auto in = l.input("/nonexistent");
    in.argv0 = (l.wrapdir / "nvcc").string();
    auto r = locate_real_nvcc(in);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->nvcc, l.realdir / "nvcc");
    EXPECT_NE(r->how.find("marker"), std::string::npos);
    // Invoked by bare name through PATH: the marker of the PATH entry that is us.
    in.argv0 = "nvcc";
    in.path_env = l.wrapdir.string();
    EXPECT_EQ(invocation_dir(in), l.wrapdir);
    r = locate_real_nvcc(in);
    ASSERT_TRUE(r.ok());
    EXPECT_NE(r->how.find("marker"), std::string::npos);
}

TEST(Locate, FindOnPathSkipsSelfAndNonExecutables) {
    Layout l("locate_find");
    fs::create_directories(l.root / "noexec");
    std::ofstream(l.root / "noexec" / "nvcc") << "x";
    std::string path =
        l.wrapdir.string() + ":" + (l.root / "noexec").string() + ":" + l.realdir.string();
    auto p = find_on_path("nvcc", path, l.self);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->nvcc, l.realdir / "nvcc");
    EXPECT_EQ(p->found, l.realdir / "nvcc");
    EXPECT_FALSE(find_on_path((l.wrapdir / "nvcc").string(), path, l.self));
    EXPECT_FALSE(find_on_path("nvcc", l.wrapdir.string(), l.self));
}

TEST(Locate, FoundKeepsThePathAsSpelledWhileNvccIsResolved) {
    // A toolkit reached through a version symlink (/usr/local/cuda -> cuda-13.0): exec'd as found.
    Layout l("locate_spelled");
    fs::create_directory_symlink(l.root / "cuda", l.root / "cuda-link");
    const fs::path spelled = l.root / "cuda-link" / "bin" / "nvcc";
    auto p = find_on_path(spelled.string(), "", l.self);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->found, spelled);
    EXPECT_EQ(p->nvcc, l.realdir / "nvcc");
    p = find_on_path("nvcc", (l.root / "cuda-link" / "bin").string(), l.self);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->found, spelled);
    auto in = l.input(l.wrapdir.string() + ":" + (l.root / "cuda-link" / "bin").string());
    auto r = locate_real_nvcc(in);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->found, spelled);
    EXPECT_EQ(r->nvcc, l.realdir / "nvcc");
    in = l.input("");
    in.cuda_home_env = (l.root / "cuda-link").string();
    r = locate_real_nvcc(in);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->found, spelled);
    EXPECT_EQ(exec_path(*r), spelled);
    // A toolkit (nvcc.profile beside nvcc): reached through a directory link, still as spelled;
    // through a file link named nvcc elsewhere nvcc would not find its profile: resolved.
    std::ofstream(l.realdir / "nvcc.profile") << "TOP = $(_HERE_)/..\n";
    EXPECT_EQ(exec_path(*r), spelled);
    fs::create_directories(l.root / "elsewhere");
    fs::create_symlink(spelled, l.root / "elsewhere" / "nvcc");
    p = find_on_path((l.root / "elsewhere" / "nvcc").string(), "", l.self);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->found, l.root / "elsewhere" / "nvcc");
    EXPECT_EQ(exec_path(*p), l.realdir / "nvcc");
}

TEST(DepthMarker, OnlyAMarkerOfThisCallChainMeansInnerCall) {
    EXPECT_EQ(read_depth_marker("").depth, 0);
    EXPECT_FALSE(read_depth_marker("").ignored);
    // Set by this process (a wrapper that exec'd into us keeps pid and start time) or by an
    // ancestor: believed.
    const std::string mine = depth_marker(1);
    EXPECT_EQ(read_depth_marker(mine).depth, 1);
    EXPECT_FALSE(read_depth_marker(mine).ignored);
    EXPECT_EQ(read_depth_marker(depth_marker(2)).depth, 2);
    auto parents = depth_marker_for(1, static_cast<long>(::getppid()));
    ASSERT_TRUE(parents);
    EXPECT_EQ(read_depth_marker(*parents).depth, 1);
    EXPECT_FALSE(read_depth_marker(*parents).ignored);
    // Inherited, garbage or stale: ignored, depth 0 (the policy applies).
    const std::string pid = std::to_string(::getpid());
    const std::vector<std::string> foreign = {"1",
                                              "abc",
                                              "-1",
                                              "7",
                                              "1:" + pid,
                                              "1:" + pid + ":1",
                                              "0:" + pid + ":0",
                                              "1:" + pid + ":x",
                                              "1:" + pid + ":" + mine.substr(mine.rfind(':') + 1) +
                                                  "0",
                                              "1:999999999:1",
                                              " " + mine,
                                              mine + " ",
                                              "1::1"};
    for (const std::string& v : foreign) {
        EXPECT_EQ(read_depth_marker(v).depth, 0) << v;
        EXPECT_TRUE(read_depth_marker(v).ignored) << v;
    }
}

TEST(DepthMarker, AMarkerOfAProcessNotAboveUsIsIgnored) {
    // A sibling's marker (a finished build's wrapper, a process that is not our ancestor): its
    // pid and start time are real, but it does not run this call.
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t other = ::fork();
    ASSERT_GE(other, 0);
    if (other == 0) {
        char c = 0;
        ::close(fds[1]);
        (void)::read(fds[0], &c, 1); // until the test is done
        ::_exit(0);
    }
    ::close(fds[0]);
    auto theirs = depth_marker_for(1, static_cast<long>(other));
    const bool ignored = theirs && read_depth_marker(*theirs).ignored;
    ::close(fds[1]);
    int st = 0;
    ::waitpid(other, &st, 0);
    ASSERT_TRUE(theirs);
    EXPECT_TRUE(ignored) << *theirs;
}
