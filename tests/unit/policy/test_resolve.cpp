#include "helpers.h"

#include "policy/report.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <optional>

using namespace forge;
using namespace forge::policy;
using namespace forge::policy::test;

namespace {

std::string list_of(const Result<Resolution>& r) {
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    return r.ok() ? r->list.to_string() : std::string("<error>");
}

// The SM the normalisation gave its +PTX to as the list's highest plain arch (not for a gap).
std::optional<int> ptx_added_on_highest(const Resolution& r) {
    for (const auto& p : r.ptx_added)
        if (p.why == "highest plain arch") return p.sm;
    return std::nullopt;
}

bool clamped_with(const Resolution& r, const std::string& token, const std::string& needle) {
    return std::any_of(r.clamped.begin(), r.clamped.end(), [&](const ClampedToken& c) {
        return c.token == token && c.reason.find(needle) != std::string::npos;
    });
}

PackageOverride override_from(const std::string& yaml) {
    auto p = parse_arch_override(yaml, "inline.yml");
    if (!p) throw std::runtime_error(p.error().to_string());
    p->name = "inline";
    return *p;
}

Result<Resolution> shipped_with(const PackageOverride* pkg, const std::string& cuda,
                                const std::string& torch,
                                const std::string& platform = "linux_x86_64") {
    ResolveRequest req;
    req.cuda = cuda;
    req.torch = torch;
    req.platform = platform;
    return resolve_loaded(req, shipped(), pkg, gpus());
}

} // namespace

// ---- x86-64 / Windows lane, every priority step ----

TEST(ResolveX86, Step5PolicyRow) {
    auto r = must(resolve_with(mini(), "12.8"));
    EXPECT_EQ(r.list.to_string(), "8.0 9.0+PTX");
    EXPECT_EQ(r.source, "arch_policy[12.8]");
    EXPECT_EQ(r.reason, "x86 policy row");
    EXPECT_EQ(r.requested, "8.0;9.0+PTX");
    EXPECT_EQ(r.build_epoch, 7);
}

TEST(ResolveX86, Step4ExceptionByTorchMinor) {
    auto r = must(resolve_with(mini(), "12.8", "2.9.1+cu128"));
    EXPECT_EQ(r.torch, "2.9");
    EXPECT_EQ(r.list.to_string(), "7.5 8.0 9.0+PTX");
    EXPECT_EQ(r.source, "arch_exceptions[12.8/2.9]");
    // a torch minor without an exception row falls back to the policy row
    auto other = must(resolve_with(mini(), "12.8", "2.11"));
    EXPECT_EQ(other.source, "arch_policy[12.8]");
    // no torch given: the exceptions table cannot be consulted at all
    EXPECT_EQ(must(resolve_with(mini(), "12.8")).source, "arch_policy[12.8]");
}

TEST(ResolveX86, Step3PackageArchListBeatsExceptionsAndPolicy) {
    auto r = must(resolve_with(mini(), "12.4", "2.6", "linux_x86_64", "lanes"));
    EXPECT_EQ(r.source, "packages/lanes/arch_override.yml:arch_list");
    EXPECT_EQ(r.list.to_string(), "8.0 8.6+PTX");
    EXPECT_EQ(ptx_added_on_highest(r), 86);
    EXPECT_EQ(r.reason, "x86 package floor");
}

TEST(ResolveX86, Step2ArchListByCudaBeatsArchList) {
    auto r = must(resolve_with(mini(), "12.8", "2.9", "linux_x86_64", "lanes", "3.11"));
    EXPECT_EQ(r.source, "packages/lanes/arch_override.yml:arch_list_by_cuda[12.8]");
    EXPECT_EQ(r.list.to_string(), "8.9+PTX");
}

TEST(ResolveX86, Step1CombinationBeatsEverything) {
    auto r = must(resolve_with(mini(), "12.8.1", "2.9", "linux_x86_64", "lanes", "3.12"));
    EXPECT_EQ(r.source, "packages/lanes/build_matrix.yml:combinations[0].arch_list");
    EXPECT_EQ(r.list.to_string(), "8.6+PTX");
    EXPECT_EQ(r.cuda, "12.8");
    // every key of the combination must match: Windows is another cell
    auto win = must(resolve_with(mini(), "12.8", "2.9", "win_amd64", "lanes", "3.12"));
    EXPECT_EQ(win.source, "packages/lanes/arch_override.yml:arch_list_by_cuda[12.8]");
    // a combination key the request leaves open does not match
    auto no_python = must(resolve_with(mini(), "12.8", "2.9", "linux_x86_64", "lanes"));
    EXPECT_EQ(no_python.source, "packages/lanes/arch_override.yml:arch_list_by_cuda[12.8]");
}

