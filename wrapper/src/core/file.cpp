#include "core/file.h"

#include "core/process.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <limits>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace forge {

FileHandle& FileHandle::operator=(FileHandle&& o) noexcept {
    if (this != &o) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = o.release();
    }
    return *this;
}

FileHandle::~FileHandle() {
    if (fd_ >= 0) ::close(fd_);
}

namespace {

// open_file's steps; `follow` only for read_file (a policy file may be a link of the user's own).
Result<FileHandle> open_checked(const std::filesystem::path& path, int flags, FileKind kind,
                                struct stat* st, mode_t mode, bool follow) {
    const int fd = ::open(
        path.c_str(), flags | (follow ? 0 : O_NOFOLLOW) | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, mode);
    if (fd < 0) {
        const int err = errno;
        // O_NOFOLLOW's refusal is ELOOP: say what it means.
        return Error{err == ELOOP && !follow ? std::string("a symbolic link: not followed")
                                             : fmt::format("cannot open: {}", std::strerror(err)),
                     path.string()};
    }
    FileHandle h(fd);
    struct stat own {};
    struct stat& s = st != nullptr ? *st : own;
    if (::fstat(fd, &s) != 0)
        return Error{fmt::format("cannot stat: {}", std::strerror(errno)), path.string()};
    const bool fits =
        S_ISREG(s.st_mode) || (kind == FileKind::RegularOrDevice && S_ISCHR(s.st_mode));
    if (!fits) return Error{"not a regular file", path.string()};
    // Back to blocking: a regular file never returns EAGAIN, a device may.
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return h;
}

// The rest of the open file `fd`, at most `max_bytes` of it.
Result<std::string> read_all(int fd, const std::filesystem::path& path, std::uint64_t max_bytes) {
    std::string text;
    std::vector<char> buf(1 << 16);
    while (true) {
        const ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            return Error{fmt::format("cannot read: {}", std::strerror(errno)), path.string()};
        if (n == 0) return text;
        if (text.size() + static_cast<std::size_t>(n) > max_bytes)
            return Error{fmt::format("larger than {} bytes", max_bytes), path.string()};
        text.append(buf.data(), static_cast<std::size_t>(n));
    }
}

} // namespace

Result<std::string> read_file(const std::filesystem::path& path) {
    // A FIFO in a policy file's place is an error naming it, never a read that waits for a writer.
    auto f = open_checked(path, O_RDONLY, FileKind::Regular, nullptr, 0, /*follow=*/true);
    if (!f) return Error{fmt::format("cannot read file: {}", f.error().message), path.string()};
    auto text = read_all(f->get(), path, std::numeric_limits<std::uint64_t>::max());
    if (!text)
        return Error{fmt::format("cannot read file: {}", text.error().message), path.string()};
    return text;
}

Result<FileHandle> open_file(const std::filesystem::path& path, int flags, FileKind kind,
                             struct stat* st, mode_t mode) {
    return open_checked(path, flags, kind, st, mode, /*follow=*/false);
}

Result<std::string> read_regular_file(const std::filesystem::path& path, std::uint64_t max_bytes,
                                      struct stat* stamp) {
    struct stat own {};
    struct stat& st = stamp != nullptr ? *stamp : own;
    auto f = open_file(path, O_RDONLY, FileKind::Regular, &st);
    if (!f) return std::move(f).error();
    if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
        return Error{fmt::format("larger than {} bytes", max_bytes), path.string()};
    return read_all(f->get(), path, max_bytes);
}

Result<FileHandle> create_unique_at(int dir_fd, std::string_view prefix, std::string* name,
                                    std::string_view shown_dir) {
    // O_CREAT | O_EXCL | O_NOFOLLOW: a name that exists, a symbolic link included, is never
    // opened; the suffix comes from the system's random source, so it cannot be planted ahead.
    for (int attempt = 0; attempt < 16; ++attempt) {
        std::uint64_t random = 0;
        if (::getrandom(&random, sizeof random, 0) != static_cast<ssize_t>(sizeof random))
            return Error{fmt::format("cannot create a file: {}", std::strerror(errno)),
                         std::string(shown_dir)};
        const std::string candidate = fmt::format("{}{:016x}", prefix, random);
        const int fd =
            ::openat(dir_fd, candidate.c_str(),
                     O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd >= 0) {
            if (name) *name = candidate;
            return FileHandle(fd);
        }
        if (errno != EEXIST)
            return Error{fmt::format("cannot create a file: {}", std::strerror(errno)),
                         (std::filesystem::path(shown_dir) / candidate).string()};
    }
    return Error{"cannot create a file: every name tried exists", std::string(shown_dir)};
}

