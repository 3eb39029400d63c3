// packages/<pkg>/arch_override.yml and packages/<pkg>/build_matrix.yml: a package's own arch
// floors (arch_list[_by_cuda][_aarch64]), its verify waivers and the wrapper's package settings.
#pragma once

#include "arch/arch.h"
#include "core/result.h"
#include "policy/arch_knob.h"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace forge::policy {

// An override value: a plain string (the short form) or {list, reason, source}.
struct OverrideValue {
    std::string text;
    arch::ArchList list;
    std::string reason; // "" for the plain-string form
    std::string source; // upstream evidence (URL, file), "" for the plain-string form
    int line = 0;
};

// verify.allow_missing_archs entry: a documented upstream absence.
struct Waiver {
    arch::Target target;
    std::string evidence; // required
    int line = 0;
};

// verify.extensions entry: a module the package's wheel must contain (docs/policy.md). `module` is
// a glob (core/glob.h) relative to the wheel root.
struct ExpectedExtension {
    std::string module;      // "sageattention/_qattn_sm80*.so"
    std::string reason;      // required: why the wheel is broken without it
    bool device_code = true; // false: a host-only module (no SASS, no PTX) is expected
    int line = 0;
};

// The wrapper's per-package settings (arch_override.yml `wrapper:`), read by the nvcc front end.
struct WrapperSettings {
    std::string mode;                               // "" = the front end's default
    std::optional<bool> inject_arch_specific;       // inject into TUs that carry a/f targets
    std::vector<std::string> arch_specific_sources; // globs of TUs that are arch-specific
    std::map<std::string, std::string> max_toolkit; // arch token -> newest CUDA to build it with
    // How the package's build script splits TORCH_CUDA_ARCH_LIST: " ", ";" or ","; "" = " ".
    // `env` and `resolve --format torch` print the list in that form.
    std::string arch_list_separator;
};

// `forward_ptx: {value: false, reason: "..."}`: resolve adds no +PTX tail for the package (one
// that compiles only `a` targets would ship dead compute_Xa PTX and a forward-compat promise it
// cannot keep, docs/arch-rules.md).
struct ForwardPtx {
    bool value = true;
    std::string reason; // required when value is false
    std::string source; // "" when not given
    int line = 0;
};

// `target_forms`: how the package's build script spells a token of its list (docs/arch-rules.md,
// "What a package really compiles"). SageAttention turns 9.0 into sm_90a and 10.0 into sm_100a,
// flash-attention turns 10.0 into sm_100f from CUDA 12.9: the list stays the request
// (TORCH_CUDA_ARCH_LIST), the forms say what the wheel then carries, and coverage, resolve's
// `builds_as` and the gate read the forms. One declaration serves both lanes: the same build script
// builds the x86-64 and the aarch64 wheel.
struct TargetForm {
    arch::Target sass; // the cubin the build emits for the token (same SM): sm_90a, sm_100f
    // What a +PTX on the token becomes (compute_90a); unset: the plain compute_X torch would emit.
    std::optional<arch::Target> ptx;
    std::string since_cuda; // "" = every release; else the form from that CUDA on, plain before
    int line = 0;
};

struct TargetForms {
    std::map<int, TargetForm> by_sm; // the token's CC as an SM number (90 for "9.0")
    std::string reason;              // required
    std::string source;              // required: the build script (repo, path, tag or commit)
    int line = 0;
};

// The targets `list` becomes in a build that spells its tokens as `forms` says, for CUDA `cuda`:
// a plain token with a form gets the form's cubin (and its PTX for +PTX); every other token stays
// as it is. A form with since_cuda applies only when `cuda` is given and not older.
arch::ArchList apply_target_forms(const arch::ArchList& list, const TargetForms& forms,
                                  std::string_view cuda);

struct Combination {
    int index = 0; // position in `combinations:`
    int line = 0;
    std::map<std::string, std::string> match; // cuda/torch/python/platform present in the row
    std::optional<OverrideValue> arch_list;
};

struct PackageOverride {
    std::string name;
    std::string override_file; // "" if the package has none
    std::string matrix_file;   // "" if the package has none
    // x86-64 / Windows lane
    std::optional<OverrideValue> arch_list;
    std::map<std::string, OverrideValue> arch_list_by_cuda;
    // aarch64 lane
    std::optional<OverrideValue> arch_list_aarch64;
    std::map<std::string, OverrideValue> arch_list_by_cuda_aarch64;
    // verify:
    std::vector<Waiver> allow_missing;
    bool allow_pure_python = false;
    std::vector<std::string> lint_ignore;
    std::vector<ExpectedExtension> extensions;
    // verify.embedded_fatbins: "judge" counts fatbin containers embedded outside the registered
    // sections as carried code; "report" (the default) lists them apart.
    bool judge_embedded = false;
    WrapperSettings wrapper;
    std::optional<ForwardPtx> forward_ptx;
    // arch_knobs: the variables the build script reads its archs from (policy/arch_knob.h)
    std::vector<ArchKnob> arch_knobs;
    std::optional<TargetForms> target_forms;
    // build_matrix.yml
    std::vector<Combination> combinations;
};

// A packages directory the user named (`origin`: "--packages-dir", "NVCC_FORGE_PACKAGES_DIR")
// that can be read: an existing directory we may list, its path without control characters and
// no longer than PATH_MAX. Anything else would resolve as if no package had an override, the
// policy row, without a word: an error naming the value (exit 2 in the commands, a warning in
// the wrapper).
Status check_packages_dir(std::string_view value, std::string_view origin);

// The directory names `name` may have under a packages directory, in the order load_package()
// tries them: the name as given, then with every '-' as '_', then with every '_' as '-' (each only
// when it differs from those before). The one home of that rule: the wrapper's cached policy is
// keyed on the files of exactly these directories (frontend/policy_source.cpp).
std::vector<std::string> package_dir_candidates(std::string_view name);

// Loads the first of package_dir_candidates(name) that is a directory. A name that is not a
// package name (PEP 508: a newline would be a second setting where it is written), no directory
// (an unknown package: named with the nearest one), or a directory without either file is an
// error (exit 2).
Result<PackageOverride> load_package(const std::filesystem::path& packages_dir,
                                     std::string_view name);
Result<PackageOverride> parse_arch_override(std::string_view text, const std::string& file);
Status parse_build_matrix(std::string_view text, const std::string& file, PackageOverride& into);

// Every package directory name under packages_dir (sorted).
std::vector<std::string> list_packages(const std::filesystem::path& packages_dir);

// A package directory whose name is within two edits of `name` (case, '-' and '_' ignored; an
// edit as core/suggest.h counts it, two neighbours swapped one): the likely intended package when
// `name` has none. "" when there is none or `name` has one.
std::string near_package_name(const std::filesystem::path& packages_dir, std::string_view name);

} // namespace forge::policy
