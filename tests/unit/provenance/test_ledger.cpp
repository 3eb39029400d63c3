// The ledger as audit reads it: an index built in one pass, each lookup a few entries.
#include "../temp_dir.h"
#include "binary/wheel_record.h"
#include "binary/zip_io.h"
#include "provenance/audit.h"
#include "provenance/stamp.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>

using namespace forge;
using namespace forge::provenance;

namespace {

// A pure-Python wheel whose RECORD lists its members.
void write_ledger_test_wheel(const std::filesystem::path& path, const std::string& dist) {
    auto w = binary::zipio::Writer::create(path.string());
    ASSERT_TRUE(w.ok()) << w.error().to_string();
    const std::string init = "# " + dist + "\n", info = dist + "-1.0.dist-info";
    const std::string record = fmt::format("{}/__init__.py,{},{}\n{}/RECORD,,\n", dist,
                                           binary::record_hash(init), init.size(), info);
    ASSERT_TRUE(w->add(dist + "/__init__.py", init, 0, 0).ok());
    ASSERT_TRUE(w->add(info + "/RECORD", record, 0, 0).ok());
    ASSERT_TRUE(w->close("").ok());
}

AuditPolicy ledger_test_policy() {
    AuditPolicy p;
    p.list = *arch::ArchList::parse("8.0");
    p.source = "--arch-list";
    return p;
}

} // namespace

// The fleet in small: N wheels against a ledger of 10 lines a wheel (nine older versions
// of each, then the wheel's own). A lookup that scanned the ledger would look at ~10·N entries for
// each wheel; an index looks at one for the wheel's record and one for its previous wheel.
TEST(LedgerIndex, AuditOfNWheelsAgainstTenNLinesReadsTheLedgerOnce) {
    constexpr int kWheels = 60, kOlder = 9;
    auto dir = forge::test::temp_dir("ledger_index");
    const std::string ledger_path = (dir / "ledger.jsonl").string();
    std::vector<std::string> files;
    for (int v = 0; v < kOlder; ++v)
        for (int i = 0; i < kWheels; ++i)
            ASSERT_TRUE(append_ledger(ledger_path, fmt::format("pkg{}-0.{}-py3-none-any.whl", i, v),
                                      {{"arch_list", "8.0"}, {"modules", nlohmann::json::array()}})
                            .ok());
    for (int i = 0; i < kWheels; ++i) {
        const std::string name = fmt::format("pkg{}-1.0-py3-none-any.whl", i);
        ASSERT_TRUE(append_ledger(ledger_path, name,
                                  {{"arch_list", "8.0"}, {"modules", nlohmann::json::array()}})
                        .ok());
        write_ledger_test_wheel(dir / name, fmt::format("pkg{}", i));
        files.push_back((dir / name).string());
    }
    auto ledger = load_ledger(ledger_path);
    ASSERT_TRUE(ledger.ok()) << ledger.error().to_string();
    EXPECT_EQ(ledger->size(), static_cast<size_t>(kWheels * (kOlder + 1)));

    auto results = audit_files(files, &*ledger, ledger_test_policy(), 2);
    ASSERT_EQ(results.size(), files.size());
    for (int i = 0; i < kWheels; ++i) {
        const auto& r = results[static_cast<size_t>(i)];
        ASSERT_TRUE(r.provenance) << r.file << ": " << r.status << " " << r.error;
        EXPECT_EQ(r.provenance->source, "ledger");
        EXPECT_EQ(r.provenance->where, fmt::format("{}:{}", ledger_path, kOlder * kWheels + i + 1));
    }
    const LedgerStats s = ledger->stats();
    const auto n = static_cast<std::uint64_t>(kWheels);
    std::cout << fmt::format("{} wheels, {} ledger lines: {} pass(es), {} lines read, {} "
                             "records read back, {} index entries examined\n",
                             kWheels, s.lines, s.passes, s.lines, s.records_read, s.examined);
    EXPECT_EQ(s.passes, 1u);
    EXPECT_EQ(s.lines, n * (kOlder + 1));
    // Each wheel: its own record and its previous wheel's, one entry each.
    EXPECT_LE(s.examined, 2 * n);
    EXPECT_LE(s.records_read, 2 * n);
    std::filesystem::remove_all(dir);
}

// The previous wheel is the latest of its distribution whose latest line is earlier than the
// wheel's own: a wheel stamped again after it no longer counts.
TEST(LedgerIndex, AWheelStampedAgainLaterIsNotThePreviousOne) {
    auto dir = forge::test::temp_dir("ledger_restamp");
    const std::string path = (dir / "ledger.jsonl").string();
    const nlohmann::json with = {{"arch_list", "8.0"}, {"modules", nlohmann::json::array()}};
    ASSERT_TRUE(append_ledger(path, "sa-1.0-py3-none-any.whl", with).ok());
    ASSERT_TRUE(append_ledger(path, "sa-1.1-py3-none-any.whl", with).ok());
    ASSERT_TRUE(append_ledger(path, "sa-2.0-py3-none-any.whl", with).ok());
    ASSERT_TRUE(append_ledger(path, "sa-1.1-py3-none-any.whl", with).ok()); // stamped again
    auto l = load_ledger(path);
    ASSERT_TRUE(l.ok()) << l.error().to_string();
    auto p = l->previous_wheel("sa-2.0-py3-none-any.whl");
    ASSERT_TRUE(p.ok() && *p);
    EXPECT_EQ((*p)->wheel, "sa-1.0-py3-none-any.whl");
    auto own = l->find("sa-1.1-py3-none-any.whl");
    ASSERT_TRUE(own.ok() && *own);
    EXPECT_EQ((*own)->line, 4);
    EXPECT_FALSE(l->find("sa-9.0-py3-none-any.whl")->has_value());
    std::filesystem::remove_all(dir);
}

// A record is read back from the file: one rewritten under the audit is an error naming the line,
// never another wheel's record.
TEST(LedgerIndex, ALineRewrittenDuringTheAuditIsAnError) {
    auto dir = forge::test::temp_dir("ledger_rewritten");
    const std::string path = (dir / "ledger.jsonl").string();
    ASSERT_TRUE(append_ledger(path, "a-1.0-py3-none-any.whl", {{"arch_list", "8.0"}}).ok());
    auto l = load_ledger(path);
    ASSERT_TRUE(l.ok()) << l.error().to_string();
    std::ofstream(path, std::ios::in | std::ios::out) << "{\"wheel\": 1";
    auto e = l->find("a-1.0-py3-none-any.whl");
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.error().line, 1);
    EXPECT_NE(e.error().to_string().find("changed"), std::string::npos) << e.error().to_string();
    std::filesystem::remove_all(dir);
}

TEST(LedgerIndex, OnlyARegularFileIsALedger) {
    auto dir = forge::test::temp_dir("ledger_dir");
    auto l = load_ledger(dir.string());
    ASSERT_FALSE(l.ok());
    EXPECT_EQ(l.error().file, dir.string());
    std::filesystem::remove_all(dir);
}
