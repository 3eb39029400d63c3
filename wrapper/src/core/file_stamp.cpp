#include "core/file_stamp.h"

#include <algorithm>
#include <ctime>
#include <fmt/format.h>
#include <sys/stat.h>

namespace forge {

namespace {

constexpr std::int64_t kNs = 1000000000;

std::int64_t nanoseconds(const struct timespec& t) {
    return static_cast<std::int64_t>(t.tv_sec) * kNs + t.tv_nsec;
}

} // namespace

std::string FileStamp::text() const {
    return fmt::format("{}:{}:{}:{}:{}", dev, ino, size, ctime_ns, mtime_ns);
}

FileStamp stamp_of(const struct stat& st) {
    FileStamp s;
    s.dev = static_cast<std::uint64_t>(st.st_dev);
    s.ino = static_cast<std::uint64_t>(st.st_ino);
    s.size = static_cast<std::uint64_t>(st.st_size);
    s.mtime_ns = nanoseconds(st.st_mtim);
    s.ctime_ns = nanoseconds(st.st_ctim);
    return s;
}

std::optional<std::pair<FileStamp, bool>> file_stamp(const struct stat& st) {
    if (!S_ISREG(st.st_mode)) return std::nullopt;
    struct timespec now {};
    ::clock_gettime(CLOCK_REALTIME, &now);
    const FileStamp s = stamp_of(st);
    const std::int64_t last_change = std::max(s.mtime_ns, s.ctime_ns);
    return std::pair{s, last_change < nanoseconds(now) - kStableSeconds * kNs};
}

} // namespace forge
