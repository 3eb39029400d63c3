// audit: each status from crafted extensions, provenance records, the ledger, the file sweep,
// and the JSON keys. Real nvcc-built files run through the CLI in tests/integration/provenance.
#include "../temp_dir.h"
#include "provenance/audit.h"
#include "provenance/stamp.h"
#include "support.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using namespace forge;
using namespace forge::provenance;

namespace {

using forge::provenance::test::entry;

// One extension carrying `targets` ("sm_80", "compute_90", "stub:sm_89").
std::vector<binary::Extension> carrying(std::vector<std::string> targets) {
    binary::Extension ext;
    ext.file = "x.whl";
    ext.member = "pkg/_C.so";
    for (const auto& t : targets) {
        if (t.starts_with("stub:"))
            ext.entries.push_back(entry(t.substr(5), 0));
        else
            ext.entries.push_back(entry(t));
    }
    return {ext};
}

AuditPolicy audit_policy(const std::string& list, std::optional<long> epoch = 3) {
    AuditPolicy p;
    p.list = *arch::ArchList::parse(list);
    p.build_epoch = epoch;
    p.source = "arch_policy[12.8]";
    return p;
}

Provenance prov(const std::string& list, std::optional<long> epoch = 3) {
    nlohmann::json rec = {{"arch_list", list}};
    rec["build_epoch"] = epoch ? nlohmann::json(*epoch) : nlohmann::json();
    auto p = provenance_from_record(rec, "stamp", "pkg/_build_info.json");
    EXPECT_TRUE(p.ok());
    return *p;
}

using forge::test::temp_dir;

} // namespace

TEST(AuditClassify, Ok) {
    auto r = classify("x.whl", carrying({"sm_80", "sm_90", "compute_90"}), prov("8.0 9.0+PTX"),
                      audit_policy("8.0 9.0+PTX"));
    EXPECT_EQ(r.status, "ok");
    EXPECT_FALSE(r.inferred);
    EXPECT_EQ(r.carries, (std::vector<std::string>{"compute_90", "sm_80", "sm_90"}));
}

TEST(AuditClassify, WheelWrongWhenItMissesItsOwnAsk) {
    // Built to carry 8.0 9.0+PTX, carries only sm_80: wrong whatever the policy says now.
    auto r = classify("x.whl", carrying({"sm_80"}), prov("8.0 9.0+PTX"), audit_policy("8.0"));
    EXPECT_EQ(r.status, "wheel-wrong");
    ASSERT_GE(r.details.size(), 2u);
    EXPECT_NE(r.details[0].find("8.0 9.0+PTX"), std::string::npos);
}

TEST(AuditClassify, WheelWrongWhenItCarriesMore) {
    auto r = classify("x.whl", carrying({"sm_80", "sm_90"}), prov("8.0"), audit_policy("8.0"));
    EXPECT_EQ(r.status, "wheel-wrong");
}

TEST(AuditClassify, KernelLessStubsDoNotCount) {
    // The stub trap: sm_89 present only as a kernel-less cubin does not satisfy an 8.9 ask.
    auto r = classify("x.whl", carrying({"sm_80", "stub:sm_89"}), prov("8.0 8.9"),
                      audit_policy("8.0 8.9"));
    EXPECT_EQ(r.status, "wheel-wrong");
    EXPECT_EQ(r.carries, (std::vector<std::string>{"sm_80"}));
    EXPECT_EQ(r.stub_only, (std::vector<std::string>{"sm_89"}));
}

TEST(AuditClassify, ConfigMoved) {
    auto r = classify("x.whl", carrying({"sm_80", "sm_90", "compute_90"}), prov("8.0 9.0+PTX"),
                      audit_policy("8.0 9.0 10.0+PTX"));
    EXPECT_EQ(r.status, "config-moved");
}

TEST(AuditClassify, StaleEpoch) {
    auto r = classify("x.whl", carrying({"sm_80"}), prov("8.0", 2), audit_policy("8.0", 3));
    EXPECT_EQ(r.status, "stale-epoch");
    // Same list, same epoch: ok; epoch unknown on one side: not compared, noted.
    EXPECT_EQ(classify("x.whl", carrying({"sm_80"}), prov("8.0", 3), audit_policy("8.0", 3)).status,
              "ok");
    auto unknown =
        classify("x.whl", carrying({"sm_80"}), prov("8.0", std::nullopt), audit_policy("8.0", 3));
    EXPECT_EQ(unknown.status, "ok");
    ASSERT_FALSE(unknown.details.empty());
    EXPECT_NE(unknown.details[0].find("not compared"), std::string::npos);
    // A wheel from a newer epoch than the policy audited against: the config moved (back).
    EXPECT_EQ(classify("x.whl", carrying({"sm_80"}), prov("8.0", 5), audit_policy("8.0", 3)).status,
              "config-moved");
}

