// The modules a stamp records, and audit's extension-lost from the ledger's previous wheel.
#include "../temp_dir.h"
#include "provenance/audit.h"
#include "provenance/modules.h"
#include "provenance/stamp.h"
#include "support.h"

#include <gtest/gtest.h>

using namespace forge;
using namespace forge::provenance;

namespace {

using forge::provenance::test::entry;

binary::Extension module(const std::string& member, std::vector<binary::Entry> entries) {
    binary::Extension ext;
    ext.file = "x.whl";
    ext.member = member;
    ext.entries = std::move(entries);
    return ext;
}

nlohmann::json modules_record(std::initializer_list<std::string> members) {
    std::vector<ModuleRecord> m;
    for (const auto& name : members)
        m.push_back({name, {"sm_80"}, true});
    return {{"arch_list", "8.0"}, {"modules", modules_json(m)}};
}

AuditResult ok_result() {
    AuditResult r;
    r.file = "sa-2.0-cp311-cp311-linux_x86_64.whl";
    r.status = std::string(kAuditOk);
    return r;
}

} // namespace

TEST(StampModules, RecordsEachHostElfWithItsTargets) {
    auto records =
        module_records({module("pkg/_a.so", {entry("sm_90"), entry("sm_80"), entry("compute_90")}),
                        module("pkg/_stub.so", {entry("sm_80", 0)}), module("pkg/_host.so", {})});
    ASSERT_EQ(records.size(), 3U);
    EXPECT_EQ(records[0].module, "pkg/_a.so");
    EXPECT_EQ(records[0].targets, (std::vector<std::string>{"compute_90", "sm_80", "sm_90"}));
    EXPECT_TRUE(records[0].device_code);
    EXPECT_TRUE(records[1].targets.empty()) << "a kernel-less cubin is not a target";
    EXPECT_FALSE(records[2].device_code);

    policy::Resolution r;
    r.list = *arch::ArchList::parse("8.0");
    StampInputs in{"pkg", "pkg", 0, {}, records};
    auto j = make_build_info(r, in);
    ASSERT_TRUE(j["modules"].is_array());
    EXPECT_EQ(j["modules"][0]["module"], "pkg/_a.so");
    EXPECT_EQ(j["modules"][0]["targets"], nlohmann::json({"compute_90", "sm_80", "sm_90"}));
    EXPECT_EQ(j["modules"][2]["device_code"], false);

    auto back = modules_from_record(j, "pkg/_build_info.json");
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    ASSERT_EQ(back->size(), 3U);
    EXPECT_EQ((*back)[0].targets, records[0].targets);
    EXPECT_TRUE(modules_from_record({{"arch_list", "8.0"}}, "old")->empty());

    StampInputs unread{"pkg", "pkg", 0, {}, std::nullopt, "pkg/_C.so: bad ELF"};
    auto u = make_build_info(r, unread);
    EXPECT_TRUE(u["modules"].is_null());
    EXPECT_EQ(u["modules_error"], "pkg/_C.so: bad ELF");
    EXPECT_FALSE(modules_from_record({{"modules", "pkg/_a.so"}}, "bad").ok());
    EXPECT_FALSE(modules_from_record({{"modules", {{{"targets", {"sm_80"}}}}}}, "bad").ok());
}

TEST(StampModules, ModuleKeyDropsTheInterpreterSuffix) {
    EXPECT_EQ(module_key("sageattention/_qattn_sm80.cpython-311-x86_64-linux-gnu.so"),
              "sageattention/_qattn_sm80");
    EXPECT_EQ(module_key("sageattention/_qattn_sm80.cpython-312-aarch64-linux-gnu.so"),
              "sageattention/_qattn_sm80");
    EXPECT_EQ(module_key("a.b/_C.abi3.so"), "a.b/_C");
    EXPECT_EQ(module_key("_C.so"), "_C");
}

