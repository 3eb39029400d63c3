#include "cli/policy_options.h"

#include "core/env.h"
#include "core/paths.h"
#include "core/suggest.h"
#include "policy/package.h"
#include "policy/versions.h"
#include "toolkit/locate.h"
#include "toolkit/probe.h"

#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iostream>
#include <set>

namespace forge::cli {

namespace po = boost::program_options;

void add_resolve_options(po::options_description& desc, bool with_arch_list) {
    auto add = desc.add_options();
    if (with_arch_list)
        add("arch-list", po::value<std::string>()->value_name("LIST"),
            "analyse this list as given (\"8.0 9.0+PTX\", \"80-real;90\", \"sm_90a\") instead of "
            "resolving the policy");
    add("cuda", po::value<std::string>()->value_name("X.Y"),
        "CUDA version (12.8, 12.8.1, cu128); default: the real nvcc found here");
    add("torch", po::value<std::string>()->value_name("X.Y"),
        "torch version (2.9, 2.9.1+cu128): clamps to what that torch can run");
    add("platform",
        po::value<std::string>()
            ->default_value(std::string(policy::host_platform()))
            ->value_name("P"),
        "linux_x86_64 | linux_aarch64 | win_amd64 (default: this build host's)");
    add("python", po::value<std::string>()->value_name("X.Y"),
        "Python version (3.12): matches build_matrix combinations");
    add("package", po::value<std::string>()->value_name("NAME"),
        "package name: its packages/<name>/ overrides apply");
    add("policy", po::value<std::string>()->value_name("FILE"),
        "arch policy file (default: the bundled policy/arch_policy.yml)");
    add("packages-dir", po::value<std::string>()->value_name("DIR"),
        "package overrides directory (default: the bundled packages/)");
    add("gpus", po::value<std::string>()->value_name("FILE"),
        "GPU table (default: the bundled policy/gpus.yml)");
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

// A CC no GPU of the table has (sm_999, 9.9) is a typo, not a target: nvcc would refuse it late,
// and a gate would judge against it. Error, exit 2, naming the CCs that exist.
Status check_known_ccs(const po::variables_map& vm, const arch::ArchList& list) {
    auto gpus = gpus_from_options(vm, policy::Retired::Include);
    if (!gpus) return std::move(gpus).error();
    std::set<int> known;
    for (const auto& g : *gpus)
        known.insert(g.sm);
    for (const auto& e : list.entries()) {
        if (known.count(e.sm) != 0) continue;
        std::vector<std::string> ccs;
        for (int sm : known)
            ccs.push_back(arch::cc_string(sm));
        Error err{fmt::format("unknown compute capability {} ({}): no GPU in {} has it; known: {}",
                              arch::cc_string(e.sm), e.targets().front().name(),
                              vm.count("gpus") ? vm["gpus"].as<std::string>()
                                               : std::string("the bundled policy/gpus.yml"),
                              fmt::join(ccs, " "))};
        err.key = "--arch-list";
        return err;
    }
    return ok_status();
}

// CMake's bare "90" means 9.0+PTX (sm_90 and compute_90), which a reader of the list may not
// expect: said once per such token, with the spelling of the cubin alone.
std::vector<std::string> cmake_spelling_notes(std::string_view text) {
    std::vector<std::string> notes;
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t end = std::min(text.find_first_of(" ;,", pos), text.size());
        const std::string_view token = text.substr(pos, end - pos);
        pos = end + 1;
        const auto s = arch::split_arch_spelling(token);
        if (!s || s->dotted || s->tail != arch::ArchSpelling::Tail::None) continue;
        const arch::Target sass{arch::Kind::Sass, s->sm, s->suffix};
        const arch::Target ptx{arch::Kind::Ptx, s->sm, s->suffix};
        notes.push_back(fmt::format("'{}' is CMake's spelling of {} and {} ({}+PTX); '{}-real' is "
                                    "the cubin alone",
                                    token, sass.name(), ptx.name(),
                                    arch::ArchEntry{s->sm, s->suffix, true}.token(), token));
    }
    return notes;
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
    FORGE_TRY_STATUS(check_known_ccs(vm, *list));
    r.list = std::move(*list);
    r.notes = cmake_spelling_notes(vm["arch-list"].as<std::string>());
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

namespace {

// A usage error in the tool's words: an unknown option with the nearest one, extra words with
// the command's positional form; Boost's own wording for the rest.
std::string usage_error_message(const po::error& e, const po::options_description& desc,
                                const po::positional_options_description* positional) {
    if (const auto* unknown = dynamic_cast<const po::unknown_option*>(&e)) {
        const std::string name = unknown->get_option_name();
        std::vector<std::string> names;
        for (const auto& o : desc.options())
            if (!o->long_name().empty()) names.push_back("--" + o->long_name());
        const std::string near = nearest_name(name, names);
        return fmt::format("unknown option '{}'{}", name,
                           near.empty() ? std::string()
                                        : fmt::format("; did you mean '{}'?", near));
    }
    if (dynamic_cast<const po::too_many_positional_options_error*>(&e) != nullptr) {
        const unsigned most = positional != nullptr ? positional->max_total_count() : 0;
        const std::string what =
            most == 0 ? std::string("no argument")
                      : fmt::format("{} {}", most, most == 1 ? "argument" : "arguments");
        return fmt::format("more words than the command takes ({} besides its options)", what);
    }
    return e.what();
}

} // namespace

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
        const std::string message = usage_error_message(e, desc, positional);
        if (usage.empty())
            fmt::print(stderr, "nvcc-forge {}: {}\n", command, message);
        else
            fmt::print(stderr, "nvcc-forge {}: {}\nusage: {}\n", command, message, usage);
        fmt::print(stderr, "run 'nvcc-forge help {}' for its options and an example\n", command);
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
