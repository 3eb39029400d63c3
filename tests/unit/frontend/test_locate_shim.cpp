// Finding the real nvcc without finding ourselves, the shadow CUDA root, shell quoting, the cache.
#include "../temp_dir.h"
#include "frontend/config.h"
#include "frontend/notice.h"
#include "frontend/shim.h"
#include "toolkit/locate.h"

#include "../files.h"
#include <array>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace forge;
using namespace forge::frontend;
using namespace forge::toolkit;

namespace {

using forge::test::write_exe;

using forge::test::temp_dir;

// A stand-in for the wrapper binary: a file, with `nvcc` symlinks to it.
struct Layout {
    fs::path root, self, wrapdir, realdir;
    explicit Layout(const std::string& name) {
        root = temp_dir(name);
        self = root / "forge" / "nvcc-forge";
        write_exe(self);
        wrapdir = root / "wrap";
        fs::create_directories(wrapdir);
        fs::create_symlink(self, wrapdir / "nvcc");
        realdir = root / "cuda" / "bin";
        write_exe(realdir / "nvcc");
    }
    LocateInput input(const std::string& path_env) const {
        LocateInput in;
        in.argv0 = "nvcc";
        in.path_env = path_env;
        in.self = self;
        in.default_cuda_bin = "";
        return in;
    }
};

} // namespace

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

TEST(Cache, RoundTripAndKeyMismatchIsAMiss) {
    auto dir = temp_dir("cache");
    EXPECT_FALSE(cache_read(dir, "k1"));
    cache_write(dir, "k1", "{\"v\":1}");
    ASSERT_TRUE(cache_read(dir, "k1"));
    EXPECT_EQ(*cache_read(dir, "k1"), "{\"v\":1}");
    EXPECT_FALSE(cache_read(dir, "k2"));
    cache_write(dir, "k1", "{\"v\":2}");
    EXPECT_EQ(*cache_read(dir, "k1"), "{\"v\":2}");
    for (const auto& e : fs::directory_iterator(dir))
        EXPECT_EQ(e.path().extension(), ".json") << "temp file left behind: " << e.path();
    cache_write(dir / "sub" / "deeper", "k", "x"); // created on demand
    EXPECT_TRUE(cache_read(dir / "sub" / "deeper", "k"));
}

// Issue 36, 5: a FIFO as `<hash>.json` hung every nvcc call; a symbolic link there was read (and
// a predictable temporary name written through). Both are a miss now, never a hang. The read runs
// in a child with an alarm, so the old behaviour fails the test instead of hanging it.
TEST(Cache, AFifoOrALinkInAnEntrysPlaceIsAMiss) {
    auto dir = temp_dir("cache_fifo");
    cache_write(dir, "k1", "{\"v\":1}");
    fs::path entry;
    for (const auto& e : fs::directory_iterator(dir))
        entry = e.path();
    ASSERT_FALSE(entry.empty());
    const auto elsewhere = dir / "elsewhere";
    fs::rename(entry, elsewhere);
    fs::create_symlink(elsewhere, entry);
    EXPECT_FALSE(cache_read(dir, "k1")) << "read through a symbolic link";
    fs::remove(entry);
    ASSERT_EQ(::mkfifo(entry.c_str(), 0600), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::alarm(20);
        ::_exit(cache_read(dir, "k1") ? 1 : 0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status))
        << "the cache read blocked on the FIFO (status " << status << ")";
    EXPECT_EQ(WEXITSTATUS(status), 0);
    cache_write(dir, "k1", "{\"v\":2}"); // the FIFO is replaced, not written into
    EXPECT_EQ(cache_read(dir, "k1").value_or(""), "{\"v\":2}");
}

