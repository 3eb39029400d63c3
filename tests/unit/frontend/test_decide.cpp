// decide() (frontend/decide.h) over generated cases, without a process: every mode x no policy or
// a policy (with package settings) x call shapes x under a plan or not. Properties, not fixtures:
// a call with no device code or no policy is untouched; observe never changes argv; strict never
// rewrites and refuses exactly what misses a target; inject never removes a user's token except a
// clamped one (and a -dlto call's restated target tokens) and never narrows what the call builds;
// each missing target is in each drop line once.
#include "../nvcc/caps_fixture.h"
#include "frontend/decide.h"
#include "gpus_table.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <iostream>

using namespace forge;
using namespace forge::frontend;

namespace {

using forge::test::shipped_gpus;

struct PolicyCase {
    std::string list;
    policy::WrapperSettings wrapper;
};

std::vector<std::optional<PolicyCase>> policies() {
    std::vector<std::optional<PolicyCase>> out{std::nullopt};
    const std::vector<std::string> lists = {"8.0 9.0+PTX", "8.0 9.0 10.0 11.0 12.0+PTX", "7.5 8.6",
                                            "8.0 9.0a 10.0f"};
    for (const auto& list : lists) {
        out.push_back(PolicyCase{list, {}});
        policy::WrapperSettings named;
        named.arch_specific_sources = {"*_sm90.cu"};
        out.push_back(PolicyCase{list, named});
        named.inject_arch_specific = true;
        out.push_back(PolicyCase{list, named});
    }
    return out;
}

const std::vector<std::vector<std::string>>& shapes() {
    static const std::vector<std::vector<std::string>> s = {
        {"-c", "k.cu", "-o", "k.o"},
        {"-c", "k.cu", "-o", "k.o", "-arch=sm_80"},
        {"-c", "k.cu", "-arch=sm_90a"},
        {"-c", "k_sm90.cu", "-gencode", "arch=compute_90,code=sm_90"},
        {"-c", "k.cu", "-gencode", "arch=compute_50,code=sm_50", "-gencode",
         "arch=compute_80,code=sm_80"},
        {"-c", "k.cu", "-gencode", "arch=compute_90a,code=sm_90a"},
        {"-c", "k.cu", "-arch=sm_100f"},
        {"-c", "k.cu", "-arch=sm_80", "-DX=1", "-O3", "-Xcompiler", "-fPIC", "-lineinfo"},
        {"-c", "k.cu", "-dlto", "-arch=sm_80"},
        {"-dc", "k.cu", "-o", "k.o", "--generate-code=arch=compute_120,code=[sm_120]"},
        {"-dlink", "a.o", "b.o", "-o", "dl.o", "-arch=sm_80"},
        {"k.o", "-o", "app", "-arch=sm_80"},
        {"-ptx", "k.cu", "-arch=sm_80"},
        {"--version"},
        {"-E", "k.cu"},
        {"-c", "CMakeCUDACompilerId.cu", "-arch=sm_80"},
        {"-c", "/b/CMakeFiles/CMakeScratch/TryCompile-1/main.cu", "-arch=sm_80"},
    };
    return s;
}

std::string describe(Mode mode, const std::optional<PolicyCase>& pol,
                     const std::vector<std::string>& argv, bool stand_in) {
    return fmt::format("mode {} policy '{}' (sources {}, opted in {}) argv [{}]{}",
                       mode_string(mode), pol ? pol->list : "none",
                       pol ? fmt::format("{}", pol->wrapper.arch_specific_sources) : "-",
                       pol && pol->wrapper.inject_arch_specific.value_or(false),
                       fmt::join(argv, " "), stand_in ? " under a plan" : "");
}

// Each missing target once in a drop line: the lacking and the injected ones split `missing`.
void expect_drops_split(const Plan& plan, const std::string& what) {
    std::vector<arch::Target> all = plan.rewritten.dropped;
    all.insert(all.end(), plan.rewritten.injected.begin(), plan.rewritten.injected.end());
    std::sort(all.begin(), all.end());
    std::vector<arch::Target> missing = plan.cmp.missing;
    std::sort(missing.begin(), missing.end());
    EXPECT_EQ(all, missing) << what;
}

// Inject: a user's token goes only when clamped (or restated, for -dlto); what the call builds
// only grows, apart from the images nvcc cannot emit.
void expect_rewrite_keeps(const nvcc::Invocation& inv, const Plan& plan,
                          const toolkit::ToolkitCaps& caps, const std::string& what) {
    EXPECT_EQ(plan.argv, plan.rewrite.argv) << what;
    EXPECT_NE(plan.argv, inv.argv) << what;
    // A clamped -gencode names its flag and value in one entry ("-gencode arch=...").
    const auto clamped = [&](const std::string& token) {
        return std::any_of(
            plan.rewrite.clamped.begin(), plan.rewrite.clamped.end(),
            [&](const std::string& c) { return c.find(token) != std::string::npos; });
    };
    if (!inv.dlto)
        for (const auto& token : inv.argv)
            EXPECT_TRUE(std::find(plan.argv.begin(), plan.argv.end(), token) != plan.argv.end() ||
                        clamped(token))
                << what << ": lost " << token;
    auto again = nvcc::parse_invocation(plan.argv, "", "", "/nonexistent", caps);
    ASSERT_TRUE(again.ok()) << what;
    for (const auto& t : inv.requested)
        if (caps.emittable.contains(t))
            EXPECT_TRUE(again->requested.contains(t)) << what << " " << t.name();
    for (const auto& t : plan.rewrite.injected) {
        EXPECT_TRUE(caps.emittable.contains(t)) << what << " " << t.name();
        // A -dlto compile gets a missing sm_X as compute_X + lto_X (nvcc/cmdline.h inject).
        EXPECT_TRUE(std::any_of(
            plan.cmp.missing.begin(), plan.cmp.missing.end(),
            [&](const arch::Target& m) { return m == t || (inv.dlto && m.sm == t.sm); }))
            << what << ": injected " << t.name() << " that was not missing";
    }
    if (!plan.tu_class.may_inject()) EXPECT_TRUE(plan.rewrite.injected.empty()) << what;
}

void expect_properties(Mode mode, const nvcc::Invocation& inv, const EffectivePolicy* pol,
                       const Plan& plan, const toolkit::ToolkitCaps& caps, bool stand_in,
                       const std::string& what) {
    if (plan.kind != PlanKind::Rewritten) EXPECT_EQ(plan.argv, inv.argv) << what;
    // The stand-in answers every call that was read, whatever its kind; nvcc every other one.
    EXPECT_EQ(plan.runner, plan.read && stand_in ? Runner::StandIn : Runner::Nvcc) << what;
    if (!plan.read) {
        EXPECT_EQ(plan.kind, PlanKind::Untouched) << what;
        EXPECT_STREQ(plan.action, kActionPassthrough) << what;
        return;
    }
    if (!plan.compared) {
        EXPECT_EQ(plan.kind, PlanKind::Untouched) << what;
        EXPECT_STREQ(plan.action, kActionPassthrough) << what;
        EXPECT_TRUE(plan.as_given.empty() && plan.rewritten.empty()) << what;
        EXPECT_TRUE(pol == nullptr || inv.phase == nvcc::Phase::Ptx) << what;
        return;
    }
    if (plan.kind == PlanKind::Rewritten) expect_drops_split(plan, what);
    EXPECT_EQ(plan.as_given.dropped, plan.cmp.missing) << what;
    EXPECT_TRUE(plan.as_given.injected.empty() && plan.as_given.clamped.empty()) << what;
    switch (mode) {
    case Mode::Observe:
        EXPECT_EQ(plan.kind, PlanKind::Untouched) << what;
        EXPECT_STREQ(plan.action, kActionCompared) << what;
        break;
    case Mode::Strict:
        EXPECT_EQ(plan.kind, plan.cmp.missing.empty() ? PlanKind::Untouched : PlanKind::Refused)
            << what;
        break;
    case Mode::Inject:
        EXPECT_NE(plan.kind, PlanKind::Refused) << what;
        if (plan.kind == PlanKind::Rewritten) {
            EXPECT_STREQ(plan.action, kActionInjected) << what;
            expect_rewrite_keeps(inv, plan, caps, what);
        }
        break;
    }
}

} // namespace

