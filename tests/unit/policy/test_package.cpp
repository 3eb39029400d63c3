#include "helpers.h"
#include "policy/report.h"

#include <climits>
#include <filesystem>
#include <string>

using namespace forge;
using namespace forge::policy;
using namespace forge::policy::test;

TEST(PackageOverride, SeedFieldsInBothForms) {
    auto p = parse_arch_override("arch_list: \"8.0 8.6\"\n"
                                 "arch_list_by_cuda:\n  \"12.8\": {list: \"8.9;12.0\", reason: "
                                 "\"FP8\", source: \"setup.py\"}\n"
                                 "arch_list_aarch64: 9.0\n",
                                 "pkg.yml");
    ASSERT_TRUE(p.ok()) << p.error().to_string();
    EXPECT_EQ(p->arch_list->list.to_string(), "8.0 8.6");
    EXPECT_EQ(p->arch_list->reason, "");
    const auto& by = p->arch_list_by_cuda.at("12.8");
    EXPECT_EQ(by.list.to_string(), "8.9 12.0");
    EXPECT_EQ(by.reason, "FP8");
    EXPECT_EQ(by.source, "setup.py");
    EXPECT_EQ(by.line, 3);
    EXPECT_EQ(p->arch_list_aarch64->list.to_string(), "9.0");
}

TEST(PackageOverride, UnknownKeysAnywhereAreErrorsWithLine) {
    auto e = override_error("arch_list: \"8.0\"\narch_list_by_cud:\n  \"12.8\": \"8.9\"\n");
    EXPECT_EQ(e.key, "arch_list_by_cud");
    EXPECT_EQ(e.line, std::optional<int>(2));
    EXPECT_EQ(e.file, "pkg.yml");
    e = override_error("verify:\n  allow_missing_arch: []\n");
    EXPECT_EQ(e.key, "allow_missing_arch");
    EXPECT_EQ(e.line, std::optional<int>(2));
    e = override_error("wrapper:\n  inject_arch_specfic: true\n");
    EXPECT_EQ(e.key, "inject_arch_specfic");
    e = override_error("arch_list: {list: \"8.0\", reason: r, source: s, sauce: x}\n");
    EXPECT_EQ(e.key, "sauce");
    e = override_error("arch_list_by_cuda:\n  \"12.8.1\": \"8.0\"\n");
    EXPECT_EQ(e.line, std::optional<int>(2));
}

TEST(PackageOverride, MapFormNeedsReasonAndSource) {
    auto e = override_error("arch_list: {list: \"8.0\", reason: \"floor\"}\n");
    EXPECT_NE(e.message.find("source"), std::string::npos);
    e = override_error("arch_list: {list: \"8.0\", reason: \"\", source: \"x\"}\n");
    EXPECT_NE(e.message.find("must not be empty"), std::string::npos);
}

TEST(PackageOverride, BadTokensNameLineAndToken) {
    auto e = override_error("\n\narch_list: \"8.0 sm90\"\n");
    EXPECT_EQ(e.key, "sm90");
    EXPECT_EQ(e.line, 3);
    e = override_error("arch_list: \"\"\n");
    EXPECT_NE(e.message.find("empty"), std::string::npos);
}

TEST(PackageOverride, WaiverNeedsEvidence) {
    auto ok = parse_arch_override(
        "verify:\n  allow_missing_archs:\n    - {arch: sm_110, evidence: \"upstream #2220\"}\n"
        "    - {arch: \"12.0\", evidence: \"no sm_120 kernel upstream\"}\n",
        "pkg.yml");
    ASSERT_TRUE(ok.ok()) << ok.error().to_string();
    ASSERT_EQ(ok->allow_missing.size(), 2u);
    EXPECT_EQ(ok->allow_missing[0].target.name(), "sm_110");
    EXPECT_EQ(ok->allow_missing[1].target.name(), "sm_120");
    EXPECT_EQ(ok->allow_missing[0].evidence, "upstream #2220");
    auto e = override_error("verify:\n  allow_missing_archs:\n    - {arch: sm_110}\n");
    EXPECT_NE(e.message.find("evidence"), std::string::npos);
    EXPECT_EQ(e.line, 3);
    e = override_error("verify:\n  allow_missing_archs:\n    - sm_110\n");
    EXPECT_NE(e.message.find("evidence"), std::string::npos);
    e = override_error("verify:\n  allow_missing_archs:\n    - {arch: sm_110, evidence: \"  \"}\n");
    EXPECT_NE(e.message.find("empty"), std::string::npos);
    e = override_error(
        "verify:\n  allow_missing_archs:\n    - {arch: \"sm_9x\", evidence: \"x\"}\n");
    EXPECT_EQ(e.key, "sm_9x");
    e = override_error("verify:\n  allow_pure_python: yes please\n");
    EXPECT_NE(e.message.find("true or false"), std::string::npos);
    e = override_error("verify:\n  embedded_fatbins: true\n");
    EXPECT_NE(e.message.find("report"), std::string::npos) << e.to_string();
    EXPECT_EQ(e.line, std::optional<int>(2));
}

