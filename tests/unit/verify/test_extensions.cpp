#include "verify/extensions.h"

#include <gtest/gtest.h>

using namespace forge;
using namespace forge::verify;

namespace {

ExtensionReport module(std::string file, std::optional<std::string> member, bool device_code) {
    ExtensionReport r;
    r.file = std::move(file);
    r.member = std::move(member);
    r.device_code = device_code;
    return r;
}

ExpectedModule expect(std::string glob, bool device_code = true) {
    return {std::move(glob), "why", device_code, "test"};
}

// The modules a space-form SageAttention-style build leaves in its wheel: `_fused` only.
std::vector<ExtensionReport> space_form_wheel() {
    return {module("sa.whl", "sageattention/_fused.cpython-311-x86_64-linux-gnu.so", true)};
}

} // namespace

TEST(Extensions, AbsentModulesAreNamedInOrder) {
    auto r = check_extensions({expect("sageattention/_qattn_sm80*.so"),
                               expect("sageattention/_qattn_sm90*.so"),
                               expect("sageattention/_fused*.so")},
                              space_form_wheel());
    EXPECT_FALSE(r.pass());
    EXPECT_EQ(r.check.name, "extensions");
    EXPECT_EQ(r.missing, (std::vector<std::string>{"sageattention/_qattn_sm80*.so",
                                                   "sageattention/_qattn_sm90*.so"}));
    EXPECT_NE(r.check.detail.find("sageattention/_qattn_sm80*.so sageattention/_qattn_sm90*.so"),
              std::string::npos)
        << r.check.detail;
    ASSERT_EQ(r.modules.size(), 3U);
    EXPECT_EQ(r.modules[0].status, "missing");
    EXPECT_EQ(r.modules[2].status, "ok");
    EXPECT_EQ(r.modules[2].matched,
              (std::vector<std::string>{"sageattention/_fused.cpython-311-x86_64-linux-gnu.so"}));
    auto j = extensions_json(r);
    EXPECT_EQ(j["missing_extensions"],
              nlohmann::json({"sageattention/_qattn_sm80*.so", "sageattention/_qattn_sm90*.so"}));
    EXPECT_EQ(j["expected_extensions"][1]["status"], "missing");
    EXPECT_NE(extensions_text(r).find("FAIL"), std::string::npos);
}

TEST(Extensions, EveryModulePresentPasses) {
    auto wheel = space_form_wheel();
    wheel.push_back(module("sa.whl", "sageattention/_qattn_sm80.abi3.so", true));
    auto r = check_extensions(
        {expect("sageattention/_qattn_sm80*.so"), expect("sageattention/_fused*.so")}, wheel);
    EXPECT_TRUE(r.pass()) << r.check.detail;
    EXPECT_TRUE(r.missing.empty());
    EXPECT_TRUE(extensions_json(r)["missing_extensions"].empty());
}

TEST(Extensions, NoExpectationsPass) {
    auto r = check_extensions({}, space_form_wheel());
    EXPECT_TRUE(r.pass());
    EXPECT_TRUE(extensions_json(r)["missing_extensions"].is_array());
}

TEST(Extensions, MatchedModuleNeedsDeviceCodeUnlessItSaysOtherwise) {
    std::vector<ExtensionReport> wheel{module("w.whl", "pkg/_host.so", false)};
    auto r = check_extensions({expect("pkg/_host*.so")}, wheel);
    EXPECT_FALSE(r.pass());
    EXPECT_TRUE(r.missing.empty());
    EXPECT_EQ(r.no_device_code, (std::vector<std::string>{"pkg/_host*.so"}));
    EXPECT_EQ(r.modules[0].status, "no-device-code");
    auto host_only = check_extensions({expect("pkg/_host*.so", false)}, wheel);
    EXPECT_TRUE(host_only.pass()) << host_only.check.detail;
    EXPECT_TRUE(expected_host_only({expect("pkg/_host*.so", false)}, "w.whl", "pkg/_host.so"));
    EXPECT_FALSE(expected_host_only({expect("pkg/_host*.so")}, "w.whl", "pkg/_host.so"));
    EXPECT_FALSE(expected_host_only({expect("pkg/_other*.so", false)}, "w.whl", "pkg/_host.so"));
}

TEST(Extensions, WheelMembersAreRootedFilesGivenAreNot) {
    // A wheel member is matched from the wheel root...
    EXPECT_TRUE(module_matches("sageattention/_fused*.so", "x.whl", "sageattention/_fused.so"));
    EXPECT_FALSE(
        module_matches("sageattention/_fused*.so", "x.whl", "other/sageattention/_fused.so"));
    // ...a file given directly from wherever the build put it.
    EXPECT_TRUE(module_matches("sageattention/_fused*.so", "build/lib/sageattention/_fused.so",
                               std::nullopt));
    EXPECT_TRUE(module_matches("sageattention/_fused*.so", "/abs/sageattention/_fused.cpython.so",
                               std::nullopt));
    EXPECT_FALSE(module_matches("sageattention/_fused*.so", "build/_fused.so", std::nullopt));
    // '*' stays inside one component.
    EXPECT_FALSE(module_matches("sageattention/_fused*.so", "x.whl", "sageattention/_fused/x.so"));
}
