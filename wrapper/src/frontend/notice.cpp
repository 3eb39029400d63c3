#include "frontend/notice.h"

#include "core/process.h"
#include "toolkit/locate.h"

#include <array>
#include <cerrno>
#include <chrono>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
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

// Old stamps go when a new one is made: a build leaves one small file per note it said.
void prune_notes(const fs::path& dir) {
    std::error_code ec;
    const auto now = fs::file_time_type::clock::now();
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        const auto t = e.last_write_time(ec);
        if (!ec && now - t > kNoteLifetime) fs::remove(e.path(), ec);
    }
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

fs::path stamp_path(const FrontendEnv& env, std::string_view kind) {
    const std::string key = build_key();
    const fs::path dir = cache_dir(env);
    if (key.empty() || dir.empty()) return {};
    return dir / "notes" / fmt::format("{}-{}", kind, key);
}

} // namespace

bool said_in_this_build(const FrontendEnv& env, std::string_view kind) {
    const fs::path stamp = stamp_path(env, kind);
    return !stamp.empty() && ::access(stamp.c_str(), F_OK) == 0;
}

void say_once_per_build(const FrontendEnv& env, std::string_view kind, const std::string& text) {
    const fs::path stamp = stamp_path(env, kind);
    if (!stamp.empty()) {
        std::error_code ec;
        const fs::path notes = stamp.parent_path();
        fs::create_directories(notes, ec);
        const int fd = ::open(stamp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno == EEXIST) return;
        if (fd >= 0) {
            ::close(fd);
            prune_notes(notes);
        }
    }
    write_all(STDERR_FILENO, text);
}

} // namespace forge::frontend
