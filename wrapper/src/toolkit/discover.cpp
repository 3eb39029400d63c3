#include "toolkit/discover.h"

#include "core/env.h"
#include "core/json.h"
#include "core/paths.h"
#include "core/process.h"
#include "toolkit/locate.h"
#include "toolkit/probe.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace forge::toolkit {

namespace fs = std::filesystem;

namespace {

std::vector<arch::Target> of_kind(const std::set<arch::Target>& all, arch::Kind kind) {
    std::vector<arch::Target> out;
    for (const auto& t : all) // a std::set: already sorted and unique
        if (t.kind == kind) out.push_back(t);
    return out;
}

// A program with argv as given, stdout and stderr in one capture, stdin closed: python's sys.path
// (nvcc itself is asked only through toolkit/probe.h).
Result<ProcessOutcome> run_merged(const std::string& exe, const std::vector<std::string>& args,
                                  const std::vector<std::string>& unset_env = {}) {
    ProcessSpec spec;
    spec.path = exe;
    spec.argv = {exe};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    if (!unset_env.empty()) spec.env = environment_without(unset_env);
    spec.output = ProcessSpec::Output::Merged;
    spec.null_stdin = true;
    spec.working_dir = "/";
    return run_process(spec);
}

} // namespace

std::vector<arch::Target> Toolkit::sass() const {
    return of_kind(emittable, arch::Kind::Sass);
}
std::vector<arch::Target> Toolkit::ptx() const {
    return of_kind(emittable, arch::Kind::Ptx);
}
std::vector<arch::Target> Toolkit::lto() const {
    return of_kind(emittable, arch::Kind::Lto);
}

bool Toolkit::can_emit_sass(int sm) const {
    return emittable.contains(arch::Target{arch::Kind::Sass, sm});
}

Result<Toolkit> probe_installed(const std::string& nvcc_path) {
    std::error_code ec;
    fs::path real = fs::canonical(nvcc_path, ec);
    auto caps = probe_toolkit(ec ? nvcc_path : real.string());
    if (!caps) return std::move(caps).error().in_file(nvcc_path);
    Toolkit tk;
    static_cast<ToolkitCaps&>(tk) = std::move(*caps);
    tk.root = fs::path(tk.nvcc).parent_path().parent_path().string();
    if (tk.sass().empty()) {
        Error e("nvcc lists no SASS target (--list-gpu-code printed nothing usable)", nvcc_path);
        return e;
    }
    return tk;
}

