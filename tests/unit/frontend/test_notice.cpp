// The notes said once per build (frontend/notice.cpp) and the prune of their old stamps.
#include "../temp_dir.h"
#include "frontend/config.h"
#include "frontend/notice.h"

#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <sys/stat.h>

namespace fs = std::filesystem;
using namespace forge;
using namespace forge::frontend;

namespace {

using forge::test::temp_dir;

} // namespace

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
