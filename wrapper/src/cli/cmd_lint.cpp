// nvcc-forge lint PATH... (--arch-list LIST | resolve options) [--format text|json|github]
//   [--lint-ignore ENTRY]...
// Arch-gated device code the list does not declare, and build scripts that decide archs
// themselves (lint/lint.h has the rules and the lint_ignore format).
// Exit 0 clean (or every finding ignored), 1 findings, 2 unusable input.
#include "cli/command.h"
#include "cli/policy_options.h"
#include "core/json.h"
#include "lint/lint.h"
#include "lint/report.h"

#include <boost/program_options.hpp>
#include <fmt/format.h>
#include <iostream>

namespace po = boost::program_options;

namespace forge::cli {
namespace {

int run_lint(int argc, char** argv) {
    po::options_description desc(
        "nvcc-forge lint PATH... (--arch-list LIST | resolve options) [--format text|json|github]");
    std::vector<std::string> srcs;
    std::string format = "text";
    std::vector<std::string> extra_ignores;
    desc.add_options()("help,h", "show this help")("src", po::value(&srcs),
                                                   "source trees and files to lint (one report)")(
        "format", po::value(&format), "text | json | github")(
        "lint-ignore", po::value(&extra_ignores)->composing(),
        "GLOB[:RULE]: silence matching findings visibly (added to the package's lint_ignore)");
    add_resolve_options(desc, /*with_arch_list=*/true);
    po::positional_options_description pos;
    pos.add("src", -1);
    po::variables_map vm;
    if (!store_command_line(argc, argv, desc, &pos, vm, "lint")) return kExitInput;
    if (vm.count("help")) {
        std::cout << desc << "\nRules:";
        for (auto id : lint::lint_rule_ids())
            std::cout << ' ' << id;
        std::cout
            << "\nlint_ignore entries (package file verify.lint_ignore, --lint-ignore): GLOB or "
               "GLOB:RULE;\n  GLOB is relative to PATH (to the working directory when several are "
               "given),\n  * and ? stay in one path component, ** spans them, a GLOB without '/'\n"
               "  matches a file or directory name at any depth. Ignored findings are still\n"
               "  printed, marked \"ignored (lint_ignore: ENTRY)\", and do not fail the lint.\n"
               "Exit: 0 clean, 1 findings, 2 unusable input.\n";
        return kExitOk;
    }
    if (srcs.empty())
        return report_error("lint", Error("no SRC_DIR given (one or more source trees or files)"));
    if (format != "text" && format != "json" && format != "github")
        return report_error(
            "lint", Error(fmt::format("--format must be text, json or github, not '{}'", format)));
    auto resolution = resolve_from_options(vm);
    if (!resolution) return report_error("lint", resolution.error());

    lint::LintOptions opts;
    opts.list = resolution->list;
    // The GPUs a gate is checked against, Tegra flags included, and the CCs a build script may
    // name (retired Kepler ones too): --gpus or the bundled policy/gpus.yml.
    auto gpus = gpus_from_options(vm, policy::Retired::Include);
    if (!gpus) return report_error("lint", gpus.error());
    opts.gpus = std::move(*gpus);
    // The form `env` exports for this package: script-splits-arch-list judges the script's split.
    if (!resolution->wrapper.arch_list_separator.empty())
        opts.arch_list_separator = resolution->wrapper.arch_list_separator;
    opts.ignore = resolution->lint_ignore;
    opts.ignore.insert(opts.ignore.end(), extra_ignores.begin(), extra_ignores.end());
    opts.ignore_origin = resolution->package.empty()
                             ? std::string("--lint-ignore")
                             : fmt::format("packages/{}/arch_override.yml lint_ignore / "
                                           "--lint-ignore",
                                           resolution->package);
    // One PATH: findings relative to it, as before; several: relative to where they are named.
    const std::vector<std::filesystem::path> roots(srcs.begin(), srcs.end());
    auto report = lint::lint_paths(roots, opts);
    const std::string src = srcs.size() == 1 ? srcs.front() : std::string();
    if (!report) return report_error("lint", report.error());
    if (format == "json") {
        std::cout << json_text(lint::lint_to_json(*report), 2) << "\n";
        for (const auto& s : report->skipped)
            fmt::print(stderr, "nvcc-forge lint: skipped {}\n", s);
        for (const auto& u : report->unused_ignores)
            fmt::print(stderr, "nvcc-forge lint: lint_ignore entry '{}' matched no finding\n", u);
    } else if (format == "github") {
        // Workflow commands, then the summary as a plain log line.
        std::cout << ci::to_github(lint::lint_findings(*report, src, opts.list))
                  << lint::lint_summary_line(*report, opts.list, resolution->source);
    } else {
        std::cout << lint::lint_to_text(*report, opts.list, resolution->source);
    }
    if (report->unreadable) return kExitInput;
    return report->active_count() > 0 ? kExitPolicy : kExitOk;
}

} // namespace

FORGE_COMMAND("lint", "find arch-gated code and build scripts the arch list does not cover",
              run_lint,
              "nvcc-forge lint csrc/ setup.py --package flash_attn --cuda 12.8 --torch 2.9");

} // namespace forge::cli
