#include "core/file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <unistd.h>
#include <vector>

namespace forge {

Result<std::string> read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Error{"cannot read file", path.string()};
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) return Error{"cannot read file", path.string()};
    return ss.str();
}

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

Result<FileHandle> open_file(const std::filesystem::path& path, int flags, FileKind kind,
                             struct stat* st, mode_t mode) {
    const int fd =
        ::open(path.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, mode);
    if (fd < 0) {
        const int err = errno;
        // O_NOFOLLOW's refusal is ELOOP: say what it means.
        return Error{err == ELOOP ? std::string("a symbolic link: not followed")
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

Result<std::string> read_regular_file(const std::filesystem::path& path, std::uint64_t max_bytes) {
    struct stat st {};
    auto f = open_file(path, O_RDONLY, FileKind::Regular, &st);
    if (!f) return std::move(f).error();
    if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
        return Error{fmt::format("larger than {} bytes", max_bytes), path.string()};
    std::string text;
    char buf[1 << 16];
    while (true) {
        const ssize_t n = ::read(f->get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            return Error{fmt::format("cannot read: {}", std::strerror(errno)), path.string()};
        if (n == 0) return text;
        if (text.size() + static_cast<std::size_t>(n) > max_bytes)
            return Error{fmt::format("larger than {} bytes", max_bytes), path.string()};
        text.append(buf, static_cast<std::size_t>(n));
    }
}

Result<FileHandle> create_unique(const std::filesystem::path& dir, std::string_view prefix,
                                 std::string* created) {
    const std::string tmpl = (dir / (std::string(prefix) + "XXXXXX")).string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    // mkstemp: O_CREAT | O_EXCL (a name that exists, a symbolic link included, is never opened),
    // 0600, a suffix from the system's random source.
    const int fd = ::mkostemp(buf.data(), O_CLOEXEC);
    if (fd < 0) return Error{fmt::format("cannot create a file: {}", std::strerror(errno)), tmpl};
    if (created) *created = buf.data();
    return FileHandle(fd);
}

std::string untrusted_directory(const std::filesystem::path& dir) {
    struct stat st {};
    if (dir.empty() || ::lstat(dir.c_str(), &st) != 0) return "";
    if (S_ISLNK(st.st_mode)) return "it is a symbolic link";
    if (!S_ISDIR(st.st_mode)) return "it is not a directory";
    if (st.st_uid != ::geteuid() && st.st_uid != 0)
        return fmt::format("it belongs to user {}, not to this user ({})", st.st_uid, ::geteuid());
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        return fmt::format("its group or other users can write it (mode {:o})", st.st_mode & 07777);
    return "";
}

} // namespace forge
