// Policy resolution (docs/policy.md "Resolution"; the reasons in docs/arch-rules.md, "The policy").
// INTERFACE CONTRACT, owned by the policy module; consumers use Resolution.
//
//   x86-64 / Windows (highest wins): build_matrix combination arch_list > arch_list_by_cuda[cuda]
//     > arch_list > arch_exceptions["<cuda>/<torch minor>"] > arch_policy[cuda]
//   aarch64: arch_list_by_cuda_aarch64[cuda] > arch_list_aarch64 > arch_policy_aarch64[cuda]
//     (x86 fields and arch_exceptions are never read)
//   then: clamp to nvcc_supported(cuda) and, with a torch version, to what that torch can run;
//   an empty result is a policy finding (exit 1); then +PTX on the highest plain token.
#pragma once

#include "arch/arch.h"
#include "arch/coverage.h"
#include "core/result.h"
#include "policy/package.h"
#include "policy/policy_file.h"
#include "toolkit/caps.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace forge::policy {

struct ClampedToken {
    std::string token;  // "7.0", "3.7+PTX"
    std::string reason; // "nvcc 13.0 cannot emit sm_70", "torch 2.11+cu128 ships no ..."
};

// A token of the policy row the winning override does not carry (docs/arch-rules.md,
// "Narrowing"): legitimate (a kernel floor), never silent.
struct NarrowedToken {
    std::string token;   // "7.5", "12.0+PTX" (as the clamped row has it)
    std::string against; // the row it was dropped against: "arch_policy[13.0]"
    std::string reason;  // the override's reason ("" when it gives none)
};

// A +PTX the normalisation added, and why (docs/arch-rules.md, "PTX once per major").
struct PtxAdded {
    int sm = 0;
    std::string why; // "highest plain arch" / "highest plain arch below the major 9 gap"
};

// The paired torch build of a cell (a torch_runnable row): what it ships bounds what can run in
// its process (docs/arch-rules.md, "The torch ceiling").
struct TorchCeiling {
    TorchBuild build;
    std::string where; // "torch_runnable[12.8].by_torch[2.7]"
};

struct Resolution {
    arch::ArchList list; // final, clamped, +PTX ensured
    std::string source;  // which table/field won: "arch_policy[12.8]",
                         // "packages/flash_attn/arch_override.yml:arch_list_by_cuda[12.8]",
                         // "--arch-list"
    std::vector<ClampedToken> clamped;   // every token removed, with its reason
    std::vector<PtxAdded> ptx_added;     // every +PTX added: the highest, then one per major gap
    std::vector<NarrowedToken> narrowed; // policy-row tokens the override drops
    std::string cuda;                    // "12.8" ("" when --arch-list was given)
    std::string torch;                   // "2.9" or ""
    std::string platform;                // linux_x86_64 | linux_aarch64 | win_amd64
    std::string package;                 // "" if none
    std::string policy_file;             // path of arch_policy.yml used ("" for --arch-list)
    std::string policy_sha256;           // of that file
    std::optional<long> build_epoch;     // from arch_policy.yml
    // package verify settings (packages/<pkg>/arch_override.yml `verify:`)
    std::vector<arch::Target> allow_missing; // waivers (with evidence comments in the file)
    bool allow_pure_python = false;
    std::vector<std::string> lint_ignore;
    std::vector<ExpectedExtension> expected_extensions; // verify.extensions
    bool judge_embedded = false;                        // verify.embedded_fatbins: judge
    std::string package_file; // the package's arch_override.yml ("" when none)
    // Every file `resolve` read (the policy, gpus.yml, the package's files) and the directories
    // it looked in for the package (its own, else the packages directory, where one created
    // later would appear): a change to any may change the list. ForgeArch's configure
    // dependencies; only those that exist.
    std::vector<std::string> inputs;

