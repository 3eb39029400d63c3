// The one JSON writing rule (core/json.h): bytes that are not UTF-8 become U+FFFD, the same in
// the DOM writer and in json_quote(); nothing throws. And the UTF-8 check the YAML loader uses.
#include "../seed.h"
#include "core/json.h"
#include "core/text.h"

#include <gtest/gtest.h>
#include <random>

namespace {

const std::string kReplacement = "\xef\xbf\xbd"; // U+FFFD in UTF-8

TEST(Json, InvalidUtf8IsReplacedNotThrown) {
    nlohmann::json j;
    j["reason"] = std::string("bad \xff byte");
    j["name"] = "caf\xc3\xa9"; // valid UTF-8 stays as it is, not \u escaped
    EXPECT_THROW((void)j.dump(), nlohmann::json::type_error); // what a raw dump() does
    EXPECT_EQ(forge::json_text(j),
              "{\"name\":\"caf\xc3\xa9\",\"reason\":\"bad " + kReplacement + " byte\"}");
    nlohmann::ordered_json o;
    o["member"] = std::string("pkg/\xc3(.so");
    EXPECT_EQ(forge::json_text(o, 2), "{\n  \"member\": \"pkg/" + kReplacement + "(.so\"\n}");
    // What is written reads back as JSON.
    EXPECT_EQ(nlohmann::json::parse(forge::json_text(j))["reason"],
              "bad " + kReplacement + " byte");
}

TEST(Json, QuoteWritesWhatTheDomWriterWrites) {
    for (const std::string s :
         {std::string("plain/path.so"), std::string("q\"b\\s\n\t\x01\x7f"), std::string("\xff\xfe"),
          std::string("caf\xc3\xa9"), std::string("\xe2\x82"), std::string("x\xed\xa0\x80y")})
        EXPECT_EQ(forge::json_quote(s), forge::json_text(nlohmann::json(s))) << s;
    std::mt19937 rng(forge::test::test_seed(29));
    for (int n = 0; n < 2000; ++n) {
        std::string s(rng() % 12, '\0');
        for (char& c : s) // mostly ASCII, with UTF-8 lead and continuation bytes and junk
            c = static_cast<char>(rng() % 4 == 0 ? 0x80 + rng() % 0x80 : rng() % 0x80);
        ASSERT_EQ(forge::json_quote(s), forge::json_text(nlohmann::json(s)))
            << "seed " << forge::test::test_seed(29) << " case " << n;
    }
}

TEST(Text, FirstInvalidUtf8) {
    using forge::first_invalid_utf8;
    EXPECT_EQ(first_invalid_utf8("plain ascii"), std::nullopt);
    EXPECT_EQ(first_invalid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), std::nullopt);
    EXPECT_EQ(first_invalid_utf8("ab\xff"), 2u);
    EXPECT_EQ(first_invalid_utf8("\x80"), 0u);              // a continuation byte alone
    EXPECT_EQ(first_invalid_utf8("x\xc0\xaf"), 1u);         // overlong '/'
    EXPECT_EQ(first_invalid_utf8("x\xe0\x80\xaf"), 1u);     // overlong, three bytes
    EXPECT_EQ(first_invalid_utf8("x\xed\xa0\x80"), 1u);     // a UTF-16 surrogate
    EXPECT_EQ(first_invalid_utf8("x\xf4\x90\x80\x80"), 1u); // above U+10FFFF
    EXPECT_EQ(first_invalid_utf8("abc\xe2\x82"), 3u);       // cut short
    EXPECT_EQ(first_invalid_utf8("\xc3\xa9\xc3"), 2u);
}

} // namespace
