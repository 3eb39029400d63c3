// A package's own arch knob (policy/arch_knob.h): the package-file field, its value for a resolved
// list, what it cannot express, and the shipped packages' knobs on the real policy rows.
#include "helpers.h"
#include "policy/report.h"

using namespace forge;
using namespace forge::policy;
using namespace forge::policy::test;

namespace {

const char* const kFlashKnob = "arch_knobs:\n"
                               "  - variable: FLASH_ATTN_CUDA_ARCHS\n"
                               "    separator: \";\"\n"
                               "    form: digits\n"
                               "    ptx: newest\n"
                               "    accepts: \"8.0 9.0 10.0 11.0 12.0\"\n"
                               "    reason: \"its ladder\"\n"
                               "    source: \"setup.py\"\n";

ArchKnob knob(KnobForm form, KnobPtx ptx, std::optional<std::string> accepts = std::nullopt,
              std::string sep = ";") {
    ArchKnob k;
    k.variable = "KNOB";
    k.separator = std::move(sep);
    k.form = form;
    k.ptx = ptx;
    if (accepts) k.accepts = *arch::ArchList::parse(*accepts);
    return k;
}

arch::Target target_of(const char* name) {
    return *arch::parse_target(name);
}

arch::ArchList list(const std::string& text) {
    return *arch::ArchList::parse(text);
}

std::vector<std::string> gap_tokens(const KnobExport& e) {
    std::vector<std::string> out;
    for (const auto& g : e.cannot_express)
        out.push_back(g.token);
    return out;
}

} // namespace

TEST(ArchKnob, ParsedFromThePackageFile) {
    auto p = parse_arch_override(kFlashKnob, "pkg.yml");
    ASSERT_TRUE(p.ok()) << p.error().to_string();
    ASSERT_EQ(p->arch_knobs.size(), 1U);
    const ArchKnob& k = p->arch_knobs[0];
    EXPECT_EQ(k.variable, "FLASH_ATTN_CUDA_ARCHS");
    EXPECT_EQ(k.separator, ";");
    EXPECT_EQ(k.form, KnobForm::Digits);
    EXPECT_EQ(k.ptx, KnobPtx::Newest);
    ASSERT_TRUE(k.accepts.has_value());
    EXPECT_EQ(k.accepts->to_string(), "8.0 9.0 10.0 11.0 12.0");
    EXPECT_EQ(k.line, 2);
}

TEST(ArchKnob, BadDeclarationsNameTheKeyAndLine) {
    const std::string base = kFlashKnob;
    auto variant = [&](const std::string& from, const std::string& to) {
        std::string y = base;
        y.replace(y.find(from), from.size(), to);
        return y;
    };
    auto e = override_error(variant("form: digits", "form: decimal"));
    EXPECT_EQ(e.key, "arch_knobs[0].form");
    EXPECT_EQ(e.line, 4);
    EXPECT_NE(e.message.find("digits, dotted, sm"), std::string::npos) << e.message;
    e = override_error(variant("ptx: newest", "ptx: always"));
    EXPECT_EQ(e.key, "arch_knobs[0].ptx");
    e = override_error(variant("separator: \";\"", "separator: \"|\""));
    EXPECT_EQ(e.key, "arch_knobs[0].separator");
    e = override_error(variant("FLASH_ATTN_CUDA_ARCHS", "TORCH_CUDA_ARCH_LIST"));
    EXPECT_NE(e.message.find("arch_list_separator"), std::string::npos) << e.message;
    e = override_error(variant("FLASH_ATTN_CUDA_ARCHS", "NVCC_FORGE_ARCH_LIST"));
    EXPECT_EQ(e.key, "arch_knobs[0].variable");
    e = override_error(variant("FLASH_ATTN_CUDA_ARCHS", "9LIVES"));
    EXPECT_NE(e.message.find("not a variable name"), std::string::npos) << e.message;
    e = override_error(variant("    reason: \"its ladder\"\n", ""));
    EXPECT_NE(e.message.find("missing 'reason:'"), std::string::npos) << e.message;
    e = override_error(variant("source: \"setup.py\"", "source: \"\""));
    EXPECT_NE(e.message.find("must not be empty"), std::string::npos) << e.message;
    e = override_error(variant("accepts: \"8.0 9.0 10.0 11.0 12.0\"", "accepts: \"8.0 9.0+PTX\""));
    EXPECT_EQ(e.key, "arch_knobs[0].accepts");
    e = override_error(variant("form: digits", "form: digits\n    colour: blue"));
    EXPECT_EQ(e.key, "colour");
    e = override_error(base +
                       "  - variable: FLASH_ATTN_CUDA_ARCHS\n    separator: \";\"\n    form: "
                       "digits\n    ptx: none\n    reason: r\n    source: s\n");
    EXPECT_NE(e.message.find("declared twice"), std::string::npos) << e.message;
    e = override_error("arch_knobs: FLASH_ATTN_CUDA_ARCHS\n");
    EXPECT_EQ(e.key, "arch_knobs");
}

