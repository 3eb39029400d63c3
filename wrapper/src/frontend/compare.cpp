#include "frontend/compare.h"

#include <algorithm>

namespace forge::frontend {

namespace {

arch::Target comparable(const arch::Target& t) {
    arch::Target f = t.folded();
    if (f.kind == arch::Kind::Lto) f.kind = arch::Kind::Sass;
    return f;
}

} // namespace

Comparison compare_targets(const std::vector<arch::Target>& policy,
                           const std::set<arch::Target>& requested) {
    std::set<arch::Target> requested_folded, policy_folded;
    for (const auto& t : requested)
        requested_folded.insert(comparable(t));
    for (const auto& t : policy)
        policy_folded.insert(comparable(t));
    Comparison c;
    std::set<arch::Target> seen;
    for (const auto& t : policy)
        if (!requested_folded.contains(comparable(t)) && seen.insert(t).second)
            c.missing.push_back(t);
    for (const auto& t : requested) {
        // An LTO image alongside the policy's SASS is how -dlto delivers it, not an extra.
        if (!policy_folded.contains(comparable(t))) c.extra.push_back(t);
    }
    std::sort(c.missing.begin(), c.missing.end());
    std::sort(c.extra.begin(), c.extra.end());
    return c;
}

Split split_emittable(const std::vector<arch::Target>& wanted,
                      const std::set<arch::Target>& emittable) {
    Split s;
    for (const auto& t : wanted)
        (emittable.contains(t) ? s.in : s.out).push_back(t);
    return s;
}

std::vector<std::string> target_names(const std::vector<arch::Target>& targets) {
    std::vector<std::string> out;
    out.reserve(targets.size());
    for (const auto& t : targets)
        out.push_back(t.name());
    return out;
}

std::vector<std::string> target_names(const std::set<arch::Target>& targets) {
    return target_names(std::vector<arch::Target>(targets.begin(), targets.end()));
}

std::string join_names(const std::vector<arch::Target>& targets) {
    std::string out;
    for (const auto& t : targets) {
        if (!out.empty()) out += ", ";
        out += t.name();
    }
    return out;
}

} // namespace forge::frontend
