#include "frontend/adapters.h"

#include "core/process.h"
#include "policy/resolve.h"
#include "toolkit/probe.h"

#include <fmt/format.h>
#include <unistd.h>

namespace forge::frontend {

Result<toolkit::ToolkitCaps> probe_real_nvcc(const std::filesystem::path& nvcc) {
    return toolkit::probe_toolkit(nvcc.string());
}

Result<std::pair<arch::ArchList, std::string>>
resolve_package_list(const FrontendEnv& env, const std::string& cuda,
                     const std::filesystem::path& packages_dir,
                     const std::filesystem::path& policy_file, const toolkit::ToolkitCaps& caps,
                     const std::filesystem::path& nvcc) {
    policy::ResolveRequest req;
    req.cuda = cuda;
    req.torch = env.torch;
    if (!env.platform.empty()) req.platform = env.platform;
    req.package = env.package;
    req.policy_file = policy_file;
    req.packages_dir = packages_dir;
    // The caps are already known (and cached): the resolver must not probe nvcc again.
    toolkit::ToolkitCaps tk = caps;
    tk.nvcc = nvcc.string();
    req.toolkit = std::move(tk);
    auto r = policy::resolve(req);
    if (!r) return std::move(r).error();
    // Resolved once per cache entry, so this is said on the first call of a build, not on each.
    if (!r->near_package.empty())
        write_all(STDERR_FILENO, fmt::format("nvcc-forge: warning: NVCC_FORGE_PACKAGE={} has no "
                                             "package files; did you mean {}?\n",
                                             env.package, r->near_package));
    // Injection speaks the package's form (docs/arch-rules.md, "What the wrapper injects"): a
    // token the build spells sm_100f is missing, and injected, as sm_100f, as the gate expects.
    arch::ArchList built = r->builds_as();
    return std::pair{std::move(built), std::move(r->source)};
}

} // namespace forge::frontend