// Issue 36, 8: a knob is exported into the user's shell (`env`, then eval), the build and CMake:
// never a variable the shell, the loader, CMake, a build tool or nvcc-forge reads.
TEST(ArchKnob, ANameAnotherProgramReadsIsRefused) {
    auto named = [](const std::string& to) {
        std::string y = kFlashKnob;
        y.replace(y.find("FLASH_ATTN_CUDA_ARCHS"), 21, to);
        return parse_arch_override(y, "pkg.yml");
    };
    int refused = 0;
    for (const char* name :
         {"PATH", "BASH_ENV", "LD_PRELOAD", "IFS", "PROMPT_COMMAND", "CMAKE_CUDA_COMPILER_LAUNCHER",
          "NVCC_PREPEND_FLAGS", "PYTHONPATH", "PIP_INDEX_URL", "GIT_SSH_COMMAND", "CC", "HOME",
          "flash_attn_archs", "FLASH_ATTN_", "CCACHE_PREFIX", "GCONV_PATH", "TMPDIR", "X"}) {
        auto p = named(name);
        ASSERT_FALSE(p.ok()) << name;
        EXPECT_EQ(p.error().key, "arch_knobs[0].variable") << name;
        EXPECT_NE(p.error().message.find(name), std::string::npos) << p.error().message;
        ++refused;
    }
    EXPECT_EQ(refused, 18);
    for (const char* name : {"NATTEN_CUDA_ARCH", "SAGE_ATTN_ARCHS", "FA3_ARCH_LIST"})
        EXPECT_TRUE(named(name).ok()) << name;
}

// flash-attention on the x86 13.0 row of its package: the ladder has no 8.6, and PTX only on the
// highest number it is given.
TEST(ArchKnob, FlashAttentionLadderOnX86) {
    auto k = knob(KnobForm::Digits, KnobPtx::Newest, "8.0 9.0 10.0 11.0 12.0");
    KnobExport e = export_knobs({k}, list("8.0 8.6 9.0+PTX 10.0 12.0+PTX"));
    ASSERT_EQ(e.values.size(), 1U);
    EXPECT_EQ(e.values[0].value, "80;90;100;120");
    EXPECT_EQ(gap_tokens(e), (std::vector<std::string>{"8.6", "9.0+PTX"}));
    EXPECT_EQ(e.cannot_express[0].targets, (std::vector<arch::Target>{target_of("sm_86")}));
    EXPECT_EQ(e.cannot_express[1].targets, (std::vector<arch::Target>{target_of("compute_90")}));
    EXPECT_NE(e.cannot_express[1].reason.find("highest token only (120)"), std::string::npos)
        << e.cannot_express[1].reason;
    EXPECT_TRUE(e.notes.empty());
    // The aarch64 13.0 row: Thor's 11.0 is on the ladder.
    e = export_knobs({k}, list("8.0 9.0+PTX 10.0 11.0 12.0+PTX"));
    EXPECT_EQ(e.values[0].value, "80;90;100;110;120");
    EXPECT_EQ(gap_tokens(e), (std::vector<std::string>{"9.0+PTX"}));
    // A list whose top has no +PTX: the script adds it anyway, which the note says.
    e = export_knobs({k}, list("8.0 9.0"));
    EXPECT_EQ(e.values[0].value, "80;90");
    ASSERT_EQ(e.notes.size(), 1U);
    EXPECT_NE(e.notes[0].find("compute_90"), std::string::npos) << e.notes[0];
}

TEST(ArchKnob, FormsSeparatorsAndPtxSpellings) {
    const auto l = list("8.0 8.6 9.0+PTX");
    EXPECT_EQ(export_knobs({knob(KnobForm::Dotted, KnobPtx::Suffix, {}, " ")}, l).values[0].value,
              "8.0 8.6 9.0+PTX");
    EXPECT_EQ(export_knobs({knob(KnobForm::Sm, KnobPtx::Suffix, {}, ",")}, l).values[0].value,
              "sm_80,sm_86,sm_90+PTX");
    // NATTEN: dotted, no +PTX spelling: each +PTX is left to injection.
    KnobExport e = export_knobs({knob(KnobForm::Dotted, KnobPtx::None)},
                                list("8.0 8.6 8.9 9.0+PTX 10.0 12.0+PTX"));
    EXPECT_EQ(e.values[0].value, "8.0;8.6;8.9;9.0;10.0;12.0");
    EXPECT_EQ(gap_tokens(e), (std::vector<std::string>{"9.0+PTX", "12.0+PTX"}));
    EXPECT_EQ(e.cannot_express[0].reason, "the knob has no +PTX spelling");
}

