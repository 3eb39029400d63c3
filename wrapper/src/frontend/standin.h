// `nvcc-forge plan`'s stand-in for nvcc: the wrapper, started from a plan's shadow CUDA root,
// parses and compares each call as usual (compare.h, the same log record), applies the mode's
// injection to the plan, and then, instead of compiling the TU, builds a tiny stub kernel with the
// call's final target flags and the flags that decide the output's kind, once per distinct flag
// set, and copies it to every output the call names (dependency files included), so that make,
// ninja and setuptools carry on. Links of objects run for real: their inputs are stubs already.
// Facts and decisions: docs/plan.md.
#pragma once

#include "core/result.h"
#include "frontend/config.h"
#include "nvcc/cmdline.h"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace forge::frontend {

// Written by `nvcc-forge plan` into its shadow root's bin/ (beside toolkit::kRealNvccMarker): a
// wrapper started from that bin/ is a stand-in. A file, not a variable, so that the build's
// environment differs from the caller's only by the shadow root's paths.
inline constexpr const char* kPlanConfigFile = ".nvcc-forge-plan";

struct PlanConfig {
    // What the wrapper compares against, as the NVCC_FORGE_* variables would say it.
    std::string arch_list;
    std::string package;
    std::string policy_file;
    std::string packages_dir;
    std::string mode;                // "observe" | "inject" | "strict"
    std::string log;                 // the compile log (one record per call)
    std::filesystem::path state_dir; // the stub source and the stub cache
};

std::string plan_config_json(const PlanConfig& config);
Result<PlanConfig> read_plan_config(const std::filesystem::path& file);
// The wrapper's configuration under a plan: the plan's policy, mode and log replace the caller's
// NVCC_FORGE_* settings for them (the build was started with the caller's environment).
void apply_plan_config(const PlanConfig& config, FrontendEnv& env);
// Writes the config and the stub source into a shadow root made by make_shim.
Status write_plan_files(const std::filesystem::path& shim_root, const PlanConfig& config);

// The stub's source: one kernel with real code (so the gate counts its images as device code),
// the plan mark (core/plan_marker.h) and a weak main (an executable links with or without one).
std::string stub_source();
std::filesystem::path stub_source_path(const std::filesystem::path& state_dir);

// CMake's configure probes (compiler ABI, try_compile scratch projects) read what they build:
// they get the real nvcc.
bool is_configure_probe(const std::string& source);

// How the stand-in answers one call, from the call as it will run (after the mode's rewrite).
struct StubPlan {
    std::vector<std::string> flags;   // for the stub compile: targets and output kind, as written
    std::vector<std::string> outputs; // what the call writes, as it names them
    // Dependency files (-MD/-MMD), one per output, with the rule's target as nvcc writes it.
    struct Depfile {
        std::string path;
        std::string target;
    };
    std::vector<Depfile> depfiles;
    // An -rdc object: nvlink refuses two copies of one module in a link, so each output gets its
    // own stub compile.
    bool per_output = false;
};
StubPlan plan_stub(const nvcc::Invocation& inv);

// make's rule for one output: "target: source..." (sources escaped as make reads them).
std::string depfile_text(const std::string& target, const std::vector<std::string>& sources);

// The stub cache's key for one compile: the real nvcc, the flags, the environment's flags and,
// for a per-output stub, the output.
std::string stub_cache_key(const std::string& nvcc, const std::vector<std::string>& flags,
                           const std::string& prepend, const std::string& append,
                           const std::string& unique);

// The object links the stand-in runs for real: an executable gets its unresolved symbols
// forgiven (the TUs' host functions were never compiled); everything else is the call as it is.
std::vector<std::string> link_args(const nvcc::Invocation& inv,
                                   const std::vector<std::string>& args);

} // namespace forge::frontend
