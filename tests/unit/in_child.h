// Runs a piece of a test in a forked child process and hands back what it printed and how it
// ended: for what must not touch the test process (dropped privileges, resource limits, a read
// that could hang or exhaust memory).
#pragma once

#include <csignal>
#include <functional>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace forge::test {

struct ChildResult {
    int status = -1; // as waitpid gives it; -1 when the child could not be started
    std::string out; // what `body` returned
    [[nodiscard]] bool exited_ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
    [[nodiscard]] bool timed_out() const {
        return WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM;
    }
};

// `body` runs in the child (it may _exit with its own code); its string comes back through a
// pipe. With `alarm_s`, a child still running after that many seconds dies of SIGALRM.
inline ChildResult in_child(const std::function<std::string()>& body, unsigned alarm_s = 0) {
    ChildResult r;
    int fds[2];
    if (::pipe(fds) != 0) return r;
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        return r;
    }
    if (pid == 0) {
        ::close(fds[0]);
        if (alarm_s != 0) ::alarm(alarm_s);
        const std::string out = body();
        const bool written =
            ::write(fds[1], out.data(), out.size()) == static_cast<ssize_t>(out.size());
        ::_exit(written ? 0 : 5);
    }
    ::close(fds[1]);
    char buf[4096];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
        r.out.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    if (::waitpid(pid, &r.status, 0) != pid) r.status = -1;
    return r;
}

} // namespace forge::test
