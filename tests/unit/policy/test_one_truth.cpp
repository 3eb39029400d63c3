// Coverage and resolve tell one truth (docs/arch-rules.md): the torch ceiling, what a package's
// build really compiles (target_forms), forward_ptx, the GPUs of a cell's platform and CUDA, and
// the aarch64 torch rows. Each test names the item of the rule it pins.
#include "helpers.h"

#include "policy/report.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

using namespace forge;
using namespace forge::policy;
using namespace forge::policy::test;

namespace {

Resolution shipped_cell(const std::string& cuda, const std::string& torch,
                        const std::string& platform = "linux_x86_64",
                        const std::string& package = "") {
    return must(
        resolve_with(shipped_policy(), cuda, torch, platform, package, "", shipped_packages()));
}

const arch::CoverageRow* row_of(const CoverageReport& report, int sm) {
    for (const auto& row : report.rows)
        if (row.gpu.sm == sm) return &row;
    return nullptr;
}

arch::Tier tier_of(const CoverageReport& report, int sm) {
    const auto* row = row_of(report, sm);
    if (row == nullptr) throw std::runtime_error(fmt::format("no row for CC {}", sm));
    return row->tier;
}

std::vector<std::string> names(const arch::ArchList& list) {
    std::vector<std::string> out;
    for (const auto& t : list.targets())
        out.push_back(t.name());
    return out;
}

// A package that asks for every CC of the GPU table on both lanes: the torch clamp then answers
// for every GPU of every cell.
PackageOverride every_cc() {
    std::vector<std::string> ccs;
    for (const auto& g : gpus())
        ccs.push_back(arch::cc_string(g.sm));
    const std::string list = fmt::format("{}", fmt::join(ccs, " "));
    auto p = parse_arch_override(
        fmt::format("arch_list: \"{}\"\narch_list_aarch64: \"{}\"\n", list, list), "every.yml");
    if (!p) throw std::runtime_error(p.error().to_string());
    p->name = "every";
    return *p;
}

} // namespace

// ---- 1. the torch ceiling ----

TEST(TorchCeiling, Cu126TorchCannotRunBlackwell) {
    // cu126 torch ships SASS 5.0..9.0 and no PTX: nothing of it loads on 10.x or 12.x.
    auto r = shipped_cell("12.6", "2.8");
    auto report = coverage_report(r, gpus());
    for (int sm : {100, 103, 120, 121}) {
        EXPECT_EQ(tier_of(report, sm), arch::Tier::TorchDead) << sm;
        // the reason is the clamp's own sentence
        EXPECT_EQ(row_of(report, sm)->why.rfind(torch_ceiling_reason(r, sm, gpus()), 0), 0u);
    }
    EXPECT_NE(row_of(report, 100)->why.find("the extension alone would be jit"), std::string::npos);
    EXPECT_EQ(tier_of(report, 90), arch::Tier::Native);
    auto j = coverage_json(report);
    EXPECT_EQ(j["10.0"]["tier"], "dead (torch)");
    EXPECT_NE(coverage_text(r, report).find("dead (torch): 10.0 10.3 12.0 12.1"),
              std::string::npos);
    // A cell without a torch keeps the plain tiers.
    auto any = coverage_report(shipped_cell("12.6", ""), gpus());
    EXPECT_EQ(tier_of(any, 100), arch::Tier::Jit);
    EXPECT_EQ(tier_of(any, 120), arch::Tier::Jit);
}

TEST(TorchCeiling, AgreesWithTheClampOnEveryCellOfTheMatrix) {
    const PackageOverride every = every_cc();
    std::size_t checked = 0;
    for (const auto& cell : policy_matrix(shipped(), &every, gpus())) {
        ASSERT_TRUE(cell.resolution) << cell.cuda << " " << cell.torch << ": " << cell.error;
        const Resolution& r = *cell.resolution;
        for (const auto& c : r.clamped) {
            if (c.reason.rfind("torch ", 0) != 0) continue;
            const int sm = arch::ArchList::parse(c.token)->entries().front().sm;
            const auto* row = row_of(cell.coverage, sm);
            if (row == nullptr) continue; // not a GPU of this cell
            EXPECT_EQ(row->tier, arch::Tier::TorchDead)
                << cell.cuda << "/" << cell.torch << " " << cell.platforms.front() << " CC "
                << c.token << " is clamped by torch but " << arch::tier_string(row->tier);
            ++checked;
        }
        for (const auto& row : cell.coverage.rows)
            if (row.tier == arch::Tier::TorchDead)
                EXPECT_FALSE(torch_ceiling_reason(r, row.gpu.sm, gpus()).empty());
    }
    EXPECT_GT(checked, 50u);
}

