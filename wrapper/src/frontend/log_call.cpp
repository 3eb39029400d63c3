#include "frontend/log_call.h"

#include "core/colour.h"
#include "frontend/compile_log.h"

#include <fmt/format.h>

namespace forge::frontend {

namespace {

std::string display_name(const std::string& tu) {
    auto slash = tu.rfind('/');
    return slash == std::string::npos || slash + 1 == tu.size() ? tu : tu.substr(slash + 1);
}

std::string requested_text(const nvcc::Invocation& inv) {
    std::vector<arch::Target> req(inv.requested.begin(), inv.requested.end());
    std::string text = arch::ArchList::from_targets(req).to_string();
    if (!inv.targets_explicit) text += text.empty() ? "nvcc default" : " (nvcc default)";
    return text;
}

// One line per TU for what the call missed (and the wrapper's clamp): the build log shows every
// drop, not only the JSON log.
std::string drop_text(const Plan& plan, const Drops& drops, const CallFacts& f) {
    if (drops.empty() || f.policy == nullptr) return {};
    DropReport report{
        target_names(drops.injected),        target_names(drops.dropped), drops.clamped,
        f.policy->list.to_string(),          requested_text(f.inv),       drops.why,
        arch_rule_text(plan.tu_class, f.inv)};
    std::string out;
    for (const auto& tu : tu_names(f.inv))
        out += drop_lines(tu, report, f.quiet, f.colour);
    return out;
}

// Refused: one line per TU naming what is missing.
std::string refusal_text(const Plan& plan, const CallFacts& f) {
    const std::string names = join_names(plan.cmp.missing);
    std::string out;
    for (const auto& tu : tu_names(f.inv))
        out += fmt::format("nvcc-forge: strict: {}: {} {} (policy {}; requested {}){}\n", tu,
                           painted("missing", kColourRed, f.colour), names,
                           f.policy->list.to_string(), requested_text(f.inv), plan.refusal_rule);
    return out;
}

} // namespace

RunOutcome ran_process(Ran ran, const ProcessOutcome& outcome) {
    RunOutcome o;
    o.ran = ran;
    o.status = outcome.status_code();
    o.process = outcome;
    return o;
}

RunOutcome ended(Ran ran, int status, bool logged) {
    RunOutcome o;
    o.ran = ran;
    o.status = status;
    o.logged = logged;
    return o;
}

std::vector<std::string> tu_names(const nvcc::Invocation& inv) {
    if (!inv.sources.empty()) {
        std::vector<std::string> names;
        for (const auto& s : inv.sources)
            names.push_back(display_name(s));
        return names;
    }
    if (!inv.output.empty()) return {inv.output};
    return {"(link)"};
}

CallEnd end_call(const Plan& plan, const RunOutcome& outcome, const CallFacts& facts) {
    CallEnd end{{}, outcome.blame != nullptr ? outcome.blame : plan.action, outcome.undone};
    if (end.undone) end.action = kActionCompared;
    // A refused call says what it misses whatever answered it (the stand-in goes on: its report
    // names every call the build would stop at).
    if (plan.kind == PlanKind::Refused)
        end.lines = refusal_text(plan, facts);
    else if (outcome.ran != Ran::Nothing)
        end.lines =
            drop_text(plan, outcome.ran == Ran::Rewritten ? plan.rewritten : plan.as_given, facts);
    return end;
}

} // namespace forge::frontend
