// Exact argv: the program gets the argv we give, element for element, argv[0] included. The front
// end runs nvcc with argv[0] as the caller spelled it (nvcc derives its toolkit root from it), a
// launcher (ccache) under the name the caller used, and the tools with argv[0] "nvcc-forge"; an
// argument may be empty, hold any byte but NUL, or be long.
#include "check.h"

namespace {

std::vector<std::string> wanted_argv() {
    return {"nvcc", "args", "", "x y", "\xff\xfe not UTF-8", std::string(100 * 1024, 'a'), "-c"};
}

#if defined(BENCH_BOOST_V1)
// v1 puts the executable's path in argv[0] (detail/posix/basic_cmd.hpp, make_cmd). Its "cmd
// style" (bp::args only) takes argv[0] from the arguments but also runs it, searched on PATH; an
// extension can then overwrite the executor's undocumented `exe` member before the fork.
struct ExeOverride : bp::extend::handler {
    const char* path;
    explicit ExeOverride(const char* p) : path(p) {}
    template <class Executor> void on_setup(Executor& e) const { e.exe = path; }
};
#endif

} // namespace

int main() {
    const std::string child = bench::child_path();
    const std::vector<std::string> argv = wanted_argv();
    const std::string out = bench::report_file("exact_argv");
    const std::vector<std::string> rest(argv.begin() + 1, argv.end());
#if defined(BENCH_BOOST_V1)
    bp::child plain(bp::exe = child, bp::args = rest);
    plain.wait();
    const std::string got = bench::read_file(out);
    if (got == bench::joined_nul(argv)) return bench::verdict("exact argv", "yes", "exe + args");
    bench::report_file("exact_argv");
    bp::child hacked(bp::args = argv, ExeOverride(child.c_str()));
    hacked.wait();
    if (bench::read_file(out) == bench::joined_nul(argv))
        return bench::verdict("exact argv", "by-hand",
                              "exe+args sets argv[0] to the path (got '" +
                                  got.substr(0, got.find('\0')) +
                                  "'); argv[0] of our choosing only by overwriting the executor's "
                                  "internal `exe` in an extension");
    return bench::verdict("exact argv", "no", "argv[0] is the executable's path");
#elif defined(BENCH_BOOST_V2)
    boost::asio::io_context ctx;
    bp2::process plain(ctx, child, rest);
    plain.wait();
    const std::string got = bench::read_file(out);
    if (got == bench::joined_nul(argv)) return bench::verdict("exact argv", "yes", "path + args");
    bench::report_file("exact_argv");
    // The launcher's build_argv_ overload for a `const char**` (posix/default_launcher.hpp) takes
    // it as the whole argv, argv[0] included.
    std::vector<const char*> raw;
    for (const auto& a : argv)
        raw.push_back(a.c_str());
    raw.push_back(nullptr);
    const char** raw_argv = raw.data();
    bp2::process whole(ctx, child, raw_argv);
    whole.wait();
    if (bench::read_file(out) == bench::joined_nul(argv))
        return bench::verdict("exact argv", "by-hand",
                              "path+args sets argv[0] to the path (got '" +
                                  got.substr(0, got.find('\0')) +
                                  "'); a raw const char** argv (an undocumented launcher overload) "
                                  "is passed as is");
    return bench::verdict("exact argv", "no", "argv[0] is the executable's path");
#else
    forge::ProcessSpec s;
    s.path = child;
    s.argv = argv;
    if (!forge::run_process(s)) return bench::verdict("exact argv", "no", "did not start");
    if (bench::read_file(out) == bench::joined_nul(argv))
        return bench::verdict("exact argv", "yes", "ProcessSpec::path + argv (argv[0] included)");
    return bench::verdict("exact argv", "no", "argv changed");
#endif
}
