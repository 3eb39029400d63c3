// Comparing what one nvcc call asks for with the policy, with the gate's own rule: a policy
// target is missing unless arch::covers() says the call's images cover it (a requested sm_90a
// covers a policy sm_90, since major 9 has one CC; sm_100a does not cover sm_100, which also runs
// 10.3; an `a`/`f` or PTX target only by itself). An LTO image counts as the SASS of its SM: a
// -dlto compile produces that SASS at the device link.
#pragma once

#include "arch/arch.h"
#include "arch/coverage.h"

#include <set>
#include <string>
#include <vector>

namespace forge::frontend {

struct Comparison {
    std::vector<arch::Target> missing; // policy targets the call does not request
    std::vector<arch::Target> extra;   // requested targets outside the policy (never removed)
};

// `gpus`: the table the gate judges with (EffectivePolicy::gpus).
Comparison compare_targets(const std::vector<arch::Target>& policy,
                           const std::set<arch::Target>& requested,
                           const std::vector<arch::Gpu>& gpus);

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
