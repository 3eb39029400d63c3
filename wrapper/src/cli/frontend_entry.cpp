// Placeholder until the wrapper module lands: exec the real nvcc untouched.
#include "cli/frontend_entry.h"

#include <cstdio>

namespace forge::cli {

int run_as_nvcc(int, char**) {
    std::fputs("nvcc-forge: the nvcc front end is not built yet\n", stderr);
    return 2;
}

int run_as_launcher(int, char**) {
    std::fputs("nvcc-forge: the nvcc front end is not built yet\n", stderr);
    return 2;
}

} // namespace forge::cli
