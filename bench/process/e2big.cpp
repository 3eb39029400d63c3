// The E2BIG fallback: near ARG_MAX the kernel refuses an argv + environment that the front end made
// longer than its caller's (injected targets, the depth marker). The runner must say that the
// start failed with E2BIG, distinctly from a child that ran and failed, so the front end can start
// the caller's own call instead.
#include "check.h"

#include <cerrno>
#include <cstring>

int main() {
    const std::string child = bench::child_path();
    // One argument longer than the kernel takes (MAX_ARG_STRLEN, 128 KiB): E2BIG on any Linux.
    const std::vector<std::string> too_long = {"exit", "0", std::string(200 * 1024, 'x')};
    const std::vector<std::string> fallback = {"exit", "7"};
    int refused = 0, status = -1;
#if defined(BENCH_BOOST_V1)
    try {
        bp::child c(bp::exe = child, bp::args = too_long);
        c.wait();
    } catch (const bp::process_error& e) {
        refused = e.code().value();
    }
    if (refused == E2BIG) {
        bp::child c(bp::exe = child, bp::args = fallback);
        c.wait();
        status = c.native_exit_code();
    }
#elif defined(BENCH_BOOST_V2)
    boost::asio::io_context ctx;
    try {
        bp2::process p(ctx, child, too_long);
        p.wait();
    } catch (const bp2::system_error& e) {
        refused = e.code().value();
    }
    if (refused == E2BIG) {
        bp2::process again(ctx, child, fallback);
        again.wait();
        status = again.native_exit_code();
    }
#else
    forge::ProcessSpec s;
    s.path = child;
    s.argv = {child};
    s.argv.insert(s.argv.end(), too_long.begin(), too_long.end());
    auto r = forge::run_process(s);
    if (!r && r.error().message.find(std::strerror(E2BIG)) != std::string::npos) refused = E2BIG;
    s.argv_if_too_long = std::vector<std::string>{child, "exit", "7"};
    s.env_if_too_long = [] { return std::vector<std::string>{}; };
    r = forge::run_process(s);
    if (r && r->too_long) status = r->status_code() << 8;
#endif
    if (refused == E2BIG && WIFEXITED(status) && WEXITSTATUS(status) == 7)
        return bench::verdict(
            "E2BIG fallback", "yes",
            std::string("the start fails with E2BIG") +
                (std::string(kRunner) == "posix_spawn"
                     ? "; ProcessSpec::argv_if_too_long/env_if_too_long start the fallback"
                     : " (an error of the launch, not a child status); the "
                       "fallback is a second launch of ours"));
    return bench::verdict("E2BIG fallback", "no",
                          "start error " + std::to_string(refused) + ", fallback " +
                              bench::status_text(status));
}
