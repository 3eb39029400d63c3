#include "ci/junit.h"

#include "core/text.h"

#include <cstdint>
#include <fmt/format.h>

namespace forge::ci {

namespace {

std::string status_element(const TestCase& c) {
    const char* tag = c.status == TestCase::Status::Failure ? "failure"
                      : c.status == TestCase::Status::Error ? "error"
                                                            : "skipped";
    std::string out = fmt::format("      <{} message=\"{}\"", tag, xml_escape(c.message, true));
    if (c.detail.empty()) return out + "/>\n";
    return out + fmt::format(">{}</{}>\n", xml_escape(c.detail, false), tag);
}

} // namespace

std::string xml_escape(std::string_view s, bool attribute) {
    constexpr unsigned char kFirstPrintable = 0x20;
    constexpr unsigned char kDel = 0x7f;
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        const char ch = s[i];
        const auto c = static_cast<unsigned char>(ch);
        if (c >= kDel || c < kFirstPrintable) {
            if (c == '\t' || c == '\n' || c == '\r') {
                out += attribute ? fmt::format("&#{};", static_cast<int>(c)) : std::string(1, ch);
                ++i;
                continue;
            }
            if (c > kDel) {
                if (std::size_t n = utf8_sequence_length(s, i); n > 0) {
                    out.append(s.substr(i, n));
                    i += n;
                    continue;
                }
            }
            out += escaped_byte(c);
            ++i;
            continue;
        }
        if (const char* e = markup_entity(ch))
            out += e;
        else
            out += ch;
        ++i;
    }
    return out;
}

std::string to_junit(std::string_view suite, const std::vector<TestCase>& cases) {
    std::size_t failures = 0, errors = 0, skipped = 0;
    for (const auto& c : cases) {
        failures += c.status == TestCase::Status::Failure ? 1 : 0;
        errors += c.status == TestCase::Status::Error ? 1 : 0;
        skipped += c.status == TestCase::Status::Skipped ? 1 : 0;
    }
    const std::string name = xml_escape(suite, true);
    const std::string counts =
        fmt::format("tests=\"{}\" failures=\"{}\" errors=\"{}\"", cases.size(), failures, errors);
    std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out += fmt::format("<testsuites name=\"{}\" {}>\n", name, counts);
    out += fmt::format("  <testsuite name=\"{}\" {} skipped=\"{}\">\n", name, counts, skipped);
    for (const auto& c : cases) {
        out += fmt::format("    <testcase classname=\"{}\" name=\"{}\"",
                           xml_escape(c.classname, true), xml_escape(c.name, true));
        if (c.status == TestCase::Status::Pass) {
            out += "/>\n";
            continue;
        }
        out += ">\n" + status_element(c) + "    </testcase>\n";
    }
    out += "  </testsuite>\n</testsuites>\n";
    return out;
}

} // namespace forge::ci
