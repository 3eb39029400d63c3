// Running a toolkit binary (nvcc) without a shell: argv is passed as is, so paths with spaces or
// shell characters are never reinterpreted. Used by toolkit discovery and by `bundle`.
#pragma once

#include "core/result.h"

#include <string>
#include <vector>

namespace forge::tools {

struct ProcessOutput {
    int exit_code = -1;
    std::string output; // stdout and stderr interleaved, as a user would see them
};

struct ProcessOptions {
    std::string working_dir;            // "" = inherit
    std::vector<std::string> unset_env; // variables removed from the child's environment
};

// Runs `exe` with `args` (argv[1..]) and waits. A process that cannot be started is an Error
// naming `exe`; a non-zero exit is not an Error (the caller decides, with the output in hand).
Result<ProcessOutput> run_process(const std::string& exe, const std::vector<std::string>& args,
                                  const ProcessOptions& opts = {});

} // namespace forge::tools