TEST(PackageOverride, EmbeddedFatbinsAreReportedUnlessJudged) {
    auto none = parse_arch_override("verify:\n  allow_pure_python: false\n", "pkg.yml");
    ASSERT_TRUE(none.ok()) << none.error().to_string();
    EXPECT_FALSE(none->judge_embedded);
    auto judge = parse_arch_override("verify:\n  embedded_fatbins: judge\n", "pkg.yml");
    ASSERT_TRUE(judge.ok()) << judge.error().to_string();
    EXPECT_TRUE(judge->judge_embedded);
    auto report = parse_arch_override("verify:\n  embedded_fatbins: report\n", "pkg.yml");
    ASSERT_TRUE(report.ok()) << report.error().to_string();
    EXPECT_FALSE(report->judge_embedded);
}

TEST(PackageOverride, WrapperSettingsAreValidated) {
    auto ok = parse_arch_override(
        "wrapper:\n  mode: inject\n  inject_arch_specific: true\n"
        "  arch_specific_sources: [\"hopper/*_sm90.cu\"]\n  max_toolkit: {\"12.0\": \"12.8.1\"}\n",
        "pkg.yml");
    ASSERT_TRUE(ok.ok()) << ok.error().to_string();
    EXPECT_EQ(ok->wrapper.mode, "inject");
    EXPECT_EQ(ok->wrapper.inject_arch_specific, true);
    EXPECT_EQ(ok->wrapper.arch_specific_sources, std::vector<std::string>{"hopper/*_sm90.cu"});
    EXPECT_EQ(ok->wrapper.max_toolkit.at("12.0"), "12.8");
    auto mode = parse_arch_override("\nwrapper:\n  mode: injcet\n", "p.yml");
    ASSERT_FALSE(mode.ok());
    EXPECT_EQ(mode.error().line, 3);
    EXPECT_NE(mode.error().message.find("observe, inject or strict"), std::string::npos);
    EXPECT_FALSE(
        parse_arch_override("wrapper:\n  max_toolkit: {\"twelve\": \"12.8\"}\n", "p").ok());
    EXPECT_FALSE(parse_arch_override("wrapper:\n  max_toolkit: {\"12.0\": \"new\"}\n", "p").ok());
    EXPECT_FALSE(parse_arch_override("wrapper:\n  arch_specific_sources: \"*.cu\"\n", "p").ok());
}

TEST(PackageOverride, ArchListSeparatorIsOneOfThree) {
    for (const char* sep : {" ", ";", ","}) {
        auto ok = parse_arch_override(
            std::string("wrapper:\n  arch_list_separator: \"") + sep + "\"\n", "p.yml");
        ASSERT_TRUE(ok.ok()) << ok.error().to_string();
        EXPECT_EQ(ok->wrapper.arch_list_separator, sep);
    }
    EXPECT_EQ(parse_arch_override("arch_list: \"8.0\"\n", "p")->wrapper.arch_list_separator, "");
    auto bad = parse_arch_override("wrapper:\n  arch_list_separator: \":\"\n", "p.yml");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().line, 2);
    EXPECT_NE(bad.error().message.find("not a separator"), std::string::npos);
}

TEST(PackageOverride, ForwardPtxFalseNeedsItsReason) {
    auto ok = parse_arch_override(
        "forward_ptx:\n  value: false\n  reason: \"a targets only\"\n  source: \"setup.py\"\n",
        "p.yml");
    ASSERT_TRUE(ok.ok()) << ok.error().to_string();
    ASSERT_TRUE(ok->forward_ptx.has_value());
    EXPECT_FALSE(ok->forward_ptx->value);
    EXPECT_EQ(ok->forward_ptx->reason, "a targets only");
    EXPECT_EQ(ok->forward_ptx->source, "setup.py");
    EXPECT_TRUE(parse_arch_override("forward_ptx: true\n", "p")->forward_ptx->value);
    auto bare = parse_arch_override("forward_ptx: false\n", "p.yml");
    ASSERT_FALSE(bare.ok());
    EXPECT_NE(bare.error().message.find("reason"), std::string::npos);
    EXPECT_FALSE(parse_arch_override("forward_ptx: {value: false, reason: \" \"}\n", "p").ok());
    EXPECT_FALSE(parse_arch_override("forward_ptx: {reason: \"x\"}\n", "p").ok());
    EXPECT_FALSE(parse_arch_override("forward_ptx: {value: false, why: \"x\"}\n", "p").ok());
}

