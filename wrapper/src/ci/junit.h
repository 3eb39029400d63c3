// A JUnit XML report (the format CI systems read test results from: Jenkins, GitLab, Azure, the
// GitHub test-report actions), one <testsuite> with one <testcase> per result.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace forge::ci {

struct TestCase {
    enum class Status { Pass, Failure, Error, Skipped };
    std::string classname; // the thing tested, e.g. "dist/x.whl [pkg/_C.so]"
    std::string name;      // the check, e.g. "sass"
    Status status = Status::Pass;
    std::string message; // one line: the failure/error/skip message attribute
    std::string detail;  // the element's text (may span lines); "" = none
};

// XML text and attribute escaping (& < > " '). Characters XML 1.0 cannot carry at all (controls
// other than tab, newline and carriage return; bytes that are not UTF-8) are written as the text
// "\xHH", so the report stays well-formed and still shows what was there. In an attribute,
// tab/newline/carriage return become character references (an XML parser would otherwise turn
// them into spaces).
std::string xml_escape(std::string_view s, bool attribute);

// <?xml ...?><testsuites ...><testsuite name=... tests= failures= errors= skipped=> ... </...>
std::string to_junit(std::string_view suite, const std::vector<TestCase>& cases);

} // namespace forge::ci
