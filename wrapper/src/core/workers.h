// The one way work is spread over threads (the readers' payload workers, the embedded-fatbin
// search, audit's files): a loop that takes items from a queue all its copies share, run on a
// few threads at once.
#pragma once

#include <functional>

namespace forge {

// Runs `work` on up to `threads` threads, the calling thread one of them, and returns once every
// one has returned. `work` must take its items from a queue shared by all of its runs (an atomic
// index), so that any one run finishes what the others leave: a thread the system refuses to
// start (RLIMIT_NPROC, a container's pids limit, no memory for its stack) costs speed, never an
// item, and never the process (std::thread's constructor throws then; an uncaught throw, or a
// joinable thread left behind, would abort it).
void run_workers(unsigned threads, const std::function<void()>& work);

} // namespace forge
