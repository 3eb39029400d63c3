// Entry points of the nvcc front end (the wrapper), called from the nvcc-forge entry binary.
#pragma once

namespace forge::entry {

// argv[0] is "nvcc" (a symlink to this binary); argv[1..] are nvcc's arguments.
int run_as_nvcc(int argc, char** argv);
// argv[1] is the real nvcc (or a launcher such as ccache followed by nvcc); argv[2..] its args.
int run_as_launcher(int argc, char** argv);
// argv[0] is a launcher (ccache, sccache), argv[1..] the nvcc and its arguments:
// `nvcc-forge ccache /path/to/nvcc ARGS...`.
int run_as_launcher_chain(int argc, char** argv);

} // namespace forge::entry
