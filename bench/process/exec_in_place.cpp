// Exec in place: the entry hands every non-nvcc command to nvcc-forge-tools, and the front end
// with nothing to change runs nvcc, by replacing itself (execve): the program keeps the pid the
// build started, so the build's wait, its signals and its process-tree checks (toolkit/locate.h's
// depth marker) see one process, and nothing of ours stays resident. A runner that only starts
// children leaves us as the parent: a second process per call, signals to forward, a status to
// hand back.
#include "check.h"

#include <sys/wait.h>

int main() {
    const std::string child = bench::child_path();
    const std::string out = bench::report_file("exec_in_place");
    // A fork of ours plays the program the build started; it runs the child as each runner can.
    const pid_t started = ::fork();
    if (started == 0) {
#if defined(BENCH_BOOST_V1)
        // No call of v1 replaces the process: bp::child, bp::spawn, bp::system all fork
        // (detail/posix/executor.hpp).
        bp::child c(bp::exe = child, bp::args = std::vector<std::string>{"pids"});
        c.wait();
#elif defined(BENCH_BOOST_V2)
        // Nor of v2: every launcher forks or vforks (posix/*_launcher.hpp).
        boost::asio::io_context ctx;
        bp2::process p(ctx, child, std::vector<std::string>{"pids"});
        p.wait();
#else
        forge::ProcessSpec s;
        s.path = child;
        s.argv = {child, "pids"};
        forge::exec_process(s);
#endif
        ::_exit(0);
    }
    int st = 0;
    ::waitpid(started, &st, 0);
    const std::string pids = bench::read_file(out);
    const long pid = std::strtol(pids.c_str(), nullptr, 10);
    if (pid == started)
        return bench::verdict("exec in place", "yes",
                              "the program keeps the pid the caller started (exec_process)");
    return bench::verdict("exec in place", "no",
                          "no call replaces the process: the program ran as pid " +
                              std::to_string(pid) + ", a child of the pid " +
                              std::to_string(started) + " the caller started");
}
