// core/file.h, the one way a file another user may control is opened or created: a symbolic link
// is never followed (nor its dangling target created), a FIFO never blocks the open and is
// refused, the stamp is the descriptor's, and a new file is created O_EXCL under a fresh name.
#include "../files.h"
#include "../temp_dir.h"
#include "core/file.h"
#include "core/paths.h"

#include <fcntl.h>
#include <fstream>
#include <gtest/gtest.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

using namespace forge;

TEST(File, ASymbolicLinkIsNeverFollowed) {
    const auto dir = forge::test::temp_dir("file_symlink");
    const auto target = dir / "secret";
    { std::ofstream(target) << "root's\n"; }
    const auto link = dir / "log";
    std::filesystem::create_symlink(target, link);
    for (int flags : {O_RDONLY, O_WRONLY | O_APPEND | O_CREAT}) {
        auto f = open_file(link, flags, FileKind::RegularOrDevice);
        ASSERT_FALSE(f.ok()) << flags;
        EXPECT_NE(f.error().message.find("a symbolic link: not followed"), std::string::npos)
            << f.error().to_string();
    }
    EXPECT_EQ(forge::test::slurp(target.string()), "root's\n");
    // A dangling link: its target is not created.
    const auto dangling = dir / "dangling";
    std::filesystem::create_symlink(dir / "created-by-root", dangling);
    EXPECT_FALSE(open_file(dangling, O_WRONLY | O_APPEND | O_CREAT, FileKind::Regular).ok());
    EXPECT_FALSE(std::filesystem::exists(dir / "created-by-root"));
    std::filesystem::remove_all(dir);
}

TEST(File, AFifoIsRefusedWithoutBlocking) {
    const auto dir = forge::test::temp_dir("file_fifo");
    const auto fifo = dir / "pack";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const int writer_side = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK); // a reader and a writer
    ASSERT_GE(writer_side, 0);
    auto f = open_file(fifo, O_RDONLY, FileKind::Regular); // would block without O_NONBLOCK
    ASSERT_FALSE(f.ok());
    EXPECT_NE(f.error().message.find("not a regular file"), std::string::npos);
    ::close(writer_side);
    EXPECT_FALSE(open_file("/dev/null", O_WRONLY, FileKind::Regular).ok());
    EXPECT_TRUE(open_file("/dev/null", O_WRONLY, FileKind::RegularOrDevice).ok());
    std::filesystem::remove_all(dir);
}

TEST(File, TheStampIsTheDescriptorsAndANewFileIsExclusive) {
    const auto dir = forge::test::temp_dir("file_create");
    std::set<std::string> names;
    for (int i = 0; i < 8; ++i) {
        std::string path;
        auto f = create_unique(dir, ".w.stamp-", &path);
        ASSERT_TRUE(f.ok()) << f.error().to_string();
        EXPECT_TRUE(names.insert(path).second) << path;
        struct stat st {};
        ASSERT_EQ(::fstat(f->get(), &st), 0);
        EXPECT_EQ(st.st_mode & 07777, 0600u);
        ASSERT_EQ(::write(f->get(), "abc", 3), 3);
        struct stat again {};
        auto opened = open_file(path, O_RDONLY, FileKind::Regular, &again);
        ASSERT_TRUE(opened.ok());
        EXPECT_EQ(again.st_ino, st.st_ino);
        EXPECT_EQ(again.st_size, 3);
    }
    EXPECT_FALSE(create_unique(dir / "missing", "x", nullptr).ok());
    std::filesystem::remove_all(dir);
}

// Issue 36, 5: a cache directory another user can write (or owns) is ignored with a warning.
TEST(File, ADirectoryAnotherUserCanWriteIsNotTrusted) {
    const auto dir = forge::test::temp_dir("file_trust");
    const auto cache = dir / "cache";
    EXPECT_EQ(untrusted_directory(cache), ""); // not there yet: created by this user
    std::filesystem::create_directories(cache);
    ::chmod(cache.c_str(), 0755);
    EXPECT_EQ(untrusted_directory(cache), "");
    ::chmod(cache.c_str(), 0777);
    EXPECT_NE(untrusted_directory(cache).find("other users can write it"), std::string::npos);
    EXPECT_TRUE(cache_root(cache.string()).empty()) << "an untrusted cache is not used";
    ::chmod(cache.c_str(), 0755);
    EXPECT_EQ(cache_root(cache.string()), cache);
    std::filesystem::create_directory_symlink(cache, dir / "link");
    EXPECT_NE(untrusted_directory(dir / "link").find("symbolic link"), std::string::npos);
    if (::geteuid() == 0) { // another user's directory, root running
        ASSERT_EQ(::chown(cache.c_str(), 65534, 65534), 0);
        EXPECT_NE(untrusted_directory(cache).find("belongs to user 65534"), std::string::npos);
    }
    std::filesystem::remove_all(dir);
}