// Issue 36, 5: the cache's entries decide the policy (inject or observe) and the toolkit's
// targets. One that another user wrote (theirs, or one its group or others can write, the key
// and all) was believed; now it is a miss, derived again and rewritten as this user's.
TEST(CacheTrust, AnEntryAnotherUserCouldWriteIsNotBelieved) {
    auto dir = temp_dir("cache_trust");
    const std::string key = "policy-v2|list=|pkg=|torch=";
    cache_write(dir, key, "{\"mode\":\"inject\"}");
    fs::path entry;
    for (const auto& e : fs::directory_iterator(dir))
        entry = e.path();
    ASSERT_FALSE(entry.empty());
    // What the other user writes: the right key, another verdict.
    { std::ofstream(entry, std::ios::trunc) << key << "\n{\"mode\":\"observe\"}"; }
    ::chmod(entry.c_str(), 0666);
    EXPECT_FALSE(cache_read(dir, key)) << "a record others can write was believed";
    cache_write(dir, key, "{\"mode\":\"inject\"}"); // derived again: this user's, 0644
    EXPECT_EQ(cache_read(dir, key).value_or(""), "{\"mode\":\"inject\"}");
    if (::geteuid() == 0) { // another user's entry, 0644, root reading it
        { std::ofstream(entry, std::ios::trunc) << key << "\n{\"mode\":\"observe\"}"; }
        ASSERT_EQ(::chown(entry.c_str(), 65534, 65534), 0);
        ::chmod(entry.c_str(), 0644);
        EXPECT_FALSE(cache_read(dir, key)) << "another user's record was believed";
    }
    fs::remove_all(dir);
}

TEST(Cache, FileStampChangesWithContent) {
    auto dir = temp_dir("stamp");
    auto f = dir / "policy.yml";
    EXPECT_NE(file_stamp(f).find("absent"), std::string::npos);
    std::ofstream(f) << "a";
    auto s1 = file_stamp(f);
    std::ofstream(f) << "ab";
    auto s2 = file_stamp(f);
    EXPECT_NE(s2, s1);
    // A same-size edit, with the mtime put back (as `cp -p` or `touch -r` leave it): size, inode
    // and mtime all equal, only the content differs.
    struct stat before {};
    ASSERT_EQ(::stat(f.c_str(), &before), 0);
    std::ofstream(f) << "xy";
    const struct timespec times[2] = {before.st_atim, before.st_mtim};
    ASSERT_EQ(::utimensat(AT_FDCWD, f.c_str(), times, 0), 0);
    EXPECT_NE(file_stamp(f), s2);
    // Unchanged content, unchanged stamp (the cache must still hit).
    EXPECT_EQ(file_stamp(f), file_stamp(f));
    // The content part on its own: on a file system with a coarse clock a same-size edit within
    // one tick keeps every stat field, and only it tells the edit. (A kernel with fine ctime,
    // as 6.18's, sees the edits above by ctime alone, so they cannot show its loss.)
    const auto content_part = [](const std::string& s) { return s.substr(s.rfind('|')); };
    const auto same = dir / "same.yml";
    const auto other = dir / "other.yml";
    std::ofstream(same) << "xy";
    std::ofstream(other) << "xz";
    EXPECT_EQ(content_part(file_stamp(same)), content_part(file_stamp(f))); // f holds "xy"
    EXPECT_NE(content_part(file_stamp(other)), content_part(file_stamp(f)));
}

TEST(Cache, FileStampSeesALargeFileEditedWithItsMtimePutBack) {
    // Past 1 MiB no content is hashed: a same-size edit with the mtime put back is seen by ctime
    // alone, which the stamp lacked before it took core/file_stamp.h's rule (issue 40).
    auto dir = temp_dir("stamp_large");
    auto f = dir / "nvcc";
    std::ofstream(f, std::ios::binary) << std::string((2u << 20), 'a');
    struct stat before {};
    ASSERT_EQ(::stat(f.c_str(), &before), 0);
    const std::string s1 = file_stamp(f);
    struct stat now {};
    do { // until the coarse clock the kernel stamps ctime with has moved on
        ASSERT_EQ(::chmod(f.c_str(), 0644), 0);
        ASSERT_EQ(::stat(f.c_str(), &now), 0);
    } while (now.st_ctim.tv_sec == before.st_ctim.tv_sec &&
             now.st_ctim.tv_nsec == before.st_ctim.tv_nsec);
    {
        std::fstream io(f, std::ios::binary | std::ios::in | std::ios::out);
        io.seekp(100);
        io.put('b');
    }
    const struct timespec times[2] = {before.st_atim, before.st_mtim};
    ASSERT_EQ(::utimensat(AT_FDCWD, f.c_str(), times, 0), 0);
    EXPECT_NE(file_stamp(f), s1);
}

