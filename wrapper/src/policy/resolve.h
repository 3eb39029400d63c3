// Policy resolution (ADR-0012 + the seeds' Steps 1-3). INTERFACE CONTRACT, owned by the policy
// module; consumers use Resolution.
#pragma once

#include "arch/arch.h"
#include "core/result.h"

#include <optional>
#include <string>
#include <vector>

namespace forge::policy {

struct ClampedToken {
    std::string token;  // "7.0", "3.7+PTX"
    std::string reason; // "nvcc 13.0 cannot emit sm_70", "torch 2.11+cu128 ships no ..."
};

struct Resolution {
    arch::ArchList list;                // final, clamped, +PTX ensured
    std::string source;                 // which table/field won: "arch_policy[12.8]",
                                        // "packages/flash_attn/arch_override.yml:arch_list_by_cuda[12.8]",
                                        // "--arch-list"
    std::vector<ClampedToken> clamped;  // every token removed, with its reason
    std::optional<int> ptx_added_sm;    // where _ensure_ptx_on_highest_base put +PTX
    std::string cuda;                   // "12.8" ("" when --arch-list was given)
    std::string torch;                  // "2.9" or ""
    std::string platform;               // linux_x86_64 | linux_aarch64 | win_amd64
    std::string package;                // "" if none
    std::string policy_file;            // path of arch_policy.yml used ("" for --arch-list)
    std::string policy_sha256;          // of that file
    std::optional<long> build_epoch;    // from arch_policy.yml
    // package verify settings (packages/<pkg>/arch_override.yml `verify:`)
    std::vector<arch::Target> allow_missing;  // waivers (with evidence comments in the file)
    bool allow_pure_python = false;
    std::vector<std::string> lint_ignore;
};

} // namespace forge::policy
