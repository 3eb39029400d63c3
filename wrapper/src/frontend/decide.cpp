#include "frontend/decide.h"

#include "frontend/standin.h"

#include <algorithm>

namespace forge::frontend {

namespace {

// Inject: the missing targets nvcc can emit added (unless the TU may not get any), the requested
// ones it cannot emit clamped; Untouched as compared when nothing changes.
void decide_injection(const DecideInput& in, Plan& plan) {
    const bool may_inject = plan.tu_class.may_inject();
    const Split injectable = split_emittable(plan.cmp.missing, in.caps.emittable);
    const std::vector<arch::Target> to_inject =
        may_inject ? injectable.in : std::vector<arch::Target>{};
    const bool needs_clamp =
        std::any_of(in.inv.requested.begin(), in.inv.requested.end(),
                    [&](const auto& t) { return !in.caps.emittable.contains(t); });
    if (!to_inject.empty() || needs_clamp)
        plan.rewrite = nvcc::inject(in.inv, to_inject, true, in.caps);
    const nvcc::Rewrite& rw = plan.rewrite;
    if (rw.argv.empty() || rw.argv == in.inv.argv) return;
    plan.kind = PlanKind::Rewritten;
    plan.argv = rw.argv;
    plan.action = kActionInjected;
    // The images that could not be built, as the log names targets (the tokens may name more, e.g.
    // the compute_50 of an arch=compute_50,code=sm_50 that embeds no PTX).
    Drops& d = plan.rewritten;
    if (!rw.clamped.empty())
        for (const auto& t : in.inv.requested)
            if (!in.caps.emittable.contains(t)) d.clamped.push_back(t.name());
    for (const auto& m : plan.cmp.missing)
        (std::find(rw.injected.begin(), rw.injected.end(), m) == rw.injected.end() ? d.dropped
                                                                                   : d.injected)
            .push_back(m);
    d.why = plan.as_given.why.empty() ? "nvcc cannot emit them" : plan.as_given.why;
}

} // namespace

Plan decide(const DecideInput& in) {
    const nvcc::Invocation& inv = in.inv;
    Plan plan;
    plan.argv = inv.argv;
    // Version, -E, -M, CMake's compiler id ...: untouched, byte for byte. Under a plan, so are
    // CMake's configure probes, which read what they build.
    if (inv.no_device != nvcc::NoDeviceReason::None ||
        (in.stand_in && std::any_of(inv.sources.begin(), inv.sources.end(), is_configure_probe)))
        return plan;
    plan.read = true;
    plan.runner = in.stand_in ? Runner::StandIn : Runner::Nvcc;
    plan.tu_class = classify_tu(inv, in.policy ? &in.policy->wrapper : nullptr);
    const bool single_target = inv.phase == nvcc::Phase::Ptx || inv.phase == nvcc::Phase::Cubin ||
                               inv.phase == nvcc::Phase::OtherSingleTarget;
    if (!in.policy || single_target) return plan;
    // A link of objects makes only SASS (nvlink); the policy's PTX reaches the binary through the
    // objects, and each compile is checked for it.
    std::vector<arch::Target> expected = in.policy->list.targets();
    if (inv.device_link_only)
        std::erase_if(expected, [](const arch::Target& t) { return t.kind != arch::Kind::Sass; });
    plan.compared = true;
    plan.action = kActionCompared;
    plan.cmp = compare_targets(expected, inv.requested, in.policy->gpus);
    plan.as_given.dropped = plan.cmp.missing;
    const bool may_inject = plan.tu_class.may_inject();
    if (plan.tu_class.arch_specific() && !may_inject) plan.as_given.why = "nothing injected";
    if (in.mode == Mode::Observe) return plan;
    if (in.mode == Mode::Strict) {
        // Strict refuses exactly the calls whose product the gate would fail for a missing
        // target: an arch-specific TU too, which inject would leave as it is.
        if (plan.cmp.missing.empty()) return plan;
        plan.kind = PlanKind::Refused;
        plan.action = kActionRefused;
        if (!may_inject)
            plan.refusal_rule =
                "; " + arch_rule_text(plan.tu_class, inv) + ", so inject adds nothing";
        return plan;
    }
    decide_injection(in, plan);
    return plan;
}

} // namespace forge::frontend