TEST(ResolveX86, CombinationWithoutSomeKeysMatchesOnThePresentOnes) {
    auto r = must(resolve_with(mini(), "12.8", "", "win_amd64", "combo_platform"));
    EXPECT_EQ(r.source, "packages/combo_platform/build_matrix.yml:combinations[0].arch_list");
    EXPECT_EQ(r.list.to_string(), "8.6 8.9+PTX");
    EXPECT_EQ(must(resolve_with(mini(), "12.8", "", "linux_x86_64", "combo_platform")).source,
              "arch_policy[12.8]");
}

// ---- aarch64 lane ----

TEST(ResolveAarch64, ByCudaThenArchListThenPolicy) {
    auto r = must(resolve_with(mini(), "12.8", "2.9", "linux_aarch64", "lanes", "3.12"));
    // combination[1] names linux_aarch64 but combinations are an x86 field: never read here
    EXPECT_EQ(r.source, "packages/lanes/arch_override.yml:arch_list_by_cuda_aarch64[12.8]");
    EXPECT_EQ(r.list.to_string(), "9.0 10.0+PTX");
    auto r2 = must(resolve_with(mini(), "12.4", "", "linux_aarch64", "lanes"));
    EXPECT_EQ(r2.source, "packages/lanes/arch_override.yml:arch_list_aarch64");
    EXPECT_EQ(r2.list.to_string(), "9.0+PTX");
    auto r3 = must(resolve_with(mini(), "12.8", "", "linux_aarch64"));
    EXPECT_EQ(r3.source, "arch_policy_aarch64[12.8]");
    EXPECT_EQ(r3.list.to_string(), "8.7 9.0+PTX");
}

TEST(ResolveAarch64, X86FieldsAreInvisible) {
    // x86only sets arch_list_by_cuda[12.8] and arch_list; ARM gets the aarch64 policy row.
    auto r = must(resolve_with(mini(), "12.8", "", "linux_aarch64", "x86only"));
    EXPECT_EQ(r.source, "arch_policy_aarch64[12.8]");
    EXPECT_EQ(r.list.to_string(), "8.7 9.0+PTX");
    // ... while x86 sees them
    EXPECT_EQ(must(resolve_with(mini(), "12.8", "", "linux_x86_64", "x86only")).source,
              "packages/x86only/arch_override.yml:arch_list_by_cuda[12.8]");
}

TEST(ResolveAarch64, ExceptionsAreNeverRead) {
    auto r = must(resolve_with(mini(), "12.8", "2.9", "linux_aarch64"));
    EXPECT_EQ(r.source, "arch_policy_aarch64[12.8]");
    EXPECT_EQ(r.list.to_string(), "8.7 9.0+PTX"); // not the exception's 7.5
    // no aarch64 torch table: the clamp is reported as not applied rather than borrowing x86's
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_NE(r.notes[0].find("torch clamp not applied"), std::string::npos);
}

// ---- the clamp ----

TEST(Clamp, NvccRemovesWhatTheToolkitCannotEmitWithReason) {
    auto pkg = override_from("arch_list: \"7.0 8.0 10.0f 12.0\"\n");
    ResolveRequest req;
    req.platform = "linux_x86_64"; // the x86 lane on any host (the default is the host's)
    req.cuda = "12.8";
    auto policy = load_policy(mini());
    ASSERT_TRUE(policy.ok());
    auto r = must(resolve_loaded(req, *policy, &pkg, gpus()));
    // majors 9-11 have no cubin left: the second PTX goes on 8.0 (docs/arch-rules.md)
    EXPECT_EQ(r.list.to_string(), "8.0+PTX 12.0+PTX");
    EXPECT_TRUE(clamped_with(r, "7.0", "nvcc 12.8 cannot emit sm_70"));
    EXPECT_TRUE(clamped_with(r, "10.0f", "cannot emit sm_100f"));
    EXPECT_EQ(r.clamped.size(), 2u);
    EXPECT_NE(r.clamped[0].reason.find("nvcc_supported[12.8]"), std::string::npos);
}

TEST(Clamp, TorchRemovesWhatThePairedTorchCannotRun) {
    auto r = must(resolve_with(mini(), "12.8", "2.11", "linux_x86_64", "x86only"));
    EXPECT_EQ(r.list.to_string(), "8.9+PTX"); // 8.9 rides torch's 8.6 cubin; 12.0 is unreachable
    ASSERT_EQ(r.clamped.size(), 1u);
    EXPECT_EQ(r.clamped[0].token, "12.0");
    EXPECT_NE(r.clamped[0].reason.find("torch 2.11"), std::string::npos);
    EXPECT_NE(r.clamped[0].reason.find("torch_runnable[12.8].by_torch[2.11]"), std::string::npos);
    // without --torch there is no torch clamp (and majors 9-11 get their PTX net on 8.9)
    EXPECT_EQ(must(resolve_with(mini(), "12.8", "", "linux_x86_64", "x86only")).list.to_string(),
              "8.9+PTX 12.0+PTX");
}