TEST(Decide, GeneratedCasesKeepTheModesPromises) {
    const auto caps = nvcc::testing::caps13();
    int cases = 0, rewritten = 0, refused = 0, clamped = 0, stood_in = 0;
    for (const Mode mode : {Mode::Observe, Mode::Inject, Mode::Strict})
        for (const auto& pc : policies())
            for (const auto& argv : shapes())
                for (const bool stand_in : {false, true}) {
                    const std::string what = describe(mode, pc, argv, stand_in);
                    auto inv = nvcc::parse_invocation(argv, "", "", "/nonexistent", caps);
                    ASSERT_TRUE(inv.ok()) << what << ": " << inv.error().to_string();
                    std::optional<EffectivePolicy> pol;
                    if (pc) {
                        auto list = arch::ArchList::parse(pc->list, "test");
                        ASSERT_TRUE(list.ok()) << what;
                        pol = EffectivePolicy{*list, shipped_gpus(), "test", pc->wrapper};
                    }
                    const Plan plan = decide({*inv, pol ? &*pol : nullptr, caps, mode, stand_in});
                    expect_properties(mode, *inv, pol ? &*pol : nullptr, plan, caps, stand_in,
                                      what);
                    ++cases;
                    rewritten += plan.kind == PlanKind::Rewritten;
                    refused += plan.kind == PlanKind::Refused;
                    clamped += !plan.rewritten.clamped.empty();
                    stood_in += plan.runner == Runner::StandIn && plan.kind != PlanKind::Untouched;
                }
    // The generator reaches every kind: a property over no case proves nothing.
    EXPECT_EQ(cases, 3 * 13 * 17 * 2);
    std::cout << cases << " cases: " << rewritten << " rewritten, " << refused << " refused, "
              << clamped << " clamped\n";
    EXPECT_GT(rewritten, 50);
    EXPECT_GT(refused, 50);
    EXPECT_GT(clamped, 5);
    EXPECT_GT(stood_in, 50); // rewritten and refused calls answered by the stand-in
}

