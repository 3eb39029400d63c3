// nvcc-forge plan [resolve options | --arch-list LIST] [--gate GLOB]... [--format text|json|github]
//   -- CMD ARG...
// Runs the package's own build command with every nvcc call answered by the stand-in
// (frontend/standin.h), then gates what it made. Exit 0 pass, 1 the gate fails or a TU misses
// targets the mode would not restore, 2 CMD fails (or unusable input). docs/plan.md.
#include "cli/command.h"
#include "cli/policy_options.h"
#include "cli/verify_gate.h"
#include "core/paths.h"
#include "core/process.h"
#include "frontend/shim.h"
#include "frontend/standin.h"
#include "plan/report.h"
#include "toolkit/locate.h"

#include <boost/program_options.hpp>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <optional>
#include <unistd.h>

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace forge::cli {
namespace {

constexpr const char* kPlanUsage = "nvcc-forge plan [resolve options | --arch-list LIST] "
                                   "[--gate GLOB]... [--format text|json|github] -- CMD ARG...";

std::string getenv_str(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? v : "";
}

// The caller's environment with the shadow root first for every way a build finds nvcc, and the
// package's own arch knobs the caller has not set (`env` exports them for the real build; without
// them the script's own default decides, which no policy chose). Nothing else changes
// (TORCH_CUDA_ARCH_LIST included: the plan shows what the build does with it).
std::vector<std::string> build_environment(const fs::path& root,
                                           const std::vector<plan::KnobSetting>& knobs) {
    const std::string path = getenv_str("PATH");
    std::vector<std::string> env =
        environment_with("PATH", (root / "bin").string() + (path.empty() ? "" : ":" + path));
    auto set = [&env](const std::string& name, const std::string& value) {
        std::erase_if(env, [&](const std::string& e) { return e.starts_with(name + "="); });
        env.push_back(name + "=" + value);
    };
    set("CUDA_HOME", root.string());
    set("CUDA_PATH", root.string());
    set("CUDACXX", (root / "bin" / "nvcc").string());
    for (const auto& k : knobs)
        if (!k.from_caller) set(k.variable, k.value);
    // The entry's note to the tools of where it is: ours, not the caller's.
    std::erase_if(
        env, [](const std::string& e) { return e.starts_with(std::string(kWrapperExeEnv) + "="); });
    return env;
}

// The package's knobs for the resolved list, or the caller's value where the caller set one.
std::vector<plan::KnobSetting> knob_settings(const policy::Resolution& r) {
    std::vector<plan::KnobSetting> out;
    for (const auto& k : policy::export_knobs(r.arch_knobs, r.list).values) {
        const char* caller = std::getenv(k.variable.c_str());
        out.push_back({k.variable, caller != nullptr ? caller : k.value, caller != nullptr});
    }
    return out;
}

Result<fs::path> make_state_dir() {
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    if (ec) base = "/tmp";
    std::string templ = (base / "nvcc-forge-plan-XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr)
        return Error{"cannot create a temporary directory", templ};
    return fs::path(templ);
}

// CMD as execvp finds it, on the build's PATH: `nvcc` itself is the shadow root's (the wrapper),
// which toolkit::find_on_path, looking for the real one, would skip.
std::optional<fs::path> command_path(const std::string& name, const std::string& path) {
    if (name.find('/') != std::string::npos) return fs::path(name);
    std::size_t start = 0;
    while (start <= path.size()) {
        const std::size_t colon = std::min(path.find(':', start), path.size());
        const fs::path dir =
            colon == start ? fs::path(".") : fs::path(path.substr(start, colon - start));
        std::error_code ec;
        fs::path cand = dir / name;
        if (fs::is_regular_file(cand, ec) && ::access(cand.c_str(), X_OK) == 0) return cand;
        start = colon + 1;
    }
    return std::nullopt;
}

// Runs CMD with its stdout on our stderr: plan's stdout is its report alone.
Result<ProcessOutcome> run_build(const std::vector<std::string>& cmd,
                                 const std::vector<std::string>& env, const fs::path& root) {
    auto found = command_path(cmd.front(), (root / "bin").string() + ":" + getenv_str("PATH"));
    if (!found) return Error{"not found on PATH", cmd.front()};
    ProcessSpec spec;
    spec.path = found->string();
    spec.argv = cmd;
    spec.env = env;
    spec.forward_signals = true;
    std::fflush(stdout);
    const int saved = ::dup(STDOUT_FILENO);
    if (saved >= 0) ::dup2(STDERR_FILENO, STDOUT_FILENO);
    auto outcome = run_process(spec);
    if (saved >= 0) {
        ::dup2(saved, STDOUT_FILENO);
        ::close(saved);
    }
    return outcome;
}

int run_plan(int argc, char** argv) {
    // Everything after "--" is the build command, never our options.
    int dashdash = argc;
    for (int i = 1; i < argc; ++i)
        if (std::string_view(argv[i]) == "--") {
            dashdash = i;
            break;
        }
    std::vector<std::string> cmd(argv + std::min(dashdash + 1, argc), argv + argc);

    po::options_description desc(kPlanUsage);
    std::vector<std::string> gates;
    std::string format = "text";
    desc.add_options()("help,h", "show this help")(
        "gate", po::value(&gates)->composing(),
        "GLOB: gate the files it names after the build, as verify does (repeatable)")(
        "format", po::value(&format), plan::format_names().c_str());
    add_resolve_options(desc, /*with_arch_list=*/true);
    po::variables_map vm;
    if (!store_command_line(dashdash, argv, desc, nullptr, vm, "plan", kPlanUsage))
        return kExitInput;
    if (vm.count("help")) {
        std::cout << desc
                  << "\nExit: 0 pass, 1 the gate fails or a TU misses targets the mode does not "
                     "restore, 2 CMD fails.\n";
        return kExitOk;
    }
    const plan::Formatter fmt_fn = plan::formatter(format);
    if (fmt_fn == nullptr)
        return report_error("plan", Error(fmt::format("--format must be {}, not '{}'",
                                                      plan::format_names(), format)));
    if (cmd.empty()) return report_error("plan", Error("no build command: plan ... -- CMD ARG..."));

    auto resolution = resolve_from_options(vm);
    if (!resolution) return report_error("plan", resolution.error());
    auto real_nvcc = toolkit::find_real_nvcc();
    if (!real_nvcc) return report_error("plan", real_nvcc.error());
    std::error_code ec;
    const fs::path real = fs::canonical(*real_nvcc, ec);
    if (ec) return report_error("plan", Error{"cannot resolve", real_nvcc->string()});

    auto state = make_state_dir();
    if (!state) return report_error("plan", state.error());
    const fs::path root = *state / "cuda";
    frontend::ShimPlan shim{real.parent_path().parent_path(), root, wrapper_exe()};
    frontend::PlanConfig config;
    config.arch_list = resolution->list.to_string();
    config.package = resolution->package;
    if (vm.count("packages-dir"))
        config.packages_dir = fs::absolute(vm["packages-dir"].as<std::string>(), ec).string();
    config.log = (*state / "calls.jsonl").string();
    config.state_dir = *state;
    // Stubs outlive the run (keyed by the toolkit's identity and the flags): the next plan of the
    // same build compiles nothing. Where no cache directory can be made, this run's alone.
    if (const fs::path dir = frontend::cache_dir(frontend::FrontendEnv::from_environ());
        !dir.empty()) {
        fs::create_directories(dir / "plan", ec);
        if (!ec) config.stub_cache = dir / "plan";
    }
    auto cleanup = [&] { fs::remove_all(*state, ec); };
    if (auto st = frontend::make_shim(shim); !st) {
        cleanup();
        return report_error("plan", st.error());
    }
    if (auto st = frontend::write_plan_files(root, config); !st) {
        cleanup();
        return report_error("plan", st.error());
    }

    plan::PlanReport report;
    report.list = fmt::format("{} = {}", resolution->source, config.arch_list);
    report.knobs = knob_settings(*resolution);
    auto outcome = run_build(cmd, build_environment(root, report.knobs), root);
    if (!outcome)
        report.build_error =
            fmt::format("the build command could not start: {}", outcome.error().to_string());
    else
        report.build_exit = outcome->status_code();

    auto calls = plan::read_log(config.log);
    if (!calls) {
        cleanup();
        return report_error("plan", calls.error());
    }
    report.calls = std::move(*calls);
    report.gated = !gates.empty();
    if (report.gated && report.build_error.empty() && report.build_exit == 0) {
        const fs::path cwd = fs::current_path(ec);
        for (const auto& g : gates) {
            auto files = plan::expand_gate_glob(g, cwd);
            if (files.empty())
                fmt::print(stderr, "nvcc-forge plan: --gate {}: no file matches\n", g);
            report.gate_files.insert(report.gate_files.end(), files.begin(), files.end());
        }
        GateArgs args;
        args.files = report.gate_files;
        args.plan_products = true;
        args.command = "plan";
        auto gate = run_gate(vm, *resolution, args);
        if (!gate) {
            cleanup();
            return report_error("plan", gate.error());
        }
        report.gate = gate->json;
        report.gate_text = gate->text;
        report.gate_github = gate->github;
        report.gate_pass = gate->pass;
        report.gate_unreadable = gate->unreadable;
    }
    cleanup();
    plan::judge(report);
    std::cout << fmt_fn(report);
    return report.exit_code();
}

} // namespace

FORGE_COMMAND("plan", "run a build with nvcc answered by a stub: the arch verdict in a minute",
              run_plan);

} // namespace forge::cli
