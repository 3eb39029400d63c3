#include "frontend/notice.h"

#include "core/file.h"
#include "core/file_stamp.h"
#include "core/process.h"
#include "toolkit/locate.h"

#include <array>
#include <cerrno>
#include <chrono>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace forge::frontend {

namespace fs = std::filesystem;

namespace {

// What stands between a build driver and nvcc-forge without being the build.
constexpr std::array<std::string_view, 12> kPassThrough{"sh",         "bash", "dash",   "zsh",
                                                        "ksh",        "env",  "ccache", "sccache",
                                                        "nvcc-forge", "nvcc", "nice",   "timeout"};

// `cmake -E env ...` (a launcher) passes a call through; `cmake --build` is a driver.
bool is_cmake_tool_mode(long pid) {
    std::ifstream f(fmt::format("/proc/{}/cmdline", pid), std::ios::binary);
    std::string argv0, argv1;
    return std::getline(f, argv0, '\0') && std::getline(f, argv1, '\0') && argv1 == "-E";
}

bool passes_through(const toolkit::ProcessInfo& p, long pid) {
    for (auto name : kPassThrough)
        if (p.comm == name) return true;
    return p.comm == "cmake" && is_cmake_tool_mode(pid);
}

constexpr int kMaxAncestors = 64;
constexpr auto kNoteLifetime = std::chrono::hours(24 * 7);

// The notes folder, opened as a folder and never through a symbolic link (a link named `notes`
// would turn the stamps and the prune onto the files it points to); -1 when it is not there.
int open_notes(const fs::path& dir) {
    return ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

// Old stamps go when a new one is made: a build leaves one small file per note it said. By
// descriptor: each entry's age is its own (fstatat, a link not followed) and it is removed under
// the folder's descriptor (unlinkat): a link inside goes as a link, its target untouched.
void prune_notes(int notes_fd) {
    const int fd = ::dup(notes_fd); // closedir closes the one fdopendir takes
    DIR* d = fd < 0 ? nullptr : ::fdopendir(fd);
    if (d == nullptr) {
        if (fd >= 0) ::close(fd);
        return;
    }
    const auto now = std::chrono::system_clock::now();
    while (const dirent* e = ::readdir(d)) {
        const std::string_view name = e->d_name;
        if (name == "." || name == "..") continue;
        struct stat st {};
        if (::fstatat(notes_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode))
            continue;
        const auto written = std::chrono::system_clock::time_point(
            std::chrono::duration_cast<std::chrono::system_clock::duration>(
                std::chrono::nanoseconds(stamp_of(st).mtime_ns)));
        if (now - written > kNoteLifetime) ::unlinkat(notes_fd, e->d_name, 0);
    }
    ::closedir(d);
}
} // namespace

namespace {

struct Driver {
    long pid = 0;
    toolkit::ProcessInfo info;
};

Driver find_driver() {
    long pid = static_cast<long>(::getppid());
    long driver = 0;
    toolkit::ProcessInfo driver_info;
    for (int step = 0; step < kMaxAncestors && pid > 1; ++step) {
        auto info = toolkit::process_info(pid);
        if (!info) break;
        const bool top = info->ppid <= 1; // a daemon's process, or the session's first
        if (!passes_through(*info, pid) || (top && driver == 0)) {
            // The outermost of a recursive driver (make -> sh -> make) is the build.
            if (driver != 0 && info->comm != driver_info.comm) break;
            driver = pid;
            driver_info = *info;
        }
        if (top) break;
        pid = info->ppid;
    }
    return {driver, driver_info};
}

} // namespace

std::optional<toolkit::ProcessInfo> build_driver() {
    Driver d = find_driver();
    if (d.pid == 0) return std::nullopt;
    return d.info;
}

std::string build_key() {
    const Driver d = find_driver();
    return d.pid == 0 ? std::string() : fmt::format("{}-{}", d.pid, d.info.start);
}

namespace {

// The stamp's name in the notes folder, "" when this build cannot be told.
std::string stamp_name(std::string_view kind) {
    const std::string key = build_key();
    return key.empty() ? std::string() : fmt::format("{}-{}", kind, key);
}

} // namespace

bool said_in_this_build(const FrontendEnv& env, std::string_view kind) {
    const fs::path dir = cache_dir(env);
    const std::string name = stamp_name(kind);
    if (dir.empty() || name.empty()) return false;
    FileHandle notes(open_notes(dir / "notes"));
    struct stat st {};
    return notes.get() >= 0 && ::fstatat(notes.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

void say_once_per_build(const FrontendEnv& env, std::string_view kind, const std::string& text) {
    const fs::path dir = cache_dir(env);
    const std::string name = stamp_name(kind);
    if (!dir.empty() && !name.empty()) {
        std::error_code ec;
        fs::create_directories(dir, ec);
        ::mkdir((dir / "notes").c_str(), 0755);
        FileHandle notes(open_notes(dir / "notes"));
        if (notes.get() >= 0) {
            auto made = create_mark_at(notes.get(), name, (dir / "notes").string());
            if (made && !*made) return; // said in this build already
            if (made) prune_notes(notes.get());
        }
    }
    write_all(STDERR_FILENO, text);
}

} // namespace forge::frontend