Result<FileHandle> create_unique(const std::filesystem::path& dir, std::string_view prefix,
                                 std::string* created) {
    FileHandle d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (d.get() < 0)
        return Error{fmt::format("cannot create a file: {}", std::strerror(errno)), dir.string()};
    std::string name;
    auto f = create_unique_at(d.get(), prefix, &name, dir.string());
    if (f && created) *created = (dir / name).string();
    return f;
}

Status replace_file_with(const std::filesystem::path& path, mode_t mode, const FileWriter& write,
                         const struct timespec* mtime) {
    const std::filesystem::path name = path.filename();
    if (name.empty() || name == "." || name == "..")
        return Error{"cannot write: not a file name", path.string()};
    std::filesystem::path dir = path.parent_path();
    if (dir.empty()) dir = ".";
    FileHandle d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (d.get() < 0)
        return Error{fmt::format("cannot write: {}", std::strerror(errno)), path.string()};
    struct stat there {};
    if (::fstatat(d.get(), name.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISCHR(there.st_mode)) { // /dev/null: a rename would put a file in the device's place
            auto dev = open_file(path, O_WRONLY, FileKind::RegularOrDevice);
            if (!dev) return dev.error();
            Status written = write(dev->get());
            if (!written)
                return Error{fmt::format("cannot write: {}", written.error().message),
                             path.string()};
            return ok_status();
        }
        if (S_ISDIR(there.st_mode)) return Error{"cannot write: a directory", path.string()};
    }
    std::string tmp;
    auto f = create_unique_at(d.get(), fmt::format(".{}.tmp-", name.string()), &tmp, dir.string());
    if (!f) return f.error();
    Status done = write(f->get());
    if (done && ::fchmod(f->get(), mode) != 0) done = Error{std::strerror(errno)};
    if (done && mtime != nullptr) {
        const struct timespec times[2] = {*mtime, *mtime};
        if (::futimens(f->get(), times) != 0) done = Error{std::strerror(errno)};
    }
    if (::close(f->release()) != 0 && done) done = Error{std::strerror(errno)};
    if (done && ::renameat(d.get(), tmp.c_str(), d.get(), name.c_str()) != 0)
        done = Error{std::strerror(errno)};
    if (!done) {
        ::unlinkat(d.get(), tmp.c_str(), 0);
        return Error{fmt::format("cannot write: {}", done.error().message), path.string()};
    }
    return ok_status();
}

Status replace_file(const std::filesystem::path& path, std::string_view bytes, mode_t mode,
                    const struct timespec* mtime) {
    return replace_file_with(
        path, mode,
        [bytes](int fd) {
            return write_all(fd, bytes) ? ok_status() : Status(Error{std::strerror(errno)});
        },
        mtime);
}

Result<std::filesystem::path> create_unique_dir(const std::filesystem::path& parent,
                                                std::string_view prefix, mode_t mode) {
    std::string templ = (parent / fmt::format("{}XXXXXX", prefix)).string();
    if (::mkdtemp(templ.data()) == nullptr)
        return Error{fmt::format("cannot create a directory: {}", std::strerror(errno)), templ};
    if (mode != 0700 && ::chmod(templ.c_str(), mode) != 0) {
        const int err = errno;
        ::rmdir(templ.c_str());
        return Error{fmt::format("cannot create a directory: {}", std::strerror(err)), templ};
    }
    return std::filesystem::path(templ);
}

Result<bool> create_mark_at(int dir_fd, const std::string& name, std::string_view shown_dir) {
    const int fd = ::openat(dir_fd, name.c_str(),
                            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
    if (fd >= 0) {
        ::close(fd);
        return true;
    }
    if (errno == EEXIST) return false;
    return Error{fmt::format("cannot create: {}", std::strerror(errno)),
                 (std::filesystem::path(shown_dir) / name).string()};
}

std::string untrusted_record(const struct stat& st) {
    if (!S_ISREG(st.st_mode)) return "it is not a regular file";
    if (st.st_uid != ::geteuid())
        return fmt::format("it belongs to user {}, not to this user ({})", st.st_uid, ::geteuid());
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        return fmt::format("its group or other users can write it (mode {:o})", st.st_mode & 07777);
    return "";
}

std::string untrusted_directory(const std::filesystem::path& dir) {
    struct stat st {};
    if (dir.empty() || ::lstat(dir.c_str(), &st) != 0) return "";
    return untrusted_directory(st);
}

std::string untrusted_directory(const struct stat& st) {
    if (S_ISLNK(st.st_mode)) return "it is a symbolic link";
    if (!S_ISDIR(st.st_mode)) return "it is not a directory";
    if (st.st_uid != ::geteuid() && st.st_uid != 0)
        return fmt::format("it belongs to user {}, not to this user ({})", st.st_uid, ::geteuid());
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        return fmt::format("its group or other users can write it (mode {:o})", st.st_mode & 07777);
    return "";
}

} // namespace forge