TEST(Clamp, ShippedVoltaFlickerIsReproduced) {
    // sm_70 rides in through the exception only where that torch ships it
    EXPECT_EQ(list_of(shipped_with(nullptr, "12.8", "2.9")),
              "7.0 7.5 8.0 8.6 9.0+PTX 10.0 12.0+PTX");
    EXPECT_EQ(list_of(shipped_with(nullptr, "12.8", "2.7")), "7.5 8.0 8.6 9.0+PTX 10.0 12.0+PTX");
    EXPECT_EQ(list_of(shipped_with(nullptr, "12.8", "2.11")), "7.5 8.0 8.6 9.0+PTX 10.0 12.0+PTX");
    EXPECT_EQ(list_of(shipped_with(nullptr, "12.9", "2.10")),
              "7.0 7.5 8.0 8.6 9.0+PTX 10.0 12.0+PTX");
    EXPECT_EQ(list_of(shipped_with(nullptr, "12.9", "2.12")), "7.5 8.0 8.6 9.0+PTX 10.0 12.0+PTX");
    // "2.10.0" is torch 2.10, not 2.1: the exception key is found by minor, not by prefix
    auto r210 = shipped_with(nullptr, "12.8", "2.10.0");
    EXPECT_EQ(list_of(r210), "7.0 7.5 8.0 8.6 9.0+PTX 10.0 12.0+PTX");
    EXPECT_EQ(r210->source, "arch_exceptions[12.8/2.10]");
    // a package override asking Volta on a torch without sm_70 is clamped, with torch's reason
    auto volta = override_from("arch_list: \"7.0 8.0\"\n");
    auto r = must(shipped_with(&volta, "12.8", "2.11"));
    EXPECT_EQ(r.list.to_string(), "8.0+PTX");
    EXPECT_TRUE(clamped_with(r, "7.0", "torch 2.11 (CUDA 12.8) cannot run on CC 7.0"));
}

TEST(Clamp, ThorAndOrinNeedTorchThatReachesThem) {
    // cu130 torch 2.11 ships no PTX: nothing in it reaches Thor (11.0)
    auto thor = override_from("arch_list: \"11.0 12.0\"\n");
    auto r = must(shipped_with(&thor, "13.0", "2.11"));
    EXPECT_EQ(r.list.to_string(), "12.0+PTX");
    EXPECT_TRUE(clamped_with(r, "11.0", "cannot run on CC 11.0"));
    // torch 2.10 ships compute_120 PTX, which still cannot JIT down to 11.0
    EXPECT_TRUE(clamped_with(must(shipped_with(&thor, "13.0", "2.10")), "11.0", "cannot run"));
    // Orin (Tegra 8.7) does not run torch's desktop sm_80/sm_86 cubins
    auto orin = override_from("arch_list: \"8.0 8.7\"\n");
    EXPECT_TRUE(
        clamped_with(must(shipped_with(&orin, "12.8", "2.9")), "8.7", "cannot run on CC 8.7"));
    // on 12.8, nvcc has no sm_110 at all: the nvcc reason comes first
    EXPECT_TRUE(clamped_with(must(shipped_with(&thor, "12.8", "")), "11.0",
                             "nvcc 12.8 cannot emit sm_110"));
}

TEST(Clamp, CollapseToEmptyIsAPolicyFinding) {
    auto r = resolve_with(mini(), "12.8", "", "linux_x86_64", "collapse");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().exit_code, kExitPolicy);
    EXPECT_NE(r.error().message.find("collapses to an empty arch list"), std::string::npos);
    EXPECT_NE(r.error().message.find("packages/collapse/arch_override.yml:arch_list_by_cuda[12.8]"),
              std::string::npos);
    EXPECT_NE(r.error().message.find("sm_70"), std::string::npos);
    // by the torch clamp too (mini torch 2.11 runs nothing above 9.x)
    auto blackwell = override_from("arch_list: \"12.0\"\n");
    ResolveRequest req;
    req.platform = "linux_x86_64"; // the x86 lane on any host (the default is the host's)
    req.cuda = "12.8";
    req.torch = "2.11";
    auto policy = load_policy(mini());
    ASSERT_TRUE(policy.ok());
    auto t = resolve_loaded(req, *policy, &blackwell, gpus());
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().exit_code, kExitPolicy);
    EXPECT_NE(t.error().message.find("torch 2.11"), std::string::npos);
}

// ---- errors ----

TEST(ResolveErrors, MissingCudaKeyIsExit2NamingKeyAndFile) {
    auto r = resolve_with(mini(), "13.0");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().exit_code, kExitInput);
    EXPECT_EQ(r.error().key, "arch_policy[13.0]");
    EXPECT_NE(r.error().file.find("mini_policy.yml"), std::string::npos);
    auto arm = resolve_with(mini(), "12.6", "", "linux_aarch64");
    ASSERT_FALSE(arm.ok());
    EXPECT_EQ(arm.error().key, "arch_policy_aarch64[12.6]");
    // an override wins the list, but what nvcc 13.0 can emit is still unknown
    auto pkg = resolve_with(mini(), "13.0", "", "linux_x86_64", "lanes");
    ASSERT_FALSE(pkg.ok());
    EXPECT_EQ(pkg.error().key, "nvcc_supported[13.0]");
    EXPECT_EQ(pkg.error().exit_code, kExitInput);
}

