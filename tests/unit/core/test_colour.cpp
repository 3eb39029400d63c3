// core/colour.h: the one rule for colour (a terminal, NO_COLOR unset or empty, TERM not "dumb")
// and the one painting of a word, which verify's verdicts and the wrapper's drop lines share.
#include "core/colour.h"

#include <cstdlib>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <optional>
#include <string>
#include <unistd.h>

namespace {

// A variable set for the test's length, then put back as it was.
class ScopedEnv {
  public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* was = std::getenv(name)) was_ = was;
        if (value != nullptr)
            ::setenv(name, value, 1);
        else
            ::unsetenv(name);
    }
    ~ScopedEnv() {
        if (was_)
            ::setenv(name_, was_->c_str(), 1);
        else
            ::unsetenv(name_);
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

  private:
    const char* name_;
    std::optional<std::string> was_;
};

} // namespace

TEST(Colour, PaintedOnlyWhenAsked) {
    EXPECT_EQ(forge::painted("dropped", forge::kColourYellow, true), "\x1b[33mdropped\x1b[0m");
    EXPECT_EQ(forge::painted("dropped", forge::kColourYellow, false), "dropped");
}

TEST(Colour, WantedOnATerminalOnlyWithoutNoColourOrDumbTerm) {
    const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0)
        GTEST_SKIP() << "no pseudo-terminal here";
    const int tty = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
    ASSERT_GE(tty, 0);
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    {
        const ScopedEnv no_colour("NO_COLOR", nullptr), term("TERM", "xterm");
        EXPECT_TRUE(forge::colour_wanted(tty));
        EXPECT_FALSE(forge::colour_wanted(pipe_fds[1]));
    }
    {
        const ScopedEnv no_colour("NO_COLOR", ""), term("TERM", "xterm");
        EXPECT_TRUE(forge::colour_wanted(tty)); // set and empty counts as unset (no-color.org)
    }
    {
        const ScopedEnv no_colour("NO_COLOR", "1"), term("TERM", "xterm");
        EXPECT_FALSE(forge::colour_wanted(tty));
    }
    {
        const ScopedEnv no_colour("NO_COLOR", nullptr), term("TERM", "dumb");
        EXPECT_FALSE(forge::colour_wanted(tty));
    }
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    ::close(tty);
    ::close(master);
}
