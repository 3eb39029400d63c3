// The front end's configuration (frontend/config.cpp): the cache of derived answers and its
// file stamps, the toolkit caps record, the mode, source globs and the arch rule of a TU.
#include "../temp_dir.h"
#include "frontend/config.h"

#include <algorithm>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
using namespace forge;
using namespace forge::frontend;

namespace {

using forge::test::temp_dir;

} // namespace

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
