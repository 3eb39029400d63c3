#include "binary/cuobjdump.h"

#include "core/env.h"
#include "core/process.h"

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <unistd.h>

namespace forge::binary {

namespace fs = std::filesystem;

namespace {

bool is_executable(const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (c == sep) {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

// cuobjdump inside an installed nvidia-cuda-cuobjdump wheel under a site-packages directory.
std::optional<fs::path> cuobjdump_in_site(const fs::path& site) {
    std::error_code ec;
    const fs::path nvidia = site / "nvidia";
    if (!fs::is_directory(nvidia, ec)) return std::nullopt;
    if (auto p = nvidia / "cuda_cuobjdump" / "bin" / "cuobjdump"; is_executable(p)) return p;
    for (const auto& d : fs::directory_iterator(nvidia, ec)) // CUDA 13 wheels: nvidia/cu13/bin
        if (auto p = d.path() / "bin" / "cuobjdump"; is_executable(p)) return p;
    return std::nullopt;
}

// site-packages directories under a prefix: <prefix>/lib/python3*/{site,dist}-packages.
std::vector<fs::path> site_dirs(const fs::path& prefix) {
    std::vector<fs::path> out;
    std::error_code ec;
    const fs::path lib = prefix / "lib";
    if (!fs::is_directory(lib, ec)) return out;
    for (const auto& d : fs::directory_iterator(lib, ec)) {
        if (!d.path().filename().string().starts_with("python3")) continue;
        for (const char* sub : {"site-packages", "dist-packages"})
            if (fs::is_directory(d.path() / sub, ec)) out.push_back(d.path() / sub);
    }
    return out;
}

std::optional<arch::Target> target_from_image_name(const std::string& name, arch::Kind kind) {
    static const std::regex re(R"(\.sm_([0-9]+)([af]?)\.(cubin|ptx)$)");
    std::smatch m;
    if (!std::regex_search(name, m, re)) return std::nullopt;
    int sm = std::stoi(m[1].str());
    const std::string suffix = m[2].str();
    return arch::Target{kind, sm,
                        suffix == "a"   ? arch::Suffix::Specific
                        : suffix == "f" ? arch::Suffix::Family
                                        : arch::Suffix::None};
}

} // namespace

Result<std::string> locate_cuobjdump(const std::optional<std::string>& explicit_path) {
    if (explicit_path) {
        if (is_executable(*explicit_path)) return *explicit_path;
        return Error{"--cuobjdump: not an executable file", *explicit_path};
    }
    if (auto e = getenv_nonempty("NVCC_FORGE_CUOBJDUMP")) {
        if (is_executable(*e)) return *e;
        return Error{"NVCC_FORGE_CUOBJDUMP does not name an executable file", *e};
    }
    const auto path_dirs = split(getenv_str("PATH"), ':');
    for (const auto& d : path_dirs)
        if (auto p = fs::path(d) / "cuobjdump"; is_executable(p)) return p.string();
    std::vector<fs::path> sites;
    for (const auto& d : split(getenv_str("PYTHONPATH"), ':'))
        sites.emplace_back(d);
    for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"})
        if (auto p = getenv_nonempty(var))
            for (auto& s : site_dirs(*p))
                sites.push_back(s);
    for (const auto& d : path_dirs) // python interpreters on PATH: <prefix>/bin
        for (auto& s : site_dirs(fs::path(d).parent_path()))
            sites.push_back(s);
    if (auto home = getenv_nonempty("HOME"))
        for (auto& s : site_dirs(fs::path(*home) / ".local"))
            sites.push_back(s);
    for (const char* prefix : {"/usr/local", "/usr"})
        for (auto& s : site_dirs(prefix))
            sites.push_back(s);
    for (const auto& s : sites)
        if (auto p = cuobjdump_in_site(s)) return p->string();
    return Error{"cuobjdump not found: pass --cuobjdump PATH, set NVCC_FORGE_CUOBJDUMP, put it on "
                 "PATH, or pip install nvidia-cuda-cuobjdump"};
}

Result<std::vector<Entry>> parse_cuobjdump_listing(const std::string& output,
                                                   const std::string& file) {
    static const std::regex image_re(R"(^(ELF|PTX) file\s+[0-9]+:\s+(\S+)\s*$)");
    static const std::regex member_re(R"(^member (.*):([^:]+):\s*$)");
    std::vector<Entry> out;
    std::optional<std::string> member;
    std::istringstream in(output);
    std::string line;
    int line_no = 0;
    // Every line is one cuobjdump writes for --list-elf/--list-ptx, or blank: anything else (a
    // wrapper script's chatter, another tool in its place, a format of a later release) would
    // otherwise be skipped, and a listing made of skipped lines reads as "no device code".
    auto unreadable = [&](const std::string& why) {
        return Error{fmt::format("cannot parse cuobjdump's output, line {}: {}", line_no, why),
                     file};
    };
    while (std::getline(in, line)) {
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        std::smatch m;
        if (std::regex_match(line, m, member_re)) {
            member = m[2].str();
            continue;
        }
        if (!std::regex_match(line, m, image_re))
            return unreadable(fmt::format("'{}' (expected 'ELF file N: NAME', 'PTX file N: NAME' "
                                          "or 'member ARCHIVE:OBJECT:')",
                                          line.substr(0, 200)));
        const arch::Kind kind = m[1].str() == "ELF" ? arch::Kind::Sass : arch::Kind::Ptx;
        auto target = target_from_image_name(m[2].str(), kind);
        if (!target)
            return unreadable(
                fmt::format("cannot read an arch from the image name '{}'", m[2].str()));
        Entry e;
        e.file = file;
        e.member = member;
        e.section = m[2].str();
        e.target = *target;
        out.push_back(std::move(e));
    }
    return out;
}

Result<std::vector<Entry>> read_entries_cuobjdump(const std::string& cuobjdump,
                                                  const std::string& path, bool all_fatbins) {
    {
        // cuobjdump reads ELF, ar, cubin and fatbin files, not zips; say so instead of relaying
        // its "Invalid fatbin header".
        std::ifstream in(path, std::ios::binary);
        char magic[4] = {};
        if (in.read(magic, 4) && std::string_view(magic, 4) == std::string_view("PK\x03\x04", 4))
            return Error{
                "the cuobjdump backend cannot read zip files (wheels): use --backend native", path};
        // cuobjdump on Linux reads no PE/COFF: it reports a DLL full of fatbins as having "no
        // device code", which would read as a difference from the native listing.
        if (std::string_view(magic, 2) == "MZ")
            return Error{"the cuobjdump backend cannot read PE files (Windows .dll, .pyd, .exe) "
                         "here: cuobjdump on Linux reads ELF only; use --backend native",
                         path};
    }
    std::vector<std::string> args{"--list-elf", "--list-ptx"};
    if (all_fatbins) args.emplace_back("--all-fatbin");
    args.push_back(path);
    ProcessSpec spec;
    spec.path = cuobjdump;
    spec.argv = {cuobjdump};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.output =
        ProcessSpec::Output::Capture; // two files, not pipes: a chatty stderr cannot block
    spec.null_stdin = true;
    auto run = run_process(spec);
    if (!run) return Error{run.error().message, path};
    const std::string& out_text = run->out;
    const std::string& err_text = run->err;
    const int rc = run->status_code();
    auto listing = parse_cuobjdump_listing(out_text, path);
    // cuobjdump says in so many words when a file has no GPU code (exit 255, "File 'PATH' does not
    // contain device code" on stderr, at most `member` lines on stdout): only then is an empty
    // listing an answer. Empty output without that sentence is a tool that was not understood.
    const bool says_no_code = err_text.find(fmt::format("File '{}' does not contain device code",
                                                        path)) != std::string::npos;
    if (listing && listing->empty() && says_no_code) return listing;
    if (rc != 0) {
        std::string why = err_text;
        while (!why.empty() && (why.back() == '\n' || why.back() == ' '))
            why.pop_back();
        return Error{
            fmt::format("cuobjdump failed (exit {}): {}", rc, why.empty() ? "no message" : why),
            path};
    }
    if (!listing) {
        Error e = std::move(listing).error();
        e.message = fmt::format("{} ({})", e.message, cuobjdump);
        return e;
    }
    if (listing->empty())
        return Error{fmt::format("cuobjdump ({}) exited 0 but listed no image and did not say the "
                                 "file has no device code: its output cannot be read",
                                 cuobjdump),
                     path};
    return listing;
}

std::vector<arch::Target> cuobjdump_view(const std::vector<Entry>& native, bool all_fatbins) {
    // Per ELF unit (the file, or each archive/wheel member), does an executable fatbin exist?
    std::map<std::optional<std::string>, bool> has_exec;
    for (const auto& e : native)
        if (e.section == ".nv_fatbin" || e.section == "__nv_fatbin") has_exec[e.member] = true;
    std::vector<arch::Target> out;
    for (const auto& e : native) {
        if (e.target.kind == arch::Kind::Lto) continue;
        if (e.found == Found::Embedded) continue; // cuobjdump reads the registered sections only
        if (!all_fatbins && has_exec[e.member] && e.section == "__nv_relfatbin") continue;
        arch::Target t = e.target;
        if (t.kind == arch::Kind::Sass && t.suffix == arch::Suffix::Family)
            t.suffix = arch::Suffix::None;
        out.push_back(t);
    }
    return out;
}

std::vector<std::string> compare_with_cuobjdump(const std::vector<Entry>& native,
                                                const std::vector<Entry>& cuobjdump,
                                                bool all_fatbins) {
    std::map<arch::Target, std::pair<int, int>> counts;
    for (const auto& t : cuobjdump_view(native, all_fatbins))
        ++counts[t].first;
    for (const auto& e : cuobjdump)
        ++counts[e.target].second;
    std::vector<std::string> diffs;
    for (const auto& [t, c] : counts)
        if (c.first != c.second)
            diffs.push_back(fmt::format("{} ({}): native {}, cuobjdump {}", t.name(),
                                        arch::kind_string(t.kind), c.first, c.second));
    return diffs;
}

} // namespace forge::binary