// ---- 2. what the package really compiles ----

TEST(TargetForms, SageattentionKernelsAreSinglePoints) {
    // CUDA 12.8: nvcc cannot emit sm_103 or sm_121a, so 10.3 and 12.1 are clamped, and the
    // 100a/120a cubins do not reach B300/GB10: they are dead, not native.
    auto r = shipped_cell("12.8", "2.8", "linux_x86_64", "sageattention");
    EXPECT_EQ(names(r.builds_as()), (std::vector<std::string>{"sm_80", "sm_86", "sm_89", "sm_90a",
                                                              "sm_100a", "sm_120a"}));
    EXPECT_EQ(r.list.to_string(), "8.0 8.6 8.9 9.0 10.0 12.0"); // the request stays plain
    auto report = coverage_report(r, gpus());
    EXPECT_EQ(tier_of(report, 103), arch::Tier::Dead);
    EXPECT_EQ(tier_of(report, 121), arch::Tier::Dead);
    EXPECT_EQ(tier_of(report, 100), arch::Tier::Native);
    EXPECT_EQ(row_of(report, 100)->via, std::vector<std::string>{"sm_100a"});
    EXPECT_NE(r.forms_source.find("target_forms"), std::string::npos);
    EXPECT_EQ(resolution_json(r)["builds_as"][3], "sm_90a");
    // CUDA 12.9 emits both: 12.1 runs its own 121a cubin, 10.3 the plain sm_103 it asks for.
    auto r129 = shipped_cell("12.9", "2.10", "linux_x86_64", "sageattention");
    auto report129 = coverage_report(r129, gpus());
    EXPECT_EQ(row_of(report129, 121)->via, std::vector<std::string>{"sm_121a"});
    EXPECT_EQ(row_of(report129, 103)->via, std::vector<std::string>{"sm_103"});
}

TEST(TargetForms, AnFCubinCoversItsFamilyFromTheCudaThatSpellsIt) {
    auto r128 = shipped_cell("12.8", "2.8", "linux_x86_64", "flash_attn");
    EXPECT_FALSE(r128.built.has_value()); // 12.8's ladder is plain
    auto r129 = shipped_cell("12.9", "2.10", "linux_x86_64", "flash_attn");
    ASSERT_TRUE(r129.built.has_value());
    auto report = coverage_report(r129, gpus());
    EXPECT_EQ(row_of(report, 103)->via, std::vector<std::string>{"sm_100f"});
    EXPECT_EQ(row_of(report, 121)->via, std::vector<std::string>{"sm_120f"});
    // its PTX is plain compute_120: the +PTX stays a forward tail
    auto built = names(*r129.built);
    EXPECT_NE(std::find(built.begin(), built.end(), "compute_120"), built.end());
    // aarch64 13.0: the policy row's 11.0 becomes Thor's family cubin
    auto arm = shipped_cell("13.0", "2.10", "linux_aarch64", "flash_attn");
    auto arm_built = names(arm.builds_as());
    EXPECT_NE(std::find(arm_built.begin(), arm_built.end(), "sm_110f"), arm_built.end());
}

TEST(TargetForms, TheAarch64LaneGetsTheSameDeclarations) {
    auto r = shipped_cell("13.0", "2.10", "linux_aarch64", "sageattention");
    EXPECT_EQ(names(r.builds_as()),
              (std::vector<std::string>{"sm_80", "sm_90a", "sm_100a", "sm_103", "sm_110", "sm_120a",
                                        "sm_121a"}));
    for (const auto& t : r.builds_as().targets())
        EXPECT_NE(t.kind, arch::Kind::Ptx) << t.name(); // no dead compute_Xa PTX
    auto report = coverage_report(r, gpus());
    EXPECT_EQ(tier_of(report, 121), arch::Tier::Native); // DGX Spark
    EXPECT_EQ(tier_of(report, 103), arch::Tier::Native); // GB300
}

// ---- 3. a-kernel packages and +PTX ----

