# Sourced by the CI scripts: where the PyPI tools live and how the tests find them.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export NVCC_FORGE_TOOLS_DIR="${NVCC_FORGE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/nvcc-forge-tools}"
export PATH="/usr/local/cuda/bin:$PATH"
if [ -x "$NVCC_FORGE_TOOLS_DIR/cuobjdump/nvidia/cuda_cuobjdump/bin/cuobjdump" ]; then
  export NVCC_FORGE_CUOBJDUMP="$NVCC_FORGE_TOOLS_DIR/cuobjdump/nvidia/cuda_cuobjdump/bin/cuobjdump"
fi
export FORGE_NVCC_TABLE_WHEELS="${FORGE_NVCC_TABLE_WHEELS:-$NVCC_FORGE_TOOLS_DIR/nvcc-tables}"
