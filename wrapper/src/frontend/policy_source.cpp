// The two expensive inputs of a call — what the real nvcc can do and the package's policy — read
// through the on-disk cache.
#include "frontend/config.h"

#include "core/json.h"
#include "core/paths.h"
#include "frontend/adapters.h"
#include "policy/policy_file.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace forge::frontend {

namespace fs = std::filesystem;

Result<toolkit::ToolkitCaps> toolkit_caps(const FrontendEnv& env, const fs::path& nvcc_path) {
    // Keyed by the nvcc file itself (path, mtime, size, inode): a toolkit upgrade in place or a
    // different toolkit invalidates it. The format version guards against an older cache layout.
    const std::string key = "caps-v1|" + file_stamp(nvcc_path);
    const fs::path dir = cache_dir(env);
    if (auto cached = cache_read(dir, key)) {
        if (auto caps = caps_from_json(*cached); caps.ok()) return caps;
    }
    auto caps = probe_real_nvcc(nvcc_path);
    if (!caps) return caps;
    cache_write(dir, key, caps_to_json(*caps));
    return caps;
}

namespace {

std::string settings_to_json(const EffectivePolicy& p) {
    nlohmann::json j;
    j["list"] = p.list.to_string();
    j["source"] = p.source;
    j["mode"] = p.wrapper.mode;
    j["inject_arch_specific"] = p.wrapper.inject_arch_specific
                                    ? nlohmann::json(*p.wrapper.inject_arch_specific)
                                    : nlohmann::json(nullptr);
    j["arch_specific_sources"] = p.wrapper.arch_specific_sources;
    // The table's CCs and Tegra flags: all arch::covers() reads of it.
    nlohmann::json gpus = nlohmann::json::array();
    for (const auto& g : p.gpus)
        gpus.push_back({g.sm, g.tegra});
    j["gpus"] = std::move(gpus);
    return json_text(j);
}

Result<EffectivePolicy> settings_from_json(const std::string& text) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return make_error("policy cache: not a JSON object");
    EffectivePolicy p;
    try {
        auto list = arch::ArchList::parse(j.at("list").get<std::string>(), "policy cache");
        if (!list) return std::move(list).error();
        p.list = std::move(*list);
        p.source = j.at("source").get<std::string>();
        p.wrapper.mode = j.at("mode").get<std::string>();
        if (!j.at("inject_arch_specific").is_null())
            p.wrapper.inject_arch_specific = j.at("inject_arch_specific").get<bool>();
        p.wrapper.arch_specific_sources =
            j.at("arch_specific_sources").get<std::vector<std::string>>();
        for (const auto& g : j.at("gpus"))
            p.gpus.push_back(arch::Gpu{g.at(0).get<int>(), {}, g.at(1).get<bool>(), {}});
    } catch (const nlohmann::json::exception& e) {
        return make_error(fmt::format("policy cache: {}", e.what()));
    }
    return p;
}

constexpr const char* kPackagesDirEnv = "NVCC_FORGE_PACKAGES_DIR";

fs::path packages_dir_of(const FrontendEnv& env) {
    if (env.packages_dir.empty() || !policy::check_packages_dir(env.packages_dir, kPackagesDirEnv))
        return default_packages_dir();
    return env.packages_dir;
}

fs::path policy_file_of(const FrontendEnv& env) {
    return env.policy_file.empty() ? default_policy_file() : fs::path(env.policy_file);
}

// Every file whose change must invalidate the cached policy of `package`: those of each directory
// the loader may take (policy::package_dir_candidates, in its order).
std::string package_stamps(const fs::path& packages_dir, const std::string& package) {
    std::string out;
    for (const auto& name : policy::package_dir_candidates(package))
        for (const char* file : {"arch_override.yml", "build_matrix.yml"})
            out += "|" + file_stamp(packages_dir / name / file);
    return out;
}

// The GPU table the gate judges with: the bundled one, else the one beside the packages directory
// (a shim's nvcc is a copy outside the install, bound to the packages directory), else none: the
// compare then assumes every minor of a major may exist (compare_targets).
std::vector<arch::Gpu> gpu_table(const fs::path& packages_dir) {
    for (const auto& file :
         {default_gpus_file(), packages_dir.parent_path() / "policy" / "gpus.yml"})
        if (auto gpus = policy::load_gpus(file); gpus.ok()) return std::move(*gpus);
    return {};
}

} // namespace

std::optional<std::string> packages_dir_warning(const FrontendEnv& env) {
    if (env.package.empty() || env.packages_dir.empty()) return std::nullopt;
    auto usable = policy::check_packages_dir(env.packages_dir, kPackagesDirEnv);
    if (usable) return std::nullopt;
    return fmt::format("nvcc-forge: warning: {}; the package's overrides come from the bundled {} "
                       "instead\n",
                       usable.error().to_string(), default_packages_dir().string());
}

Result<EffectivePolicy> effective_policy(const FrontendEnv& env, const toolkit::ToolkitCaps& caps,
                                         const fs::path& nvcc_path) {
    const std::string cuda = caps.version.release();
    const fs::path packages_dir = packages_dir_of(env);
    // Only a list resolved from the policy file depends on it (and locating it costs a readlink
    // and a stat on every call).
    const fs::path policy_file = env.arch_list.empty() ? policy_file_of(env) : fs::path();
    const fs::path dir = cache_dir(env);

    std::string key = fmt::format("policy-v2|list={}|pkg={}|torch={}|platform={}|cuda={}",
                                  env.arch_list, env.package, env.torch, env.platform, cuda);
    if (!env.package.empty()) key += package_stamps(packages_dir, env.package);
    if (env.arch_list.empty()) key += "|" + file_stamp(policy_file);
    key += "|" + file_stamp(default_gpus_file()) + "|" +
           file_stamp(packages_dir.parent_path() / "policy" / "gpus.yml");
    if (auto cached = cache_read(dir, key)) {
        if (auto p = settings_from_json(*cached); p.ok()) return std::move(*p);
    }

    EffectivePolicy p;
    p.gpus = gpu_table(packages_dir);
    if (!env.package.empty()) {
        auto pkg = policy::load_package(packages_dir, env.package);
        if (!pkg) return std::move(pkg).error().in_file("NVCC_FORGE_PACKAGE");
        p.wrapper = pkg->wrapper;
    }
    if (!env.arch_list.empty()) {
        auto list = arch::ArchList::parse(env.arch_list, "NVCC_FORGE_ARCH_LIST");
        if (!list) return std::move(list).error();
        if (list->empty()) return make_error("NVCC_FORGE_ARCH_LIST names no architecture");
        p.list = std::move(*list);
        p.source = "NVCC_FORGE_ARCH_LIST";
    } else {
        auto r = resolve_package_list(env, cuda, packages_dir, policy_file, caps, nvcc_path);
        if (!r) return std::move(r).error();
        p.list = std::move(r->first);
        p.source = std::move(r->second);
    }
    cache_write(dir, key, settings_to_json(p));
    return p;
}

} // namespace forge::frontend
