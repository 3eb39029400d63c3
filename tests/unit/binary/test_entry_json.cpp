// binary::entries_json, the `list --format json` writer: its exact bytes (one entry per line,
// nulls for unread fields) and its strings, written under core/json.h's rule.
#include "binary/entry_json.h"

#include <gtest/gtest.h>

namespace forge::binary {
namespace {

Entry sample() {
    Entry e;
    e.file = "lib/_C.so";
    e.section = ".nv_fatbin";
    e.fatbin_offset = 16;
    e.entry_offset = 80;
    e.fatbin_index = 1;
    e.target = *arch::parse_target("sm_90a");
    e.compression = Compression::Zstd;
    e.payload_size = 4096;
    e.uncompressed_size = 9000;
    return e;
}

TEST(EntryJson, NamesAreWrittenUnderTheOneJsonRule) {
    // core/json.h's json_quote: escapes, UTF-8 kept, a byte that is not UTF-8 as U+FFFD.
    Entry e = sample();
    e.file = "a\"b\\c\n\x01"
             "caf\xc3\xa9";
    e.member = "pkg/_C\xff.so";
    const std::string j = entry_json(e);
    EXPECT_NE(j.find("\"file\": \"a\\\"b\\\\c\\n\\u0001caf\xc3\xa9\""), std::string::npos) << j;
    EXPECT_NE(j.find("\"member\": \"pkg/_C\xef\xbf\xbd.so\""), std::string::npos) << j;
}

TEST(EntryJson, OneEntryWithUnreadFieldsAsNull) {
    EXPECT_EQ(entry_json(sample()),
              "  {\"file\": \"lib/_C.so\", \"member\": null, \"section\": \".nv_fatbin\", "
              "\"fatbin\": 1, \"fatbin_offset\": 16, \"offset\": 80, \"kind\": \"sass\", "
              "\"arch\": \"sm_90a\", \"compression\": \"zstd\", \"size\": 4096, "
              "\"uncompressed_size\": 9000, \"stub\": null, \"kernels\": null, \"toolkit\": "
              "null, \"found\": \"registered\"}");
}

TEST(EntryJson, InspectedFieldsAndMember) {
    Entry e = sample();
    e.member = "pkg/_C.so";
    e.stub = true;
    e.kernels = 3;
    e.toolkit = "13.0";
    e.found = Found::Embedded;
    const std::string j = entry_json(e);
    EXPECT_NE(j.find("\"member\": \"pkg/_C.so\""), std::string::npos) << j;
    EXPECT_NE(
        j.find("\"stub\": true, \"kernels\": 3, \"toolkit\": \"13.0\", \"found\": \"embedded\"}"),
        std::string::npos)
        << j;
}

TEST(EntryJson, ArrayLayout) {
    EXPECT_EQ(entries_json({}), "[]\n");
    const std::string one = entry_json(sample());
    EXPECT_EQ(entries_json({sample()}), "[\n" + one + "\n]\n");
    EXPECT_EQ(entries_json({sample(), sample()}), "[\n" + one + ",\n" + one + "\n]\n");
}

} // namespace
} // namespace forge::binary
