// The nvcc front end's entry points: invoked as `nvcc` (a symlink, PATH-prepended or in a shim's
// bin/), or as a compiler launcher (`nvcc-forge [ccache|sccache ...] /path/to/nvcc args...`).
#include "entry/frontend_entry.h"

#include "core/env.h"
#include "core/paths.h"
#include "core/result.h"
#include "core/text.h"
#include "frontend/notice.h"
#include "frontend/settings.h"
#include "frontend/wrapper.h"
#include "toolkit/locate.h"

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace forge::entry {

namespace fs = std::filesystem;
using frontend::Call;
using frontend::FrontendEnv;

namespace {

std::string current_dir() {
    std::error_code ec;
    auto p = fs::current_path(ec);
    return ec ? std::string() : p.string();
}

toolkit::LocateInput locate_input(const FrontendEnv& env, std::string argv0) {
    toolkit::LocateInput in;
    in.argv0 = std::move(argv0);
    in.real_nvcc_env = env.real_nvcc;
    in.path_env = getenv_str("PATH");
    in.cuda_home_env = getenv_str("CUDA_HOME");
    in.self = self_exe();
    return in;
}

// The depth of this wrapper. Only a marker set by a wrapper of this very call chain counts (see
// toolkit::read_depth_marker); anything else is ignored, once and aloud, and the policy applies.
// A wrapper started by a wrapper (depth 1) runs the real nvcc untouched; deeper than that is a
// loop (two copies of nvcc-forge naming each other) and stops here (false).
bool read_depth(Call& call) {
    const toolkit::DepthReading reading = toolkit::read_depth_marker(call.env.depth);
    if (reading.ignored)
        fmt::print(stderr,
                   "nvcc-forge: warning: ignoring {}={}: not set by an nvcc-forge running this "
                   "call (inherited or stale); the policy applies\n",
                   toolkit::kDepthEnv, shown_value(call.env.depth));
    call.depth = reading.depth;
    if (call.depth < toolkit::kMaxDepth) return true;
    fmt::print(stderr,
               "nvcc-forge: refusing to run: {}={} means nvcc-forge has started itself {} times "
               "(check NVCC_FORGE_REAL_NVCC, PATH and the shim's {})\n",
               toolkit::kDepthEnv, shown_value(call.env.depth), call.depth,
               toolkit::kRealNvccMarker);
    return false;
}

// A token of the launcher list that is nvcc-forge again (`nvcc-forge nvcc-forge sccache nvcc`,
// from a launcher list composed twice, spelled bare or by path): by name, or by identity when its
// name does not say nvcc (a shim's `nvcc` pointing at us is the compiler, not a launcher).
bool is_self_token(std::string_view token, const std::string& path_env, const fs::path& self) {
    std::string_view base = token;
    if (auto slash = base.rfind('/'); slash != std::string_view::npos)
        base = base.substr(slash + 1);
    if (base == "nvcc-forge") return true;
    if (base.find("nvcc") != std::string_view::npos) return false;
    if (token.find('/') != std::string_view::npos) return toolkit::same_file(token, self);
    auto found = toolkit::find_on_path(std::string(token), path_env, fs::path());
    return found && toolkit::same_file(found->nvcc, self);
}

bool looks_like_nvcc(std::string_view token, const fs::path& self) {
    std::string_view base = token;
    if (auto slash = base.rfind('/'); slash != std::string_view::npos)
        base = base.substr(slash + 1);
    if (base.find("nvcc") != std::string_view::npos && base != "nvcc-forge") return true;
    return token.find('/') != std::string_view::npos && toolkit::same_file(token, self);
}

// The compiler cache that runs this nvcc (ccache, the sccache server), when the policy comes from
// the environment, which neither hashes (frontend::Call::cache_parent).
std::string unbound_cache_parent(const Call& call) {
    if (!call.env.bound_by.empty() || !call.policy_configured) return {};
    const auto parent = toolkit::process_info(static_cast<long>(::getppid()));
    if (!parent || (parent->comm != "ccache" && parent->comm != "sccache")) return {};
    return parent->comm;
}

// The build driver that runs this launcher (ninja, make) when the policy comes from the
// environment, which no build system's dependencies include (frontend::Call::env_policy_driver).
std::string env_policy_driver(const Call& call) {
    if (!call.env.bound_by.empty() || !call.policy_configured) return {};
    const auto driver = frontend::build_driver();
    if (!driver || (driver->comm != "ninja" && driver->comm != "make" && driver->comm != "gmake"))
        return {};
    return driver->comm;
}

// How the entry was started, for who can miss a policy read from the environment: the compiler
// cache that runs an nvcc (cache_parent), the build driver that runs a launcher (env_policy_driver)
// unless the launcher line fixed the settings (the build's files then carry the policy).
enum class Started { AsNvcc, AsLauncher, AsLauncherWithSettings };

int run(Call& call, Started how) {
    call.cwd = current_dir();
    // The one place the nvcc path asks whether a policy is configured: here, once the build's
    // settings (a shim's, a plan's, the launcher line's) are bound over the environment's.
    call.policy_configured = call.env.policy_configured();
    if (how == Started::AsNvcc) call.cache_parent = unbound_cache_parent(call);
    if (how == Started::AsLauncher) call.env_policy_driver = env_policy_driver(call);
    // Everything this process starts — the probe of the real nvcc, __nvcc_device_query, nvcc
    // itself — carries the marker, so a misconfigured chain that leads back to nvcc-forge (a copy
    // named nvcc on PATH, a marker file pointing at a wrapper) stops at the next level.
    call.marker = toolkit::depth_marker(call.depth + 1);
    ::setenv(toolkit::kDepthEnv, call.marker.c_str(), 1);
    if (call.depth > 0) return frontend::exec_untouched(call);
    return frontend::run_call(call);
}

} // namespace

int run_as_nvcc(int argc, char** argv) {
    Call call;
    call.env = FrontendEnv::from_environ();
    if (!read_depth(call)) return kExitInput;
    // A bound shim's nvcc carries the policy it was bound to (frontend/settings.h).
    if (auto bound = frontend::read_shim_settings("/proc/self/exe")) {
        const std::string origin =
            fmt::format("the shim {}", self_exe().parent_path().parent_path().string());
        if (auto st = frontend::bind_settings(call.env, *bound, origin); !st) {
            fmt::print(stderr, "nvcc-forge: {}\n", st.error().to_string());
            return kExitInput;
        }
    }
    auto located = toolkit::locate_real_nvcc(locate_input(call.env, argc > 0 ? argv[0] : "nvcc"));
    if (!located) {
        fmt::print(stderr, "nvcc-forge: {}\n", located.error().to_string());
        return kExitInput;
    }
    call.nvcc = std::move(*located);
    // Started from a plan's shadow root (`nvcc-forge plan`): the stand-in answers the call.
    const std::filesystem::path dir =
        toolkit::invocation_dir(locate_input(call.env, argc > 0 ? argv[0] : "nvcc"));
    std::error_code ec;
    if (!dir.empty() && fs::exists(dir / frontend::kPlanConfigFile, ec)) {
        auto config = frontend::read_plan_config(dir / frontend::kPlanConfigFile);
        if (!config) {
            fmt::print(stderr, "nvcc-forge: {}\n", config.error().to_string());
            return kExitInput;
        }
        frontend::apply_plan_config(*config, call.env);
        call.plan = std::move(*config);
    }
    for (int i = 1; i < argc; ++i)
        call.args.emplace_back(argv[i]);
    return run(call, Started::AsNvcc);
}

// argv[1..] = [NVCC_FORGE_<NAME>=VALUE...] [launcher [launcher args]...] nvcc nvcc-args...
// The settings are the build's (ForgeArch writes the configure-time policy there); a launcher
// token that is nvcc-forge again is dropped with the settings after it: the first wins.
int run_as_launcher(int argc, char** argv) {
    Call call;
    call.env = FrontendEnv::from_environ();
    if (!read_depth(call)) return kExitInput;
    const fs::path self = self_exe();
    const std::string path_env = getenv_str("PATH");

    std::vector<std::string> fixed;
    int first = 1;
    for (; first < argc && frontend::is_setting_arg(argv[first]); ++first)
        fixed.emplace_back(argv[first]);
    while (first < argc && is_self_token(argv[first], path_env, self)) {
        ++first;
        while (first < argc && frontend::is_setting_arg(argv[first]))
            ++first;
    }
    if (!fixed.empty())
        if (auto st = frontend::bind_settings(call.env, fixed, "the launcher's arguments"); !st) {
            fmt::print(stderr, "nvcc-forge: {}\n", st.error().to_string());
            return kExitInput;
        }

    int nvcc_at = -1;
    for (int i = first; i < argc; ++i)
        if (looks_like_nvcc(argv[i], self)) {
            nvcc_at = i;
            break;
        }
    if (nvcc_at < 0) {
        fmt::print(stderr,
                   "nvcc-forge: no nvcc in the launcher command '{}'; expected nvcc-forge "
                   "[NVCC_FORGE_<NAME>=VALUE...] [ccache|sccache] /path/to/nvcc ARGS...\n",
                   first < argc ? argv[first] : "");
        return kExitInput;
    }
    // The nvcc token: used when it is a real nvcc; when it is the wrapper itself (or a bare name
    // that resolves to it), the real one is located the usual way.
    auto direct = toolkit::find_on_path(argv[nvcc_at], path_env, self);
    if (direct) {
        call.nvcc = std::move(*direct);
        call.nvcc.how = "launcher argument";
    } else {
        auto located = toolkit::locate_real_nvcc(locate_input(call.env, argv[nvcc_at]));
        if (!located) {
            fmt::print(stderr, "nvcc-forge: {}\n", located.error().to_string());
            return kExitInput;
        }
        call.nvcc = std::move(*located);
    }
    if (nvcc_at > first) {
        auto launcher = toolkit::find_on_path(argv[first], path_env, self);
        if (!launcher) {
            fmt::print(stderr, "nvcc-forge: cannot find the launcher '{}' on PATH\n", argv[first]);
            return kExitInput;
        }
        call.launchers.push_back(launcher->nvcc.string());
        for (int i = first; i < nvcc_at; ++i)
            call.launcher_args.emplace_back(argv[i]);
    }
    for (int i = nvcc_at + 1; i < argc; ++i)
        call.args.emplace_back(argv[i]);
    return run(call, fixed.empty() ? Started::AsLauncher : Started::AsLauncherWithSettings);
}

// `nvcc-forge ccache nvcc ...` (CMAKE_CUDA_COMPILER_LAUNCHER="nvcc-forge;ccache"): the wrapper goes
// first so a policy change reaches the cache key. argv[0] is the launcher's name here.
int run_as_launcher_chain(int argc, char** argv) {
    std::vector<char*> full;
    full.push_back(const_cast<char*>("nvcc-forge"));
    for (int i = 0; i < argc; ++i)
        full.push_back(argv[i]);
    full.push_back(nullptr);
    return run_as_launcher(argc + 1, full.data());
}

} // namespace forge::entry
