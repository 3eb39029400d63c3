#include "toolkit/locate.h"

#include "core/env.h"
#include "core/paths.h"

#include <array>
#include <cstdlib>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <set>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>

namespace forge::toolkit {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> split_path(const std::string& path_env) {
    std::vector<std::string> dirs;
    std::string_view rest = path_env;
    while (true) {
        auto colon = rest.find(':');
        std::string_view dir = rest.substr(0, colon);
        // An empty PATH element means the current directory (execvp does the same).
        dirs.emplace_back(dir.empty() ? std::string(".") : std::string(dir));
        if (colon == std::string_view::npos) break;
        rest = rest.substr(colon + 1);
    }
    return dirs;
}

fs::path resolved(const fs::path& p) {
    std::error_code ec;
    fs::path r = fs::canonical(p, ec);
    return ec ? fs::path() : r;
}

} // namespace

bool same_file(const fs::path& a, const fs::path& b) {
    struct stat sa {
    }, sb{};
    if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

namespace {

// The candidate's canonical path when it can be the real nvcc: an executable file that is neither
// this binary nor any nvcc-forge (a link resolving to a file called nvcc-forge is another build or
// install, which exec'd by its real path would not even act as nvcc). Resolved once: this runs on
// every wrapped call.
std::optional<fs::path> real_nvcc_at(const fs::path& candidate, const fs::path& self) {
    struct stat st {};
    if (::stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    if (::access(candidate.c_str(), X_OK) != 0) return std::nullopt;
    // A directory with a marker is a shim's bin/ (or a PATH-prepended wrapper's): its nvcc is a
    // wrapper, whatever file it is (a bound shim's nvcc is a copy of nvcc-forge, frontend/shim.h).
    if (::access((candidate.parent_path() / kRealNvccMarker).c_str(), F_OK) == 0)
        return std::nullopt;
    fs::path real = resolved(candidate);
    if (real.filename() == "nvcc-forge") return std::nullopt;
    if (!self.empty() && same_file(candidate, self)) return std::nullopt;
    return real;
}

} // namespace

bool usable_nvcc(const fs::path& candidate, const fs::path& self) {
    return real_nvcc_at(candidate, self).has_value();
}

std::optional<fs::path> marker_target(const fs::path& dir) {
    std::ifstream f(dir / kRealNvccMarker);
    std::string line;
    if (!f || !std::getline(f, line)) return std::nullopt;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
        line.pop_back();
    return fs::path(line);
}

fs::path exec_path(const Located& located) {
    if (located.found.empty()) return located.nvcc;
    if (located.found == located.nvcc) return located.found;
    // nvcc reads $(_HERE_)/nvcc.profile, _HERE_ being dirname(argv[0]) (docs/nvcc-command-line.md).
    auto has_profile = [](const fs::path& nvcc) {
        return ::access((nvcc.parent_path() / "nvcc.profile").c_str(), F_OK) == 0;
    };
    if (has_profile(located.found) || !has_profile(located.nvcc)) return located.found;
    return located.nvcc;
}

std::optional<Located> find_on_path(const std::string& name, const std::string& path_env,
                                    const fs::path& self) {
    if (name.find('/') != std::string::npos) {
        if (auto real = real_nvcc_at(name, self)) return Located{*real, "as given", name};
        return std::nullopt;
    }
    std::set<std::pair<dev_t, ino_t>> seen_dirs; // a directory on PATH twice is looked at once
    for (const auto& dir : split_path(path_env)) {
        struct stat st {};
        if (::stat(dir.c_str(), &st) != 0) continue;
        if (!seen_dirs.insert({st.st_dev, st.st_ino}).second) continue;
        fs::path candidate = fs::path(dir) / name;
        if (auto real = real_nvcc_at(candidate, self)) return Located{*real, "PATH", candidate};
    }
    return std::nullopt;
}

fs::path invocation_dir(const LocateInput& in) {
    if (in.argv0.find('/') != std::string::npos) return fs::path(in.argv0).parent_path();
    std::string name = fs::path(in.argv0).filename().string();
    if (name.empty()) return {};
    for (const auto& dir : split_path(in.path_env)) {
        fs::path candidate = fs::path(dir) / name;
        if (!in.self.empty() && same_file(candidate, in.self)) return dir;
    }
    return {};
}

Result<Located> locate_real_nvcc(const LocateInput& in) {
    std::vector<std::string> looked;
    auto reject = [&](const std::string& where, const fs::path& p) {
        std::string why;
        std::error_code ec;
        if (!fs::exists(p, ec))
            why = "does not exist";
        else if (!in.self.empty() && same_file(p, in.self))
            why = "is nvcc-forge itself";
        else
            why = "is not an executable file";
        looked.push_back(fmt::format("{} {} ({})", where, p.string(), why));
    };

    if (!in.real_nvcc_env.empty()) {
        fs::path p = in.real_nvcc_env;
        // A shim's nvcc (CMAKE_CUDA_COMPILER=<shim>/bin/nvcc handed on by ForgeArch): the real
        // nvcc is the one its marker names.
        if (auto target = marker_target(p.parent_path())) {
            if (auto real = target->empty() ? std::nullopt : real_nvcc_at(*target, in.self))
                return Located{*real, "NVCC_FORGE_REAL_NVCC (a shim: its marker)", *target};
            p = *target;
        }
        if (auto real = real_nvcc_at(p, in.self)) return Located{*real, "NVCC_FORGE_REAL_NVCC", p};
        // An explicit setting that does not work is an error, not a hint to look elsewhere.
        reject("NVCC_FORGE_REAL_NVCC=", p);
        return make_error(fmt::format("cannot use the real nvcc: {}", looked.front()));
    }

    if (fs::path dir = invocation_dir(in); !dir.empty()) {
        const fs::path marker = dir / kRealNvccMarker;
        if (auto line = marker_target(dir)) {
            if (auto real = line->empty() ? std::nullopt : real_nvcc_at(*line, in.self))
                return Located{*real, "marker " + marker.string(), *line};
            reject(fmt::format("{} names", marker.string()), *line);
        }
    }

    std::set<std::pair<dev_t, ino_t>> seen_dirs;
    bool any_on_path = false;
    for (const auto& dir : split_path(in.path_env)) {
        struct stat st {};
        if (::stat(dir.c_str(), &st) != 0) continue;
        if (!seen_dirs.insert({st.st_dev, st.st_ino}).second) continue;
        fs::path candidate = fs::path(dir) / "nvcc";
        std::error_code ec;
        if (!fs::exists(candidate, ec)) continue;
        any_on_path = true;
        if (auto real = real_nvcc_at(candidate, in.self)) return Located{*real, "PATH", candidate};
        // Another shim on PATH: the nvcc its marker names.
        if (auto target = marker_target(dir); target && !target->empty())
            if (auto real = real_nvcc_at(*target, in.self))
                return Located{*real, "PATH (shim marker in " + dir + ")", *target};
        reject("PATH:", candidate);
    }
    if (!any_on_path) looked.push_back("PATH (no other nvcc)");

    if (!in.cuda_home_env.empty()) {
        fs::path p = nvcc_in_root(in.cuda_home_env);
        if (auto real = real_nvcc_at(p, in.self)) return Located{*real, "CUDA_HOME", p};
        reject("$CUDA_HOME/bin/nvcc:", p);
    } else {
        looked.push_back("$CUDA_HOME (unset)");
    }
    if (!in.default_cuda_bin.empty()) {
        fs::path p = in.default_cuda_bin;
        if (auto real = real_nvcc_at(p, in.self)) return Located{*real, "default", p};
        reject("default", p);
    }
    std::string msg = "cannot find the real nvcc; looked at:";
    for (const auto& l : looked)
        msg += "\n  " + l;
    msg += "\nset NVCC_FORGE_REAL_NVCC to the real nvcc";
    return make_error(std::move(msg));
}

// ppid, starttime and comm of /proc/<pid>/stat. The command name (field 2) is in parentheses and
// may hold spaces and ')', so fields are counted from the last ')'.
std::optional<ProcessInfo> process_info(long pid) {
    // One read(2): this runs on every wrapped call (the marker for the children).
    const std::string path = "/proc/" + std::to_string(pid) + "/stat";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    std::array<char, 1024> buf{};
    const ssize_t n = ::read(fd, buf.data(), buf.size() - 1);
    ::close(fd);
    if (n <= 0) return std::nullopt;
    std::string_view text(buf.data(), static_cast<size_t>(n));
    auto paren = text.rfind(')');
    auto open = text.find('(');
    if (paren == std::string_view::npos || open == std::string_view::npos || open > paren)
        return std::nullopt;
    ProcessInfo st;
    st.comm = std::string(text.substr(open + 1, paren - open - 1));
    // After ')': state (field 3), ppid (4), ..., starttime (22), separated by single spaces.
    size_t pos = paren + 1;
    for (int field = 3; field <= 22; ++field) {
        while (pos < text.size() && text[pos] == ' ')
            ++pos;
        size_t end = text.find(' ', pos);
        if (end == std::string_view::npos) end = text.size();
        if (pos >= end) return std::nullopt;
        const std::string value(text.substr(pos, end - pos));
        if (field == 4) st.ppid = std::strtol(value.c_str(), nullptr, 10);
        if (field == 22) {
            st.start = std::strtoull(value.c_str(), nullptr, 10);
            return st;
        }
        pos = end;
    }
    return std::nullopt;
}

namespace {

// A decimal number, all of `text`, in [lo, hi].
std::optional<long long> strict_number(std::string_view text, long long lo, long long hi) {
    if (text.empty() || text.size() > 20) return std::nullopt;
    long long v = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + (c - '0');
        if (v > hi) return std::nullopt;
    }
    return v < lo ? std::nullopt : std::optional<long long>(v);
}

// How far up the process tree a wrapper of this call chain may be: wrapper, launcher (ccache),
// a second wrapper... A build's own nesting never comes close.
constexpr int kMaxAncestors = 64;

} // namespace

std::optional<std::string> depth_marker_for(int depth, long pid) {
    auto st = process_info(pid);
    if (!st) return std::nullopt;
    return fmt::format("{}:{}:{}", depth, pid, st->start);
}

std::string depth_marker(int depth) {
    const long pid = static_cast<long>(::getpid());
    return depth_marker_for(depth, pid).value_or(fmt::format("{}:{}:0", depth, pid));
}

DepthReading read_depth_marker(const std::string& value) {
    if (value.empty()) return {};
    const DepthReading ignored{0, true};
    std::string_view v = value;
    auto c1 = v.find(':');
    auto c2 = c1 == std::string_view::npos ? c1 : v.find(':', c1 + 1);
    if (c2 == std::string_view::npos) return ignored;
    auto depth = strict_number(v.substr(0, c1), 1, 1000);
    auto pid = strict_number(v.substr(c1 + 1, c2 - c1 - 1), 1, 1LL << 31);
    auto start = strict_number(v.substr(c2 + 1), 0, 1LL << 62);
    if (!depth || !pid || !start) return ignored;
    // This process (a wrapper exec'd by one, same pid and start) or an ancestor.
    long cur = static_cast<long>(::getpid());
    for (int step = 0; step < kMaxAncestors && cur > 0; ++step) {
        auto st = process_info(cur);
        if (!st && step == 0) return DepthReading{static_cast<int>(*depth), false}; // no /proc
        if (!st) return ignored;
        if (cur == *pid)
            return st->start == static_cast<unsigned long long>(*start)
                       ? DepthReading{static_cast<int>(*depth), false}
                       : ignored;
        if (cur == 1) break;
        cur = st->ppid;
    }
    return ignored;
}

Result<fs::path> find_real_nvcc(bool cuda_option_helps) {
    LocateInput in;
    in.real_nvcc_env = getenv_str("NVCC_FORGE_REAL_NVCC");
    in.path_env = getenv_str("PATH");
    in.cuda_home_env = getenv_str("CUDA_HOME");
    in.self = resolved(wrapper_exe());
    auto located = locate_real_nvcc(in);
    if (located) return located->found;
    // The tools' own wording (and keys) for the two ways this fails, as `resolve` has always said.
    if (!in.real_nvcc_env.empty()) {
        Error e{"NVCC_FORGE_REAL_NVCC is not an executable file", in.real_nvcc_env};
        e.key = "NVCC_FORGE_REAL_NVCC";
        return e;
    }
    Error e{cuda_option_helps ? "no real nvcc found (set NVCC_FORGE_REAL_NVCC, put nvcc on PATH, "
                                "set CUDA_HOME, or pass --cuda)"
                              : "no real nvcc found (set NVCC_FORGE_REAL_NVCC, put nvcc on PATH "
                                "or set CUDA_HOME)"};
    e.key = "nvcc";
    return e;
}

fs::path default_cuda_root() {
    const auto home = getenv_nonempty("CUDA_HOME");
    return home ? fs::path(*home) : fs::path(kDefaultCudaRoot);
}

std::optional<fs::path> find_command(const std::string& name, const std::string& path_env) {
    if (name.find('/') != std::string::npos) return fs::path(name);
    for (const auto& dir : split_path(path_env)) {
        std::error_code ec;
        fs::path candidate = fs::path(dir) / name;
        if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0)
            return candidate;
    }
    return std::nullopt;
}

} // namespace forge::toolkit
