// nvcc-forge env [resolve options] [--mode M] [--shim DIR] [--log FILE]: shell exports that put
// the wrapper and the resolved policy into a build environment: eval "$(nvcc-forge env ...)".
#include "cli/command.h"
#include "cli/policy_options.h"
#include "core/env_vars.h"
#include "core/paths.h"
#include "core/result.h"
#include "frontend/config.h"
#include "frontend/shim.h"
#include "policy/report.h"

#include <boost/program_options.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

namespace forge::cli {

namespace po = boost::program_options;

namespace {

std::string export_line(std::string_view name, std::string_view value) {
    return fmt::format("export {}={}\n", name, frontend::shell_quote(value));
}

// The policy `env --shim` binds the shim to: everything that changes what the wrapper does to a
// compile, so that a cache in front of the shim keys on it (frontend/settings.h). The mode is
// always bound (a mode set later in the environment would change objects the key cannot see);
// the package's wrapper settings are read from its file by the wrapper, and listed here as a
// comment so that an edit to them changes the identity too.
std::vector<std::string> shim_settings(const po::variables_map& vm, const policy::Resolution& res) {
    std::string mode = vm.count("mode") ? vm["mode"].as<std::string>() : res.wrapper.mode;
    std::vector<std::string> s{"NVCC_FORGE_ARCH_LIST=" + res.builds_as().to_string(),
                               "NVCC_FORGE_MODE=" + (mode.empty() ? std::string("inject") : mode)};
    if (!res.package.empty()) {
        std::error_code ec;
        const auto dir = vm.count("packages-dir")
                             ? std::filesystem::path(vm["packages-dir"].as<std::string>())
                             : default_packages_dir();
        s.push_back("NVCC_FORGE_PACKAGE=" + res.package);
        // The shim's nvcc is a copy outside the install: it cannot find the data beside itself.
        s.push_back("NVCC_FORGE_PACKAGES_DIR=" + std::filesystem::absolute(dir, ec).string());
        s.push_back(fmt::format("# wrapper: inject_arch_specific={} arch_specific_sources={}",
                                res.wrapper.inject_arch_specific
                                    ? (*res.wrapper.inject_arch_specific ? "true" : "false")
                                    : "unset",
                                fmt::join(res.wrapper.arch_specific_sources, ",")));
    }
    return s;
}

// The compile log of a build through a shim, in the shim's root, when --log names none.
constexpr const char* kShimLogName = "nvcc-forge.log";

int cmd_env(int argc, char** argv) {
    po::options_description desc("nvcc-forge env [resolve options] [--mode M] [--shim DIR]");
    add_resolve_options(desc, true);
    desc.add_options()("help,h", "show this help")("mode", po::value<std::string>(),
                                                   "NVCC_FORGE_MODE: observe | inject | strict")(
        "shim", po::value<std::string>(),
        "a shim root (nvcc-forge shim): bind this policy's shim under it (DIR/.policies/ID), "
        "export CUDA_HOME and PATH")(
        "log", po::value<std::string>(),
        "NVCC_FORGE_LOG: the per-call JSON log (with --shim, default: SHIM/nvcc-forge.log)")(
        "explain", po::bool_switch(), "list every NVCC_FORGE_* variable and what it does");
    po::variables_map vm;
    if (!store_command_line(argc, argv, desc, nullptr, vm, "env")) return kExitInput;
    if (vm.count("help")) {
        fmt::print("{}", fmt::format("{}", fmt::streamed(desc)));
        return kExitOk;
    }
    if (vm["explain"].as<bool>()) {
        for (const auto& v : kEnvVars)
            fmt::print("{} ({}): {}\n", v.name, v.read_by, v.meaning);
        return kExitOk;
    }
    std::string out;
    if (vm.count("mode")) {
        const auto mode = vm["mode"].as<std::string>();
        if (auto m = frontend::parse_mode(mode, "--mode"); !m)
            return report_error("env", Error("--mode: " + m.error().message));
    }
    if (vm.count("shim")) {
        std::error_code ec;
        auto dir = std::filesystem::absolute(vm["shim"].as<std::string>(), ec);
        if (!frontend::is_shim(dir))
            return report_error("env",
                                Error(fmt::format("{} is not a shim root; create it with "
                                                  "nvcc-forge shim --cuda-home <cuda> --out {}",
                                                  dir.string(), dir.string())));
    }
    auto res = resolve_from_options(vm);
    if (!res) return report_error("env", res.error());
    // The wrapper's list is what the package's build compiles (its target_forms), the list the
    // gate expects: a token injected back is injected in the package's form (docs/arch-rules.md).
    const std::string list = res->builds_as().to_string();
    out += export_line("NVCC_FORGE_ARCH_LIST", list);
    // In the form the package's build script splits (wrapper.arch_list_separator).
    if (auto torch = policy::torch_arch_list(*res); torch.ok()) {
        out += export_line("TORCH_CUDA_ARCH_LIST", *torch);
    } else {
        fmt::print(stderr, "nvcc-forge env: TORCH_CUDA_ARCH_LIST not exported: {}\n",
                   torch.error().message);
    }
    // The package's own knobs (arch_knobs), in the form its build script reads.
    for (const auto& k : policy::export_knobs(res->arch_knobs, res->list).values)
        out += export_line(k.variable, k.value);
    if (!res->package.empty()) out += export_line("NVCC_FORGE_PACKAGE", res->package);
    if (vm.count("mode")) out += export_line("NVCC_FORGE_MODE", vm["mode"].as<std::string>());
    if (vm.count("log")) {
        std::error_code ec;
        out += export_line("NVCC_FORGE_LOG",
                           std::filesystem::absolute(vm["log"].as<std::string>(), ec).string());
    } else if (vm.count("shim")) {
        // pip hides a build's stderr (the wrapper's drop lines) unless it fails or runs with -v:
        // a shimmed build keeps its compile log by default, in the shim, and says where.
        std::error_code ec;
        const auto log =
            (std::filesystem::absolute(vm["shim"].as<std::string>(), ec) / kShimLogName).string();
        out += export_line("NVCC_FORGE_LOG", log);
        fmt::print(stderr,
                   "nvcc-forge env: the compile log is {0} (what each nvcc call dropped and got "
                   "back): nvcc-forge log summarize {0}\n",
                   frontend::shell_quote(log));
    }
    if (vm.count("shim")) {
        // Not the root itself: the shim of this policy under it, which no other binding rewrites
        // while a build runs it (frontend/shim.h).
        std::error_code ec;
        auto bound =
            frontend::bind_policy_shim(std::filesystem::absolute(vm["shim"].as<std::string>(), ec),
                                       wrapper_exe(), shim_settings(vm, *res));
        if (!bound) return report_error("env", bound.error());
        const std::string dir = bound->string();
        out += export_line("CUDA_HOME", dir);
        out += export_line("CUDA_PATH", dir);
        // "$PATH" stays unexpanded until eval: the caller's PATH at that moment.
        out += fmt::format("export PATH={}:\"$PATH\"\n", frontend::shell_quote(dir + "/bin"));
    }
    fmt::print("{}", out);
    return kExitOk;
}

} // namespace

FORGE_COMMAND("env", "print shell exports that put the wrapper and the policy into a build",
              cmd_env,
              "eval \"$(nvcc-forge env --package flash_attn --cuda 12.8 --torch 2.9 --shim "
              "/tmp/cuda-shim)\"");

} // namespace forge::cli
