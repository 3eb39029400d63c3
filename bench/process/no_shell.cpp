// No shell: arguments full of shell syntax reach the program as bytes; nothing is expanded, run
// or redirected. Each runner is asked the plain way: a path and a vector of arguments.
#include "check.h"

int main() {
    const std::string child = bench::child_path();
    const std::vector<std::string> args = {
        "args", "$(touch pwned1)", "`touch pwned2`", "a b",        ";", "| touch pwned3", "*",
        "'q'",  "\"dq\"",          "$HOME",          ">redirected"};
    const std::string out = bench::report_file("no_shell");
    std::vector<std::string> argv = {child};
    argv.insert(argv.end(), args.begin(), args.end());
#if defined(BENCH_BOOST_V1)
    bp::child c(bp::exe = child, bp::args = args);
    c.wait();
#elif defined(BENCH_BOOST_V2)
    boost::asio::io_context ctx;
    bp2::process p(ctx, child, args);
    p.wait();
#else
    forge::ProcessSpec s;
    s.path = child;
    s.argv = argv;
    if (!forge::run_process(s)) return bench::verdict("no shell", "no", "did not start");
#endif
    const bool exact = bench::read_file(out) == bench::joined_nul(argv);
    const bool ran = ::access("pwned1", F_OK) == 0 || ::access("pwned2", F_OK) == 0 ||
                     ::access("pwned3", F_OK) == 0 || ::access("redirected", F_OK) == 0;
    if (exact && !ran)
        return bench::verdict("no shell", "yes", "11 shell-syntax arguments arrive as bytes");
    return bench::verdict("no shell", "no",
                          std::string(exact ? "" : "argv changed; ") + (ran ? "a shell ran" : ""));
}
