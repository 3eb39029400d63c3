// core/file.h, the one way a file another user may control is opened or created: a symbolic link
// is never followed (nor its dangling target created), a FIFO never blocks the open and is
// refused, the stamp is the descriptor's, and a new file is created O_EXCL under a fresh name.
#include "../files.h"
#include "../temp_dir.h"
#include "core/file.h"
#include "core/paths.h"

#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <gtest/gtest.h>
#include <set>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
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

// Issue 36: read_file (policy and package YAML) opened a FIFO in a file's place blocking, and
// waited for a writer forever. Now it is an error naming the file, at once. The read runs in a
// child with an alarm, so the old behaviour fails the test instead of hanging it.
TEST(File, ReadFileRefusesAFifoWithoutBlocking) {
    const auto dir = forge::test::temp_dir("file_read_fifo");
    const auto fifo = dir / "policy.yaml";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::alarm(20);
        auto text = read_file(fifo);
        const bool named = !text.ok() && text.error().file == fifo.string() &&
                           text.error().message.find("not a regular file") != std::string::npos;
        ::_exit(named ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status)) << "read_file blocked on the FIFO (status " << status << ")";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "not an error naming the FIFO";
    // A regular file, and a link to one (the user's own configuration), are read as before.
    { std::ofstream(dir / "real.yaml") << "a: 1\n"; }
    std::filesystem::create_symlink(dir / "real.yaml", dir / "link.yaml");
    for (const char* name : {"real.yaml", "link.yaml"}) {
        auto text = read_file(dir / name);
        ASSERT_TRUE(text.ok()) << text.error().to_string();
        EXPECT_EQ(*text, "a: 1\n");
    }
    auto missing = read_file(dir / "missing.yaml");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().file, (dir / "missing.yaml").string());
    EXPECT_NE(missing.error().message.find("cannot read file"), std::string::npos);
    std::filesystem::remove_all(dir);
}

// Issue 36, 5-6: a cached record decides only when this user owns it and nobody else can write
// it; its checksum proves nothing, as whoever could write the file could recompute it.
TEST(CacheTrust, ARecordIsBelievedOnlyWhenOwnedAndNotWritableByOthers) {
    const auto dir = forge::test::temp_dir("file_record_trust");
    const auto record = dir / "entry.json";
    { std::ofstream(record) << "cached\n"; }
    ::chmod(record.c_str(), 0644);
    struct stat st {};
    auto text = read_regular_file(record, 1 << 20, &st);
    ASSERT_TRUE(text.ok()) << text.error().to_string();
    EXPECT_EQ(untrusted_record(st), "");
    for (mode_t mode : {0664, 0646, 0666}) {
        ::chmod(record.c_str(), mode);
        ASSERT_TRUE(read_regular_file(record, 1 << 20, &st).ok());
        EXPECT_NE(untrusted_record(st).find("other users can write it"), std::string::npos)
            << std::oct << mode;
    }
    ::chmod(record.c_str(), 0644);
    if (::geteuid() == 0) { // another user's file, root reading it
        ASSERT_EQ(::chown(record.c_str(), 65534, 65534), 0);
        ASSERT_TRUE(read_regular_file(record, 1 << 20, &st).ok());
        EXPECT_NE(untrusted_record(st).find("belongs to user 65534"), std::string::npos);
    }
    std::filesystem::remove_all(dir);
}

TEST(ReplaceFile, ALinkAtThePathIsReplacedNeverWrittenThrough) {
    const auto dir = forge::test::temp_dir("replace_link");
    const auto target = dir / "secret";
    { std::ofstream(target) << "root's\n"; }
    const auto out = dir / "out.d";
    std::filesystem::create_symlink(target, out);
    ASSERT_TRUE(replace_file(out, "k.o: k.cu\n").ok());
    EXPECT_EQ(forge::test::slurp(target.string()), "root's\n");
    EXPECT_FALSE(std::filesystem::is_symlink(out));
    EXPECT_EQ(forge::test::slurp(out.string()), "k.o: k.cu\n");
    // A dangling link: its target is not created either.
    const auto dangling = dir / "dangling";
    std::filesystem::create_symlink(dir / "created-by-root", dangling);
    ASSERT_TRUE(replace_file(dangling, "x").ok());
    EXPECT_FALSE(std::filesystem::exists(dir / "created-by-root"));
    std::filesystem::remove_all(dir);
}

