// Comparing what one nvcc call asks for with the policy, the way the gate compares a binary:
// suffixes fold (a requested sm_90a satisfies a policy sm_90), and an LTO image satisfies a SASS
// target of the same SM (a -dlto compile produces its SASS at the device link).
#pragma once

#include "arch/arch.h"

#include <set>
#include <string>
#include <vector>

namespace forge::frontend {

struct Comparison {
    std::vector<arch::Target> missing; // policy targets the call does not request
    std::vector<arch::Target> extra;   // requested targets outside the policy (never removed)
};

Comparison compare_targets(const std::vector<arch::Target>& policy,
                           const std::set<arch::Target>& requested);

// Targets of `wanted` that are in `emittable` (what can be injected), and those that are not.
struct Split {
    std::vector<arch::Target> in;
    std::vector<arch::Target> out;
};
Split split_emittable(const std::vector<arch::Target>& wanted,
                      const std::set<arch::Target>& emittable);

std::vector<std::string> target_names(const std::vector<arch::Target>& targets);
std::vector<std::string> target_names(const std::set<arch::Target>& targets);
// "sm_110, compute_120"
std::string join_names(const std::vector<arch::Target>& targets);

} // namespace forge::frontend
