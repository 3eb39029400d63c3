#include "cli/policy_options.h"

#include "core/env.h"
#include "core/paths.h"
#include "policy/package.h"
#include "policy/versions.h"
#include "toolkit/locate.h"
#include "toolkit/probe.h"

#include <cstdlib>
#include <fmt/format.h>
#include <iostream>

namespace forge::cli {

namespace po = boost::program_options;

void add_resolve_options(po::options_description& desc, bool with_arch_list) {
    auto add = desc.add_options();
    if (with_arch_list)
        add("arch-list", po::value<std::string>(),
            "analyse this list as given (\"8.0 9.0+PTX\", \"80-real;90\", \"sm_90a\") instead of "
            "resolving the policy");
    add("cuda", po::value<std::string>(),
        "CUDA version (12.8, 12.8.1, cu128); default: the real nvcc found here");
    add("torch", po::value<std::string>(),
        "torch version (2.9, 2.9.1+cu128): clamps to what that torch can run");
    add("platform", po::value<std::string>()->default_value(std::string(policy::host_platform())),
        "linux_x86_64 | linux_aarch64 | win_amd64 (default: this build host's)");
    add("python", po::value<std::string>(),
        "Python version (3.12): matches build_matrix combinations");
    add("package", po::value<std::string>(), "package name: its packages/<name>/ overrides apply");
    add("policy", po::value<std::string>(),
        "arch policy file (default: the bundled policy/arch_policy.yml)");
    add("packages-dir", po::value<std::string>(),
        "package overrides directory (default: the bundled packages/)");
    add("gpus", po::value<std::string>(), "GPU table (default: the bundled policy/gpus.yml)");
}

std::filesystem::path policy_file_from_options(const po::variables_map& vm) {
    return vm.count("policy") ? std::filesystem::path(vm["policy"].as<std::string>())
                              : default_policy_file();
}

Result<std::vector<arch::Gpu>> gpus_from_options(const po::variables_map& vm,
                                                 policy::Retired retired) {
    return policy::load_gpus(vm.count("gpus") ? std::filesystem::path(vm["gpus"].as<std::string>())
                                              : default_gpus_file(),
                             retired);
}

Result<std::filesystem::path> packages_dir_from_options(const po::variables_map& vm) {
    std::string dir, origin;
    if (vm.count("packages-dir")) {
        dir = vm["packages-dir"].as<std::string>();
        origin = "--packages-dir";
    } else if (auto env = getenv_nonempty("NVCC_FORGE_PACKAGES_DIR")) {
        dir = *env;
        origin = "NVCC_FORGE_PACKAGES_DIR";
    } else {
        return default_packages_dir();
    }
    FORGE_TRY_STATUS(policy::check_packages_dir(dir, origin));
    return std::filesystem::path(dir);
}

namespace {

std::string opt(const po::variables_map& vm, const char* name) {
    return vm.count(name) ? vm[name].as<std::string>() : std::string();
}

Result<policy::Resolution> from_arch_list(const po::variables_map& vm) {
    policy::Resolution r;
    auto list = arch::ArchList::parse(vm["arch-list"].as<std::string>(), "--arch-list");
    if (!list) return std::move(list).error();
    if (list->empty()) {
        Error e{"the list is empty"};
        e.key = "--arch-list";
        return e;
    }
    r.list = std::move(*list);
    r.source = "--arch-list";
    r.requested = vm["arch-list"].as<std::string>();
    auto platform = policy::normalize_platform(
        opt(vm, "platform").empty() ? std::string(policy::host_platform()) : opt(vm, "platform"));
    if (!platform) return std::move(platform).error();
    r.platform = *platform;
    if (auto c = opt(vm, "cuda"); !c.empty()) {
        auto n = policy::normalize_cuda(c);
        if (!n) return std::move(n).error();
        r.cuda = *n;
    }
    if (auto t = opt(vm, "torch"); !t.empty()) {
        auto n = policy::normalize_torch(t);
        if (!n) return std::move(n).error();
        r.torch = *n;
    }
    if (auto p = opt(vm, "python"); !p.empty()) {
        auto n = policy::normalize_python(p);
        if (!n) return std::move(n).error();
        r.python = *n;
    }
    auto dir = packages_dir_from_options(vm);
    if (!dir) return std::move(dir).error();
    if (auto name = opt(vm, "package"); !name.empty()) {
        auto pkg = policy::load_package(*dir, name);
        if (!pkg) return std::move(pkg).error();
        policy::apply_package(*pkg, r);
    }
    // A list with a torch: that torch's ceiling applies to its coverage as to a resolved cell.
    if (!r.torch.empty() && !r.cuda.empty()) {
        auto policy = policy::load_policy(policy_file_from_options(vm));
        if (!policy) return std::move(policy).error();
        auto ceiling =
            policy::find_torch_build(*policy, r.cuda, r.torch, r.platform == "linux_aarch64");
        if (!ceiling) return std::move(ceiling).error();
        r.torch_ceiling = ceiling->ceiling;
        if (!ceiling->note.empty()) r.notes.push_back(ceiling->note);
    }
    return r;
}

} // namespace

Result<policy::Resolution> resolve_from_options(const po::variables_map& vm) {
    if (vm.count("arch-list")) return from_arch_list(vm);
    policy::ResolveRequest req;
    req.cuda = opt(vm, "cuda");
    req.torch = opt(vm, "torch");
    req.python = opt(vm, "python");
    req.platform = opt(vm, "platform");
    req.package = opt(vm, "package");
    req.policy_file = policy_file_from_options(vm);
    auto packages_dir = packages_dir_from_options(vm);
    if (!packages_dir) return std::move(packages_dir).error();
    req.packages_dir = std::move(*packages_dir);
    if (vm.count("gpus")) req.gpus_file = opt(vm, "gpus");
    if (req.cuda.empty()) {
        // No --cuda: the real nvcc on this machine says which release and what it can emit.
        auto nvcc = toolkit::find_real_nvcc();
        if (!nvcc) return std::move(nvcc).error();
        auto caps = toolkit::probe_toolkit(nvcc->string());
        if (!caps) return std::move(caps).error();
        req.toolkit = std::move(*caps);
    }
    return policy::resolve(req);
}

bool store_command_line(int argc, char** argv, const po::options_description& desc,
                        const po::positional_options_description* positional, po::variables_map& vm,
                        std::string_view command, std::string_view usage) {
    try {
        po::command_line_parser parser(argc, argv);
        parser.options(desc);
        if (positional != nullptr) parser.positional(*positional);
        po::store(parser.run(), vm);
        po::notify(vm);
    } catch (const po::error& e) {
        if (usage.empty())
            fmt::print(stderr, "nvcc-forge {}: {}\n", command, e.what());
        else
            fmt::print(stderr, "nvcc-forge {}: {}\nusage: {}\n", command, e.what(), usage);
        return false;
    }
    return true;
}

std::optional<int> parse_command_line(int argc, char** argv, const po::options_description& desc,
                                      po::variables_map& vm, std::string_view usage) {
    if (!store_command_line(argc, argv, desc, nullptr, vm, argc > 0 ? argv[0] : "", usage))
        return kExitInput;
    if (vm.count("help")) {
        std::cout << "usage: " << usage << "\n\n"
                  << desc << "\nexit codes: 0 ok, 1 policy finding, 2 unusable input or usage\n";
        return kExitOk;
    }
    return std::nullopt;
}

int report_error(std::string_view command, const Error& error) {
    fmt::print(stderr, "nvcc-forge {}: {}\n", command, error.to_string());
    return error.exit_code == kExitOk ? kExitInput : error.exit_code;
}

} // namespace forge::cli
