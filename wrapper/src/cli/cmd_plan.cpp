// nvcc-forge plan [resolve options | --arch-list LIST] [--gate GLOB]... [--format text|json|github]
//   [--grace SECONDS] -- CMD ARG...
// Runs the package's own build command with every nvcc call answered by the stand-in
// (frontend/standin.h), then gates what it made. Exit 0 pass, 1 the gate fails or a TU misses
// targets the mode would not restore, 2 CMD fails (or unusable input); a signal to plan ends the
// build's process group and plan by the same signal. docs/plan.md.
#include "cli/command.h"
#include "cli/policy_options.h"
#include "cli/verify_gate.h"
#include "core/env.h"
#include "core/file.h"
#include "core/paths.h"
#include "core/process.h"
#include "frontend/shim.h"
#include "frontend/standin.h"
#include "plan/report.h"
#include "toolkit/locate.h"

#include <boost/program_options.hpp>
#include <chrono>
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
                                   "[--gate GLOB]... [--format text|json|github] "
                                   "[--grace SECONDS] -- CMD ARG...";

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
    set("CUDACXX", toolkit::nvcc_in_root(root).string());
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
        const auto caller = getenv_opt(k.variable.c_str());
        out.push_back({k.variable, caller.value_or(k.value), caller.has_value()});
    }
    return out;
}

Result<fs::path> make_state_dir() {
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    if (ec) base = "/tmp";
    return create_unique_dir(base, "nvcc-forge-plan-");
}

// The run's temporary directory (shadow root, compile log, this run's stubs): removed when the
// run ends, however it ends; the signal path removes it before it re-raises.
class StateDir {
  public:
    explicit StateDir(fs::path path) : path_(std::move(path)) {}
    ~StateDir() { remove(); }
    StateDir(const StateDir&) = delete;
    StateDir& operator=(const StateDir&) = delete;
    void remove() {
        std::error_code ec;
        if (!path_.empty()) fs::remove_all(path_, ec);
        path_.clear();
    }

  private:
    fs::path path_;
};

// Runs CMD in a process group of its own, with its stdout on our stderr (plan's stdout is its
// report alone). A signal reaching plan goes to the whole group, which gets `grace` to end
// before SIGKILL (core/process.h, own_process_group): a build never outlives plan's shadow root.
Result<ProcessOutcome> run_build(const std::vector<std::string>& cmd,
                                 const std::vector<std::string>& env, const fs::path& root,
                                 std::chrono::milliseconds grace) {
    // CMD as execvp finds it on the build's PATH: `nvcc` there is the shadow root's (the wrapper).
    auto found =
        toolkit::find_command(cmd.front(), (root / "bin").string() + ":" + getenv_str("PATH"));
    if (!found) return Error{"not found on PATH", cmd.front()};
    ProcessSpec spec;
    spec.path = found->string();
    spec.argv = cmd;
    spec.env = env;
    spec.output = ProcessSpec::Output::StdoutToStderr;
    spec.forward_signals = true;
    spec.own_process_group = true;
    spec.group_grace = grace;
    // A background process group that reads the terminal is stopped (SIGTTIN), and plan would
    // wait for it forever: a build under plan reads no terminal.
    spec.null_stdin = ::isatty(STDIN_FILENO) != 0;
    return run_process(spec);
}

// Plan was told to stop while the build ran: the build's group has ended (core/process.h), the
// shadow root goes, and plan ends by the same signal. No verdict: nothing was judged.
[[noreturn]] void end_interrupted(const ProcessOutcome& build, StateDir& state) {
    state.remove();
    fmt::print(stderr,
               "nvcc-forge plan: stopped by {}: the build's processes {}; nothing was "
               "gated\n",
               signal_name(build.forwarded_signal),
               build.group_killed ? "outlived the grace and were killed" : "have ended");
    ProcessOutcome as_told;
    as_told.signal = build.forwarded_signal;
    propagate(as_told);
    std::_Exit(128 + build.forwarded_signal); // propagate returns only if the signal did not end us
}

struct PlanOptions {
    std::vector<std::string> cmd;
    std::vector<std::string> gates;
    std::string format = "text";
    double grace_s = 10;
    po::variables_map vm;
};

// The command line: an exit code when plan stops here (usage, --help).
std::optional<int> parse_plan_options(int argc, char** argv, PlanOptions& o) {
    // Everything after "--" is the build command, never our options.
    int dashdash = argc;
    for (int i = 1; i < argc; ++i)
        if (std::string_view(argv[i]) == "--") {
            dashdash = i;
            break;
        }
    o.cmd.assign(argv + std::min(dashdash + 1, argc), argv + argc);

    po::options_description desc(kPlanUsage);
    desc.add_options()("help,h", "show this help")(
        "gate", po::value(&o.gates)->composing(),
        "GLOB: gate the files it names after the build, as verify does (repeatable)")(
        "format", po::value(&o.format), plan::format_names().c_str())(
        "grace", po::value(&o.grace_s),
        "SECONDS the build's processes get to end after a signal to plan, before SIGKILL "
        "(default 10)");
    add_resolve_options(desc, /*with_arch_list=*/true);
    if (!store_command_line(dashdash, argv, desc, nullptr, o.vm, "plan", kPlanUsage))
        return kExitInput;
    if (o.vm.count("help")) {
        std::cout << desc
                  << "\nExit: 0 pass, 1 the gate fails or a TU misses targets the mode does not "
                     "restore, 2 CMD fails; a signal to plan ends the build and plan by it.\n";
        return kExitOk;
    }
    if (!(o.grace_s >= 0 && o.grace_s <= 3600))
        return report_error(
            "plan", Error(fmt::format("--grace must be 0 to 3600 seconds, not {}", o.grace_s)));
    if (plan::formatter(o.format) == nullptr)
        return report_error("plan", Error(fmt::format("--format must be {}, not '{}'",
                                                      plan::format_names(), o.format)));
    if (o.cmd.empty())
        return report_error("plan", Error("no build command: plan ... -- CMD ARG..."));
    return std::nullopt;
}

