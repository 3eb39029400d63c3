// end_call() (frontend/log_call.h), the nvcc path's last step, over generated cases without a
// process: plans from decide() over modes, policies and call shapes, each with every outcome a
// runner reports (what the caller got, whose failure, nothing injected after all). Properties: a
// refusal is said whatever answered it; otherwise the drop lines are those of the call the
// caller got, none when it got nothing; the action is whose failure it was, else the plan's.
#include "../nvcc/caps_fixture.h"
#include "frontend/log_call.h"
#include "gpus_table.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

using namespace forge;
using namespace forge::frontend;

namespace {

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

// The lines for `drops`: one "dropped" line per TU when a target is missing, one "clamped" line
// when an image was removed, each target named.
void expect_drop_lines(const std::string& lines, const Drops& drops, std::size_t tus,
                       const std::string& what) {
    const bool missing = !drops.dropped.empty() || !drops.injected.empty();
    EXPECT_EQ(count_of(lines, "\n"), tus * (missing + !drops.clamped.empty())) << what;
    EXPECT_EQ(count_of(lines, "-> injected") > 0, !drops.injected.empty()) << what;
    EXPECT_EQ(count_of(lines, "-> removed") > 0, !drops.clamped.empty()) << what;
    for (const auto& t : drops.dropped)
        EXPECT_NE(lines.find(t.name()), std::string::npos) << what << ": " << t.name();
    for (const auto& t : drops.injected)
        EXPECT_NE(lines.find(t.name()), std::string::npos) << what << ": " << t.name();
}

void expect_end(const Plan& plan, const RunOutcome& o, const CallFacts& facts,
                const std::string& what) {
    const CallEnd end = end_call(plan, o, facts);
    const char* action = o.undone ? kActionCompared : o.blame != nullptr ? o.blame : plan.action;
    EXPECT_STREQ(end.action, action) << what;
    EXPECT_EQ(end.undone, o.undone) << what;
    const std::size_t tus = tu_names(facts.inv).size();
    if (plan.kind == PlanKind::Refused) {
        EXPECT_EQ(count_of(end.lines, "nvcc-forge: strict: "), tus) << what;
        EXPECT_EQ(count_of(end.lines, "\n"), tus) << what;
        for (const auto& t : plan.cmp.missing)
            EXPECT_NE(end.lines.find(t.name()), std::string::npos) << what << ": " << t.name();
        return;
    }
    if (o.ran == Ran::Nothing || facts.policy == nullptr) {
        EXPECT_EQ(end.lines, "") << what;
        return;
    }
    expect_drop_lines(end.lines, o.ran == Ran::Rewritten ? plan.rewritten : plan.as_given, tus,
                      what);
}

} // namespace

TEST(LogCall, GeneratedCasesSayWhatTheCallerGot) {
    const auto caps = nvcc::testing::caps13();
    const std::vector<std::vector<std::string>> shapes = {
        {"-c", "k.cu", "-o", "k.o"},
        {"-c", "k.cu", "-arch=sm_80"},
        {"-c", "a.cu", "dir/b.cu", "-arch=sm_80"},
        {"-c", "k.cu", "-gencode", "arch=compute_50,code=sm_50", "-gencode",
         "arch=compute_80,code=sm_80"},
        {"-c", "k.cu", "-gencode", "arch=compute_90a,code=sm_90a"},
        {"-dlink", "a.o", "b.o", "-o", "dl.o", "-arch=sm_80"},
        {"-c", "k.cu", "-arch=sm_120"},
        {"--version"},
    };
    const char* blames[] = {nullptr, kActionInjectionFailed, kActionCallFailed,
                            kActionLauncherFailed};
    int cases = 0, with_lines = 0, refusals = 0;
    for (const Mode mode : {Mode::Observe, Mode::Inject, Mode::Strict})
        for (const char* list : {"", "8.0 9.0+PTX", "8.0 9.0 10.0 11.0 12.0+PTX"})
            for (const auto& argv : shapes) {
                auto inv = nvcc::parse_invocation(argv, "", "", "/nonexistent", caps);
                ASSERT_TRUE(inv.ok()) << inv.error().to_string();
                std::optional<EffectivePolicy> pol;
                if (*list != '\0') {
                    auto l = arch::ArchList::parse(list, "test");
                    ASSERT_TRUE(l.ok());
                    pol = EffectivePolicy{*l, test::shipped_gpus(), "test", {}};
                }
                const EffectivePolicy* p = pol ? &*pol : nullptr;
                const Plan plan = decide({*inv, p, caps, mode, false});
                for (const Ran ran : {Ran::Nothing, Ran::AsGiven, Ran::Rewritten})
                    for (const char* blame : blames)
                        for (const bool undone : {false, true}) {
                            RunOutcome o = ended(ran, 0);
                            o.blame = blame;
                            o.undone = undone;
                            const std::string what =
                                fmt::format("mode {} policy '{}' argv [{}] ran {} blame {} "
                                            "undone {}",
                                            mode_string(mode), list, fmt::join(argv, " "),
                                            static_cast<int>(ran), blame ? blame : "-", undone);
                            expect_end(plan, o, {*inv, p, false, false}, what);
                            ++cases;
                            const CallEnd end = end_call(plan, o, {*inv, p, false, false});
                            with_lines += !end.lines.empty();
                            refusals += end.lines.find("strict:") != std::string::npos;
                        }
            }
    // The generator reaches refusals and drop lines of both calls.
    EXPECT_EQ(cases, 3 * 3 * 8 * 3 * 4 * 2);
    EXPECT_GT(with_lines, 100);
    EXPECT_GT(refusals, 20);
}