TEST(BuildMatrix, CombinationsAreStrict) {
    PackageOverride p;
    ASSERT_TRUE(
        parse_build_matrix(
            "combinations:\n  - {cuda: \"12.8.1\", torch: \"2.9.1\", python: cp312, platform: "
            "manylinux_2_28_x86_64, arch_list: \"8.0\"}\n",
            "bm.yml", p)
            .ok());
    ASSERT_EQ(p.combinations.size(), 1u);
    EXPECT_EQ(p.combinations[0].match.at("cuda"), "12.8");
    EXPECT_EQ(p.combinations[0].match.at("torch"), "2.9");
    EXPECT_EQ(p.combinations[0].match.at("python"), "3.12");
    EXPECT_EQ(p.combinations[0].match.at("platform"), "linux_x86_64");
    PackageOverride q;
    auto e = parse_build_matrix(
        "combinations:\n  - {cuda: \"12.8\"}\n  - {cuda: \"12.8\", toch: \"2.9\"}\n", "bm.yml", q);
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.error().key, "toch");
    EXPECT_EQ(e.error().line, 3);
    PackageOverride r;
    EXPECT_FALSE(parse_build_matrix("combination: []\n", "bm.yml", r).ok());
    EXPECT_FALSE(parse_build_matrix("combinations: {cuda: 12.8}\n", "bm.yml", r).ok());
}

TEST(LoadPackage, DashAndUnderscoreSpellingsAndEmptyDirectories) {
    auto p = load_package(fixtures() + "/packages", "x86only");
    ASSERT_TRUE(p.ok()) << p.error().to_string();
    EXPECT_NE(p->override_file.find("x86only/arch_override.yml"), std::string::npos);
    auto lanes = load_package(fixtures() + "/packages", "lanes");
    ASSERT_TRUE(lanes.ok());
    EXPECT_EQ(lanes->combinations.size(), 2u);
    auto dashed = load_package(fixtures() + "/packages", "combo-platform");
    ASSERT_TRUE(dashed.ok());
    EXPECT_EQ(dashed->name, "combo_platform");
    auto none = load_package(fixtures() + "/packages", "nothing_here"); // unknown: an error
    ASSERT_FALSE(none.ok());
    EXPECT_EQ(none.error().exit_code, kExitInput);
    // a directory with neither file is a mistake, not "no override"
    auto tmp = std::filesystem::temp_directory_path() / "forge_policy_empty_pkg" / "ghost";
    std::filesystem::create_directories(tmp);
    auto ghost = load_package(tmp.parent_path(), "ghost");
    ASSERT_FALSE(ghost.ok());
    EXPECT_EQ(ghost.error().exit_code, kExitInput);
    std::filesystem::remove_all(tmp.parent_path());
}

// Issue 36, 9: a package name is written into shells, a shim's trailer and .nvcc-forge-policy; an
// unknown one would silently get the policy row.
TEST(LoadPackage, AnUnknownPackageOrOneThatIsNoNameIsAnError) {
    const std::string dir = fixtures() + "/packages";
    for (const char* bad : {"x86only\nNVCC_FORGE_MODE=observe", "x86only\r", "-x", "x86only;id",
                            "a b", "", "x86only/"}) {
        auto p = load_package(dir, bad);
        ASSERT_FALSE(p.ok()) << bad;
        EXPECT_EQ(p.error().exit_code, kExitInput);
        EXPECT_NE(p.error().message.find("is not a package name"), std::string::npos)
            << p.error().to_string();
        EXPECT_EQ(p.error().message.find('\n'), std::string::npos) << "the value is escaped";
    }
    auto unknown = load_package(dir, "numpy");
    ASSERT_FALSE(unknown.ok());
    EXPECT_NE(unknown.error().message.find("unknown package 'numpy'"), std::string::npos)
        << unknown.error().to_string();
    auto near = load_package(dir, "x86onyl");
    ASSERT_FALSE(near.ok());
    EXPECT_NE(near.error().message.find("did you mean 'x86only'"), std::string::npos);
    EXPECT_TRUE(load_package(dir, "x86only").ok());
}