TEST(ReplaceFile, ModeAndTimeAreGivenAndNoTemporaryFileStays) {
    const auto dir = forge::test::temp_dir("replace_mode");
    const auto out = dir / "nvcc";
    { std::ofstream(out) << "old"; }
    const ::mode_t old_umask = ::umask(077); // the umask does not narrow the mode asked for
    const struct timespec mtime { 1700000000, 123456789 };
    const Status written = replace_file(out, "new", 0755, &mtime);
    ::umask(old_umask);
    ASSERT_TRUE(written.ok()) << written.error().to_string();
    EXPECT_EQ(forge::test::slurp(out.string()), "new");
    struct stat st {};
    ASSERT_EQ(::stat(out.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0755U);
    EXPECT_EQ(st.st_mtim.tv_sec, mtime.tv_sec);
    EXPECT_EQ(st.st_mtim.tv_nsec, mtime.tv_nsec);
    // A writer that fails: the old file stays, no temporary file is left, the error names the path.
    const Status failed =
        replace_file_with(out, 0644, [](int) -> Status { return Error{"the stub ended early"}; });
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(failed.error().file, out.string());
    EXPECT_NE(failed.error().message.find("the stub ended early"), std::string::npos);
    EXPECT_EQ(forge::test::slurp(out.string()), "new");
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir))
        ++entries;
    EXPECT_EQ(entries, 1U);
    std::filesystem::remove_all(dir);
}

TEST(ReplaceFile, ADeviceIsWrittenThroughNeverReplaced) {
    // -o /dev/null: a rename would put a regular file in the device's place (as root, for all).
    // The device is a null device of the test's own (mknod 1,3), so that a broken build of this
    // code replaces that node, not the machine's /dev/null.
    const auto dir = forge::test::temp_dir("replace_device");
    const auto null = dir / "null";
    if (::mknod(null.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) != 0) {
        std::filesystem::remove_all(dir);
        GTEST_SKIP() << "mknod: " << std::strerror(errno) << " (no CAP_MKNOD)";
    }
    struct stat before {};
    ASSERT_EQ(::stat(null.c_str(), &before), 0);
    ASSERT_TRUE(replace_file(null, "discarded").ok());
    struct stat after {};
    ASSERT_EQ(::stat(null.c_str(), &after), 0);
    EXPECT_TRUE(S_ISCHR(after.st_mode));
    EXPECT_EQ(after.st_ino, before.st_ino);
    std::filesystem::remove_all(dir);
}

TEST(ReplaceFile, AFifoIsReplacedNeverOpenedADirectoryRefused) {
    const auto dir = forge::test::temp_dir("replace_fifo");
    const auto fifo = dir / "out.o";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0); // no reader: an open for writing would block
    ASSERT_TRUE(replace_file(fifo, "x").ok());
    struct stat st {};
    ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    EXPECT_EQ(forge::test::slurp(fifo.string()), "x");
    const Status into_dir = replace_file(dir, "x");
    ASSERT_FALSE(into_dir.ok());
    std::filesystem::create_directory(dir / "sub");
    const Status over_dir = replace_file(dir / "sub", "x");
    ASSERT_FALSE(over_dir.ok());
    EXPECT_NE(over_dir.error().message.find("a directory"), std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST(CreateMark, MadeOnceAndALinkInItsPlaceIsNeverFollowed) {
    const auto dir = forge::test::temp_dir("mark");
    FileHandle d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_GE(d.get(), 0);
    auto first = create_mark_at(d.get(), "said-colour", dir.string());
    ASSERT_TRUE(first.ok());
    EXPECT_TRUE(*first);
    auto second = create_mark_at(d.get(), "said-colour", dir.string());
    ASSERT_TRUE(second.ok());
    EXPECT_FALSE(*second);
    std::filesystem::create_symlink(dir / "created-by-root", dir / "said-drops");
    auto linked = create_mark_at(d.get(), "said-drops", dir.string());
    ASSERT_TRUE(linked.ok());
    EXPECT_FALSE(*linked);
    EXPECT_FALSE(std::filesystem::exists(dir / "created-by-root"));
    auto missing = create_mark_at(d.get(), "no-such-dir/mark", dir.string());
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().file, (dir / "no-such-dir/mark").string());
    std::filesystem::remove_all(dir);
}

TEST(CreateUniqueDir, FreshEachTimeWithTheModeAsked) {
    const auto parent = forge::test::temp_dir("unique_dir");
    std::set<std::string> seen;
    for (int i = 0; i < 4; ++i) {
        auto d = create_unique_dir(parent, ".tmp-shim-", 0755);
        ASSERT_TRUE(d.ok()) << d.error().to_string();
        EXPECT_TRUE(seen.insert(d->string()).second);
        EXPECT_EQ(d->filename().string().rfind(".tmp-shim-", 0), 0U) << *d;
        struct stat st {};
        ASSERT_EQ(::lstat(d->c_str(), &st), 0);
        EXPECT_TRUE(S_ISDIR(st.st_mode));
        EXPECT_EQ(st.st_mode & 07777, 0755U);
    }
    auto missing = create_unique_dir(parent / "no-such", "x-");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().file.find("no-such"), std::string::npos);
    std::filesystem::remove_all(parent);
}
