// The nvcc command-line model: what one nvcc call asks for, and how to rewrite it.
// INTERFACE CONTRACT (owned by the nvcc module; the frontend consumes it). Implementation in
// cmdline.cpp / options.cpp. Facts: docs/nvcc-command-line.md. What nvcc can emit
// (the caps that `-arch=all`, no-target defaults and the clamp read) is toolkit/caps.h.
#pragma once

#include "arch/arch.h"
#include "core/result.h"
#include "nvcc/options.h"
#include "toolkit/caps.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace forge::nvcc {

// Why a call produces no device code and is passed through byte for byte.
enum class NoDeviceReason {
    None,            // it does produce device code
    Version,         // --version / -V
    Help,            // -h / --help
    ListGpu,         // --list-gpu-arch / --list-gpu-code
    Preprocess,      // -E, -M, -MM (without compile)
    HostOnly,        // no .cu input and no -x cu; no device link
    CMakeCompilerId, // CMakeCUDACompilerId.cu / __cmake_determine_cuda
    NoInput,         // nothing to compile or link
};

enum class Phase {
    Compile,    // -c (whole-program device code)
    CompileRdc, // -dc / -rdc=true -c
    DeviceLink, // -dlink
    Link,       // no phase flag: compile and/or link (host link does a device link for rdc objs)
    Ptx,        // -ptx (one virtual arch only: never inject)
    Cubin,      // -cubin (one code only: never inject)
    Fatbin,     // -fatbin
    OtherSingleTarget, // -optix-ir, -ltoir: never inject
};

// One argument as nvcc sees it, with where it came from (argv, an options file, the env).
struct Arg {
    std::string text;
    enum class Source { Argv, OptionsFile, PrependEnv, AppendEnv } source = Source::Argv;
    std::string origin;  // options file path, env var name
    int argv_index = -1; // index into Invocation::argv for Source::Argv, else -1
};

// A target-selecting option in Invocation::effective: where it stands and its value.
struct TargetToken {
    std::size_t eff_index = 0;              // the option token
    std::optional<std::size_t> value_index; // its value, when that is the next token
    std::string value;
    Role role = Role::None; // GpuArch, GpuCode or GenCode
};

struct Invocation {
    std::vector<std::string> argv; // the original argv[1..] as given (never modified)
    std::vector<Arg> effective;    // PREPEND + argv (options files expanded) + APPEND
    NoDeviceReason no_device = NoDeviceReason::None;
    Phase phase = Phase::Link;
    bool dryrun = false; // -dryrun/--dryrun: rewritten like the real compile
    bool dlto = false;
    bool rdc = false;
    std::vector<std::string> sources; // device inputs (.cu or -x cu) as written
    std::vector<std::string> objects; // .o/.a inputs (device link)
    // Objects in, no sources: nvlink runs once per SASS target, and only SASS comes out (the
    // objects carry their own PTX).
    bool device_link_only = false;
    std::string output;               // -o value, "" if none
    std::set<arch::Target> requested; // the images nvcc will emit, after expansions
    bool targets_explicit = false;    // false: nvcc's default applies
    // Every target requested is `a`: the source may compile only for those CCs, so the front end
    // adds nothing unless the package opts in. A plain or `f` target beside them (FA2's
    // `arch=compute_100f,code=sm_100` next to sm_80; the compute_90 pass of `-arch=sm_90a`) means
    // the source compiles generically (docs/arch-rules.md, "Which TUs get targets added").
    bool arch_specific = false;
    bool has_a_target = false;         // any `a` (arch-specific) target
    bool has_f_target = false;         // any `f` (family) target (FA2's compute_100f ladder)
    bool uses_native = false;          // -arch=native
    std::vector<std::string> warnings; // e.g. "-arch=native in a distributable build"
    // Where the target options and -dlto stand in `effective`: what inject() clamps or restates.
    std::vector<TargetToken> target_tokens;
    std::vector<std::size_t> dlto_tokens;
};

// Parses argv (without argv[0]) with NVCC_PREPEND_FLAGS/NVCC_APPEND_FLAGS values (empty if
// unset) and expands options files relative to `cwd`. Errors: unreadable options file, a
// malformed target spec that nvcc would reject (with the offending token in Error::key).
Result<Invocation> parse_invocation(const std::vector<std::string>& argv,
                                    const std::string& prepend_env, const std::string& append_env,
                                    const std::string& cwd, const toolkit::ToolkitCaps& caps);

// A rewrite of one call: the argv to run instead of the original.
struct Rewrite {
    std::vector<std::string> argv;             // new argv[1..]
    std::vector<arch::Target> injected;        // targets added (as -gencode tokens appended)
    std::vector<std::string> clamped;          // user tokens removed because nvcc cannot emit them
    std::vector<arch::Target> clamped_targets; // the targets those tokens named (for the log)
    // Why something asked for was not done (a token outside argv that cannot be rewritten, a
    // -dlto link step, a default made explicit ...). Empty in the ordinary case.
    std::vector<std::string> notes;
};

// Adds `-gencode arch=compute_X,code=sm_X` / `code=compute_X` for each missing target at the end
// of argv (never via NVCC_APPEND_FLAGS, never -arch); a/f targets as `arch=compute_Xa,code=sm_Xa`.
// Images already requested are not added again; targets outside caps.emittable are never added
// (a note says so). When `clamp` is set, target-selecting argv tokens naming targets outside
// caps.emittable are removed or, for a mixed code list, rewritten (and only those); if that
// removes every target, only `missing` remains (nvcc's default does not come back).
// Special cases (each verified with nvcc -dryrun):
// - the user relied on nvcc's default (no target flag): the default images are stated explicitly
//   too, because any -gencode turns the default off;
// - device link (-dlink, or a link of objects only): SASS only (nvlink makes nothing else);
// - -dlto compile: nvcc rejects -dlto next to -gencode, so the -dlto/-arch tokens are replaced by
//   one `-gencode arch=compute_X,code=[compute_X,lto_X]` per virtual arch (existing and missing;
//   a missing sm_X becomes compute_X+lto_X); -dlto/-arch outside argv, or a -dlto compile-and-link
//   in one call: nothing is injected (a note says why);
// - no device code, -ptx, -cubin, -optix-ir, -ltoir: argv unchanged.
// `inv` is parse_invocation()'s, with the same caps: the clamp edits the tokens it recorded.
Rewrite inject(const Invocation& inv, const std::vector<arch::Target>& missing, bool clamp,
               const toolkit::ToolkitCaps& caps);

// Target images of an -arch shorthand value ("sm_90a" -> sm_90a, compute_90, compute_90a;
// "all" -> every plain SASS + the highest major's PTX ...), as nvcc 13.0 expands it for a compile
// (without -dlto). Error for a value nvcc rejects.
Result<std::set<arch::Target>> expand_arch_shorthand(std::string_view value,
                                                     const toolkit::ToolkitCaps& caps);

// Names of the phase/reason, for logs.
std::string_view phase_string(Phase p);
std::string_view no_device_string(NoDeviceReason r);

} // namespace forge::nvcc