TEST(ArchKnob, SuffixesPtxOnlyAndNothingToSay) {
    // Without `accepts`, an a/f token has no spelling; with it, it is spelled as the form says.
    KnobExport e = export_knobs({knob(KnobForm::Digits, KnobPtx::None)}, list("8.0 9.0a"));
    EXPECT_EQ(e.values[0].value, "80");
    EXPECT_EQ(gap_tokens(e), (std::vector<std::string>{"9.0a"}));
    e = export_knobs({knob(KnobForm::Digits, KnobPtx::None, "8.0 9.0a")}, list("8.0 9.0a"));
    EXPECT_EQ(e.values[0].value, "80;90a");
    // A PTX-only entry names no cubin.
    e = export_knobs({knob(KnobForm::Digits, KnobPtx::Suffix)}, list("8.0 compute_90"));
    EXPECT_EQ(e.values[0].value, "80");
    EXPECT_EQ(gap_tokens(e), (std::vector<std::string>{"compute_90"}));
    // Nothing spellable: not exported, and a note says why.
    e = export_knobs({knob(KnobForm::Digits, KnobPtx::None, "8.0")}, list("8.6 8.9"));
    EXPECT_TRUE(e.values.empty());
    ASSERT_EQ(e.notes.size(), 1U);
    EXPECT_NE(e.notes[0].find("not exported"), std::string::npos);
    EXPECT_EQ(gap_tokens(e), (std::vector<std::string>{"8.6", "8.9"}));
}

// The shipped package files on the shipped policy: the values `env` exports per lane.
TEST(ArchKnob, ShippedPackagesOnThePolicyRows) {
    auto x86 = resolve_with(shipped_policy(), "13.0", "", "linux_x86_64", "flash_attn", "",
                            shipped_packages());
    ASSERT_TRUE(x86.ok()) << x86.error().to_string();
    auto j = resolution_json(*x86);
    ASSERT_EQ(j["arch_knobs"].size(), 1U);
    EXPECT_EQ(j["arch_knobs"][0]["variable"], "FLASH_ATTN_CUDA_ARCHS");
    EXPECT_EQ(j["arch_knobs"][0]["value"], "80;90;100;120");
    ASSERT_EQ(j["knob_cannot_express"].size(), 2U);
    EXPECT_EQ(j["knob_cannot_express"][0]["token"], "8.6");
    EXPECT_EQ(j["knob_cannot_express"][0]["targets"], nlohmann::ordered_json::array({"sm_86"}));
    EXPECT_EQ(j["knob_cannot_express"][1]["token"], "9.0+PTX");
    auto arm = resolve_with(shipped_policy(), "13.0", "", "linux_aarch64", "flash_attn", "",
                            shipped_packages());
    ASSERT_TRUE(arm.ok()) << arm.error().to_string();
    j = resolution_json(*arm);
    EXPECT_EQ(j["arch_knobs"][0]["value"], "80;90;100;110;120");
    EXPECT_EQ(j["knob_cannot_express"].size(), 1U);
    auto natten = resolve_with(shipped_policy(), "13.0", "", "linux_x86_64", "natten", "",
                               shipped_packages());
    ASSERT_TRUE(natten.ok()) << natten.error().to_string();
    j = resolution_json(*natten);
    EXPECT_EQ(j["arch_knobs"][0]["variable"], "NATTEN_CUDA_ARCH");
    // Its 10.3 (103a kernels, target_forms) is a token the knob spells; forward_ptx: false took
    // every +PTX off the list, so nothing is left to injection.
    EXPECT_EQ(j["arch_knobs"][0]["value"], "8.0;8.6;8.9;9.0;10.0;10.3;12.0");
    EXPECT_EQ(j["knob_cannot_express"], nlohmann::ordered_json::array());
    // A package without a knob says so with empty arrays, not absent keys.
    auto plain = resolve_with(shipped_policy(), "13.0", "", "linux_x86_64", "torchao", "",
                              shipped_packages());
    ASSERT_TRUE(plain.ok());
    j = resolution_json(*plain);
    EXPECT_EQ(j["arch_knobs"], nlohmann::ordered_json::array());
    EXPECT_EQ(j["knob_cannot_express"], nlohmann::ordered_json::array());
}
