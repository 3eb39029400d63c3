# Sourced by the CI scripts: where the PyPI tools live and how the tests find them.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export NVCC_FORGE_TOOLS_DIR="${NVCC_FORGE_TOOLS_DIR:-$root/.tools}"
export PATH="/usr/local/cuda/bin:$PATH"
if [ -x "$NVCC_FORGE_TOOLS_DIR/cuobjdump/nvidia/cuda_cuobjdump/bin/cuobjdump" ]; then
  export NVCC_FORGE_CUOBJDUMP="$NVCC_FORGE_TOOLS_DIR/cuobjdump/nvidia/cuda_cuobjdump/bin/cuobjdump"
fi
for cand in "$NVCC_FORGE_TOOLS_DIR"/cu128/nvidia/cuda_nvcc "$NVCC_FORGE_TOOLS_DIR"/cu128/nvidia/cu12; do
  if [ -x "$cand/bin/nvcc" ]; then
    export NVCC_FORGE_NVCC_CANDIDATES="$cand${NVCC_FORGE_NVCC_CANDIDATES:+:$NVCC_FORGE_NVCC_CANDIDATES}"
    break
  fi
done
export CCACHE_DIR="${CCACHE_DIR:-$root/.tools/ccache}"
