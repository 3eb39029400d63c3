// Replays the hostile wheel corpus (tests/fixtures/wheels/hostile, written by make_hostile.py)
// through the wheel reader, as `list` reads (no RECORD check) and as `verify` and `stamp` read
// (RECORD checked), against what each file must do: read cleanly with a stated entry count, or
// fail naming the member (and a byte offset) with a stated reason. A corpus file without a row
// here fails the test. Under ASan/UBSan in the test command; limits keep each read small.
#include "support.h"

#include <map>

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
    const auto corpus = std::filesystem::path(FORGE_TEST_FIXTURES) / "wheels" / "hostile";
    replay_corpus(
        corpus, expectations(), "test_wheel_corpus.cpp",
        [](const std::string& name, const Expect& want, const std::vector<std::uint8_t>& bytes) {
            for (bool check_record : {false, true}) {
                SCOPED_TRACE(name + (check_record ? " (RECORD checked)" : " (as list reads)"));
                ReadOptions opts;
                opts.inspect_payloads = check_record;
                opts.check_record = check_record;
                opts.spill_member_bytes = 256; // the spill path too, on members this small
                auto r = corpus_read(bytes, name, opts);
                if (want.entries && !(check_record && want.record_only)) {
                    ASSERT_TRUE(r.ok()) << r.error().to_string();
                    EXPECT_EQ(entry_count(*r), static_cast<std::size_t>(*want.entries));
                    continue;
                }
                ASSERT_FALSE(r.ok()) << "read cleanly, but the file is hostile";
                EXPECT_EQ(r.error().file, name);
                EXPECT_TRUE(r.error().offset) << r.error().to_string();
                EXPECT_EQ(r.error().key, want.key) << r.error().to_string();
                EXPECT_TRUE(mentions(r.error(), want.says)) << r.error().to_string();
            }
        });
}

} // namespace
} // namespace forge::binary::test