TEST(Cache, CapsJsonRoundTrip) {
    toolkit::ToolkitCaps caps;
    caps.version.major = 13;
    caps.version.minor = 0;
    caps.default_sm = 75;
    caps.native_sm = 90;
    caps.emittable = {*arch::parse_target("sm_90a"), *arch::parse_target("compute_120f"),
                      *arch::parse_target("lto_80")};
    auto back = caps_from_json(caps_to_json(caps));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->emittable, caps.emittable);
    EXPECT_EQ(back->native_sm, 90);
    EXPECT_FALSE(caps_from_json("{\"major\":13}").ok());
    EXPECT_FALSE(caps_from_json("garbage").ok());
}

TEST(Config, ModeAndDepth) {
    EXPECT_EQ(*parse_mode("strict", "x"), Mode::Strict);
    EXPECT_FALSE(parse_mode("Inject", "NVCC_FORGE_MODE").ok());
    EXPECT_EQ(parse_mode("bogus", "NVCC_FORGE_MODE").error().key, "NVCC_FORGE_MODE");
    FrontendEnv e;
    EXPECT_FALSE(e.policy_configured());
    e.package = "flash_attn";
    EXPECT_TRUE(e.policy_configured());
}

TEST(Config, SourceGlobs) {
    std::vector<std::string> globs = {"*_sm90.cu", "hopper/*.cu"};
    EXPECT_NE(matching_source_glob("csrc/flash_fwd_sm90.cu", globs), nullptr);
    EXPECT_NE(matching_source_glob("../src/hopper/gemm.cu", globs), nullptr);
    EXPECT_NE(matching_source_glob("hopper/gemm.cu", globs), nullptr);
    EXPECT_EQ(*matching_source_glob("../src/hopper/gemm.cu", globs), "hopper/*.cu");
    EXPECT_EQ(matching_source_glob("csrc/flash_fwd.cu", globs), nullptr);
    EXPECT_EQ(matching_source_glob("ampere/gemm.cu", globs), nullptr);
}

namespace {

// A call as parse_invocation() leaves it, for the rule alone (tests/unit/nvcc checks the parse).
nvcc::Invocation call_of(const std::string& source, const std::vector<std::string>& targets) {
    nvcc::Invocation inv;
    inv.sources = {source};
    for (const auto& name : targets) {
        auto t = *arch::parse_target(name);
        inv.requested.insert(t);
        inv.has_a_target = inv.has_a_target || t.suffix == arch::Suffix::Specific;
        inv.has_f_target = inv.has_f_target || t.suffix == arch::Suffix::Family;
    }
    inv.arch_specific = std::all_of(inv.requested.begin(), inv.requested.end(), [](const auto& t) {
        return t.suffix == arch::Suffix::Specific;
    });
    return inv;
}

} // namespace

