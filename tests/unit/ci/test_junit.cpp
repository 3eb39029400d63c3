// The JUnit XML writer (ci/junit.h): escaping, and the exact document for each case status.
#include "ci/junit.h"

#include <gtest/gtest.h>

using namespace forge::ci;
using Status = TestCase::Status;

TEST(XmlEscape, MarkupCharacters) {
    EXPECT_EQ(xml_escape("a<b>&\"c'", false), "a&lt;b&gt;&amp;&quot;c&#39;");
    EXPECT_EQ(xml_escape("a<b>&\"c'", true), "a&lt;b&gt;&amp;&quot;c&#39;");
}

TEST(XmlEscape, WhitespaceKeptInTextReferencedInAttributes) {
    EXPECT_EQ(xml_escape("a\tb\nc\rd", false), "a\tb\nc\rd");
    EXPECT_EQ(xml_escape("a\tb\nc\rd", true), "a&#9;b&#10;c&#13;d");
}

TEST(XmlEscape, WhatXmlCannotCarryIsShownAsHex) {
    EXPECT_EQ(xml_escape(std::string("a\0b", 3), false), "a\\x00b");
    EXPECT_EQ(xml_escape("\x1b[31m\x7f", false), "\\x1b[31m\\x7f");
    // UTF-8 is kept; a stray continuation byte, a truncated sequence, an overlong form and a
    // surrogate are not UTF-8.
    EXPECT_EQ(xml_escape("\xc3\xa9\xe2\x80\x94\xf0\x9f\x98\x80", false),
              "\xc3\xa9\xe2\x80\x94\xf0\x9f\x98\x80");
    EXPECT_EQ(xml_escape("\x80", false), "\\x80");
    EXPECT_EQ(xml_escape("a\xe2\x80", false), "a\\xe2\\x80");
    EXPECT_EQ(xml_escape("\xc0\xaf", false), "\\xc0\\xaf");
    EXPECT_EQ(xml_escape("\xed\xa0\x80", false), "\\xed\\xa0\\x80");
}

TEST(Junit, EmptySuite) {
    EXPECT_EQ(to_junit("nvcc-forge verify", {}),
              "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
              "<testsuites name=\"nvcc-forge verify\" tests=\"0\" failures=\"0\" errors=\"0\">\n"
              "  <testsuite name=\"nvcc-forge verify\" tests=\"0\" failures=\"0\" errors=\"0\" "
              "skipped=\"0\">\n"
              "  </testsuite>\n</testsuites>\n");
}

TEST(Junit, EveryStatusWithCounts) {
    const std::vector<TestCase> cases = {
        {"x.so", "sass", Status::Pass, "", ""},
        {"x.so", "ptx", Status::Failure, "missing compute_90", "missing compute_90\nlist: 9.0+PTX"},
        {"y.so", "read", Status::Error, "cannot read", ""},
        {"libgomp.so", "device-code", Status::Skipped, "host-only", ""},
    };
    EXPECT_EQ(to_junit("s", cases),
              "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
              "<testsuites name=\"s\" tests=\"4\" failures=\"1\" errors=\"1\">\n"
              "  <testsuite name=\"s\" tests=\"4\" failures=\"1\" errors=\"1\" skipped=\"1\">\n"
              "    <testcase classname=\"x.so\" name=\"sass\"/>\n"
              "    <testcase classname=\"x.so\" name=\"ptx\">\n"
              "      <failure message=\"missing compute_90\">missing compute_90\nlist: "
              "9.0+PTX</failure>\n"
              "    </testcase>\n"
              "    <testcase classname=\"y.so\" name=\"read\">\n"
              "      <error message=\"cannot read\"/>\n"
              "    </testcase>\n"
              "    <testcase classname=\"libgomp.so\" name=\"device-code\">\n"
              "      <skipped message=\"host-only\"/>\n"
              "    </testcase>\n"
              "  </testsuite>\n</testsuites>\n");
}

TEST(Junit, NamesAndMessagesAreEscaped) {
    const std::string xml =
        to_junit("a&b", {{"dist/x.whl [p/<q>.so]", "n\"", Status::Failure, "m\n<", "d]]>&"}});
    EXPECT_NE(xml.find("<testsuites name=\"a&amp;b\""), std::string::npos);
    EXPECT_NE(xml.find("<testcase classname=\"dist/x.whl [p/&lt;q&gt;.so]\" name=\"n&quot;\">"),
              std::string::npos);
    EXPECT_NE(xml.find("<failure message=\"m&#10;&lt;\">d]]&gt;&amp;</failure>"),
              std::string::npos);
}
