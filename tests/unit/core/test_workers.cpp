// core/workers.h: every item of a shared queue is done exactly once, however many threads the
// system lets the runner start.
#include "core/workers.h"

#include "../in_child.h"

#include <atomic>
#include <gtest/gtest.h>
#include <mutex>
#include <pthread.h>
#include <set>
#include <thread>
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
    // Every new thread's stack is far larger than any address space: pthread_create fails with
    // EAGAIN and std::thread throws, as under a pids limit. (A child: the default stays there.)
    const auto r = forge::test::in_child([] {
        pthread_attr_t huge;
        pthread_attr_init(&huge);
        pthread_attr_setstacksize(&huge, std::size_t{1} << 46);
        if (pthread_setattr_default_np(&huge) != 0) return std::string("no default attr");
        Queue q(5000);
        forge::run_workers(8, [&] { q.work(); });
        return std::string(q.each_once() && q.threads.size() == 1 ? "ok" : "lost items");
    });
    ASSERT_TRUE(r.exited_ok()) << r.status;
    EXPECT_EQ(r.out, "ok");
}

} // namespace
