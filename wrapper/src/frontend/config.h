// The wrapper's configuration, read from the environment once per call, and the policy it
// compares against. Resolving a package's policy parses YAML; the result (and the toolkit probe)
// is cached on disk keyed by the files it came from, so the hot path reads one small JSON file.
#pragma once

#include "arch/arch.h"
#include "arch/coverage.h"
#include "core/result.h"
#include "nvcc/cmdline.h"
#include "policy/package.h"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace forge::frontend {

enum class Mode { Observe, Inject, Strict };
Result<Mode> parse_mode(std::string_view text, std::string_view origin);
std::string_view mode_string(Mode m);

struct FrontendEnv {
    std::string arch_list;    // NVCC_FORGE_ARCH_LIST
    std::string package;      // NVCC_FORGE_PACKAGE
    std::string torch;        // NVCC_FORGE_TORCH
    std::string platform;     // NVCC_FORGE_PLATFORM
    std::string policy_file;  // NVCC_FORGE_POLICY
    std::string packages_dir; // NVCC_FORGE_PACKAGES_DIR
    std::string mode;         // NVCC_FORGE_MODE
    std::string log;          // NVCC_FORGE_LOG
    std::string real_nvcc;    // NVCC_FORGE_REAL_NVCC
    std::string cache_dir;    // NVCC_FORGE_CACHE_DIR
    std::string depth;        // NVCC_FORGE_DEPTH, raw (toolkit::read_depth_marker reads it)
    std::string prepend;      // NVCC_PREPEND_FLAGS
    std::string append;       // NVCC_APPEND_FLAGS
    bool quiet = false;       // NVCC_FORGE_QUIET=1: no stderr line for drops injected back
    // Settings the build fixed (frontend/settings.h) replace the variables above: where they came
    // from, and the environment's values they replaced ("NAME=value"), for the note naming them.
    std::string bound_by;
    std::vector<std::string> env_not_used;

    static FrontendEnv from_environ();
    // TORCH_CUDA_ARCH_LIST is deliberately not a source: setup.py files rewrite it.
    [[nodiscard]] bool policy_configured() const { return !arch_list.empty() || !package.empty(); }
};

struct EffectivePolicy {
    arch::ArchList list;
    // The GPU table the gate judges with (policy/gpus.yml): the compare asks arch::covers() with
    // it, so a call is missing exactly what the gate would find missing.
    std::vector<arch::Gpu> gpus;
    std::string source; // "NVCC_FORGE_ARCH_LIST", the resolver's source
    policy::WrapperSettings wrapper;
};

// NVCC_FORGE_CACHE_DIR, else $XDG_CACHE_HOME/nvcc-forge, else $HOME/.cache/nvcc-forge.
std::filesystem::path cache_dir(const FrontendEnv& env);
// "path|dev:ino:size:ctime_ns:mtime_ns[|content hash]" of a file (core/file_stamp.h; the hash
// for files up to 1 MiB), "path|absent" when it does not exist.
std::string file_stamp(const std::filesystem::path& p);
// A cache entry is one file named by a hash of its key; the key is stored inside and compared on
// read, so a hash collision reads as a miss. Writes go to a temp file renamed into place.
std::optional<std::string> cache_read(const std::filesystem::path& dir, const std::string& key);
void cache_write(const std::filesystem::path& dir, const std::string& key,
                 const std::string& value);

std::string caps_to_json(const toolkit::ToolkitCaps& caps);
Result<toolkit::ToolkitCaps> caps_from_json(const std::string& text);

// The toolkit caps of `nvcc` (a resolved path), from the cache or by probing it once.
Result<toolkit::ToolkitCaps> toolkit_caps(const FrontendEnv& env,
                                          const std::filesystem::path& nvcc);

// NVCC_FORGE_PACKAGES_DIR, when a package is configured and the directory cannot be used
// (policy::check_packages_dir): the warning to print. The package's overrides then come from the
// bundled packages/, as without the variable; a build never fails for it.
std::optional<std::string> packages_dir_warning(const FrontendEnv& env);

// The policy of a call that has one configured (frontend::Call::policy_configured: the caller
// asks). `caps` gives the CUDA version the resolver needs. Errors (exit 2): a malformed
// NVCC_FORGE_ARCH_LIST, an unknown package, a policy file that does not parse.
Result<EffectivePolicy> effective_policy(const FrontendEnv& env, const toolkit::ToolkitCaps& caps,
                                         const std::filesystem::path& nvcc);

// The first of the globs that `source` (as written on the command line) matches, nullptr when
// none does. The dialect is core/glob.h's, matched unrooted: a glob without '/' names a file (or
// directory) at any depth, one with '/' matches the path from any component on.
const std::string* matching_source_glob(const std::string& source,
                                        const std::vector<std::string>& globs);

// Which rule decides whether the front end may add targets to a call (docs/arch-rules.md, "Which
// TUs get targets added"). The compile log names it (`arch_rule`), the drop line says it.
enum class ArchRule {
    PlainTarget,  // a plain target: the source compiles generically
    FamilyTarget, // no plain target, an `f` one: an f cubin serves a family, the source is generic
    AOnly,        // every target is `a`: the source may compile for those CCs only
    PackageSources, // the package names the source in wrapper.arch_specific_sources
};
struct TuClass {
    ArchRule rule = ArchRule::PlainTarget;
    std::string glob;      // PackageSources: the glob that matched
    bool opted_in = false; // the package's wrapper.inject_arch_specific
    [[nodiscard]] bool arch_specific() const {
        return rule == ArchRule::AOnly || rule == ArchRule::PackageSources;
    }
    [[nodiscard]] bool may_inject() const { return !arch_specific() || opted_in; }
};
// `package` is the package's wrapper settings, nullptr without a package.
TuClass classify_tu(const nvcc::Invocation& inv, const policy::WrapperSettings* package);
// "plain-target", "family-target", "a-only", "arch_specific_sources": the log's words.
std::string_view arch_rule_string(ArchRule rule);
// The drop line's words: "arch-specific TU: every target is `a`", "generic TU: plain sm_80
// beside sm_100f"; "" for a call with plain targets only (the ordinary case says nothing).
std::string arch_rule_text(const TuClass& tu, const nvcc::Invocation& inv);

} // namespace forge::frontend