TEST(Decide, AConfigureProbeIsUntouchedOnlyUnderAPlan) {
    const auto caps = nvcc::testing::caps13();
    auto inv = nvcc::parse_invocation(
        {"-c", "/b/CMakeFiles/CMakeScratch/TryCompile-1/main.cu", "-arch=sm_80"}, "", "",
        "/nonexistent", caps);
    ASSERT_TRUE(inv.ok());
    auto list = arch::ArchList::parse("8.0 9.0", "test");
    ASSERT_TRUE(list.ok());
    const EffectivePolicy pol{*list, shipped_gpus(), "test", {}};
    const Plan probe = decide({*inv, &pol, caps, Mode::Inject, true});
    EXPECT_FALSE(probe.read);
    EXPECT_EQ(probe.runner, Runner::Nvcc); // the probe runs the real nvcc
    const Plan plan = decide({*inv, &pol, caps, Mode::Inject, false});
    EXPECT_EQ(plan.kind, PlanKind::Rewritten);
    EXPECT_EQ(plan.runner, Runner::Nvcc);
    EXPECT_EQ(fmt::format("{}", target_names(plan.rewrite.injected)), "[\"sm_90\"]");
}

TEST(Decide, AnArchSpecificTuGetsNothingUnlessThePackageOptsIn) {
    const auto caps = nvcc::testing::caps13();
    auto inv = nvcc::parse_invocation({"-c", "k.cu", "-gencode", "arch=compute_90a,code=sm_90a"},
                                      "", "", "/nonexistent", caps);
    ASSERT_TRUE(inv.ok());
    auto list = arch::ArchList::parse("8.0 9.0", "test");
    ASSERT_TRUE(list.ok());
    EffectivePolicy pol{*list, shipped_gpus(), "test", {}};
    Plan plan = decide({*inv, &pol, caps, Mode::Inject, false});
    EXPECT_EQ(plan.kind, PlanKind::Untouched);
    EXPECT_EQ(plan.as_given.why, "nothing injected");
    pol.wrapper.inject_arch_specific = true;
    plan = decide({*inv, &pol, caps, Mode::Inject, false});
    EXPECT_EQ(plan.kind, PlanKind::Rewritten);
    EXPECT_EQ(plan.rewritten.why, "nvcc cannot emit them");
}
