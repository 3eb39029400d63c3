// core/workers.h: every item of a shared queue is done exactly once, however many threads the
// system lets the runner start.
#include "core/workers.h"

#include "../in_child.h"

#include <atomic>
#include <gtest/gtest.h>
#include <mutex>
#include <set>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

struct Queue {
    std::atomic<unsigned> next{0};
    std::vector<std::atomic<int>> done;
    std::mutex mutex;
    std::set<std::thread::id> threads;
    explicit Queue(unsigned n) : done(n) {}
    void work() {
        {
            std::lock_guard lock(mutex);
            threads.insert(std::this_thread::get_id());
        }
        for (unsigned i = next++; i < done.size(); i = next++)
            ++done[i];
    }
    [[nodiscard]] bool each_once() const {
        for (const auto& d : done)
            if (d != 1) return false;
        return true;
    }
};

TEST(Workers, EveryItemOnceTheCallerOneOfTheThreads) {
    for (unsigned threads : {0u, 1u, 2u, 8u}) {
        Queue q(5000);
        forge::run_workers(threads, [&] { q.work(); });
        EXPECT_TRUE(q.each_once()) << threads;
        EXPECT_EQ(q.threads.count(std::this_thread::get_id()), 1u) << threads;
        EXPECT_LE(q.threads.size(), std::max(threads, 1u)) << threads;
    }
}

TEST(Workers, AThreadTheSystemRefusesCostsNoItem) {
    // No new thread may start (RLIMIT_NPROC 0, as root for user nobody, whom it binds: a pids
    // limit as a build container has): clone fails with EAGAIN and std::thread throws. In a child,
    // which keeps the limit and the user to itself. (A huge default stack size made the same
    // failure natively, but qemu-user tracks every guest page it maps and ran out of memory.)
    const auto r = forge::test::in_child([] {
        if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0))
            return std::string("cannot become nobody");
        const rlimit none{0, 0};
        if (::setrlimit(RLIMIT_NPROC, &none) != 0) return std::string("no RLIMIT_NPROC");
        Queue q(5000);
        forge::run_workers(8, [&] { q.work(); });
        return std::string(q.each_once() && q.threads.size() == 1 ? "ok" : "lost items");
    });
    ASSERT_TRUE(r.exited_ok()) << r.status;
    EXPECT_EQ(r.out, "ok");
}

} // namespace