// /src/k.cu built for sm_80 (and its PTX) under the policy 8.0 9.0: sm_90 is missing.
struct Sm80Call {
    explicit Sm80Call(const toolkit::ToolkitCaps& caps)
        : inv(nvcc::parse_invocation({"-c", "/src/k.cu", "-arch=sm_80"}, "", "", "/x", caps)),
          list(arch::ArchList::parse("8.0 9.0", "test")) {}
    Result<nvcc::Invocation> inv;
    Result<arch::ArchList> list;
};

// A rewritten call that fell back: the caller got the call as given, whose line names no injection.
TEST(LogCall, AFallbackSaysTheDropsOfTheCallAsGiven) {
    const auto caps = nvcc::testing::caps13();
    const Sm80Call c(caps);
    ASSERT_TRUE(c.inv.ok() && c.list.ok());
    const nvcc::Invocation* inv = &*c.inv;
    const EffectivePolicy pol{*c.list, test::shipped_gpus(), "test", {}};
    const Plan plan = decide({*inv, &pol, caps, Mode::Inject, false});
    ASSERT_EQ(plan.kind, PlanKind::Rewritten);
    RunOutcome fallback = ended(Ran::AsGiven, 0);
    fallback.blame = kActionInjectionFailed;
    const CallEnd end = end_call(plan, fallback, {*inv, &pol, false, false});
    EXPECT_STREQ(end.action, kActionInjectionFailed);
    EXPECT_EQ(
        end.lines.rfind("nvcc-forge: k.cu: dropped sm_90 (policy 8.0 9.0; requested 8.0+PTX)", 0),
        0u)
        << end.lines;
    const CallEnd built = end_call(plan, ended(Ran::Rewritten, 0), {*inv, &pol, false, false});
    EXPECT_STREQ(built.action, kActionInjected);
    EXPECT_EQ(built.lines,
              "nvcc-forge: k.cu: dropped sm_90 -> injected (policy 8.0 9.0; requested 8.0+PTX)\n");
    EXPECT_EQ(end_call(plan, ended(Ran::Rewritten, 0), {*inv, &pol, true, false}).lines, "");
}

// On a terminal (core/colour.h decides, the caller passes it): "dropped" yellow, "injected"
// green, a refusal's "missing" red; nothing else changes, and without it no escape at all.
TEST(LogCall, ColourPaintsTheWordsOnly) {
    const auto caps = nvcc::testing::caps13();
    const Sm80Call c(caps);
    ASSERT_TRUE(c.inv.ok() && c.list.ok());
    const nvcc::Invocation* inv = &*c.inv;
    const EffectivePolicy pol{*c.list, test::shipped_gpus(), "test", {}};
    const Plan inject = decide({*inv, &pol, caps, Mode::Inject, false});
    const CallFacts plain{*inv, &pol, false, false}, coloured{*inv, &pol, false, true};
    EXPECT_EQ(end_call(inject, ended(Ran::Rewritten, 0), coloured).lines,
              "nvcc-forge: k.cu: \x1b[33mdropped\x1b[0m sm_90 -> \x1b[32minjected\x1b[0m "
              "(policy 8.0 9.0; requested 8.0+PTX)\n");
    const std::string fallback = end_call(inject, ended(Ran::AsGiven, 0), coloured).lines;
    EXPECT_EQ(fallback.rfind("nvcc-forge: k.cu: \x1b[33mdropped\x1b[0m sm_90 (policy", 0), 0u)
        << fallback;
    const Plan strict = decide({*inv, &pol, caps, Mode::Strict, false});
    EXPECT_EQ(end_call(strict, ended(Ran::Nothing, 1), coloured).lines,
              "nvcc-forge: strict: k.cu: \x1b[31mmissing\x1b[0m sm_90 (policy 8.0 9.0; requested "
              "8.0+PTX)\n");
    for (const Plan* plan : {&inject, &strict})
        for (const Ran ran : {Ran::AsGiven, Ran::Rewritten}) {
            const std::string text = end_call(*plan, ended(ran, 0), plain).lines;
            EXPECT_FALSE(text.empty());
            EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
        }
}