TEST(ResolveErrors, UnknownTorchAndBadInputs) {
    auto r = resolve_with(mini(), "12.8", "2.3");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().key, "torch_runnable[12.8].releases");
    EXPECT_EQ(r.error().exit_code, kExitInput);
    EXPECT_FALSE(resolve_with(mini(), "twelve").ok());
    EXPECT_FALSE(resolve_with(mini(), "12.8", "", "solaris").ok());
    auto missing_policy = resolve_with("/nonexistent.yml", "12.8");
    ASSERT_FALSE(missing_policy.ok());
    EXPECT_EQ(missing_policy.error().file, "/nonexistent.yml");
}

TEST(ResolveErrors, UnknownPackageIsAnError) {
    // Issue 36, 9: an unknown package is an error, not a note and the policy row (a typo, or a
    // name smuggling a setting, would pass for a package nvcc-forge knows).
    auto none = resolve_with(mini(), "12.8", "", "linux_x86_64", "no_such_package");
    ASSERT_FALSE(none.ok());
    EXPECT_EQ(none.error().exit_code, kExitInput);
    EXPECT_NE(none.error().message.find("unknown package 'no_such_package'"), std::string::npos)
        << none.error().to_string();
}

TEST(ResolveErrors, PackageFileErrorsPropagateWithLine) {
    // A malformed package file stops the resolution with its file and line: a package whose
    // override cannot be read must never silently fall back to the policy row.
    const auto dir = std::filesystem::path(FORGE_TEST_BINARY_DIR) / "resolve-errors" / "packages";
    std::filesystem::create_directories(dir / "broken");
    {
        std::ofstream f(dir / "broken" / "arch_override.yml");
        f << "# a comment\n\narch_list: \"8.0 sm_bogus\"\n";
    }
    auto r = resolve_with(mini(), "12.8", "", "linux_x86_64", "broken", "", dir.string());
    ASSERT_FALSE(r.ok()) << "resolved to " << r->list.to_string() << " from " << r->source;
    EXPECT_EQ(r.error().exit_code, kExitInput);
    EXPECT_NE(r.error().file.find("broken/arch_override.yml"), std::string::npos)
        << r.error().to_string();
    ASSERT_TRUE(r.error().line) << r.error().to_string();
    EXPECT_EQ(*r.error().line, 3) << r.error().to_string();
    // The same file with a good list resolves: the error was the bad token.
    {
        std::ofstream f(dir / "broken" / "arch_override.yml");
        f << "arch_list:\n  list: \"8.0 9.0\"\n  reason: \"x\"\n  source: \"x\"\n";
    }
    auto ok = must(resolve_with(mini(), "12.8", "", "linux_x86_64", "broken", "", dir.string()));
    EXPECT_EQ(ok.source, "packages/broken/arch_override.yml:arch_list");
}

TEST(ResolveInputs, EveryFileReadAndWhereAPackagesFilesWouldAppear) {
    // ForgeArch's configure dependencies: a change to any of them may change the list.
    namespace fs = std::filesystem;
    const auto dir = fs::path(FORGE_TEST_BINARY_DIR) / "resolve-inputs" / "packages";
    fs::remove_all(dir);
    fs::create_directories(dir);
    auto has = [](const Resolution& r, const fs::path& p) {
        const std::string want = fs::absolute(p).lexically_normal().string();
        return std::find(r.inputs.begin(), r.inputs.end(), want) != r.inputs.end();
    };
    // No package directory yet: an unknown package is an error (no resolution to depend on).
    EXPECT_FALSE(resolve_with(mini(), "12.8", "", "linux_x86_64", "later", "", dir.string()).ok());
    // Both of its files, and its own directory (a file added there later).
    fs::create_directories(dir / "later");
    std::ofstream(dir / "later" / "arch_override.yml")
        << "arch_list:\n  list: \"8.0 9.0\"\n  reason: \"x\"\n  source: \"x\"\n";
    std::ofstream(dir / "later" / "build_matrix.yml")
        << "combinations:\n  - {cuda: \"12.8\", arch_list: \"8.6\"}\n";
    auto both = must(resolve_with(mini(), "12.8", "", "linux_x86_64", "later", "", dir.string()));
    EXPECT_NE(both.source.find("build_matrix.yml"), std::string::npos) << both.source;
    for (const char* f : {"arch_override.yml", "build_matrix.yml"})
        EXPECT_TRUE(has(both, dir / "later" / f)) << f;
    EXPECT_TRUE(has(both, dir / "later"));
    EXPECT_FALSE(has(both, dir));
    // No package: the policy and gpus.yml only.
    EXPECT_EQ(must(resolve_with(mini(), "12.8")).inputs.size(), 2u);
}

