// A static entry, as bench/process/startup.cpp times it. main's first act is to read the clock:
//   entry            writes that time (CLOCK_MONOTONIC, ns, 8 bytes) to stdout and returns:
//                    exec-to-main is the start-up the binary costs before any code of ours runs
//   entry PROG ARG.. runs PROG through this build's runner and returns its exit code: the
//                    runner's own cost of starting and reaping one child
// Built four ways by run.sh, each with -static: BENCH_PLAIN (no runner: the floor), the project's
// core/process.h, BENCH_BOOST_V1, BENCH_BOOST_V2. Only the runner differs: every build formats
// its failure message with {fmt}, which the real entry links anyway (core/process.cpp uses it).
#if defined(BENCH_BOOST_V1)
#include <boost/process/args.hpp>
#include <boost/process/child.hpp>
#include <boost/process/exe.hpp>
#elif defined(BENCH_BOOST_V2)
#include <boost/asio/io_context.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/src.hpp>
#elif !defined(BENCH_PLAIN)
#include "core/process.h"
#endif

#include <cstdint>
#include <ctime>
#include <fmt/format.h>
#include <string>
#include <unistd.h>
#include <vector>

int main(int argc, char** argv) {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    if (argc < 2) {
        const std::int64_t ns = std::int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
        return ::write(STDOUT_FILENO, &ns, sizeof ns) == sizeof ns ? 0 : 1;
    }
    const std::vector<std::string> args(argv + 2, argv + argc);
    int rc = 0;
#if defined(BENCH_BOOST_V1)
    boost::process::child c(boost::process::exe = argv[1], boost::process::args = args);
    c.wait();
    rc = c.exit_code();
#elif defined(BENCH_BOOST_V2)
    boost::asio::io_context ctx;
    boost::process::v2::process p(ctx, argv[1], args);
    rc = p.wait();
#elif !defined(BENCH_PLAIN)
    forge::ProcessSpec s;
    s.path = argv[1];
    s.argv.assign(argv + 1, argv + argc);
    s.forward_signals = true;
    auto r = forge::run_process(s);
    rc = r ? r->status_code() : 127;
#endif
    if (rc != 0) fmt::print(stderr, "entry: {} exited {}\n", argv[1], rc);
    return rc;
}
