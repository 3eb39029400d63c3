// A rewindable stdin copy: the front end reads its stdin once into an in-memory file and may run
// nvcc twice (the injected call, then the caller's own): each run must read the same bytes from
// the first. The file's offset is shared with the child, so the runner must bind the file itself
// (not a pipe fed from it) and let us rewind it before each start.
#include "check.h"

#include <sys/mman.h>

int main() {
    const std::string child = bench::child_path();
    const std::string text = "__global__ void k() {}\n";
    const int copy = ::memfd_create("bench-stdin", MFD_CLOEXEC);
    if (copy < 0 || ::write(copy, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
        return 3;
    const std::vector<std::string> args = {"cat"};
    std::string got[2];
    for (auto& g : got) {
        const std::string out = bench::report_file("stdin_copy");
        ::lseek(copy, 0, SEEK_SET);
#if defined(BENCH_BOOST_V1)
        // bp::std_in takes a path, a pipe, a FILE* or an asio buffer; a descriptor of ours goes
        // through the posix extension, which dup2s it in the child.
        bp::child c(bp::exe = child, bp::args = args, bp::posix::fd.bind(STDIN_FILENO, copy));
        c.wait();
#elif defined(BENCH_BOOST_V2)
        boost::asio::io_context ctx;
        bp2::process p(ctx, child, args, bp2::process_stdio{copy, {}, {}});
        p.wait();
#else
        forge::ProcessSpec s;
        s.path = child;
        s.argv = {child, "cat"};
        s.stdin_fd = copy; // run_process rewinds it
        if (!forge::run_process(s)) return bench::verdict("stdin copy", "no", "did not start");
#endif
        g = bench::read_file(out);
    }
    if (got[0] == text && got[1] == text)
        return bench::verdict("stdin copy", "yes",
                              "a memfd bound as stdin, read whole by both runs");
    return bench::verdict("stdin copy", "no",
                          "first run read " + std::to_string(got[0].size()) + " bytes, second " +
                              std::to_string(got[1].size()));
}