// ---- +PTX placement and the known traps (docs/arch-rules.md) ----

TEST(SeedTraps, PtxNeverLandsOnAnArchSpecificToken) {
    auto r = must(resolve_with(mini(), "12.8", "", "linux_x86_64", "waived"));
    EXPECT_EQ(r.list.to_string(), "8.0+PTX 9.0a 10.0a");
    EXPECT_EQ(ptx_added_on_highest(r), 80);
    for (const auto& t : r.list.targets())
        if (t.kind == arch::Kind::Ptx) EXPECT_EQ(t.suffix, arch::Suffix::None) << t.name();
}

TEST(SeedTraps, ForwardPtxFalseSkipsTheTailAndSaysWhy) {
    auto with_tail = override_from("arch_list: \"8.0 9.0 12.0\"\n");
    auto r = must(shipped_with(&with_tail, "12.8", ""));
    // 12.0+PTX on the highest arch, 9.0+PTX below the major 10-11 gap (docs/arch-rules.md).
    EXPECT_EQ(r.list.to_string(), "8.0 9.0+PTX 12.0+PTX");
    EXPECT_TRUE(r.ptx_not_added.empty());
    auto no_tail = override_from("arch_list: \"8.0 9.0 12.0\"\n"
                                 "forward_ptx: {value: false, reason: \"a targets only\"}\n");
    r = must(shipped_with(&no_tail, "12.8", ""));
    EXPECT_EQ(r.list.to_string(), "8.0 9.0 12.0");
    EXPECT_FALSE(ptx_added_on_highest(r).has_value());
    EXPECT_EQ(r.ptx_not_added, "packages/inline/arch_override.yml:forward_ptx: a targets only");
    EXPECT_EQ(resolution_json(r)["ptx_not_added"], r.ptx_not_added);
    // A +PTX the list writes itself goes too (the build ships no forward tail), each with the
    // package's reason: the list never promises PTX the wheel will not carry.
    auto written = override_from("arch_list: \"8.0 9.0+PTX\"\n"
                                 "forward_ptx: {value: false, reason: \"x\"}\n");
    r = must(shipped_with(&written, "12.8", ""));
    EXPECT_EQ(r.list.to_string(), "8.0 9.0");
    ASSERT_EQ(r.ptx_dropped.size(), 1u);
    EXPECT_EQ(r.ptx_dropped[0].token, "9.0+PTX");
    EXPECT_EQ(r.ptx_dropped[0].reason, "packages/inline/arch_override.yml:forward_ptx: x");
    EXPECT_EQ(resolution_json(r)["ptx_dropped"][0]["token"], "9.0+PTX");
}

TEST(SeedTraps, TorchListInThePackagesSeparator) {
    auto semi =
        override_from("arch_list: \"8.0 9.0+PTX\"\nwrapper:\n  arch_list_separator: \";\"\n");
    auto r = must(shipped_with(&semi, "12.8", ""));
    EXPECT_EQ(*torch_arch_list(r), "8.0;9.0+PTX");
    EXPECT_EQ(resolution_json(r)["torch_arch_list"], "8.0;9.0+PTX");
    EXPECT_EQ(resolution_json(r)["arch_list"], "8.0 9.0+PTX"); // the canonical form is unchanged
    auto comma =
        override_from("arch_list: \"8.0 9.0+PTX\"\nwrapper:\n  arch_list_separator: \",\"\n");
    EXPECT_EQ(*torch_arch_list(must(shipped_with(&comma, "12.8", ""))), "8.0,9.0+PTX");
    EXPECT_EQ(*torch_arch_list(must(resolve_with(mini(), "12.8", "2.9"))), "7.5 8.0 9.0+PTX");
}

TEST(SeedTraps, SeparatorAsymmetryIsGone) {
    // policy rows are ';'-separated, overrides space-separated: consumers see one form
    auto policy_row = must(resolve_with(mini(), "12.8", "2.9"));
    auto pkg = override_from("arch_list: \"7.5 8.0 9.0+PTX\"\n");
    ResolveRequest req;
    req.platform = "linux_x86_64"; // the x86 lane on any host (the default is the host's)
    req.cuda = "12.8";
    auto override_row = must(resolve_loaded(req, *load_policy(mini()), &pkg, gpus()));
    EXPECT_EQ(policy_row.requested.find(';') != std::string::npos, true);
    EXPECT_EQ(policy_row.list.to_string(), override_row.list.to_string());
    EXPECT_EQ(policy_row.list.to_string().find(';'), std::string::npos);
    EXPECT_EQ(*policy_row.list.to_torch(), "7.5 8.0 9.0+PTX");
    // a plain .split() of the output yields one arch per token (the flash_attn ARM bug)
    auto aarch64 = must(shipped_with(nullptr, "13.0", "", "linux_aarch64"));
    EXPECT_EQ(aarch64.list.to_string(), "8.0 9.0+PTX 10.0 11.0 12.0+PTX");
}

