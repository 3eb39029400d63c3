// The one escaping of names in text output (core/text.h), and Error::to_string using it.
#include "core/result.h"
#include "core/text.h"

#include <gtest/gtest.h>

using forge::escape_control;

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