TEST(ForwardPtx, ARowsPtxIsDroppedForAnAKernelPackage) {
    // natten: its override carries 9.0+PTX and 12.0+PTX; NATTEN builds no per-token PTX.
    auto r = shipped_cell("13.0", "2.9", "linux_x86_64", "natten");
    EXPECT_EQ(r.list.to_string(), "8.0 8.6 8.9 9.0 10.0 10.3 12.0");
    std::vector<std::string> dropped;
    for (const auto& d : r.ptx_dropped)
        dropped.push_back(d.token);
    EXPECT_EQ(dropped, (std::vector<std::string>{"9.0+PTX", "12.0+PTX"}));
    EXPECT_FALSE(r.ptx_not_added.empty());
    // aarch64 without a row of its own for 12.8: the policy row's +PTX goes too
    auto arm = shipped_cell("12.8", "2.9", "linux_aarch64", "natten");
    for (const auto& t : arm.builds_as().targets())
        EXPECT_NE(t.kind, arch::Kind::Ptx) << t.name();
    EXPECT_EQ(arm.source, "arch_policy_aarch64[12.8]");
    EXPECT_EQ(arm.ptx_dropped.size(), 2u);
}

TEST(ForwardPtx, APtxFormWithASuffixNeedsForwardPtxFalse) {
    const std::string forms = "target_forms:\n  reason: r\n  source: s\n  forms:\n"
                              "    \"9.0\": {sass: sm_90a, ptx: compute_90a}\n";
    auto bad = parse_arch_override(forms, "pkg.yml");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("forward_ptx"), std::string::npos);
    EXPECT_EQ(bad.error().line, 5);
    EXPECT_TRUE(parse_arch_override(forms + "forward_ptx: {value: false, reason: r}\n", "p").ok());
    // a plain PTX form is a forward tail: no declaration needed
    EXPECT_TRUE(parse_arch_override("target_forms:\n  reason: r\n  source: s\n  forms:\n"
                                    "    \"10.0\": {sass: sm_100f, since_cuda: \"12.9\"}\n",
                                    "p")
                    .ok());
}

TEST(ForwardPtx, EveryShippedPackageWithACompute_aFormSaysSo) {
    for (const auto& name : list_packages(shipped_packages())) {
        auto p = load_package(shipped_packages(), name);
        ASSERT_TRUE(p.ok()) << p.error().to_string();
        if (!p->target_forms) continue;
        EXPECT_FALSE(p->target_forms->source.empty()) << name;
        for (const auto& [sm, form] : p->target_forms->by_sm) {
            EXPECT_EQ(form.sass.sm, sm) << name;
            if (form.ptx && form.ptx->suffix != arch::Suffix::None)
                EXPECT_TRUE(p->forward_ptx && !p->forward_ptx->value) << name;
        }
    }
}

// ---- 4. PTX below every gap, one rule for resolve and coverage ----

TEST(GapPtx, EachGapGetsPtxOnTheHighestArchBelowIt) {
    auto pkg = parse_arch_override("arch_list_aarch64: \"8.0 10.0 12.0\"\n", "inline.yml");
    ASSERT_TRUE(pkg.ok());
    pkg->name = "inline";
    ResolveRequest req;
    req.cuda = "13.0";
    req.platform = "linux_aarch64";
    auto r = must(resolve_loaded(req, shipped(), &*pkg, gpus()));
    // Thor (11.0) JITs compute_100, not compute_80.
    EXPECT_EQ(r.list.to_string(), "8.0+PTX 10.0+PTX 12.0+PTX");
    auto report = coverage_report(r, gpus());
    EXPECT_EQ(row_of(report, 110)->via.back(), "compute_100");
    // coverage of the same list as given advises exactly what resolve added
    Resolution given = r;
    given.list = *arch::ArchList::parse("8.0+PTX 10.0 12.0+PTX");
    auto advice = coverage_report(given, gpus());
    ASSERT_EQ(advice.gaps.size(), 2u);
    EXPECT_FALSE(advice.gaps[1].ptx_placed);
    EXPECT_EQ(advice.gaps[1].suggested_sm, 100);
    EXPECT_NE(coverage_text(given, advice).find("+PTX belongs on 10.0"), std::string::npos);
    // A lower PTX that already nets the gap is not where the rule puts it: 10.0 still gets its own.
    auto netted = parse_arch_override("arch_list_aarch64: \"8.0+PTX 10.0 12.0\"\n", "n.yml");
    ASSERT_TRUE(netted.ok());
    netted->name = "netted";
    EXPECT_EQ(must(resolve_loaded(req, shipped(), &*netted, gpus())).list.to_string(),
              "8.0+PTX 10.0+PTX 12.0+PTX");
    // 12.8 aarch64 names Thor 10.1, a Tegra part of major 10: no major-11 GPU, no 10.0+PTX.
    req.cuda = "12.8";
    EXPECT_EQ(must(resolve_loaded(req, shipped(), &*pkg, gpus())).list.to_string(),
              "8.0+PTX 10.0 12.0+PTX");
}