// docs/arch-rules.md, "Which TUs get targets added": the rule, the log's word, the line's words.
TEST(Config, ArchRuleOfATu) {
    policy::WrapperSettings pkg;
    pkg.arch_specific_sources = {"hopper/*.cu"};
    auto fa = call_of("flash_fwd.cu", {"sm_80", "sm_100f", "compute_120"});
    TuClass c = classify_tu(fa, &pkg);
    EXPECT_EQ(c.rule, ArchRule::PlainTarget);
    EXPECT_FALSE(c.arch_specific());
    EXPECT_TRUE(c.may_inject());
    EXPECT_EQ(arch_rule_string(c.rule), "plain-target");
    EXPECT_EQ(arch_rule_text(c, fa), "generic TU: plain sm_80 beside sm_100f");
    auto fam = call_of("k.cu", {"sm_100f", "sm_120f"});
    c = classify_tu(fam, nullptr);
    EXPECT_EQ(c.rule, ArchRule::FamilyTarget);
    EXPECT_TRUE(c.may_inject());
    EXPECT_EQ(arch_rule_string(c.rule), "family-target");
    EXPECT_EQ(arch_rule_text(c, fam), "generic TU: sm_100f is a family (f) target");
    auto plain = call_of("k.cu", {"sm_80", "compute_80"});
    c = classify_tu(plain, &pkg);
    EXPECT_EQ(c.rule, ArchRule::PlainTarget);
    EXPECT_EQ(arch_rule_text(c, plain), ""); // the ordinary case says nothing
    auto a = call_of("sm90a.cu", {"sm_90a", "sm_100a"});
    c = classify_tu(a, &pkg);
    EXPECT_EQ(c.rule, ArchRule::AOnly);
    EXPECT_TRUE(c.arch_specific());
    EXPECT_FALSE(c.may_inject());
    EXPECT_EQ(arch_rule_string(c.rule), "a-only");
    EXPECT_EQ(arch_rule_text(c, a), "arch-specific TU: every target is `a`");
    auto named = call_of("../src/hopper/gemm.cu", {"sm_90"});
    c = classify_tu(named, &pkg);
    EXPECT_EQ(c.rule, ArchRule::PackageSources);
    EXPECT_EQ(c.glob, "hopper/*.cu");
    EXPECT_FALSE(c.may_inject());
    EXPECT_EQ(arch_rule_string(c.rule), "arch_specific_sources");
    EXPECT_EQ(arch_rule_text(c, named),
              "arch-specific TU: wrapper.arch_specific_sources names it (hopper/*.cu)");
    EXPECT_EQ(classify_tu(named, nullptr).rule, ArchRule::PlainTarget); // no package, no globs
    pkg.inject_arch_specific = true;
    c = classify_tu(a, &pkg);
    EXPECT_TRUE(c.arch_specific());
    EXPECT_TRUE(c.may_inject());
    EXPECT_EQ(arch_rule_text(c, a), "arch-specific TU: every target is `a` (the package opts in: "
                                    "wrapper.inject_arch_specific)");
}

// Issue 36, 5: with `notes` a symbolic link, the prune of old note stamps deleted the old files
// of the folder it points to. The prune works under the folder's descriptor now: a link named
// `notes` is not followed (nor written through), a link inside goes as a link.
TEST(NotesPrune, ASymbolicLinkIsNeverFollowed) {
    if (build_key().empty()) GTEST_SKIP() << "no build driver seen in /proc";
    auto dir = temp_dir("notes_prune");
    const fs::path cache = dir / "cache", victim = dir / "victim";
    fs::create_directories(cache);
    fs::create_directories(victim);
    ::chmod(cache.c_str(), 0755);
    const fs::path old_file = victim / "old-results.csv";
    { std::ofstream(old_file) << "kept\n"; }
    const struct timespec forty_days_ago[2] = {{::time(nullptr) - 40 * 86400, 0},
                                               {::time(nullptr) - 40 * 86400, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, old_file.c_str(), forty_days_ago, 0), 0);
    fs::create_directory_symlink(victim, cache / "notes");
    FrontendEnv env;
    env.cache_dir = cache.string();
    say_once_per_build(env, "prune-test", "nvcc-forge: note: a test note\n");
    EXPECT_TRUE(fs::exists(old_file)) << "the prune followed the link named notes";
    EXPECT_EQ(std::distance(fs::directory_iterator(victim), fs::directory_iterator()), 1)
        << "a stamp was written through the link named notes";
    EXPECT_FALSE(said_in_this_build(env, "prune-test"));

    // A real notes folder: an old link inside goes as a link, its target stays; an old stamp goes.
    fs::remove(cache / "notes");
    fs::create_directories(cache / "notes");
    fs::create_symlink(old_file, cache / "notes" / "old-link");
    ASSERT_EQ(::utimensat(AT_FDCWD, (cache / "notes" / "old-link").c_str(), forty_days_ago,
                          AT_SYMLINK_NOFOLLOW),
              0);
    { std::ofstream(cache / "notes" / "old-stamp"); }
    ASSERT_EQ(::utimensat(AT_FDCWD, (cache / "notes" / "old-stamp").c_str(), forty_days_ago, 0), 0);
    say_once_per_build(env, "prune-test", "nvcc-forge: note: a test note\n");
    EXPECT_TRUE(said_in_this_build(env, "prune-test"));
    EXPECT_FALSE(fs::exists(cache / "notes" / "old-stamp"));
    EXPECT_FALSE(fs::is_symlink(fs::symlink_status(cache / "notes" / "old-link")));
    EXPECT_TRUE(fs::exists(old_file));
    fs::remove_all(dir);
}
