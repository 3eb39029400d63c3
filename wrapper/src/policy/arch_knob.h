// A package's own arch knob (packages/<pkg>/arch_override.yml `arch_knobs:`): an environment
// variable its build script reads instead of, or beside, TORCH_CUDA_ARCH_LIST (flash-attention's
// FLASH_ATTN_CUDA_ARCHS, NATTEN's NATTEN_CUDA_ARCH), with the form the script reads it in. `env`,
// `plan` and the CMake module export it from the resolved list; what the knob cannot say is left
// to the wrapper's injection and named by `resolve` (`knob_cannot_express`). docs/policy.md,
// "A package's own arch knob".
#pragma once

#include "arch/arch.h"
#include "core/result.h"

#include <optional>
#include <string>
#include <vector>

namespace YAML {
class Node;
}

namespace forge::policy {

// How one arch is spelled in the knob: "80" (digits), "8.0" (dotted), "sm_80" (sm).
enum class KnobForm { Digits, Dotted, Sm };
// How the script is asked for PTX: it is not (none), "+PTX" after the token (suffix), or it
// embeds PTX for the highest token it is given, unasked (newest: flash-attention's
// `arch=compute_{newest},code=compute_{newest}`).
enum class KnobPtx { None, Suffix, Newest };

struct ArchKnob {
    std::string variable;  // FLASH_ATTN_CUDA_ARCHS
    std::string separator; // ";", "," or " "
    KnobForm form = KnobForm::Digits;
    KnobPtx ptx = KnobPtx::None;
    // The archs the script has a branch for (flash-attention's ladder); nullopt: any CC.
    std::optional<arch::ArchList> accepts;
    std::string reason;
    std::string source; // the build script read, with its commit or tag
    int line = 0;
};

// `arch_knobs:` of an arch_override.yml: a list of {variable, separator, form, ptx, accepts?,
// reason, source}. Errors name file:line and the key.
Result<std::vector<ArchKnob>> parse_arch_knobs(const std::string& file, const YAML::Node& node);

// The value one knob is exported with.
struct KnobValue {
    std::string variable;
    std::string value; // "80;90;100;120"
};

// A token of the resolved list that a knob cannot express: the script will not build it from the
// knob, so it is left to the wrapper's injection.
struct KnobGap {
    std::string variable;
    std::string token;                 // "8.6", "9.0+PTX" (the PTX part of 9.0)
    std::vector<arch::Target> targets; // what injection must add: sm_86, compute_90
    std::string reason;
};

struct KnobExport {
    std::vector<KnobValue> values; // a knob that can spell no token of the list is not exported
    std::vector<KnobGap> cannot_express;
    std::vector<std::string> notes; // e.g. a PTX the script adds that the list does not ask for
};

KnobExport export_knobs(const std::vector<ArchKnob>& knobs, const arch::ArchList& list);

std::string_view knob_form_string(KnobForm form); // "digits", "dotted", "sm"
std::string_view knob_ptx_string(KnobPtx ptx);    // "none", "suffix", "newest"

} // namespace forge::policy