TEST(SeedTraps, NormalisationAndPtxAreIdempotent) {
    auto r = must(shipped_with(nullptr, "12.8", "2.9"));
    auto again = arch::ArchList::parse(r.list.to_string());
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->to_string(), r.list.to_string());
    EXPECT_EQ(again->ensure_ptx_on_highest_base(), -1);
    EXPECT_FALSE(ptx_added_on_highest(r).has_value()); // the row already carries its +PTX
    // resolving the resolved list as an override gives the same list
    auto pkg = override_from("arch_list: \"" + r.list.to_string() + "\"\n");
    EXPECT_EQ(must(shipped_with(&pkg, "12.8", "2.9")).list.to_string(), r.list.to_string());
}

TEST(SeedTraps, SecondPtxIsKeptWhenTheRowCarriesIt) {
    auto r = must(shipped_with(nullptr, "13.0", ""));
    auto targets = r.list.targets();
    EXPECT_TRUE(std::count(targets.begin(), targets.end(),
                           arch::Target{arch::Kind::Ptx, 90, arch::Suffix::None}));
    EXPECT_TRUE(std::count(targets.begin(), targets.end(),
                           arch::Target{arch::Kind::Ptx, 120, arch::Suffix::None}));
    // x86-64 has no major-11 part (Thor is a Jetson): the row has no gap there, and adds nothing.
    EXPECT_TRUE(arch::major_gaps(targets, gpus_for(gpus(), "linux_x86_64", "13.0")).empty());
    EXPECT_EQ(r.list.to_string(), "7.5 8.0 8.6 9.0+PTX 10.0 12.0+PTX");
    // The aarch64 13.x rows carry Thor's own 11.0 cubin: no gap either.
    auto arm = must(shipped_with(nullptr, "13.0", "", "linux_aarch64"));
    EXPECT_TRUE(
        arch::major_gaps(arm.list.targets(), gpus_for(gpus(), "linux_aarch64", "13.0")).empty());
}

TEST(SeedTraps, ExceptionsOnlyAddInResolution) {
    for (const auto& [key, row] : shipped().arch_exceptions) {
        std::string cuda = key.substr(0, key.find('/')), torch = key.substr(key.find('/') + 1);
        auto with = must(shipped_with(nullptr, cuda, torch)).list.targets();
        auto without = must(shipped_with(nullptr, cuda, "")).list.targets();
        for (const auto& t : without)
            EXPECT_TRUE(std::count(with.begin(), with.end(), t)) << key << " lost " << t.name();
    }
}

// ---- the package's verify and wrapper settings travel with the resolution ----

TEST(Resolution, CarriesPackageSettings) {
    auto r = must(resolve_with(mini(), "12.8", "", "linux_x86_64", "waived"));
    ASSERT_EQ(r.allow_missing.size(), 1u);
    EXPECT_EQ(r.allow_missing[0].name(), "sm_100");
    EXPECT_TRUE(r.allow_pure_python);
    EXPECT_EQ(r.lint_ignore, std::vector<std::string>{"e4m3 in a comment"});
    EXPECT_EQ(r.wrapper.mode, "observe");
    EXPECT_EQ(r.wrapper.inject_arch_specific, false);
    EXPECT_EQ(r.wrapper.max_toolkit.at("12.0"), "12.8");
}

// A list given by hand (`--arch-list --package`) gets the same package fields as a resolved cell.
TEST(Resolution, ApplyPackageCopiesTheSameFieldsAsResolve) {
    PackageOverride pkg;
    pkg.name = "hand";
    pkg.override_file = "packages/hand/arch_override.yml";
    pkg.allow_missing.push_back(
        {arch::Target{arch::Kind::Sass, 100, arch::Suffix::None}, "why", 3});
    pkg.allow_pure_python = true;
    pkg.lint_ignore = {"x"};
    pkg.judge_embedded = true;
    pkg.wrapper.mode = "observe";
    Resolution by_hand;
    apply_package(pkg, by_hand);
    EXPECT_EQ(by_hand.package, "hand");
    EXPECT_EQ(by_hand.package_file, pkg.override_file);
    ASSERT_EQ(by_hand.allow_missing.size(), 1u);
    EXPECT_EQ(by_hand.allow_missing[0].name(), "sm_100");
    EXPECT_TRUE(by_hand.allow_pure_python);
    EXPECT_TRUE(by_hand.judge_embedded);
    EXPECT_EQ(by_hand.lint_ignore, std::vector<std::string>{"x"});
    EXPECT_EQ(by_hand.wrapper.mode, "observe");
    auto resolved = must(shipped_with(&pkg, "12.8", ""));
    EXPECT_EQ(resolved.package, by_hand.package);
    EXPECT_EQ(resolved.allow_missing, by_hand.allow_missing);
    EXPECT_EQ(resolved.lint_ignore, by_hand.lint_ignore);
    EXPECT_EQ(resolved.wrapper.mode, by_hand.wrapper.mode);
}

