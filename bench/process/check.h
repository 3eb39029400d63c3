// What the behaviour programs of bench/process share: which runner this build uses, the child
// helper's path, its report, and the one verdict line each program prints.
// Each program is compiled three times by run.sh: with core/process.h (the project's runner,
// posix_spawn), with BENCH_BOOST_V1 (Boost.Process v1, Debian 12's Boost 1.74) and with
// BENCH_BOOST_V2 (Boost.Process v2: Debian 12's Boost 1.81, and Boost 1.85's headers from PyPI).
#pragma once

#if defined(BENCH_BOOST_V1)
#include <boost/process/args.hpp>
#include <boost/process/child.hpp>
#include <boost/process/exe.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/posix.hpp>
namespace bp = boost::process;
inline constexpr const char* kRunner = "boost-v1";
#elif defined(BENCH_BOOST_V2)
#include <boost/asio/io_context.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/src.hpp> // header-only: the library's sources in this one TU
#include <boost/process/v2/stdio.hpp>
namespace bp2 = boost::process::v2;
#ifndef BENCH_V2_LABEL
#define BENCH_V2_LABEL "boost-v2"
#endif
inline constexpr const char* kRunner = BENCH_V2_LABEL; // run.sh builds v2 of two Boost releases
#else
#include "core/process.h"
inline constexpr const char* kRunner = "posix_spawn";
#endif

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace bench {

// run.sh passes the child helper's path in BENCH_CHILD and a scratch directory as the cwd.
inline std::string child_path() {
    const char* p = std::getenv("BENCH_CHILD");
    if (p == nullptr) {
        std::fprintf(stderr, "BENCH_CHILD is not set (run bench/process/run.sh)\n");
        std::exit(3);
    }
    return p;
}

// The child's report (it writes to $BENCH_OUT): a fresh file name for each run.
inline std::string report_file(const char* name) {
    const std::string path = std::string(name) + ".out";
    ::unlink(path.c_str());
    ::setenv("BENCH_OUT", path.c_str(), 1);
    return path;
}

inline std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

inline std::string joined_nul(const std::vector<std::string>& argv) {
    std::string all;
    for (const auto& a : argv)
        all.append(a.c_str(), a.size() + 1);
    return all;
}

// "exit N" or "signal N" of a waitpid status.
inline std::string status_text(int status) {
    if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
    if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
    return "status " + std::to_string(status);
}

// Runs `path` with `args` the plain way each library offers, a path and the arguments (argv[0] is
// then the path for all three), and waits; false if it did not start.
inline bool run_plain(const std::string& path, const std::vector<std::string>& args) {
#if defined(BENCH_BOOST_V1)
    bp::child c(bp::exe = path, bp::args = args);
    c.wait();
    return true;
#elif defined(BENCH_BOOST_V2)
    boost::asio::io_context ctx;
    bp2::process p(ctx, path, args);
    p.wait();
    return true;
#else
    forge::ProcessSpec s;
    s.path = path;
    s.argv = {path};
    s.argv.insert(s.argv.end(), args.begin(), args.end());
    return forge::run_process(s).ok();
#endif
}

// The one line run.sh reads: yes (the library does it), by-hand (it does with code of ours around
// it, named in the detail), no (it cannot).
inline int verdict(const char* behaviour, const char* answer, const std::string& detail) {
    std::printf("%s\t%s\t%s\t%s\n", behaviour, kRunner, answer, detail.c_str());
    return 0;
}

} // namespace bench
