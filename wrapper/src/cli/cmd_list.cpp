// nvcc-forge list FILE... [--format text|json] [--toolkit] [--backend native|cuobjdump|both]
//   [--all] [--cuobjdump PATH]
// One row per fatbin entry (every section, every fatbin). Exit 0, or 2 when any file is
// unreadable (the others are still listed) or when `both` finds a difference.
// NVCC_FORGE_LIST_THREADS=N: --toolkit's payload workers (default: the core count, at most 16).
// --toolkit keeps each image's answer in $NVCC_FORGE_CACHE_DIR/toolkit (binary/result_cache.h).
#include "binary/cuobjdump.h"
#include "binary/entry_json.h"
#include "binary/reader.h"
#include "binary/result_cache.h"
#include "cli/command.h"
#include "cli/policy_options.h"
#include "core/env.h"
#include "core/text.h"

#include <algorithm>
#include <boost/program_options.hpp>
#include <charconv>
#include <cstdlib>
#include <fmt/format.h>
#include <iostream>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <optional>
#include <string_view>

namespace po = boost::program_options;

namespace forge::cli {
namespace {

// The table as one string: the caller writes it at once (a listing of libtorch_cuda.so is
// ~3,000 lines; printing them one by one costs a write per buffer-full and a format per line).
void append_table(std::string& text, const std::vector<binary::Entry>& rows, bool toolkit) {
    std::vector<std::vector<std::string>> cells;
    std::vector<std::string> head{"FILE", "MEMBER",      "SECTION", "FATBIN", "OFFSET", "KIND",
                                  "ARCH", "COMPRESSION", "SIZE",    "STUB",   "KERNELS"};
    if (toolkit) head.emplace_back("TOOLKIT");
    head.emplace_back("FOUND"); // registered section, or embedded in another one
    cells.push_back(head);
    for (const auto& e : rows) {
        std::vector<std::string> r{e.file,
                                   e.member.value_or("-"),
                                   e.section,
                                   std::to_string(e.fatbin_index),
                                   fmt::format("0x{:x}", e.entry_offset),
                                   std::string(arch::kind_string(e.target.kind)),
                                   e.target.name(),
                                   std::string(binary::compression_string(e.compression)),
                                   std::to_string(e.payload_size),
                                   binary::stub_known(e)
                                       ? (*binary::stub_known(e) ? "yes" : "no")
                                       // compressed and not read: --toolkit decompresses it
                                       : "unknown",
                                   e.kernels ? std::to_string(*e.kernels) : "-"};
        if (toolkit) r.push_back(e.toolkit.value_or("-"));
        r.emplace_back(binary::found_string(e.found));
        // Only the names come from the user or the file; the other cells are numbers and
        // names this program formats.
        for (std::size_t i = 0; i < 3; ++i)
            r[i] = escape_control(r[i]);
        cells.push_back(std::move(r));
    }
    std::vector<std::size_t> width(head.size(), 0);
    std::size_t line = 0;
    for (const auto& r : cells)
        for (std::size_t i = 0; i < r.size(); ++i)
            width[i] = std::max(width[i], r[i].size());
    for (std::size_t w : width)
        line += w + 2;
    text.reserve(text.size() + line * cells.size());
    for (const auto& r : cells) {
        for (std::size_t i = 0; i < r.size(); ++i) {
            text += r[i];
            if (i + 1 < r.size()) text.append(width[i] - r[i].size() + 2, ' ');
        }
        text += '\n';
    }
}

struct ListOptions {
    std::vector<std::string> files;
    std::string format = "text", backend = "native", cuobjdump_path;
    bool toolkit = false, all = false;
    std::string cuobjdump; // the one found, for any backend but native
};

// The command line: an exit code when list stops here (usage, --help).
std::optional<int> parse_list_options(int argc, char** argv, ListOptions& o) {
    po::options_description desc("nvcc-forge list FILE... [options]");
    desc.add_options()("help,h", "show this help")(
        "file", po::value(&o.files), "files: .so, executables, .o, .a, .cubin, .fatbin, .whl/.zip")(
        "format", po::value(&o.format), "text (default) | json")(
        "toolkit", po::bool_switch(),
        "decompress cubins to report the CUDA release that built each, and kernel counts")(
        "backend", po::value(&o.backend),
        "native (default) | cuobjdump | both (native rows, cross-checked against cuobjdump)")(
        "all", po::bool_switch(),
        "cuobjdump -all: also the relocatable fatbins (native always lists every section)")(
        "cuobjdump", po::value(&o.cuobjdump_path),
        "path of cuobjdump (else NVCC_FORGE_CUOBJDUMP, "
        "PATH, pip nvidia-cuda-cuobjdump)");
    po::positional_options_description pos;
    pos.add("file", -1);
    po::variables_map vm;
    if (!store_command_line(argc, argv, desc, &pos, vm, "list")) return kExitInput;
    if (vm.count("help")) {
        std::cout << desc
                  << "\nExit: 0 ok, 2 unreadable input (or a cuobjdump difference with "
                     "--backend both).\n";
        return kExitOk;
    }
    if (o.files.empty()) return report_error("list", Error("no FILE given"));
    if (o.format != "text" && o.format != "json")
        return report_error(
            "list", Error(fmt::format("--format must be text or json, not '{}'", o.format)));
    if (o.backend != "native" && o.backend != "cuobjdump" && o.backend != "both")
        return report_error(
            "list",
            Error(fmt::format("--backend must be native, cuobjdump or both, not '{}'", o.backend)));
    o.toolkit = vm["toolkit"].as<bool>();
    o.all = vm["all"].as<bool>();
    if (o.backend != "native") {
        auto found = binary::locate_cuobjdump(
            o.cuobjdump_path.empty() ? std::nullopt : std::optional<std::string>(o.cuobjdump_path));
        if (!found) return report_error("list", found.error());
        o.cuobjdump = *found;
    }
    return std::nullopt;
}

// NVCC_FORGE_LIST_THREADS into `opts`: an exit code when it is not a number in range.
std::optional<int> read_list_threads(binary::ReadOptions& opts) {
    const auto v = getenv_opt("NVCC_FORGE_LIST_THREADS");
    if (!v) return std::nullopt;
    const std::string_view s(*v);
    unsigned n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || end != s.data() + s.size() || n == 0 || n > opts.max_threads)
        return report_error("list", Error(fmt::format("NVCC_FORGE_LIST_THREADS must be a "
                                                      "number from 1 to {}, not '{}'",
                                                      opts.max_threads, escape_control(s))));
    opts.threads = n;
    return std::nullopt;
}

// One file's entries by the chosen backend (`both`: native, each difference from cuobjdump an
// error). False when the file could not be read; `rc` is the exit code of any error reported.
bool list_entries(const ListOptions& o, const binary::ReadOptions& opts, const std::string& f,
                  std::vector<binary::Entry>& entries, int& rc) {
    if (o.backend == "cuobjdump") {
        auto r = binary::read_entries_cuobjdump(o.cuobjdump, f, o.all);
        if (!r) {
            rc = report_error("list", r.error());
            return false;
        }
        entries = std::move(*r);
        return true;
    }
    auto r = binary::read_entries(f, opts);
    if (!r) {
        rc = report_error("list", r.error());
        return false;
    }
    entries = std::move(*r);
    if (o.backend != "both") return true;
    auto other = binary::read_entries_cuobjdump(o.cuobjdump, f, o.all);
    if (!other) {
        rc = report_error("list", other.error());
        return true;
    }
    for (const auto& d : binary::compare_with_cuobjdump(entries, *other, o.all))
        rc = report_error("list", Error(fmt::format("{}: differs from cuobjdump{}: {}", f,
                                                    o.all ? " -all" : "", d)));
    return true;
}

int run_list(int argc, char** argv) {
    ListOptions o;
    if (auto stop = parse_list_options(argc, argv, o)) return *stop;
#ifdef __GLIBC__
    // The payload workers free decoder windows and images of a few MiB each. glibc's dynamic
    // mmap threshold would rise to the largest one freed and serve later ones from per-thread
    // arenas, which keep freed memory resident: a fixed threshold returns each to the system.
    if (o.toolkit) ::mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
    binary::ReadOptions opts;
    opts.inspect_payloads = o.toolkit;
    // --toolkit answers an image it read before (the same compressed bytes) from the cache.
    binary::ResultCache image_cache(o.toolkit ? binary::default_result_cache_dir()
                                              : std::filesystem::path());
    opts.cache = o.toolkit ? &image_cache : nullptr;
    if (auto stop = read_list_threads(opts)) return *stop;
    int rc = kExitOk;
    std::vector<binary::Entry> rows;
    std::vector<std::string> no_code;
    for (const auto& f : o.files) {
        std::vector<binary::Entry> entries;
        if (!list_entries(o, opts, f, entries, rc)) continue;
        if (entries.empty()) no_code.push_back(f);
        if (rows.empty()) {
            rows = std::move(entries);
            continue;
        }
        rows.reserve(rows.size() + entries.size());
        for (auto& e : entries)
            rows.push_back(std::move(e));
    }

    for (const auto& w : image_cache.take_warnings())
        fmt::print(stderr, "nvcc-forge list: warning: {}\n", escape_control(w));
    std::string out;
    if (o.format == "json") {
        out = binary::entries_json(rows);
    } else {
        if (!rows.empty()) append_table(out, rows, o.toolkit);
        for (const auto& f : no_code)
            out += fmt::format("{}: no device code\n", escape_control(f));
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    return rc;
}

} // namespace
} // namespace forge::cli

FORGE_COMMAND("list", "list the GPU code (fatbin entries) inside binaries, wheels and archives",
              forge::cli::run_list, "nvcc-forge list dist/pkg-1.0-cp312-cp312-linux_x86_64.whl");