TEST(AuditExtensionLost, PreviousWheelIsTheLatestEarlierStampOfTheDistribution) {
    auto dir = forge::test::temp_dir("previous");
    const std::string path = (dir / "ledger.jsonl").string();
    auto add = [&](const char* wheel, const nlohmann::json& record) {
        ASSERT_TRUE(append_ledger(path, wheel, record).ok());
    };
    add("sa-1.0-cp311-cp311-linux_x86_64.whl", modules_record({"sa/_a.so"}));
    add("sa-1.1-cp311-cp311-linux_x86_64.whl", modules_record({"sa/_b.so"}));
    add("other-9.0-cp311-cp311-linux_x86_64.whl", modules_record({"o/_c.so"}));
    add("sa-1.2-cp311-cp311-linux_x86_64.whl", {{"arch_list", "8.0"}}); // no modules
    // Its modules could not be read.
    add("sa-1.3-cp311-cp311-linux_x86_64.whl", {{"arch_list", "8.0"}, {"modules", nullptr}});
    add("sa-2.0-cp311-cp311-linux_x86_64.whl", modules_record({"sa/_d.so"}));
    auto l = load_ledger(path);
    ASSERT_TRUE(l.ok()) << l.error().to_string();
    auto previous = [&](const char* wheel) {
        auto p = l->previous_wheel(wheel);
        EXPECT_TRUE(p.ok()) << p.error().to_string();
        return p.ok() && *p ? (*p)->wheel : std::string("none");
    };
    EXPECT_EQ(previous("sa-2.0-cp311-cp311-linux_x86_64.whl"),
              "sa-1.1-cp311-cp311-linux_x86_64.whl");
    auto p = l->previous_wheel("sa-2.0-cp311-cp311-linux_x86_64.whl");
    ASSERT_TRUE(p.ok() && *p);
    EXPECT_EQ((*p)->where, path + ":2");
    EXPECT_EQ((*p)->record["modules"][0]["module"], "sa/_b.so");
    // A wheel the ledger does not know: the latest stamp of its distribution.
    EXPECT_EQ(previous("sa-3.0-cp311-cp311-linux_x86_64.whl"),
              "sa-2.0-cp311-cp311-linux_x86_64.whl");
    EXPECT_EQ(previous("sa-1.0-cp311-cp311-linux_x86_64.whl"), "none");
    EXPECT_EQ(previous("new-1.0-py3-none-any.whl"), "none");
    EXPECT_EQ(previous("not-a-wheel.so"), "none");
    std::filesystem::remove_all(dir);
}

TEST(AuditExtensionLost, LackingAModuleThePreviousWheelCarried) {
    const LedgerEntry previous{modules_record({"sa/_q80.cpython-311-x86_64-linux-gnu.so",
                                               "sa/_fused.cpython-311-x86_64-linux-gnu.so"}),
                               "ledger.jsonl:1", 1};
    // Another interpreter's suffix is the same module.
    auto r = ok_result();
    check_lost_extensions(r,
                          {module("sa/_q80.cpython-312-x86_64-linux-gnu.so", {entry("sm_80")}),
                           module("sa/_fused.cpython-312-x86_64-linux-gnu.so", {entry("sm_80")})},
                          previous, "sa-1.0.whl");
    EXPECT_EQ(r.status, kAuditOk);
    EXPECT_TRUE(r.lost_extensions.empty());

    auto lost = ok_result();
    check_lost_extensions(lost,
                          {module("sa/_fused.cpython-311-x86_64-linux-gnu.so", {entry("sm_80")})},
                          previous, "sa-1.0.whl");
    EXPECT_EQ(lost.status, kAuditExtensionLost);
    EXPECT_EQ(lost.lost_extensions,
              (std::vector<std::string>{"sa/_q80.cpython-311-x86_64-linux-gnu.so"}));
    ASSERT_FALSE(lost.details.empty());
    EXPECT_NE(lost.details[0].find("sa-1.0.whl"), std::string::npos) << lost.details[0];
    auto j = audit_to_json(lost);
    EXPECT_EQ(j["status"], "extension-lost");
    EXPECT_EQ(j["lost_extensions"], nlohmann::json({"sa/_q80.cpython-311-x86_64-linux-gnu.so"}));
    EXPECT_EQ(audit_counts({lost})["extension-lost"], 1U);

    // It wins over the other findings, which stay in the details; unreadable stays unreadable.
    auto moved = ok_result();
    moved.status = std::string(kAuditConfigMoved);
    moved.details = {"built for 8.0 as asked"};
    check_lost_extensions(moved, {}, previous, "sa-1.0.whl");
    EXPECT_EQ(moved.status, kAuditExtensionLost);
    EXPECT_EQ(moved.details.back(), "built for 8.0 as asked");
    auto unreadable = ok_result();
    unreadable.status = std::string(kAuditUnreadable);
    check_lost_extensions(unreadable, {}, previous, "sa-1.0.whl");
    EXPECT_EQ(unreadable.status, kAuditUnreadable);
}