TEST(AuditClassify, WheelWrongWinsOverConfigMovedAndEpoch) {
    auto r = classify("x.whl", carrying({"sm_75"}), prov("8.0", 1), audit_policy("9.0", 3));
    EXPECT_EQ(r.status, "wheel-wrong");
}

TEST(AuditClassify, StampedWaiversAreHonoured) {
    // packages/x/arch_override.yml waived sm_90: the build was allowed to miss it.
    auto p = provenance_from_record(
        {{"arch_list", "8.0 9.0"}, {"build_epoch", 3}, {"allow_missing", {"sm_90"}}}, "stamp", "s");
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(classify("x.whl", carrying({"sm_80"}), *p, audit_policy("8.0 9.0")).status, "ok");
    // Without the waiver the same wheel is wrong.
    EXPECT_EQ(
        classify("x.whl", carrying({"sm_80"}), prov("8.0 9.0"), audit_policy("8.0 9.0")).status,
        "wheel-wrong");
    // The current policy's waivers apply to the inferred comparison.
    auto pol = audit_policy("8.0 9.0");
    pol.allow_missing = {*arch::parse_target("sm_90")};
    auto r = classify("x.so", carrying({"sm_80"}), std::nullopt, pol);
    EXPECT_TRUE(r.inferred_match.value_or(false));
    EXPECT_FALSE(
        provenance_from_record({{"arch_list", "8.0"}, {"allow_missing", "sm_90"}}, "stamp", "s")
            .ok());
    EXPECT_FALSE(
        provenance_from_record({{"arch_list", "8.0"}, {"allow_missing", {"sm_9x"}}}, "stamp", "s")
            .ok());
}

TEST(AuditClassify, NoProvenanceIsInferred) {
    auto match = classify("x.so", carrying({"sm_80"}), std::nullopt, audit_policy("8.0"));
    EXPECT_EQ(match.status, "no-provenance");
    EXPECT_TRUE(match.inferred);
    ASSERT_TRUE(match.inferred_match.has_value());
    EXPECT_TRUE(*match.inferred_match);
    auto miss = classify("x.so", carrying({"sm_80"}), std::nullopt, audit_policy("8.0 9.0"));
    EXPECT_EQ(miss.status, "no-provenance");
    EXPECT_FALSE(*miss.inferred_match);
}

TEST(AuditClassify, NoGpuCodeNeverMatches) {
    binary::Extension cpu_only;
    cpu_only.file = "x.so";
    auto r = classify("x.so", {cpu_only}, prov("8.0"), audit_policy("8.0"));
    EXPECT_EQ(r.status, "wheel-wrong");
    EXPECT_EQ(r.extensions, 0);
    // A CPU-only helper next to a CUDA extension is not judged.
    auto exts = carrying({"sm_80"});
    exts.push_back(cpu_only);
    EXPECT_EQ(classify("x.whl", exts, prov("8.0"), audit_policy("8.0")).status, "ok");
}

TEST(AuditProvenance, BadRecords) {
    EXPECT_FALSE(provenance_from_record(nlohmann::json::array(), "stamp", "p").ok());
    EXPECT_FALSE(provenance_from_record({{"build_epoch", 1}}, "stamp", "p").ok());
    auto bad_list = provenance_from_record({{"arch_list", "9.9.9 bogus"}}, "stamp", "p");
    EXPECT_FALSE(bad_list.ok());
    auto bad_epoch =
        provenance_from_record({{"arch_list", "8.0"}, {"build_epoch", "three"}}, "stamp", "p");
    ASSERT_FALSE(bad_epoch.ok());
    EXPECT_EQ(bad_epoch.error().key, "build_epoch");
}

