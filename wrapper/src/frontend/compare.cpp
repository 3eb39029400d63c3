#include "frontend/compare.h"

#include <algorithm>

namespace forge::frontend {

namespace {

// What the call's image becomes in the binary: an LTO image is its SM's SASS after the link.
arch::Target as_carried(arch::Target t) {
    if (t.kind == arch::Kind::Lto) t.kind = arch::Kind::Sass;
    return t;
}

// Without a GPU table (a shim's copy that finds none) every minor of a named major may exist:
// a suffixed cubin then covers a plain one only where it surely does (an `f` cubin), and the
// wrapper adds the plain target rather than leave one the gate may miss.
std::vector<arch::Gpu> every_minor(const std::vector<arch::Target>& named) {
    std::vector<arch::Gpu> out;
    for (const auto& t : named)
        for (int minor = 0; minor < 10; ++minor)
            out.push_back(arch::Gpu{arch::sm_major(t.sm) * 10 + minor, {}, false, {}});
    return out;
}

} // namespace

Comparison compare_targets(const std::vector<arch::Target>& policy,
                           const std::set<arch::Target>& requested,
                           const std::vector<arch::Gpu>& gpus) {
    std::set<arch::Target> carried;
    for (const auto& t : requested)
        carried.insert(as_carried(t));
    const std::set<arch::Target> wanted(policy.begin(), policy.end());
    std::vector<arch::Target> named(wanted.begin(), wanted.end());
    named.insert(named.end(), carried.begin(), carried.end());
    const std::vector<arch::Gpu> judged =
        arch::judged_gpus(gpus.empty() ? every_minor(named) : gpus, named);
    const arch::TegraSet tegra(gpus);
    Comparison c;
    for (const auto& t : wanted)
        if (!arch::covers(carried, t, judged, tegra)) c.missing.push_back(t);
    // An LTO image alongside the policy's SASS is how -dlto delivers it, not an extra.
    for (const auto& t : requested)
        if (!arch::asked_for(as_carried(t), wanted)) c.extra.push_back(t);
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