namespace {

std::vector<std::string> split_list(std::string_view s, char sep) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= s.size()) {
        std::size_t end = s.find(sep, start);
        if (end == std::string_view::npos) end = s.size();
        if (end > start) out.emplace_back(s.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

bool is_executable_file(const fs::path& p) {
    std::error_code ec;
    auto st = fs::status(p, ec);
    if (ec || !fs::is_regular_file(st)) return false;
    return (st.permissions() & (fs::perms::owner_exec | fs::perms::group_exec |
                                fs::perms::others_exec)) != fs::perms::none;
}

// python3.X dirs under <prefix>/lib.
void add_python_lib_dirs(const fs::path& prefix, std::vector<std::string>& out) {
    std::error_code ec;
    for (const char* lib : {"lib", "lib64"}) {
        fs::path libdir = prefix / lib;
        if (!fs::is_directory(libdir, ec)) continue;
        for (const auto& d : fs::directory_iterator(libdir, ec)) {
            auto name = d.path().filename().string();
            if (name.rfind("python3", 0) != 0) continue;
            for (const char* sub : {"site-packages", "dist-packages"})
                if (fs::is_directory(d.path() / sub, ec)) out.push_back((d.path() / sub).string());
        }
    }
}

// A file identical to the running binary (a copy of nvcc-forge named nvcc) is the wrapper.
bool same_bytes(const fs::path& a, const fs::path& b) {
    std::error_code ec;
    auto sa = fs::file_size(a, ec);
    if (ec) return false;
    auto sb = fs::file_size(b, ec);
    if (ec || sa != sb) return false;
    std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
    if (!fa || !fb) return false;
    return std::equal(std::istreambuf_iterator<char>(fa), std::istreambuf_iterator<char>(),
                      std::istreambuf_iterator<char>(fb));
}

// The directory nvcc runs from (toolkit::query_nvcc_home), when it exists.
std::optional<fs::path> nvcc_home(const std::string& nvcc) {
    auto here = query_nvcc_home(nvcc);
    if (!here) return std::nullopt;
    std::error_code ec;
    fs::path dir = *here;
    if (!fs::is_directory(dir, ec)) return std::nullopt;
    return dir;
}

} // namespace

DiscoveryInputs DiscoveryInputs::from_process(bool ask_python) {
    DiscoveryInputs in;
    in.path_env = getenv_str("PATH");
    in.cuda_home = getenv_str("CUDA_HOME");
    in.cuda_path = getenv_str("CUDA_PATH");
    in.candidates_env = getenv_str("NVCC_FORGE_NVCC_CANDIDATES");
    std::error_code ec;
    in.self_exe = fs::canonical(wrapper_exe(), ec).string();

    std::vector<std::string> sites;
    for (const auto& dir : split_list(in.path_env, ':')) {
        fs::path py = fs::path(dir) / "python3";
        if (!is_executable_file(py)) continue;
        fs::path real = fs::canonical(py, ec);
        if (!ec) add_python_lib_dirs(real.parent_path().parent_path(), sites);
    }
    for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"})
        if (auto v = getenv_str(var); !v.empty()) add_python_lib_dirs(v, sites);
    for (const auto& p : split_list(getenv_str("PYTHONPATH"), ':'))
        sites.push_back(p);
    if (auto home = getenv_str("HOME"); !home.empty())
        add_python_lib_dirs(fs::path(home) / ".local", sites);
    add_python_lib_dirs("/usr/local", sites);
    add_python_lib_dirs("/usr", sites);
    if (ask_python) {
        // pyenv/conda shims hide the interpreter's prefix: ask the python3 on PATH once.
        for (const auto& dir : split_list(in.path_env, ':')) {
            fs::path py = fs::path(dir) / "python3";
            if (!is_executable_file(py)) continue;
            auto run = run_merged(py.string(), {"-c", "import sys\nfor p in sys.path: print(p)"},
                                  {"PYTHONSTARTUP"});
            if (run && run->succeeded())
                for (const auto& line : split_list(run->out, '\n'))
                    sites.push_back(line);
            break;
        }
    }
    in.site_dirs = std::move(sites);
    return in;
}

namespace {

using Candidate = std::pair<fs::path, std::string>; // an nvcc path, and where it came from

void add_root(std::vector<Candidate>& out, const fs::path& root, const std::string& via) {
    out.emplace_back(nvcc_in_root(root), via);
}

// NVCC_FORGE_NVCC_CANDIDATES: a toolkit root, a directory holding nvcc, or nvcc itself.
void add_listed(const std::string& list, std::vector<Candidate>& out,
                std::vector<std::string>& skipped) {
    for (const auto& entry : split_list(list, ':')) {
        fs::path p(entry);
        std::error_code ec;
        if (fs::is_directory(p, ec)) {
            if (fs::exists(nvcc_in_root(p), ec))
                add_root(out, p, "NVCC_FORGE_NVCC_CANDIDATES");
            else if (fs::exists(p / "nvcc", ec))
                out.emplace_back(p / "nvcc", "NVCC_FORGE_NVCC_CANDIDATES");
            else
                skipped.push_back(fmt::format(
                    "{}: NVCC_FORGE_NVCC_CANDIDATES entry is a directory with no bin/nvcc", entry));
        } else if (fs::exists(p, ec)) {
            out.emplace_back(p, "NVCC_FORGE_NVCC_CANDIDATES");
        } else {
            skipped.push_back(
                fmt::format("{}: NVCC_FORGE_NVCC_CANDIDATES entry does not exist", entry));
        }
    }
}

// <usr_local>/cuda-* in name order, then <usr_local>/cuda.
void add_usr_local(const std::string& usr_local, std::vector<Candidate>& out) {
    std::error_code ec;
    std::vector<fs::path> versioned;
    if (fs::is_directory(usr_local, ec))
        for (const auto& d : fs::directory_iterator(usr_local, ec))
            if (d.path().filename().string().rfind("cuda-", 0) == 0) versioned.push_back(d.path());
    std::sort(versioned.begin(), versioned.end());
    for (const auto& d : versioned)
        add_root(out, d, (fs::path(usr_local) / "cuda-*").string());
    add_root(out, fs::path(usr_local) / "cuda", (fs::path(usr_local) / "cuda").string());
}

// CUDA 12 wheels: nvidia/cuda_nvcc (ptxas only up to 12.9); CUDA 13+: nvidia/cu13/bin/nvcc.
void add_site(const std::string& site, std::vector<Candidate>& out) {
    std::error_code ec;
    fs::path nv = fs::path(site) / "nvidia";
    if (!fs::is_directory(nv, ec)) return;
    if (fs::exists(nvcc_in_root(nv / "cuda_nvcc"), ec))
        add_root(out, nv / "cuda_nvcc", "python site " + site);
    std::vector<fs::path> cu;
    for (const auto& d : fs::directory_iterator(nv, ec)) {
        auto name = d.path().filename().string();
        if (name.size() > 2 && name.rfind("cu", 0) == 0 &&
            std::all_of(name.begin() + 2, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
            cu.push_back(d.path());
    }
    std::sort(cu.begin(), cu.end());
    for (const auto& d : cu)
        if (fs::exists(nvcc_in_root(d), ec)) add_root(out, d, "python site " + site);
}

// Candidate nvcc paths in discovery order.
std::vector<Candidate> candidates(const DiscoveryInputs& in, DiscoveryReport& report) {
    std::vector<Candidate> out;
    add_listed(in.candidates_env, out, report.skipped);
    if (!in.cuda_home.empty()) add_root(out, in.cuda_home, "CUDA_HOME");
    if (!in.cuda_path.empty()) add_root(out, in.cuda_path, "CUDA_PATH");
    for (const auto& dir : split_list(in.path_env, ':'))
        out.emplace_back(fs::path(dir) / "nvcc", "PATH");
    add_usr_local(in.usr_local, out);
    for (const auto& site : in.site_dirs)
        add_site(site, out);
    return out;
}

// The candidates judged so far, by realpath: each toolkit probed once, with every way it was
// found; what is not a toolkit skipped once, with why.
class Judge {
  public:
    Judge(const DiscoveryInputs& in, DiscoveryReport& report) : in_(in), report_(report) {}

    void judge(const fs::path& path, const std::string& via) {
        std::error_code ec;
        if (!fs::exists(path, ec)) return;
        fs::path real = fs::canonical(path, ec);
        if (ec) return;
        std::string key = real.string();
        if (seen(key, via)) return;
        auto reject = [&](const std::string& why) {
            rejected_.insert(key);
            report_.skipped.push_back(fmt::format("{} ({}): {}", path.string(), via, why));
        };
        if (is_self(real)) return reject("is nvcc-forge itself, not a toolkit");
        if (!is_executable_file(real)) return reject("not an executable file");
        // A script that execs the real nvcc (/usr/local/bin/nvcc: exec
        // /usr/local/cuda-13.0/bin/nvcc) is the same toolkit, which realpath cannot see: nvcc's
        // -dryrun names its real home.
        if (auto home = nvcc_home(key)) {
            fs::path inner = fs::canonical(*home / "nvcc", ec);
            if (!ec && inner != real) {
                if (is_self(inner)) return reject("runs nvcc-forge, not a toolkit");
                aliases_[key] = inner.string();
                if (seen(inner.string(), via)) return;
                real = inner;
                key = inner.string();
            }
        }
        // A real nvcc sits beside its ptxas; a launcher named nvcc (ccache, a copy of nvcc-forge
        // under another name) does not, and would only report the toolkit behind it.
        if (!fs::exists(real.parent_path() / "ptxas", ec))
            return reject(fmt::format("no ptxas beside {} (a wrapper, not a toolkit)", key));
        auto tk = probe_installed(key);
        if (!tk) return reject(tk.error().to_string());
        tk->found_via.push_back(via);
        by_real_[key] = report_.toolkits.size();
        report_.toolkits.push_back(std::move(tk).value());
    }

  private:
    // Already judged: a toolkit found again gains `via`.
    bool seen(std::string key, const std::string& via) {
        if (auto a = aliases_.find(key); a != aliases_.end()) key = a->second;
        if (auto it = by_real_.find(key); it != by_real_.end()) {
            auto& vias = report_.toolkits[it->second].found_via;
            if (std::find(vias.begin(), vias.end(), via) == vias.end()) vias.push_back(via);
            return true;
        }
        return rejected_.count(key) > 0;
    }
    [[nodiscard]] bool is_self(const fs::path& real) const {
        return !in_.self_exe.empty() &&
               (real.string() == in_.self_exe || same_bytes(real, in_.self_exe));
    }

    const DiscoveryInputs& in_;
    DiscoveryReport& report_;
    std::map<std::string, std::size_t> by_real_; // realpath -> index in report.toolkits
    std::map<std::string, std::string> aliases_; // launcher script realpath -> the nvcc it runs
    std::set<std::string> rejected_;             // realpaths already judged unusable
};

} // namespace

DiscoveryReport discover_toolkits(const DiscoveryInputs& in) {
    DiscoveryReport report;
    const std::vector<Candidate> found = candidates(in, report);
    Judge judge(in, report);
    for (const auto& [path, via] : found)
        judge.judge(path, via);
    std::sort(report.toolkits.begin(), report.toolkits.end(),
              [](const Toolkit& a, const Toolkit& b) {
                  return std::tie(a.version, a.nvcc) < std::tie(b.version, b.nvcc);
              });
    return report;
}

namespace {

nlohmann::json names(const std::vector<arch::Target>& targets) {
    auto arr = nlohmann::json::array();
    for (const auto& t : targets)
        arr.push_back(t.name());
    return arr;
}

std::string join_names(const std::vector<arch::Target>& targets) {
    std::string s;
    for (const auto& t : targets)
        s += (s.empty() ? "" : " ") + t.name();
    return s;
}

} // namespace

std::string toolkits_to_json(const std::vector<Toolkit>& toolkits) {
    auto arr = nlohmann::json::array();
    for (const auto& tk : toolkits) {
        arr.push_back({{"version", tk.version.full()},
                       {"release", tk.version.release()},
                       {"path", tk.nvcc},
                       {"root", tk.root},
                       {"sass", names(tk.sass())},
                       {"ptx", names(tk.ptx())},
                       {"lto", names(tk.lto())},
                       {"found_via", tk.found_via}});
    }
    return json_text(arr, 2) + "\n";
}

std::string toolkits_to_text(const std::vector<Toolkit>& toolkits) {
    if (toolkits.empty()) return "no CUDA toolkit found\n";
    std::string out;
    for (const auto& tk : toolkits) {
        std::string vias;
        for (const auto& v : tk.found_via)
            vias += (vias.empty() ? "" : ", ") + v;
        out +=
            fmt::format("CUDA {}  {}\n  found via: {}\n  sass: {}\n  ptx:  {}\n", tk.version.full(),
                        tk.nvcc, vias, join_names(tk.sass()), join_names(tk.ptx()));
    }
    return out;
}

} // namespace forge::toolkit
