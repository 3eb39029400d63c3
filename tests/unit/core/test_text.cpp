// The one escaping of names in text output (core/text.h), and Error::to_string using it.
#include "core/result.h"
#include "core/text.h"

#include <gtest/gtest.h>
#include <optional>
#include <string_view>

using forge::escape_control;
using forge::first_invalid_utf8;
using forge::utf8_sequence_length;

TEST(Text, ControlCharactersAreEscapedEverythingElseIsKept) {
    EXPECT_EQ(escape_control("pkg/_C.so"), "pkg/_C.so");
    EXPECT_EQ(escape_control("a\nb\rc\td"), "a\\nb\\rc\\td");
    EXPECT_EQ(escape_control("\x1b[31mred"), "\\x1b[31mred");
    EXPECT_EQ(escape_control(std::string_view("nul\0del\x7f", 8)), "nul\\x00del\\x7f");
    EXPECT_EQ(escape_control("caf\xc3\xa9 \\ quote\""), "caf\xc3\xa9 \\ quote\""); // UTF-8 kept
    EXPECT_EQ(escape_control("two\nlines\x1b", /*keep_newlines=*/true), "two\nlines\\x1b");
}

TEST(Text, ErrorsEscapeTheFileTheKeyAndTheMessage) {
    forge::Error e{"bad \x1b]0;title\x07 name\nsecond line", "dir/a\nb.whl"};
    e.key = "pkg/\x1b.so";
    e.offset = 16;
    EXPECT_EQ(e.to_string(),
              "dir/a\\nb.whl: at byte 16 (0x10): 'pkg/\\x1b.so': bad \\x1b]0;title\\x07 "
              "name\nsecond line");
}

TEST(TextTest, Utf8SequenceLengthIsTheOneTable) {
    // The table JUnit's XML and the YAML check share (issue 40: junit.cpp had a second one).
    EXPECT_EQ(utf8_sequence_length("a", 0), 1u);
    EXPECT_EQ(utf8_sequence_length("\xc3\xa9", 0), 2u);
    EXPECT_EQ(utf8_sequence_length("\xe2\x82\xac", 0), 3u);
    EXPECT_EQ(utf8_sequence_length("\xf0\x9f\x98\x80", 0), 4u);
    EXPECT_EQ(utf8_sequence_length("x\xc3\xa9", 1), 2u);
    for (std::string_view bad : {"\x80", "\xc0\x80", "\xe0\x80\x80", "\xed\xa0\x80",
                                 "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xc3", "\xe2\x82"})
        EXPECT_EQ(utf8_sequence_length(bad, 0), 0u) << escape_control(bad);
    EXPECT_EQ(first_invalid_utf8("ok \xc3\xa9 \xff"), std::optional<std::size_t>(6));
    EXPECT_EQ(first_invalid_utf8("ok \xc3\xa9"), std::nullopt);
}
