// Inherited descriptors: a descriptor the build handed us without close-on-exec (a make jobserver,
// a `3>file` redirect that nvcc writes as /dev/fd/3) reaches the program, as it would through a
// plain exec. Not in issue 31's list, but part of "never loses a user's output".
#include "check.h"

#include <fcntl.h>

int main() {
    const std::string child = bench::child_path();
    const int inherited = ::open("/dev/null", O_RDONLY); // no O_CLOEXEC
    if (inherited < 0 || ::dup2(inherited, 7) != 7) return 3;
    const std::string out = bench::report_file("inherit_fds");
    const std::vector<std::string> args = {"fds"};
    if (!bench::run_plain(child, args))
        return bench::verdict("inherited fds", "no", "did not start");
    const std::string fds = " " + bench::read_file(out);
    if (fds.find(" 7 ") != std::string::npos)
        return bench::verdict("inherited fds", "yes", "descriptor 7 reached the program");
    return bench::verdict("inherited fds", "no",
                          "descriptor 7 was closed before exec (open above 2: " +
                              fds.substr(1, fds.size() - 2) + ")");
}
