// nvcc-forge env [resolve options] [--mode M] [--shim DIR] [--log FILE]: shell exports that put
// the wrapper and the resolved policy into a build environment: eval "$(nvcc-forge env ...)".
#include "cli/command.h"
#include "cli/policy_options.h"
#include "core/result.h"
#include "frontend/config.h"
#include "frontend/shim.h"
#include "policy/report.h"

#include <boost/program_options.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ostream.h>

namespace forge::cli {

namespace po = boost::program_options;

namespace {

std::string export_line(std::string_view name, std::string_view value) {
    return fmt::format("export {}={}\n", name, frontend::shell_quote(value));
}

int cmd_env(int argc, char** argv) {
    po::options_description desc("nvcc-forge env [resolve options] [--mode M] [--shim DIR]");
    add_resolve_options(desc, true);
    desc.add_options()("help,h", "show this help")("mode", po::value<std::string>(),
                                                   "NVCC_FORGE_MODE: observe | inject | strict")(
        "shim", po::value<std::string>(),
        "a shim root (nvcc-forge shim): export CUDA_HOME and PATH")(
        "log", po::value<std::string>(), "NVCC_FORGE_LOG: the per-call JSON log");
    po::variables_map vm;
    if (!store_command_line(argc, argv, desc, nullptr, vm, "env")) return kExitInput;
    if (vm.count("help")) {
        fmt::print("{}", fmt::format("{}", fmt::streamed(desc)));
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
    const std::string list = res->list.to_string();
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
    }
    if (vm.count("shim")) {
        std::error_code ec;
        const std::string dir =
            std::filesystem::absolute(vm["shim"].as<std::string>(), ec).string();
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
              cmd_env);

} // namespace forge::cli