TEST(LoadPackage, NearNamesPointAtTheLikelyPackage) {
    const std::string dir = fixtures() + "/packages";
    EXPECT_EQ(near_package_name(dir, "x86onyl"), "x86only");              // one swap
    EXPECT_EQ(near_package_name(dir, "Combo-Platfrm"), "combo_platform"); // case, '-', one edit
    EXPECT_EQ(near_package_name(dir, "x86only"), "");                     // has its own directory
    EXPECT_EQ(near_package_name(dir, "combo-platform"), ""); // the same package, other spelling
    EXPECT_EQ(near_package_name(dir, "numpy"), "");          // nothing close: a plain package
    EXPECT_EQ(near_package_name(dir, "x8"), "");             // five edits away
    EXPECT_EQ(near_package_name(fixtures() + "/no-such-dir", "x86only"), "");
    // A swap of neighbours is one edit, as for a command or an option (core/suggest.h): '8'
    // missing and "ly" swapped are two. Package names once had an edit distance of their own, in
    // which a swap was two edits and this name three (no suggestion).
    EXPECT_EQ(near_package_name(dir, "x6onyl"), "x86only");

    ResolveRequest req;
    req.platform = "linux_x86_64"; // the x86 lane on any host (the default is the host's)
    req.cuda = "13.0";
    req.policy_file = shipped_policy();
    req.gpus_file = shipped_gpus();
    req.packages_dir = shipped_packages();
    req.package = "flash-atn";
    auto r = resolve(req);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("did you mean 'flash_attn'"), std::string::npos)
        << r.error().to_string();
    req.package = "flash_attn";
    auto exact = resolve(req);
    ASSERT_TRUE(exact.ok()) << exact.error().to_string();
    EXPECT_TRUE(exact->near_package.empty());
}

TEST(ShippedPackages, EveryOverrideLoadsAndEveryValueCarriesReasonAndSource) {
    auto names = list_packages(shipped_packages());
    ASSERT_FALSE(names.empty());
    for (const auto& name : names) {
        auto p = load_package(shipped_packages(), name);
        ASSERT_TRUE(p.ok()) << name << ": " << p.error().to_string();
        std::vector<const OverrideValue*> values;
        if (p->arch_list) values.push_back(&*p->arch_list);
        if (p->arch_list_aarch64) values.push_back(&*p->arch_list_aarch64);
        for (const auto& [k, v] : p->arch_list_by_cuda)
            values.push_back(&v);
        for (const auto& [k, v] : p->arch_list_by_cuda_aarch64)
            values.push_back(&v);
        for (const auto& c : p->combinations)
            if (c.arch_list) values.push_back(&*c.arch_list);
        for (const auto* v : values) {
            EXPECT_FALSE(v->reason.empty()) << name << " line " << v->line;
            EXPECT_FALSE(v->source.empty()) << name << " line " << v->line;
        }
        // and each one resolves on every CUDA row without collapsing
        for (const auto& [cuda, row] : shipped().arch_policy) {
            ResolveRequest req;
            req.platform = "linux_x86_64"; // the x86 lane on any host (the default is the host's)
            req.cuda = cuda;
            auto r = resolve_loaded(req, shipped(), &*p, gpus());
            EXPECT_TRUE(r.ok()) << name << " cuda " << cuda << ": "
                                << (r.ok() ? "" : r.error().to_string());
        }
    }
}

TEST(PackageExtensions, EntriesWithReasonAndDeviceCode) {
    auto p = parse_arch_override("verify:\n"
                                 "  extensions:\n"
                                 "    - module: \"pkg/_a*.so\"\n"
                                 "      reason: \"sm80 kernels\"\n"
                                 "    - {module: \"pkg/_host*.so\", reason: \"pybind glue\", "
                                 "device_code: false}\n",
                                 "pkg.yml");
    ASSERT_TRUE(p.ok()) << p.error().to_string();
    ASSERT_EQ(p->extensions.size(), 2U);
    EXPECT_EQ(p->extensions[0].module, "pkg/_a*.so");
    EXPECT_EQ(p->extensions[0].reason, "sm80 kernels");
    EXPECT_TRUE(p->extensions[0].device_code);
    EXPECT_EQ(p->extensions[0].line, 3);
    EXPECT_EQ(p->extensions[1].module, "pkg/_host*.so");
    EXPECT_FALSE(p->extensions[1].device_code);
    EXPECT_EQ(p->extensions[1].line, 5);
}

