// nvcc-forge shim --cuda-home /usr/local/cuda --out DIR: a shadow CUDA root whose bin/nvcc is the
// wrapper (for CUDA_HOME=DIR builds: torch.utils.cpp_extension, CMake's CUDAToolkit).
#include "cli/command.h"
#include "cli/policy_options.h"
#include "core/paths.h"
#include "core/result.h"
#include "frontend/shim.h"
#include "toolkit/locate.h"

#include <boost/program_options.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

namespace forge::cli {

namespace po = boost::program_options;

namespace {

int cmd_shim(int argc, char** argv) {
    po::options_description desc("nvcc-forge shim --cuda-home DIR --out DIR");
    desc.add_options()("help,h", "show this help")(
        "cuda-home", po::value<std::string>(),
        "the real CUDA root (default: $CUDA_HOME, else /usr/local/cuda)")(
        "out", po::value<std::string>(), "the shim root to create or refresh");
    po::variables_map vm;
    if (!store_command_line(argc, argv, desc, nullptr, vm, "shim")) return kExitInput;
    if (vm.count("help")) {
        fmt::print("{}", fmt::format("{}", fmt::streamed(desc)));
        return kExitOk;
    }
    if (!vm.count("out")) return report_error("shim", Error("--out DIR is required"));
    frontend::ShimPlan plan;
    if (vm.count("cuda-home"))
        plan.cuda_home = vm["cuda-home"].as<std::string>();
    else
        plan.cuda_home = toolkit::default_cuda_root();
    plan.out = vm["out"].as<std::string>();
    plan.wrapper = wrapper_exe();
    if (auto st = frontend::make_shim(plan); !st) return report_error("shim", st.error());
    std::error_code ec;
    fmt::print("{}\n", std::filesystem::absolute(plan.out, ec).string());
    return kExitOk;
}

} // namespace

FORGE_COMMAND("shim", "make a shadow CUDA root whose bin/nvcc is the wrapper", cmd_shim,
              "nvcc-forge shim --cuda-home /usr/local/cuda --out /tmp/cuda-shim");

} // namespace forge::cli
