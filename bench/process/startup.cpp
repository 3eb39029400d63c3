// Start-up of static entries side by side, in one run:
//   startup ROUNDS CHILD BIN...
// Each round starts every BIN once in a new random order (the same noise for all): exec-to-main
// (the clock read before posix_spawn against the one BIN's main writes first, see entry.cpp),
// exec-to-exit of that run, and the wall time of `BIN CHILD exit 0` (BIN's runner starting and
// reaping one child). Prints the binary's size and the median and 90th percentile of each, in µs.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <random>
#include <spawn.h>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace {

std::int64_t now_ns() {
    timespec t{};
    ::clock_gettime(CLOCK_MONOTONIC, &t);
    return std::int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

struct Samples {
    std::vector<double> to_main, to_exit, with_child;
};

// One start of `bin` with no argument: returns {exec-to-main, exec-to-exit} in µs.
bool time_start(const char* bin, double* to_main, double* to_exit) {
    int p[2];
    if (::pipe(p) != 0) return false;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, p[0]);
    char* argv[] = {const_cast<char*>(bin), nullptr};
    pid_t pid = 0;
    const std::int64_t t0 = now_ns();
    const int rc = ::posix_spawn(&pid, bin, &fa, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(p[1]);
    std::int64_t at_main = 0;
    const bool read_ok = rc == 0 && ::read(p[0], &at_main, sizeof at_main) == sizeof at_main;
    int st = 0;
    if (rc == 0) ::waitpid(pid, &st, 0);
    const std::int64_t t1 = now_ns();
    ::close(p[0]);
    *to_main = static_cast<double>(at_main - t0) / 1e3;
    *to_exit = static_cast<double>(t1 - t0) / 1e3;
    return read_ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

// `bin child exit 0`: µs from the spawn to the reap.
bool time_with_child(const char* bin, const char* child, double* us) {
    char* argv[] = {const_cast<char*>(bin), const_cast<char*>(child), const_cast<char*>("exit"),
                    const_cast<char*>("0"), nullptr};
    pid_t pid = 0;
    const std::int64_t t0 = now_ns();
    if (::posix_spawn(&pid, bin, nullptr, nullptr, argv, environ) != 0) return false;
    int st = 0;
    ::waitpid(pid, &st, 0);
    *us = static_cast<double>(now_ns() - t0) / 1e3;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

double pct(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: startup ROUNDS CHILD BIN...\n");
        return 2;
    }
    const int rounds = std::atoi(argv[1]);
    const char* child = argv[2];
    std::vector<const char*> bins(argv + 3, argv + argc);
    std::vector<Samples> samples(bins.size());
    std::vector<size_t> order(bins.size());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::mt19937 rng(12345);
    for (int r = 0; r < rounds; ++r) {
        std::shuffle(order.begin(), order.end(), rng);
        for (size_t i : order) {
            double m = 0, e = 0, c = 0;
            if (!time_start(bins[i], &m, &e) || !time_with_child(bins[i], child, &c)) {
                std::fprintf(stderr, "startup: %s failed\n", bins[i]);
                return 1;
            }
            samples[i].to_main.push_back(m);
            samples[i].to_exit.push_back(e);
            samples[i].with_child.push_back(c);
        }
    }
    std::printf("%-28s %10s %18s %18s %22s\n", "binary (static)", "size KiB", "exec->main med/p90",
                "exec->exit med/p90", "run one child med/p90");
    for (size_t i = 0; i < bins.size(); ++i) {
        struct stat sb {};
        ::stat(bins[i], &sb);
        const std::string name = std::string(bins[i]).substr(std::string(bins[i]).rfind('/') + 1);
        const Samples& s = samples[i];
        std::printf("%-28s %10lld %10.0f / %5.0f %10.0f / %5.0f %14.0f / %5.0f\n", name.c_str(),
                    static_cast<long long>(sb.st_size / 1024), pct(s.to_main, 0.5),
                    pct(s.to_main, 0.9), pct(s.to_exit, 0.5), pct(s.to_exit, 0.9),
                    pct(s.with_child, 0.5), pct(s.with_child, 0.9));
    }
    std::printf("(%d rounds, µs; each round runs every binary once, in a random order)\n", rounds);
    return 0;
}