// The stand-in's configuration for this run, its shadow root and files written under `state`.
Result<frontend::PlanConfig> prepare_run(const PlanOptions& o, const policy::Resolution& resolution,
                                         const fs::path& real, const fs::path& state) {
    frontend::PlanConfig config;
    // What the package's build compiles (target_forms): what the stand-in injects and the gate
    // expects.
    config.arch_list = resolution.builds_as().to_string();
    config.package = resolution.package;
    // The directory plan resolved with (checked, the option's or the variable's): the stand-in
    // compares against the same overrides.
    auto packages_dir = packages_dir_from_options(o.vm);
    if (!packages_dir) return std::move(packages_dir).error();
    std::error_code ec;
    if (o.vm.count("packages-dir") || getenv_opt("NVCC_FORGE_PACKAGES_DIR"))
        config.packages_dir = fs::absolute(*packages_dir, ec).string();
    config.log = (state / "calls.jsonl").string();
    config.state_dir = state;
    // Stubs outlive the run (keyed by the toolkit's identity and the flags): the next plan of the
    // same build compiles nothing. Where no cache directory can be made, this run's alone.
    if (const fs::path dir = frontend::cache_dir(frontend::FrontendEnv::from_environ());
        !dir.empty()) {
        fs::create_directories(dir / "plan", ec);
        if (!ec) config.stub_cache = dir / "plan";
    }
    const fs::path root = state / "cuda";
    FORGE_TRY_STATUS(
        frontend::make_shim({real.parent_path().parent_path(), root, wrapper_exe(), {}}));
    FORGE_TRY_STATUS(frontend::write_plan_files(root, config));
    return config;
}

// The gate over what the build made (after a clean build only), into the report.
Status gate_products(const PlanOptions& o, const policy::Resolution& resolution,
                     plan::PlanReport& report) {
    std::error_code ec;
    const fs::path cwd = fs::current_path(ec);
    for (const auto& g : o.gates) {
        auto files = plan::expand_gate_glob(g, cwd);
        if (files.empty()) fmt::print(stderr, "nvcc-forge plan: --gate {}: no file matches\n", g);
        report.gate_files.insert(report.gate_files.end(), files.begin(), files.end());
    }
    GateArgs args;
    args.files = report.gate_files;
    args.plan_products = true;
    args.unreadable_fails = true;
    args.command = "plan";
    auto gate = run_gate(o.vm, resolution, args);
    if (!gate) return std::move(gate).error();
    report.gate = gate->json;
    report.gate_text = gate->text;
    report.gate_github = gate->github;
    report.gate_outcome = gate->outcome;
    return ok_status();
}

int run_plan(int argc, char** argv) {
    PlanOptions o;
    if (auto stop = parse_plan_options(argc, argv, o)) return *stop;
    // Plan compiles its stubs with the real nvcc whatever --cuda says: it must be found first.
    auto real_nvcc = toolkit::find_real_nvcc(/*cuda_option_helps=*/false);
    if (!real_nvcc) return report_error("plan", real_nvcc.error());
    std::error_code ec;
    const fs::path real = fs::canonical(*real_nvcc, ec);
    if (ec) return report_error("plan", Error{"cannot resolve", real_nvcc->string()});
    auto resolution = resolve_from_options(o.vm);
    if (!resolution) return report_error("plan", resolution.error());

    // From here a signal waits until the build's group can be told (run_build), so that the
    // shadow root is always removed.
    std::optional<SignalsHeld> held;
    held.emplace();
    auto state_path = make_state_dir();
    if (!state_path) return report_error("plan", state_path.error());
    StateDir state(*state_path);
    auto config = prepare_run(o, *resolution, real, *state_path);
    if (!config) return report_error("plan", config.error());

    plan::PlanReport report;
    report.list = fmt::format("{} = {}", resolution->source, config->arch_list);
    report.knobs = knob_settings(*resolution);
    const auto grace = std::chrono::milliseconds(static_cast<long long>(o.grace_s * 1000));
    auto outcome = run_build(o.cmd, build_environment(*state_path / "cuda", report.knobs),
                             *state_path / "cuda", grace);
    if (outcome && outcome->forwarded_signal != 0) end_interrupted(*outcome, state);
    if (!outcome) {
        report.build_error =
            fmt::format("the build command could not start: {}", outcome.error().to_string());
        report.build_exit = std::nullopt;
    } else {
        report.build_exit = outcome->status_code();
        report.build_signal = outcome->signal;
    }

    auto calls = plan::read_log(config->log);
    // The gate reads what the build made, not the shadow root; a signal from here on has its
    // usual effect.
    state.remove();
    held.reset();
    if (!calls) return report_error("plan", calls.error());
    report.calls = std::move(*calls);
    report.gated = !o.gates.empty();
    if (report.gated && report.build_exit == 0)
        if (auto gated = gate_products(o, *resolution, report); !gated)
            return report_error("plan", gated.error());
    plan::judge(report);
    std::cout << plan::formatter(o.format)(report);
    return report.exit_code();
}

} // namespace

FORGE_COMMAND("plan", "run a build with nvcc answered by a stub: the arch verdict in a minute",
              run_plan,
              "nvcc-forge plan --package flash_attn --cuda 12.8 --torch 2.9 -- pip wheel . "
              "--no-build-isolation");

} // namespace forge::cli