TEST(AuditLedger, LaterLinesWinAndErrorsNameTheLine) {
    auto dir = temp_dir("ledger");
    auto path = (dir / "ledger.jsonl").string();
    ASSERT_TRUE(append_ledger(path, "a-1.0-py3-none-any.whl", {{"arch_list", "8.0"}}).ok());
    ASSERT_TRUE(append_ledger(path, "a-1.0-py3-none-any.whl", {{"arch_list", "9.0"}}).ok());
    ASSERT_TRUE(append_ledger(path, "b-1.0-py3-none-any.whl", {{"arch_list", "8.6"}}).ok());
    auto l = load_ledger(path);
    ASSERT_TRUE(l.ok()) << l.error().to_string();
    EXPECT_EQ(l->size(), 2u);
    auto a = l->find("a-1.0-py3-none-any.whl");
    ASSERT_TRUE(a.ok() && *a);
    EXPECT_EQ((*a)->record["arch_list"], "9.0");
    EXPECT_EQ((*a)->where, path + ":2");
    auto b = l->find("b-1.0-py3-none-any.whl");
    ASSERT_TRUE(b.ok() && *b);
    EXPECT_FALSE((*b)->record.contains("wheel"));

    std::ofstream(path, std::ios::app) << "{\"arch_list\": \"8.0\"}\n";
    auto e = load_ledger(path);
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.error().line, 4);
    EXPECT_EQ(e.error().key, "wheel");
    std::ofstream(path) << "{\"wheel\": \"a.whl\"}\nnot json\n";
    auto j = load_ledger(path);
    ASSERT_FALSE(j.ok());
    EXPECT_EQ(j.error().line, 2);
    EXPECT_FALSE(load_ledger((dir / "missing").string()).ok());
    fs::remove_all(dir);
}

TEST(AuditSweep, CollectsWheelsAndSharedObjectsRecursively) {
    auto dir = temp_dir("sweep");
    fs::create_directories(dir / "a/b");
    for (auto p : {"x.whl", "a/y.so", "a/b/libz.so.1", "a/readme.txt", "a/b/k.o"})
        std::ofstream(dir / p) << "x";
    auto files = collect_audit_files({dir.string(), (dir / "a/b/k.o").string()});
    ASSERT_TRUE(files.ok());
    std::vector<std::string> names;
    for (auto& f : *files)
        names.push_back(fs::relative(f, dir).string());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"a/b/k.o", "a/b/libz.so.1", "a/y.so", "x.whl"}));
    auto missing = collect_audit_files({(dir / "nope").string()});
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().exit_code, kExitInput);
    EXPECT_NE(missing.error().file.find("nope"), std::string::npos);
    fs::remove_all(dir);
}

// The walk holds no list, yet gives the order of a sorted list of every full path: a file "a.so"
// before the directory "a/" ('.' sorts before '/'), "a-b/" before "a/" ('-' too), each path once
// when directories overlap; a link to a directory is not followed, a link to a file is a file.
TEST(AuditSweep, TheWalkGivesTheSortedListOnce) {
    auto dir = temp_dir("sorted_walk");
    for (auto d : {"a/b", "a-b", "a0", "z"})
        fs::create_directories(dir / d);
    for (auto p : {"a.so", "a/x.so", "a/b/libz.so.1", "a-b/y.whl", "a0/q.pyd", "a/b.so", "z/w.whl",
                   "a/skip.txt"})
        std::ofstream(dir / p) << "x";
    fs::create_directory_symlink(dir / "z", dir / "a/zlink");
    fs::create_symlink(dir / "z/w.whl", dir / "a/wlink.whl");
    std::set<std::string> want;
    for (auto p : {"a.so", "a/x.so", "a/b/libz.so.1", "a-b/y.whl", "a0/q.pyd", "a/b.so", "z/w.whl",
                   "a/wlink.whl"})
        want.insert((dir / p).string());
    auto files = collect_audit_files(
        {(dir / "a").string(), dir.string(), (dir / "a.so").string(), (dir / "a/x.so").string()});
    ASSERT_TRUE(files.ok()) << files.error().to_string();
    EXPECT_EQ(*files, std::vector<std::string>(want.begin(), want.end()));

    auto list = AuditFileList::collect({dir.string(), (dir / "a").string()});
    ASSERT_TRUE(list.ok()) << list.error().to_string();
    ASSERT_EQ(list->size(), want.size());
    for (const auto& w : want) {
        auto f = list->next();
        ASSERT_TRUE(f.ok()) << f.error().to_string();
        EXPECT_EQ(*f, w);
    }
    EXPECT_FALSE(list->next().ok()); // no more than size()
    fs::remove_all(dir);
}

