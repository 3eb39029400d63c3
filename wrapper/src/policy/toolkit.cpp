#include "policy/toolkit.h"

#include "core/paths.h"
#include "policy/versions.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace forge::policy {

namespace fs = std::filesystem;

namespace {

bool is_executable(const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

void add_target_words(std::string_view text, std::set<arch::Target>& out) {
    std::size_t i = 0;
    while (i < text.size()) {
        auto start = text.find_first_of("sclt", i);
        if (start == std::string_view::npos) break;
        std::size_t end = start;
        while (end < text.size() &&
               (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_'))
            ++end;
        if (start == 0 || !std::isalnum(static_cast<unsigned char>(text[start - 1]))) {
            auto t = arch::parse_target(text.substr(start, end - start));
            if (t) out.insert(*t);
        }
        i = end > start ? end : start + 1;
    }
}

} // namespace

Result<std::string> run_capture(const std::vector<std::string>& argv) {
    if (argv.empty()) return Error{"nothing to run"};
    int pipefd[2];
    if (::pipe(pipefd) != 0) return Error{fmt::format("pipe: {}", std::strerror(errno))};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    posix_spawn_file_actions_addclose(&fa, pipefd[0]);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    std::vector<char*> args;
    for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    int rc = ::posix_spawn(&pid, argv[0].c_str(), &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(pipefd[1]);
    if (rc != 0) {
        ::close(pipefd[0]);
        Error e{fmt::format("cannot run: {}", std::strerror(rc)), argv[0]};
        return e;
    }
    std::string out;
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(pipefd[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
        if (out.size() > (8u << 20)) break; // nvcc's help is ~60 KB; anything huge is not nvcc
    }
    ::close(pipefd[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return Error{fmt::format("'{} {}' failed (status {})", argv[0],
                                 argv.size() > 1 ? argv[1] : "", status),
                     argv[0]};
    return out;
}

Result<fs::path> find_real_nvcc() {
    if (const char* env = std::getenv("NVCC_FORGE_REAL_NVCC"); env != nullptr && *env != '\0') {
        if (is_executable(env)) return fs::path(env);
        Error e{"NVCC_FORGE_REAL_NVCC is not an executable file", env};
        e.key = "NVCC_FORGE_REAL_NVCC";
        return e;
    }
    std::error_code ec;
    fs::path self = fs::weakly_canonical(wrapper_exe(), ec);
    if (const char* path = std::getenv("PATH"); path != nullptr) {
        std::string_view rest = path;
        while (!rest.empty()) {
            auto colon = rest.find(':');
            std::string_view dir = rest.substr(0, colon);
            rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
            if (dir.empty()) continue;
            fs::path cand = fs::path(dir) / "nvcc";
            if (!is_executable(cand)) continue;
            // Skip the front end: an nvcc symlink to nvcc-forge would probe itself.
            if (!self.empty() && fs::weakly_canonical(cand, ec) == self) continue;
            return cand;
        }
    }
    if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0')
        if (fs::path c = fs::path(home) / "bin" / "nvcc"; is_executable(c)) return c;
    if (fs::path c = "/usr/local/cuda/bin/nvcc"; is_executable(c)) return c;
    Error e{"no real nvcc found (set NVCC_FORGE_REAL_NVCC, put nvcc on PATH, set CUDA_HOME, or "
            "pass --cuda)"};
    e.key = "nvcc";
    return e;
}

Result<std::string> parse_nvcc_version(std::string_view text) {
    auto pos = text.find("release ");
    if (pos != std::string_view::npos) {
        auto v = text.find(", V", pos);
        if (v != std::string_view::npos) {
            std::size_t s = v + 3, e = s;
            while (e < text.size() &&
                   (std::isdigit(static_cast<unsigned char>(text[e])) || text[e] == '.'))
                ++e;
            if (e > s) return std::string(text.substr(s, e - s));
        }
        std::size_t s = pos + 8, e = s;
        while (e < text.size() &&
               (std::isdigit(static_cast<unsigned char>(text[e])) || text[e] == '.'))
            ++e;
        if (e > s) return std::string(text.substr(s, e - s));
    }
    return Error{"cannot find 'release X.Y' in nvcc --version output"};
}

std::set<arch::Target> parse_help_targets(std::string_view help) {
    std::set<arch::Target> out;
    auto opt = help.find("--gpu-architecture <arch>");
    if (opt == std::string_view::npos) return out;
    auto allowed = help.find("Allowed values for this option:", opt);
    if (allowed == std::string_view::npos) return out;
    // The list ends with "'.'" followed by a blank line.
    auto end = help.find("'.", allowed);
    if (end == std::string_view::npos) end = help.size();
    add_target_words(help.substr(allowed, end + 1 - allowed), out);
    return out;
}

std::set<arch::Target> parse_list_gpu_code(std::string_view text) {
    std::set<arch::Target> out;
    add_target_words(text, out);
    return out;
}

Result<ToolkitInfo> probe_toolkit(const fs::path& nvcc) {
    ToolkitInfo info;
    info.nvcc = nvcc.string();
    auto ver = run_capture({nvcc.string(), "--version"});
    if (!ver) return std::move(ver).error();
    auto full = parse_nvcc_version(*ver);
    if (!full) return std::move(full).error().in_file(nvcc.string());
    info.full_version = *full;
    auto cuda = normalize_cuda(*full);
    if (!cuda) return std::move(cuda).error().in_file(nvcc.string());
    info.cuda = *cuda;
    if (auto help = run_capture({nvcc.string(), "--help"}); help)
        info.emittable = parse_help_targets(*help);
    if (info.emittable.empty()) {
        // Older or unusual help text: the plain targets are still listed by --list-gpu-code.
        auto codes = run_capture({nvcc.string(), "--list-gpu-code"});
        if (!codes) return std::move(codes).error();
        for (const auto& t : parse_list_gpu_code(*codes))
            for (auto k : {arch::Kind::Sass, arch::Kind::Ptx, arch::Kind::Lto})
                info.emittable.insert(arch::Target{k, t.sm, t.suffix});
    }
    if (info.emittable.empty())
        return Error{"nvcc lists no GPU targets (--help / --list-gpu-code)", nvcc.string()};
    return info;
}

} // namespace forge::policy