// ---- 5. aarch64 torch rows ----

TEST(Aarch64Torch, TheClampAppliesOnBothLanes) {
    auto r = shipped_cell("13.0", "2.11", "linux_aarch64");
    ASSERT_TRUE(r.torch_ceiling.has_value());
    EXPECT_EQ(r.torch_ceiling->where, "torch_runnable_aarch64[13.0].by_torch[2.11]");
    EXPECT_EQ(r.list.to_string(), "8.0 9.0+PTX 10.0 11.0 12.0+PTX");
    for (const auto& n : r.notes)
        EXPECT_EQ(n.find("torch clamp not applied"), std::string::npos) << n;
    // torch 2.7's SBSA cu128 wheel had no sm_80: an A100 on Grace cannot run it
    auto old = shipped_cell("12.8", "2.7", "linux_aarch64");
    EXPECT_TRUE(std::any_of(old.clamped.begin(), old.clamped.end(), [](const ClampedToken& c) {
        return c.token == "8.0" &&
               c.reason.find("torch_runnable_aarch64[12.8]") != std::string::npos;
    }));
    // a release that was not read is said, not guessed
    auto unread = shipped_cell("12.9", "2.8", "linux_aarch64");
    EXPECT_FALSE(unread.torch_ceiling.has_value());
    EXPECT_TRUE(std::any_of(unread.notes.begin(), unread.notes.end(), [](const std::string& n) {
        return n.find("torch clamp not applied") != std::string::npos;
    }));
    // Orin and Thor-as-10.1 cannot run the SBSA torch (Tegra parts need their own cubins)
    auto report = coverage_report(shipped_cell("12.8", "2.9", "linux_aarch64"), gpus());
    EXPECT_EQ(tier_of(report, 87), arch::Tier::TorchDead);
    EXPECT_EQ(tier_of(report, 101), arch::Tier::TorchDead);
}

// ---- 6. a cell shows the GPUs its platform has ----

TEST(CellGpus, PlatformAndCudaDecide) {
    auto ccs = [](const std::vector<arch::Gpu>& g) {
        std::vector<int> out;
        for (const auto& x : g)
            out.push_back(x.sm);
        return out;
    };
    auto has = [&](const std::vector<arch::Gpu>& g, int sm) {
        auto c = ccs(g);
        return std::find(c.begin(), c.end(), sm) != c.end();
    };
    const auto x86 = gpus_for(gpus(), "linux_x86_64", "13.0");
    const auto win = gpus_for(gpus(), "win_amd64", "12.8");
    for (int sm : {53, 62, 72, 87, 101, 110}) {
        EXPECT_FALSE(has(x86, sm)) << sm;
        EXPECT_FALSE(has(win, sm)) << sm;
    }
    const auto arm13 = gpus_for(gpus(), "linux_aarch64", "13.0");
    const auto arm12 = gpus_for(gpus(), "linux_aarch64", "12.9");
    EXPECT_TRUE(has(arm13, 110) && !has(arm13, 101));
    EXPECT_TRUE(has(arm12, 101) && !has(arm12, 110));
    EXPECT_TRUE(has(arm13, 87));
    // no CUDA given: both names of Thor
    const auto arm_any = gpus_for(gpus(), "linux_aarch64", "");
    EXPECT_TRUE(has(arm_any, 101) && has(arm_any, 110));
}

TEST(CellGpus, GpusFileFieldsAreChecked) {
    const std::string head = "gpus:\n  \"8.7\": {products: [], ";
    EXPECT_TRUE(parse_gpus(head + "platforms: [linux_aarch64]}\n", "g.yml").ok());
    auto bad = parse_gpus(head + "platforms: [jetson]}\n", "g.yml");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().to_string().find("jetson"), std::string::npos);
    EXPECT_FALSE(parse_gpus(head + "platforms: []}\n", "g.yml").ok());
    EXPECT_FALSE(parse_gpus(head + "since_cuda: \"13\"}\n", "g.yml").ok());
    EXPECT_FALSE(parse_gpus(head + "since_cuda: \"13.0\", until_cuda: \"12.9\"}\n", "g.yml").ok());
}
