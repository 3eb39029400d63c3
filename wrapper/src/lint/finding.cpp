#include "lint/finding.h"

namespace forge::lint {

const std::vector<std::string_view>& lint_rule_ids() {
    static const std::vector<std::string_view> ids = {
        "arch-gate",
        "fp8-type",
        "arch-feature",
        "arch-specific-macro",
        "explicit-target",
        "build-arch-gate",
        "script-reads-arch-list",
        "script-splits-arch-list",
        "script-writes-arch-list",
        "script-own-arch-knob",
        "script-emits-gencode",
        "script-sets-cuda-architectures",
    };
    return ids;
}

} // namespace forge::lint