TEST(PackageExtensions, ReasonRequiredAndKeysChecked) {
    auto e = override_error("verify:\n  extensions:\n    - module: \"pkg/_a*.so\"\n");
    EXPECT_NE(e.message.find("missing 'reason:'"), std::string::npos) << e.to_string();
    EXPECT_EQ(e.line, 3);
    e = override_error("verify:\n  extensions:\n    - {module: \"a.so\", reason: \" \"}\n");
    EXPECT_NE(e.message.find("must not be empty"), std::string::npos) << e.to_string();
    e = override_error(
        "verify:\n  extensions:\n    - {module: \"a.so\", reason: \"r\", devicecode: false}\n");
    EXPECT_EQ(e.key, "devicecode");
    e = override_error("verify:\n  extensions: \"pkg/_a*.so\"\n");
    EXPECT_NE(e.message.find("expected a list"), std::string::npos) << e.to_string();
    e = override_error("verify:\n  extensions:\n    - \"pkg/_a*.so\"\n");
    EXPECT_NE(e.message.find("{module: GLOB, reason"), std::string::npos) << e.to_string();
    e = override_error(
        "verify:\n  extensions:\n    - {module: \"a.so\", reason: \"r\", device_code: maybe}\n");
    EXPECT_EQ(e.line, 3);
}

TEST(PackageExtensions, ShippedSageattentionNamesItsFourModules) {
    auto p = load_package(shipped_packages(), "sageattention");
    ASSERT_TRUE(p.ok()) << p.error().to_string();
    std::vector<std::string> modules;
    for (const auto& e : p->extensions) {
        modules.push_back(e.module);
        EXPECT_FALSE(e.reason.empty());
        EXPECT_TRUE(e.device_code);
    }
    EXPECT_EQ(modules, (std::vector<std::string>{
                           "sageattention/_qattn_sm80*.so", "sageattention/_qattn_sm89*.so",
                           "sageattention/_qattn_sm90*.so", "sageattention/_fused*.so"}));
}

TEST(PackageExtensions, ResolveCarriesThemToItsJson) {
    auto r = resolve_with(shipped_policy(), "12.8", "", "linux_x86_64", "sageattention", "",
                          shipped_packages());
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_EQ(r->expected_extensions.size(), 4U);
    EXPECT_NE(r->package_file.find("sageattention/arch_override.yml"), std::string::npos);
    auto j = resolution_json(*r);
    ASSERT_EQ(j["verify"]["extensions"].size(), 4U);
    EXPECT_EQ(j["verify"]["extensions"][3]["module"], "sageattention/_fused*.so");
    EXPECT_EQ(j["verify"]["extensions"][3]["device_code"], true);
}

// A packages directory the user named (policy::check_packages_dir): one that cannot be used is an
// error naming the value, never the policy row in silence.
namespace {

Error unusable(const std::string& value) {
    auto st = check_packages_dir(value, "NVCC_FORGE_PACKAGES_DIR");
    EXPECT_FALSE(st.ok()) << value.substr(0, 200);
    return st.ok() ? Error{} : st.error();
}

} // namespace

TEST(PackagesDir, AUsableDirectoryPasses) {
    EXPECT_TRUE(check_packages_dir(fixtures() + "/packages", "--packages-dir").ok());
}

TEST(PackagesDir, EachUnusableValueIsNamedWithItsOrigin) {
    const std::string dir = fixtures() + "/packages";
    struct Case {
        std::string value;
        std::string says;
    };
    const std::vector<Case> cases{
        {dir + "/no_such_dir", "No such file or directory"},
        {dir + "/lanes/build_matrix.yml", "is not a directory"},
        {dir + "\n", "control character at byte " + std::to_string(dir.size())},
        {"/" + std::string(131 * 1024, 'd'), "longer than a path"},
        {"", "No such file or directory"},
    };
    for (const auto& c : cases) {
        const Error e = unusable(c.value);
        EXPECT_EQ(e.key, "NVCC_FORGE_PACKAGES_DIR");
        EXPECT_EQ(e.exit_code, kExitInput);
        const std::string text = e.to_string();
        EXPECT_NE(text.find(c.says), std::string::npos) << text.substr(0, 400);
        EXPECT_NE(text.find(c.value.substr(0, 20)), std::string::npos) << text.substr(0, 400);
        EXPECT_LT(text.size(), 600u) << "a long value is cut, not repeated";
        EXPECT_EQ(text.find('\n'), std::string::npos) << "one line: " << text;
    }
}