    // Extensions (policy module):
    std::string python;      // "3.12" or ""
    std::string requested;   // the winning list as written, before clamp and +PTX
    std::string reason;      // the winning row's reason ("" for plain overrides)
    std::string nvcc_source; // where the emittable set came from
    // A package directory one or two edits from a package that has none (a likely typo), or "".
    std::string near_package;
    // Why no +PTX tail was added although the list has none: the package's forward_ptx: false
    // ("packages/<pkg>/arch_override.yml:forward_ptx: <reason>"); "" otherwise.
    std::string ptx_not_added;
    std::vector<std::string> notes; // e.g. "torch clamp not applied: ..."
    WrapperSettings wrapper;        // packages/<pkg>/arch_override.yml `wrapper:`
    // packages/<pkg>/arch_override.yml `arch_knobs:`; their values: export_knobs(arch_knobs, list)
    std::vector<ArchKnob> arch_knobs;

    // What the package's build compiles: `list` in its target_forms (9.0 -> sm_90a); unset when
    // no form changes anything. `list` stays the request (TORCH_CUDA_ARCH_LIST).
    std::optional<arch::ArchList> built;
    std::string forms_source; // "packages/<pkg>/arch_override.yml:target_forms (<source>)"
    [[nodiscard]] const arch::ArchList& builds_as() const { return built ? *built : list; }
    // Every +PTX the package's forward_ptx: false took off the winning list, row or override.
    std::vector<ClampedToken> ptx_dropped;
    // The paired torch build, when the cell has a torch and its row is known: its ceiling.
    std::optional<TorchCeiling> torch_ceiling;
};

// What to resolve. Empty cuda: the real nvcc on this machine decides, so toolkit must be set (the
// caller probes it through toolkit/; the resolver starts no process).
struct ResolveRequest {
    std::string cuda;  // any spelling normalize_cuda accepts
    std::string torch; // "" = no torch clamp
    std::string python;
    std::string platform;               // "" = host_platform()
    std::string package;                // "" = policy row only
    std::filesystem::path policy_file;  // "" = default_policy_file()
    std::filesystem::path packages_dir; // "" = default_packages_dir()
    std::filesystem::path gpus_file;    // "" = default_gpus_file() (Tegra flags for the clamp)
    std::optional<toolkit::ToolkitCaps>
        toolkit; // overrides nvcc_supported (needed when cuda is "")
};

// Copies what a package states about its build and its gate (name, allow_missing, lint_ignore,
// extensions, wrapper, arch knobs...) into `res`; the list itself is resolve's. The one copy
// for `resolve` and for a list given by hand (`--arch-list --package`).
void apply_package(const PackageOverride& package, Resolution& res);

// Loads the files and resolves. Errors: exit 2 for unusable input (missing key, bad YAML,
// unknown key), exit 1 when the list collapses to empty.
Result<Resolution> resolve(const ResolveRequest& request);

// The resolver proper, on loaded data (tests drive it directly). `package` may be null.
Result<Resolution> resolve_loaded(const ResolveRequest& request, const PolicyData& policy,
                                  const PackageOverride* package,
                                  const std::vector<arch::Gpu>& gpus);

// True when the torch build's own cubins/PTX reach CC `sm` (natively or by JIT), the coverage
// rules of arch/coverage.h with the Tegra flag from `gpus`.
bool torch_runs(const TorchBuild& build, int sm, const std::vector<arch::Gpu>& gpus);

// The torch row of a cell: torch_runnable[cuda] (x86-64, Windows) or torch_runnable_aarch64[cuda].
// No torch: nothing. x86 without the row or the release: an error (exit 2). aarch64 rows hold the
// builds read so far: a missing one is a note ("torch clamp not applied"), never a guess.
struct TorchLookup {
    std::optional<TorchCeiling> ceiling;
    std::string note;
};
Result<TorchLookup> find_torch_build(const PolicyData& policy, const std::string& cuda,
                                     const std::string& torch, bool aarch64);

// Why the cell's torch cannot run on CC `sm`, "" when it can or the cell has no torch ceiling.
// The one answer for resolve's torch clamp and coverage's `dead (torch)` tier.
std::string torch_ceiling_reason(const Resolution& r, int sm, const std::vector<arch::Gpu>& gpus);

// Stable key of a build cell: sha256 over cuda/torch/python/platform/package, the resolved list
// and build_epoch, so a build_epoch bump changes every cell's key.
std::string cell_key(const Resolution& r);

} // namespace forge::policy
