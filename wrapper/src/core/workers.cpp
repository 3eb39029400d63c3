#include "core/workers.h"

#include <system_error>
#include <thread>
#include <vector>

namespace forge {

void run_workers(unsigned threads, const std::function<void()>& work) {
    std::vector<std::thread> pool;
    for (unsigned w = 1; w < threads; ++w) {
        try {
            pool.emplace_back(work);
        } catch (const std::system_error&) {
            break; // the threads started so far and this one share the rest
        }
    }
    work();
    for (auto& t : pool)
        t.join();
}

} // namespace forge
