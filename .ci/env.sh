# Sourced by the CI scripts: where the PyPI tools live and how the tests find them.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export NVCC_FORGE_TOOLS_DIR="${NVCC_FORGE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/nvcc-forge-tools}"
export PATH="/usr/local/cuda/bin:$PATH"
for c in "$NVCC_FORGE_TOOLS_DIR"/cuobjdump/nvidia/cu13/bin/cuobjdump "$NVCC_FORGE_TOOLS_DIR"/cuobjdump/nvidia/cuda_cuobjdump/bin/cuobjdump; do
  if [ -x "$c" ]; then export NVCC_FORGE_CUOBJDUMP="$c"; break; fi
done
export FORGE_NVCC_TABLE_WHEELS="${FORGE_NVCC_TABLE_WHEELS:-$NVCC_FORGE_TOOLS_DIR/nvcc-tables}"
# The clang-tidy the test command runs (a PyPI wheel, so every machine runs the same version).
export FORGE_CLANG_TIDY_VERSION=22.1.8
# The unit tests' compiles use a precompiled header (tests/CMakeLists.txt): without these
# sloppinesses ccache refuses every one of them (its stats: could_not_use_precompiled_header, 36
# a run in build/asan and build/aarch64) and a warm run compiled them all again. ccache's manual,
# "Precompiled headers": time_macros because it cannot see __TIME__ through a PCH, pch_defines
# because it cannot see a #define's effect on one; in direct mode each included file's bytes are
# still hashed, so an edited source or header is still a miss.
# include_file_mtime,include_file_ctime: CMake writes cmake_pch.hxx anew at each configure, and
# ccache does not cache a PCH one of whose headers is that new (its log: "Precompiled header
# includes ... which has a new mtime"); its bytes are hashed all the same.
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
