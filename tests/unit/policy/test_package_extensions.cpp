#include "helpers.h"
#include "policy/report.h"

using namespace forge;
using namespace forge::policy;
using namespace forge::policy::test;

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