// ---- coverage of the issue's row ----

TEST(Coverage, IssueRowTiers) {
    auto r = must(resolve_with(shipped_policy(), "12.8"));
    auto report = coverage_report(r, gpus());
    auto tier = [&](int sm) {
        for (const auto& row : report.rows)
            if (row.gpu.sm == sm) return row.tier;
        ADD_FAILURE() << "no row for " << sm;
        return arch::Tier::Dead;
    };
    for (int sm : {89, 103, 121, 75, 80, 86, 90, 100, 120})
        EXPECT_EQ(tier(sm), arch::Tier::Native) << sm;
    for (int sm : {70, 50, 61})
        EXPECT_EQ(tier(sm), arch::Tier::Dead) << sm;
    // An x86-64 cell has no Jetson parts: no 5.3/6.2/7.2/8.7, no Thor (10.1, 11.0).
    for (const auto& row : report.rows)
        for (int jetson : {53, 62, 72, 87, 101, 110})
            EXPECT_NE(row.gpu.sm, jetson);
    EXPECT_EQ(report.rows.size(), gpus().size() - 6);
    // The aarch64 cell of CUDA 12.8 has them, with Thor as 10.1 (its CUDA 12 name).
    auto arm = must(resolve_with(shipped_policy(), "12.8", "", "linux_aarch64"));
    auto arm_report = coverage_report(arm, gpus());
    EXPECT_EQ(arm_report.rows.size(), gpus().size() - 1);
    EXPECT_TRUE(std::none_of(arm_report.rows.begin(), arm_report.rows.end(),
                             [](const arch::CoverageRow& row) { return row.gpu.sm == 110; }));
}

// ---- cell keys ----

TEST(CellKey, ChangesWithEveryInputAndBuildEpoch) {
    auto base = must(resolve_with(mini(), "12.8", "2.9", "linux_x86_64", "", "3.12"));
    std::string key = cell_key(base);
    EXPECT_EQ(key.size(), 64u);
    EXPECT_EQ(
        key, cell_key(must(resolve_with(mini(), "12.8.1", "2.9.1", "linux_x86_64", "", "3.12.2"))));
    EXPECT_NE(key, cell_key(must(resolve_with(mini(), "12.8", "2.9", "linux_x86_64", "", "3.11"))));
    EXPECT_NE(key, cell_key(must(resolve_with(mini(), "12.8", "2.9", "win_amd64", "", "3.12"))));
    EXPECT_NE(key,
              cell_key(must(resolve_with(mini(), "12.8", "2.11", "linux_x86_64", "", "3.12"))));
    Resolution bumped = base;
    bumped.build_epoch = *base.build_epoch + 1;
    EXPECT_NE(key, cell_key(bumped));
    Resolution other_list = base;
    other_list.list = *arch::ArchList::parse("8.0");
    EXPECT_NE(key, cell_key(other_list));
}

// ---- narrowing and the second PTX (docs/arch-rules.md, "Narrowing", "PTX once per major") ----

TEST(ResolveNormalise, NarrowingAgainstThePolicyRowIsReported) {
    auto pkg = override_from("arch_list:\n  list: \"8.0 9.0+PTX\"\n"
                             "  reason: \"the build failed on 10.0 and 12.0\"\n"
                             "  source: \"a test\"\n");
    auto r = must(shipped_with(&pkg, "13.0", ""));
    EXPECT_EQ(r.list.to_string(), "8.0 9.0+PTX");
    std::vector<std::string> tokens;
    for (const auto& n : r.narrowed) {
        tokens.push_back(n.token);
        EXPECT_EQ(n.against, "arch_policy[13.0]");
        EXPECT_EQ(n.reason, "the build failed on 10.0 and 12.0");
    }
    EXPECT_EQ(tokens, (std::vector<std::string>{"7.5", "8.6", "10.0", "12.0+PTX"}));
    auto j = resolution_json(r);
    ASSERT_EQ(j["narrowed"].size(), 4u);
    EXPECT_EQ(j["narrowed"][0]["token"], "7.5");
    // the policy row itself narrows nothing
    EXPECT_TRUE(must(shipped_with(nullptr, "13.0", "")).narrowed.empty());
}

TEST(ResolveNormalise, MajorGapGetsItsPtx) {
    auto pkg = override_from(
        "arch_list:\n  list: \"8.0 10.0 12.0\"\n  reason: \"floor\"\n  source: \"a test\"\n");
    auto r = must(shipped_with(&pkg, "13.0", ""));
    // x86-64: major 9 (H100) is a gap, major 11 has no part on this platform.
    EXPECT_EQ(r.list.to_string(), "8.0+PTX 10.0 12.0+PTX");
    ASSERT_EQ(r.ptx_added.size(), 2u);
    EXPECT_EQ(r.ptx_added[0].sm, 120);
    EXPECT_EQ(r.ptx_added[1].sm, 80);
    EXPECT_EQ(resolution_json(r)["ptx_added"], nlohmann::ordered_json::parse(R"(["12.0","8.0"])"));
    EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
        return n.find("major 9 has no cubin") != std::string::npos &&
               n.find("lands in jit through compute_80") != std::string::npos;
    }));
}