TEST(AuditSweep, UnreadableFilesCarryTheReaderError) {
    auto dir = temp_dir("unreadable");
    auto so = dir / "broken.so";
    // An ELF header that promises section headers past the end of the file.
    std::string elf(64, '\0');
    elf[0] = 0x7f, elf[1] = 'E', elf[2] = 'L', elf[3] = 'F', elf[4] = 2, elf[5] = 1, elf[6] = 1;
    elf[0x28] = 0x00, elf[0x29] = 0x10; // e_shoff = 0x1000
    elf[0x3a] = 64, elf[0x3c] = 5;      // e_shentsize, e_shnum
    std::ofstream(so, std::ios::binary) << elf;
    auto whl = dir / "junk-1.0-py3-none-any.whl";
    std::ofstream(whl, std::ios::binary) << "PK\x03\x04 truncated";
    auto results = audit_files({so.string(), whl.string()}, nullptr, audit_policy("8.0"), 2);
    ASSERT_EQ(results.size(), 2u);
    for (const auto& r : results) {
        EXPECT_EQ(r.status, "unreadable") << r.file;
        EXPECT_FALSE(r.error.empty());
        auto j = audit_to_json(r);
        EXPECT_EQ(j["status"], "unreadable");
        EXPECT_TRUE(j["error"].is_string());
    }
    EXPECT_NE(results[0].error.find("broken.so"), std::string::npos);
    fs::remove_all(dir);
}

TEST(AuditReport, JsonKeysAndTextSummary) {
    std::vector<AuditResult> rs = {
        classify("a.whl", carrying({"sm_80"}), prov("8.0"), audit_policy("8.0")),
        classify("b.whl", carrying({"sm_80"}), prov("9.0"), audit_policy("8.0")),
        classify("c.so", carrying({"sm_80"}), std::nullopt, audit_policy("8.0")),
    };
    auto doc = audit_to_json(rs, audit_policy("8.0"));
    // The policy once, at the top; the entries; the counts.
    ASSERT_TRUE(doc.is_object());
    EXPECT_EQ(doc["policy"]["build_epoch"], 3);
    EXPECT_EQ(doc["policy"]["arch_list"], "8.0");
    EXPECT_EQ(doc["files"], 3);
    EXPECT_EQ(doc["audited"], 3);
    EXPECT_EQ(doc["interrupted"], false);
    EXPECT_EQ(doc["counts"]["wheel-wrong"], 1);
    EXPECT_EQ(doc["counts"]["stale-epoch"], 0);
    const auto& j = doc["entries"];
    ASSERT_TRUE(j.is_array());
    ASSERT_EQ(j.size(), 3u);
    for (const auto& o : j) {
        for (auto key : {"file", "status", "carries", "provenance", "details", "inferred"})
            EXPECT_TRUE(o.contains(key)) << key;
        EXPECT_FALSE(o.contains("policy")) << "the policy is written once, not per entry";
    }
    EXPECT_EQ(j[0]["status"], "ok");
    EXPECT_EQ(j[0]["provenance"]["source"], "stamp");
    EXPECT_EQ(j[1]["status"], "wheel-wrong");
    EXPECT_EQ(j[2]["status"], "no-provenance");
    EXPECT_EQ(j[2]["inferred_match"], true);
    EXPECT_TRUE(j[2]["provenance"].is_null());
    EXPECT_FALSE(j[0].contains("inferred_match"));

    auto text = audit_to_text(rs, audit_policy("8.0"));
    EXPECT_NE(text.find("wheel-wrong          1"), std::string::npos) << text;
    EXPECT_NE(text.find("ok                   1"), std::string::npos) << text;
    EXPECT_NE(text.find("wheel-wrong     b.whl"), std::string::npos) << text;
    EXPECT_EQ(text.find("a.whl"), std::string::npos) << "ok files are not listed";
    // The header first, the file lines as they come, the table last.
    EXPECT_LT(text.find("audit: 3 file(s)"), text.find("wheel-wrong     b.whl"));
    EXPECT_LT(text.find("wheel-wrong     b.whl"), text.find("  status"));
    auto counts = audit_counts(rs);
    EXPECT_EQ(counts["stale-epoch"], 0u);
    EXPECT_EQ(counts["no-provenance"], 1u);
}

// Each entry is written as it arrives (the stream holds it before the next one is added), and an
// interrupted report is still a whole document that says how far it got.
TEST(AuditReport, EntriesAreWrittenAsTheyArriveAndAnInterruptedReportCloses) {
    std::ostringstream os;
    AuditReport report(os, AuditFormat::Json, audit_policy("8.0"), 5);
    EXPECT_NE(os.str().find("\"policy\""), std::string::npos);
    report.add(classify("a.whl", carrying({"sm_80"}), prov("8.0"), audit_policy("8.0")));
    EXPECT_NE(os.str().find("a.whl"), std::string::npos) << "the entry waits for the end";
    report.add(classify("b.whl", carrying({"sm_80"}), prov("9.0"), audit_policy("8.0")));
    report.finish(/*interrupted=*/true);
    auto doc = nlohmann::json::parse(os.str());
    EXPECT_EQ(doc["files"], 5);
    EXPECT_EQ(doc["audited"], 2);
    EXPECT_EQ(doc["interrupted"], true);
    EXPECT_EQ(doc["entries"].size(), 2u);
    std::ostringstream text;
    AuditReport t(text, AuditFormat::Text, audit_policy("8.0"), 5);
    t.add(classify("b.whl", carrying({"sm_80"}), prov("9.0"), audit_policy("8.0")));
    t.finish(true);
    EXPECT_NE(text.str().find("interrupted: 1 of 5 file(s) audited"), std::string::npos)
        << text.str();
}

