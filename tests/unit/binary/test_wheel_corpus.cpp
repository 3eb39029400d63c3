// Replays the hostile wheel corpus (tests/fixtures/wheels/hostile, written by make_hostile.py)
// through the wheel reader, as `list` reads (no RECORD check) and as `verify` and `stamp` read
// (RECORD checked), against what each file must do: read cleanly with a stated entry count, or
// fail naming the member (and a byte offset) with a stated reason. A corpus file without a row
// here fails the test. Under ASan/UBSan in the test command; limits keep each read small.
#include "support.h"

#include <chrono>
#include <map>
#include <set>

namespace forge::binary::test {
namespace {

struct Expect {
    std::optional<int> entries; // reads cleanly with this many entries; nullopt: an error
    std::string key;            // the member the error names ("" for the zip itself)
    std::string says;           // part of the error message
    bool record_only = false;   // an error only when RECORD is checked (else `entries`)
};

Expect ok(int n) {
    return {n, "", "", false};
}
Expect error(std::string key, std::string says) {
    return {std::nullopt, std::move(key), std::move(says), false};
}
Expect record_error(int n, std::string key, std::string says) {
    return {n, std::move(key), std::move(says), true};
}

const std::map<std::string, Expect>& expectations() {
    static const std::map<std::string, Expect> m = {
        {"ok-record.whl", ok(2)},
        {"dup-member.whl", error("demo/_C.so", "a second member for the file demo/_C.so")},
        {"dup-normalized.whl", error("demo/./_C.so", "a second member for the file demo/_C.so")},
        {"path-dotdot.whl", error("../../evil.so", "'..' climbs above")},
        {"path-absolute.whl", error("/abs/x", "absolute path")},
        {"path-inner-dotdot.whl", error("demo/../../x", "'..' climbs above")},
        {"path-backslash.whl", error("demo\\..\\..\\x.so", "backslash")},
        {"path-drive.whl", error("C:/x.so", "drive")},
        {"name-nul.whl", error(std::string("demo/_C.so\0x", 12), "NUL byte")},
        {"symlink-module.whl", error("demo/_C.so", "a symbolic link to 'libreal.so'")},
        {"symlink-data.whl", ok(2)},
        {"record-hash.whl", record_error(2, "demo/_C.so", "the member's bytes hash to")},
        {"record-size.whl", record_error(2, "demo/_C.so", "bytes; the member holds 808")},
        {"record-unlisted.whl", record_error(2, "demo/__init__.py", "not listed in")},
        {"record-nohash.whl", record_error(2, "demo/_C.so", "without its hash")},
        {"record-bad-row.whl", record_error(2, "demo-1.0.dist-info/RECORD", "2 fields")},
        {"record-two.whl", record_error(2, "demo-1.0.dist-info/RECORD", "two .dist-info")},
        {"zip64-end.whl", ok(2)},
        {"zip64-end-missing.whl", error("", "defer to a zip64 end record, and no zip64 locator")},
        {"end-record-missing.whl", error("", "in none of the last")},
        {"empty.whl", error("", "an empty file")},
        {"declared-4gb.whl", error("demo/_C.so", "4000000000")},
    };
    return m;
}

TEST(WheelCorpus, EveryHostileWheelDoesWhatItsRowSays) {
    const std::filesystem::path corpus =
        std::filesystem::path(FORGE_TEST_FIXTURES) / "wheels" / "hostile";
    ASSERT_TRUE(std::filesystem::is_directory(corpus)) << corpus;
    std::set<std::string> seen;
    for (const auto& d : std::filesystem::directory_iterator(corpus)) {
        if (!d.is_regular_file()) continue;
        const std::string name = d.path().filename().string();
        seen.insert(name);
        auto row = expectations().find(name);
        if (row == expectations().end()) {
            ADD_FAILURE() << name << ": no row in test_wheel_corpus.cpp: state what it must do";
            continue;
        }
        const Expect& want = row->second;
        const auto bytes = slurp(d.path().string());
        for (bool check_record : {false, true}) {
            SCOPED_TRACE(name + (check_record ? " (RECORD checked)" : " (as list reads)"));
            ReadOptions opts;
            opts.inspect_payloads = check_record;
            opts.check_record = check_record;
            opts.max_member_bytes = 64 << 20;
            opts.max_total_inflated = 256 << 20;
            opts.spill_member_bytes = 256; // the spill path too, on members this small
            const auto start = std::chrono::steady_clock::now();
            auto r = read_extensions_from_memory(bytes.data(), bytes.size(), name, opts);
            const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::steady_clock::now() - start)
                                .count();
            EXPECT_LT(ms, 5000) << "took too long (a loop?)";
            const bool want_error = !want.entries || (check_record && want.record_only);
            if (!want_error) {
                ASSERT_TRUE(r.ok()) << r.error().to_string();
                std::size_t n = 0;
                for (const auto& x : *r)
                    n += x.entries.size();
                EXPECT_EQ(n, static_cast<std::size_t>(*want.entries));
                continue;
            }
            ASSERT_FALSE(r.ok()) << "read cleanly, but the file is hostile";
            EXPECT_EQ(r.error().file, name);
            EXPECT_TRUE(r.error().offset) << r.error().to_string();
            EXPECT_EQ(r.error().key, want.key) << r.error().to_string();
            EXPECT_TRUE(mentions(r.error(), want.says)) << r.error().to_string();
        }
    }
    for (const auto& [name, _] : expectations())
        EXPECT_TRUE(seen.count(name)) << name << " is gone from the corpus";
}

} // namespace
} // namespace forge::binary::test
