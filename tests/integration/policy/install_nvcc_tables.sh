#!/usr/bin/env bash
# Downloads the PyPI toolkit wheels that policy/arch_policy.yml's nvcc_supported rows were read
# from, into DIR/<version>/ (no dependencies, nothing imported). The CUDA 12.x
# nvidia-cuda-nvcc-cu12 wheels ship ptxas and libnvvm but no nvcc binary; 13.x wheels ship nvcc.
# usage: install_nvcc_tables.sh DIR
set -euo pipefail
dir="${1:?usage: install_nvcc_tables.sh DIR}"
mkdir -p "$dir"
for spec in nvidia-cuda-nvcc-cu12==12.4.131 nvidia-cuda-nvcc-cu12==12.6.85 nvidia-cuda-nvcc-cu12==12.8.93 \
            nvidia-cuda-nvcc-cu12==12.9.86 nvidia-cuda-nvcc==13.2.86; do
  version="${spec##*==}"
  [ -d "$dir/$version/nvidia" ] && continue
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps --target "$dir/$version" "$spec"
done
