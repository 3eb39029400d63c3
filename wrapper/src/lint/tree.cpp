#include "lint/tree.h"

#include "core/paths.h"
#include "lint/build_rules.h"
#include "lint/ignore.h"
#include "lint/lex.h"
#include "lint/source_rules.h"
#include "policy/policy_file.h"

#include <algorithm>
#include <fmt/format.h>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>
#include <tuple>

namespace fs = std::filesystem;

namespace forge::lint {

std::size_t LintReport::active_count() const {
    return static_cast<std::size_t>(std::count_if(findings.begin(), findings.end(),
                                                  [](const auto& f) { return !f.ignored(); }));
}
std::size_t LintReport::ignored_count() const {
    return findings.size() - active_count();
}

namespace {

bool skip_directory(const std::string& name) {
    if (name.starts_with(".")) return true; // .git, .hg, .venv, .tox, .eggs, .github...
    static const std::set<std::string, std::less<>> names = {"build", "_build", "dist",
                                                             "__pycache__", "node_modules"};
    return names.count(name) || name.starts_with("cmake-build-") || name.ends_with(".egg-info");
}

Result<std::string> read_file(const fs::path& p, std::uintmax_t max_bytes, bool& too_large) {
    std::error_code ec;
    auto size = fs::file_size(p, ec);
    if (ec) return Error(fmt::format("cannot stat: {}", ec.message()), p.string());
    if (size > max_bytes) {
        too_large = true;
        return std::string();
    }
    std::ifstream in(p, std::ios::binary);
    if (!in) return Error("cannot open for reading", p.string());
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) return Error("read error", p.string());
    return ss.str();
}

bool looks_binary(std::string_view data) {
    return data.substr(0, 8192).find('\0') != std::string_view::npos;
}

using FileList = std::vector<std::pair<std::string, fs::path>>; // (shown path, path to read)

// The files under `root` (or `root` itself) that the rules read. A file's shown path is `prefix`
// joined with its path below `root` (`root`'s name, for a file, when `prefix` is empty).
Status collect_files(const fs::path& root, const std::string& prefix, FileList& files,
                     LintReport& report) {
    const auto shown = [&prefix](const std::string& rel) {
        return prefix.empty() ? rel
                              : fs::path(prefix + "/" + rel).lexically_normal().generic_string();
    };
    std::error_code ec;
    auto status = fs::status(root, ec);
    if (ec || !fs::exists(status))
        return Error(fmt::format("no such file or directory{}", ec ? ": " + ec.message() : ""),
                     root.string());
    if (fs::is_regular_file(status)) {
        files.emplace_back(prefix.empty() ? root.filename().generic_string() : prefix, root);
    } else if (fs::is_directory(status)) {
        fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end;
        if (ec) return Error(fmt::format("cannot read directory: {}", ec.message()), root.string());
        while (it != end) {
            const fs::directory_entry& entry = *it;
            std::error_code sec;
            const bool is_link = entry.is_symlink(sec);
            if (!is_link && entry.is_directory(sec)) {
                if (skip_directory(entry.path().filename().string()))
                    it.disable_recursion_pending();
            } else if (!is_link && entry.is_regular_file(sec)) {
                std::string rel = entry.path().lexically_relative(root).generic_string();
                if (is_c_source(rel) || is_build_file(rel))
                    files.emplace_back(shown(rel), entry.path());
            }
            it.increment(ec);
            if (ec) {
                report.skipped.push_back(
                    fmt::format("{}: cannot read directory: {}",
                                it == end ? root.string() : it->path().string(), ec.message()));
                report.unreadable = true;
                ec.clear();
                if (it == end) break;
            }
        }
    } else {
        return Error("not a regular file or directory", root.string());
    }
    return ok_status();
}

} // namespace

Result<LintReport> lint_tree(const fs::path& root, const LintOptions& options) {
    return lint_paths({root}, options);
}

Result<LintReport> lint_paths(const std::vector<fs::path>& roots, const LintOptions& options) {
    std::vector<LintIgnore> ignores;
    for (const auto& entry : options.ignore) {
        auto ig = parse_lint_ignore(entry, options.ignore_origin);
        if (!ig) return std::move(ig).error();
        ignores.push_back(std::move(*ig));
    }
    std::vector<arch::Gpu> bundled;
    if (options.gpus.empty()) {
        auto gpus = policy::load_gpus(default_gpus_file(), policy::Retired::Include);
        if (!gpus) return std::move(gpus).error();
        bundled = std::move(*gpus);
    }
    const std::vector<arch::Gpu>& gpus = options.gpus.empty() ? bundled : options.gpus;
    LintReport report;
    FileList files;
    for (const auto& root : roots) {
        std::string prefix;
        if (roots.size() > 1) {
            prefix = root.lexically_normal().generic_string();
            while (prefix.size() > 1 && prefix.ends_with('/'))
                prefix.pop_back();
        }
        FORGE_TRY_STATUS(collect_files(root, prefix, files, report));
    }
    std::sort(files.begin(), files.end());
    files.erase(std::unique(files.begin(), files.end()), files.end());

    // Pass 1: read, blank and collect macros across the tree (a gate in a .cu can use a constant
    // from a header).
    struct Loaded {
        std::string rel;
        std::string text; // blanked for C sources, raw for build files
        bool c_source;
    };
    std::vector<Loaded> loaded;
    MacroTable macros;
    for (const auto& [rel, abs] : files) {
        bool too_large = false;
        auto data = read_file(abs, options.max_file_bytes, too_large);
        if (!data) {
            report.skipped.push_back(fmt::format("{}: {}", rel, data.error().message));
            report.unreadable = true;
            continue;
        }
        if (too_large) {
            report.skipped.push_back(
                fmt::format("{}: larger than {} bytes, not scanned", rel, options.max_file_bytes));
            continue;
        }
        if (looks_binary(*data)) continue;
        ++report.files_scanned;
        if (is_c_source(rel)) {
            std::string code = blank_c_like(*data);
            macros.collect(code, rel);
            loaded.push_back({rel, std::move(code), true});
        } else {
            loaded.push_back({rel, std::move(*data), false});
        }
    }
    // Pass 2: the rules.
    for (const auto& l : loaded) {
        auto found = l.c_source ? lint_blanked_source(l.rel, l.text, options.list, macros, gpus)
                                : lint_build_text(l.rel, l.text, options.list, gpus,
                                                  options.arch_list_separator);
        for (auto& f : found)
            report.findings.push_back(std::move(f));
    }
    std::vector<bool> used(ignores.size(), false);
    for (auto& f : report.findings) {
        for (std::size_t i = 0; i < ignores.size(); ++i) {
            if (ignore_matches(ignores[i], f)) {
                f.ignored_by = ignores[i].entry;
                used[i] = true;
                break;
            }
        }
    }
    for (std::size_t i = 0; i < ignores.size(); ++i)
        if (!used[i]) report.unused_ignores.push_back(ignores[i].entry);
    std::sort(report.findings.begin(), report.findings.end(), [](const auto& a, const auto& b) {
        return std::tie(a.file, a.line, a.rule, a.needs, a.pattern) <
               std::tie(b.file, b.line, b.rule, b.needs, b.pattern);
    });
    return report;
}

} // namespace forge::lint
