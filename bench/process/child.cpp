// The program every runner in bench/process starts: it reports what it was given, as it was given.
//   child args ARG...  its whole argv, each element ended by a NUL byte
//   child cat          its stdin, copied
//   child pause FILE   its blocked-signal mask (/proc/self/status SigBlk), then creates FILE and
//                      waits for a signal with the default disposition (so it dies of SIGTERM)
//   child exit N       exits N
//   child pids         "<pid> <ppid>"
//   child fds          the descriptors it has open above 2
// The report goes to the file named by BENCH_OUT when set (every runner passes the environment
// on), else to stdout: no runner's capture mechanism is part of what is compared.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <string>
#include <unistd.h>

namespace {

int out_fd() {
    const char* path = std::getenv("BENCH_OUT");
    if (path == nullptr) return STDOUT_FILENO;
    return ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

void put(int fd, const std::string& s) {
    size_t done = 0;
    while (done < s.size()) {
        ssize_t n = ::write(fd, s.data() + done, s.size() - done);
        if (n <= 0) std::exit(97);
        done += static_cast<size_t>(n);
    }
}

std::string sig_blocked() {
    FILE* f = std::fopen("/proc/self/status", "r");
    char line[256];
    std::string mask = "?";
    while (f != nullptr && std::fgets(line, sizeof line, f) != nullptr)
        if (std::strncmp(line, "SigBlk:", 7) == 0)
            mask = std::string(line + 8, std::strcspn(line + 8, "\n"));
    if (f != nullptr) std::fclose(f);
    return mask;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    const std::string mode = argv[1];
    if (mode == "exit" && argc == 3) return std::atoi(argv[2]);
    const int fd = out_fd();
    if (mode == "args") {
        std::string all;
        for (int i = 0; i < argc; ++i)
            all.append(argv[i], std::strlen(argv[i]) + 1);
        put(fd, all);
    } else if (mode == "cat") {
        char buf[4096];
        ssize_t n;
        while ((n = ::read(STDIN_FILENO, buf, sizeof buf)) > 0)
            put(fd, std::string(buf, static_cast<size_t>(n)));
    } else if (mode == "pause" && argc == 3) {
        put(fd, sig_blocked() + "\n");
        ::close(::open(argv[2], O_WRONLY | O_CREAT, 0644));
        for (;;)
            ::pause();
    } else if (mode == "pids") {
        put(fd, std::to_string(::getpid()) + " " + std::to_string(::getppid()) + "\n");
    } else if (mode == "fds") {
        std::string list;
        DIR* d = ::opendir("/proc/self/fd");
        while (dirent* e = d != nullptr ? ::readdir(d) : nullptr) {
            const int n = std::atoi(e->d_name);
            if (e->d_name[0] != '.' && n > 2 && n != fd && n != ::dirfd(d))
                list += std::to_string(n) + " ";
        }
        if (d != nullptr) ::closedir(d);
        put(fd, list + "\n");
    } else {
        return 2;
    }
    return 0;
}
