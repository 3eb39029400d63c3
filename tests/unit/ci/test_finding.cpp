// GitHub Actions workflow commands (ci/finding.h): the escaping GitHub documents and the exact
// command line for each shape of finding.
#include "ci/finding.h"

#include <gtest/gtest.h>

using namespace forge::ci;

TEST(GithubEscape, DataEscapesPercentAndLineBreaksOnly) {
    EXPECT_EQ(escape_github_data("100% a\r\nb"), "100%25 a%0D%0Ab");
    // ':' and ',' are the property separators, not the message's: kept in a message.
    EXPECT_EQ(escape_github_data("a:b,c::d"), "a:b,c::d");
    // Already-escaped text is escaped again (the runner decodes exactly once).
    EXPECT_EQ(escape_github_data("%0A"), "%250A");
}

TEST(GithubEscape, PropertyAlsoEscapesColonAndComma) {
    EXPECT_EQ(escape_github_property("a:b,c"), "a%3Ab%2Cc");
    EXPECT_EQ(escape_github_property("x%\r\n"), "x%25%0D%0A");
    EXPECT_EQ(escape_github_property("plain/path.cu"), "plain/path.cu");
}

TEST(GithubCommand, FullFinding) {
    Finding f{Severity::Error, "csrc/a.cu", 12, 0, "lint arch-gate", "needs 8.9"};
    EXPECT_EQ(github_command(f), "::error file=csrc/a.cu,line=12,title=lint arch-gate::needs 8.9");
}

TEST(GithubCommand, RangeAndSeverities) {
    Finding f{Severity::Warning, "setup.py", 15, 28, "t", "m"};
    EXPECT_EQ(github_command(f), "::warning file=setup.py,line=15,endLine=28,title=t::m");
    f.severity = Severity::Notice;
    f.end_line = 15; // a one-line range is no range
    EXPECT_EQ(github_command(f), "::notice file=setup.py,line=15,title=t::m");
}

TEST(GithubCommand, EmptyPropertiesAreLeftOut) {
    EXPECT_EQ(github_command({Severity::Error, "", 0, 0, "", "no device code"}),
              "::error::no device code");
    EXPECT_EQ(github_command({Severity::Error, "", 7, 0, "verify", "m"}),
              "::error line=7,title=verify::m");
    EXPECT_EQ(github_command({Severity::Warning, "x.so", 0, 3, "", "m"}), "::warning file=x.so::m");
}

TEST(GithubCommand, HostileTextCannotForgeACommand) {
    // A file name with a comma and a colon, a message with a newline that would start a second
    // command line.
    Finding f{Severity::Error, "dir,x/a:b.cu", 1, 0, "t,itle=x", "first\n::error::forged"};
    const std::string line = github_command(f);
    EXPECT_EQ(line,
              "::error file=dir%2Cx/a%3Ab.cu,line=1,title=t%2Citle=x::first%0A::error::forged");
    EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(GithubCommand, ToGithubIsOneLinePerFindingInOrder) {
    EXPECT_EQ(to_github({}), "");
    EXPECT_EQ(
        to_github({{Severity::Error, "a", 1, 0, "t", "x"}, {Severity::Notice, "", 0, 0, "", "y"}}),
        "::error file=a,line=1,title=t::x\n::notice::y\n");
}

TEST(WorkspacePath, RelativeUnderTheBaseAbsoluteElsewhere) {
    EXPECT_EQ(workspace_path("/ws/repo/csrc/a.cu", "/ws/repo"), "csrc/a.cu");
    EXPECT_EQ(workspace_path("/ws/repo/build/../csrc/a.cu", "/ws/repo/"), "csrc/a.cu");
    EXPECT_EQ(workspace_path("/other/a.cu", "/ws/repo"), "/other/a.cu");
    EXPECT_EQ(workspace_path("/ws/repository/a.cu", "/ws/repo"), "/ws/repository/a.cu");
    EXPECT_EQ(workspace_path("./csrc//b.cu", "/ws/repo"), "csrc/b.cu");
    EXPECT_EQ(workspace_path("", "/ws/repo"), "");
}
