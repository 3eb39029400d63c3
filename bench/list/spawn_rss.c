/* spawn_rss CMD [ARG...]: runs CMD with stdout and stderr to /dev/null and prints one line,
 * "WALL_NS CPU_US MAXRSS_KIB EXIT SYS_US MINFLT MAJFLT": the wall time from before fork to after
 * the child is reaped (spawn included), its user + system CPU time, its peak resident set, its
 * exit status (128 + the signal when killed), then the system part of its CPU time and its minor
 * and major page faults (where the sys time goes: bench/list/floor.py).
 *
 * Why a launcher: Linux records the peak RSS of a process across exec, and fork gives the child
 * a copy of the parent's resident anonymous pages, so a child forked from a Python interpreter
 * reports at least the interpreter's own resident set (tens of MiB) as its peak. Forked from this
 * small program, the floor is this program's (about 1 MiB; `spawn_rss /bin/true` shows it). */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: spawn_rss CMD [ARG...]\n");
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        dup2(fd, 2);
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) return 2;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long long wall = (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
    long long cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL + ru.ru_utime.tv_usec +
                    ru.ru_stime.tv_usec;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    long long sys = ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec;
    printf("%lld %lld %ld %d %lld %ld %ld\n", wall, cpu, ru.ru_maxrss, code, sys, ru.ru_minflt,
           ru.ru_majflt);
    return 0;
}