// Results arrive in the order of the files whatever the number of workers, each as soon as the
// files before it are done; a stop request ends the run after the files already started, and
// what was delivered is a prefix of the list.
TEST(AuditStream, InOrderAndStoppable) {
    auto dir = temp_dir("stream");
    std::vector<std::string> files;
    for (int i = 0; i < 200; ++i) {
        auto f = dir / ("f" + std::to_string(1000 + i) + ".so");
        std::ofstream(f, std::ios::binary) << "not an elf";
        files.push_back(f.string());
    }
    for (int jobs : {1, 3}) {
        std::vector<std::string> seen;
        auto n = audit_stream(files, nullptr, audit_policy("8.0"), jobs,
                              [&](AuditResult&& r) { seen.push_back(r.file); });
        EXPECT_EQ(n, files.size());
        EXPECT_EQ(seen, files) << jobs << " jobs";
        std::atomic<bool> stop{false};
        seen.clear();
        n = audit_stream(
            files, nullptr, audit_policy("8.0"), jobs,
            [&](AuditResult&& r) {
                seen.push_back(r.file);
                if (seen.size() == 10) stop = true;
            },
            {}, &stop);
        EXPECT_EQ(n, seen.size());
        EXPECT_GE(seen.size(), 10u);
        EXPECT_LT(seen.size(), files.size()) << "the stop request was not heard";
        EXPECT_TRUE(std::equal(seen.begin(), seen.end(), files.begin())) << "not a prefix";
    }
    fs::remove_all(dir);
}

TEST(AuditClassify, WaiversArePrintedWithWhereTheyCameFrom) {
    // The wheel's own stamp waives sm_90; the package file (the current policy) does not.
    auto p = provenance_from_record(
        {{"arch_list", "8.0 9.0"}, {"build_epoch", 3}, {"allow_missing", {"sm_90"}}}, "stamp",
        "pkg/_build_info.json");
    ASSERT_TRUE(p.ok());
    auto r = classify("x.whl", carrying({"sm_80"}), *p, audit_policy("8.0 9.0"));
    EXPECT_EQ(r.status, "ok");
    ASSERT_EQ(r.waivers.size(), 1u);
    EXPECT_NE(r.waivers[0].find("sm_90"), std::string::npos) << r.waivers[0];
    EXPECT_NE(r.waivers[0].find("the wheel's own stamp pkg/_build_info.json"), std::string::npos)
        << r.waivers[0];
    EXPECT_NE(r.waivers[0].find("found only in the artifact"), std::string::npos) << r.waivers[0];
    auto text = audit_to_text({r}, audit_policy("8.0 9.0"));
    EXPECT_NE(text.find("waived          x.whl: sm_90"), std::string::npos) << text;
    // the same waiver in the package file is not "only in the artifact"
    auto pol = audit_policy("8.0 9.0");
    pol.allow_missing = {*arch::parse_target("sm_90")};
    auto r2 = classify("x.whl", carrying({"sm_80"}), *p, pol);
    ASSERT_EQ(r2.waivers.size(), 1u);
    EXPECT_EQ(r2.waivers[0].find("only in the artifact"), std::string::npos) << r2.waivers[0];
}

TEST(AuditClassify, NarrowedCellsAreCounted) {
    auto pol = audit_policy("8.0 9.0+PTX");
    pol.narrowed = {"7.5", "8.6"};
    auto r =
        classify("x.whl", carrying({"sm_80", "sm_90", "compute_90"}), prov("8.0 9.0+PTX"), pol);
    EXPECT_TRUE(r.narrowed);
    auto other = classify("y.whl", carrying({"sm_80"}), prov("8.0"), audit_policy("8.0"));
    EXPECT_FALSE(other.narrowed);
    EXPECT_EQ(narrowed_count({r, other}), 1u);
    auto text = audit_to_text({r, other}, pol);
    EXPECT_NE(text.find("narrowed cell: arch_policy[12.8] drops 7.5 8.6"), std::string::npos)
        << text;
}
