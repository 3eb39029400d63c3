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
    if (!bench::run_plain(child, args)) return bench::verdict("no shell", "no", "did not start");
    const bool exact = bench::read_file(out) == bench::joined_nul(argv);
    const bool ran = ::access("pwned1", F_OK) == 0 || ::access("pwned2", F_OK) == 0 ||
                     ::access("pwned3", F_OK) == 0 || ::access("redirected", F_OK) == 0;
    if (exact && !ran)
        return bench::verdict("no shell", "yes", "11 shell-syntax arguments arrive as bytes");
    return bench::verdict("no shell", "no",
                          std::string(exact ? "" : "argv changed; ") + (ran ? "a shell ran" : ""));
}