TEST(ResolveNormalise, TorchOfAnotherCudaIndexIsAnError) {
    auto r = resolve_with(mini(), "12.8", "2.9.1+cu126");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("built for CUDA 12.6"), std::string::npos);
    EXPECT_TRUE(resolve_with(mini(), "12.8", "2.9.1+cu128").ok());
}

TEST(ResolveNormalise, ShortCudaIsEchoed) {
    auto r = must(shipped_with(nullptr, "13", ""));
    EXPECT_EQ(r.cuda, "13.0");
    EXPECT_NE(std::find(r.notes.begin(), r.notes.end(), "--cuda 13 read as CUDA 13.0"),
              r.notes.end());
}

TEST(ResolveNormalise, CombinationLeftOpenIsNamed) {
    auto r = must(resolve_with(mini(), "12.8", "2.9", "linux_x86_64", "lanes"));
    EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
        return n.find("combinations[0]") != std::string::npos &&
               n.find("--python") != std::string::npos && n.find("skipped") != std::string::npos;
    }));
}

TEST(ResolveNormalise, TwoMatchingCombinationsNameTheWinnerOrConflict) {
    const auto dir = std::filesystem::path(FORGE_TEST_BINARY_DIR) / "resolve-combos" / "packages";
    std::filesystem::create_directories(dir / "twice");
    {
        std::ofstream f(dir / "twice" / "arch_override.yml");
        f << "arch_list: \"8.0 9.0\"\n";
    }
    auto write_matrix = [&](const std::string& second) {
        std::ofstream f(dir / "twice" / "build_matrix.yml");
        f << "combinations:\n"
             "  - {cuda: \"12.8\", platform: linux_x86_64, arch_list: \"8.6\"}\n"
             "  - {cuda: \"12.8\", torch: \"2.9\", arch_list: \""
          << second << "\"}\n";
    };
    // The same list twice: the first wins, and a note says so.
    write_matrix("8.6");
    auto same =
        must(resolve_with(mini(), "12.8", "2.9", "linux_x86_64", "twice", "", dir.string()));
    EXPECT_EQ(same.source, "packages/twice/build_matrix.yml:combinations[0].arch_list");
    EXPECT_TRUE(std::any_of(same.notes.begin(), same.notes.end(), [](const std::string& n) {
        return n.find("combinations[0] and [1] both match; [0] won") != std::string::npos;
    })) << fmt::format("{}", fmt::join(same.notes, " | "));
    // Different lists: unusable input naming the second combination's line, never a silent pick.
    write_matrix("9.0");
    auto clash = resolve_with(mini(), "12.8", "2.9", "linux_x86_64", "twice", "", dir.string());
    ASSERT_FALSE(clash.ok()) << "resolved to " << clash->list.to_string();
    EXPECT_EQ(clash.error().exit_code, kExitInput);
    EXPECT_NE(clash.error().to_string().find("different arch lists"), std::string::npos)
        << clash.error().to_string();
    ASSERT_TRUE(clash.error().line) << clash.error().to_string();
    EXPECT_EQ(*clash.error().line, 3) << clash.error().to_string();
}

// resolve() without --cuda: the caller's probed caps decide the release and what can be emitted.
TEST(ToolkitProbe, ResolveWithoutCudaUsesTheProbedToolkit) {
    ResolveRequest req;
    req.platform = "linux_x86_64"; // the x86 lane on any host (the default is the host's)
    toolkit::ToolkitCaps tk;
    tk.nvcc = "/fake/nvcc";
    tk.version = toolkit::CudaVersion{13, 0, 88};
    // a toolkit that cannot emit sm_75: the probe, not the table, clamps
    for (int sm : {80, 86, 90, 100, 120})
        for (auto k : {arch::Kind::Sass, arch::Kind::Ptx})
            tk.emittable.insert(arch::Target{k, sm, arch::Suffix::None});
    req.toolkit = tk;
    auto r = resolve_loaded(req, shipped(), nullptr, gpus());
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->cuda, "13.0");
    EXPECT_EQ(r->list.to_string(), "8.0 8.6 9.0+PTX 10.0 12.0+PTX");
    ASSERT_EQ(r->clamped.size(), 1u);
    EXPECT_NE(r->clamped[0].reason.find("nvcc 13.0.88 cannot emit sm_75"), std::string::npos);
    EXPECT_NE(r->nvcc_source.find("/fake/nvcc"), std::string::npos);
}
