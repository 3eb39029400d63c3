#!/usr/bin/env bash
# Everything that needs the GPU machine, in one call of the device tool (see bench/RESULTS.md):
#   1. `nvcc-forge list` vs cuobjdump on every shared object with device code under the torch,
#      cupy, jax and nvidia-* packages (default and -all), timings and peak memory on
#      libtorch_cuda.so: medians of `list` (text and JSON, LIST_ROUNDS=21) and `list --toolkit`
#      (TOOLKIT_ROUNDS=11), spawn included, the largest peak RSS of each, and the issue-16 targets;
#      then (also alone as `toolkit-floor`) `list --toolkit` on libtorch_cuda.so beside its decode
#      floor (.devcarry/bin/forge-decode-floor), first run and cached (bench/list/floor.py,
#      FLOOR_ROUNDS=7), with one strace -c of a first run;
#      (list-scan, also part of list) `list` before/after the embedded-fatbin scan of issue 29 on
#      libtorch_cuda.so, side by side (bench/list/speed.py), with the tools before it carried in
#      .devcarry/before/nvcc-forge-tools, and what the scan found there;
#   2. a real torch CUDAExtension (examples/torch_ext) built through `nvcc-forge shim` in inject
#      mode with TORCH_CUDA_ARCH_LIST narrowed to 9.0, its kernel run on the GPU, its .so gated;
#   3. multi-toolkit bundles (built on the CPU machine with CUDA 13.0 + 13.1, carried as headers)
#      loaded with nvcc_forge/load_fatbin.h on the GPU's driver;
#   4. (overhead) the wrapper-overhead benchmark (bench/wrapper) on this idle 16-core machine;
#      (overhead-wheel, not part of all) the same benchmark with the wheel's bin/nvcc-forge (the
#      x86_64 wheel carried in .whl/, pip-installed into a venv here) and the carried build's
#      nvcc-forge side by side, interleaved in one run (WHEEL_VERSION_ROUNDS=500,
#      WHEEL_COMPILE_ROUNDS=21).
# Expects the carried install prefix in .devcarry/ (bin/nvcc-forge, libexec/nvcc-forge-tools,
# share/nvcc-forge, lib/*.so* the tools need, bundles/*/bundle_fatbin.h).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/carry.sh"
step=${1:-all}

echo "== machine"
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv
"$F" --version
nvcc --version | tail -2
python3 -c 'import torch; print("torch", torch.__version__)'

if [ "$step" = all ] || [ "$step" = list ]; then
  echo "== 1. list vs cuobjdump"
  python3 "$repo/bench/gpu/compare_listing.py" "$F" "$OUT" 2>&1 | tee "$OUT/listing.log" | tail -90
fi

if [ "$step" = all ] || [ "$step" = list ] || [ "$step" = toolkit-floor ]; then
  echo "== 1b. list --toolkit against its decode floor, first run and cached (bench/list/floor.py)"
  torch_so=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so"))')
  tools="$carry/libexec/nvcc-forge-tools"
  [ -x "$tools" ] || tools="$F"
  if [ -x "$carry/bin/forge-decode-floor" ]; then
    python3 "$repo/bench/list/floor.py" --rounds "${FLOOR_ROUNDS:-7}" --syscalls \
      --cuobjdump "$(command -v cuobjdump || echo "$real_cuda/bin/cuobjdump")" \
      "$tools" "$carry/bin/forge-decode-floor" "$torch_so" 2>&1 | tee "$OUT/toolkit_floor.log"
  else
    echo "toolkit-floor: no .devcarry/bin/forge-decode-floor (cmake --build BUILD --target forge-decode-floor)"
  fi
fi

if [ "$step" = all ] || [ "$step" = list ] || [ "$step" = list-scan ]; then
  # Issue 29: the embedded-fatbin scan keeps `list` within 1.5x of the build before it. The tools
  # of that build are carried in .devcarry/before/nvcc-forge-tools (LIST_BEFORE=PATH for another);
  # tools of an intermediate build, if carried in .devcarry/prev/, are compared with these too.
  # Files: libtorch_cuda.so and the cuSPARSE and cuFFT libraries torch's environment installs.
  before="${LIST_BEFORE:-$carry/before/nvcc-forge-tools}"
  torch_so=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so"))')
  site=$(dirname "$(dirname "$(dirname "$torch_so")")")
  scan_files=("$torch_so")
  for lib in libcusparse.so libcufft.so; do
    mapfile -t found < <(find "$site/nvidia" -name "$lib.*" -type f 2>/dev/null | sort)
    [ ${#found[@]} -gt 0 ] && scan_files+=("${found[0]}")
  done
  now="$carry/libexec/nvcc-forge-tools"
  for against in "$before" "$carry/prev/nvcc-forge-tools"; do
    [ -x "$against" ] || { echo "== 1c. skipped: no tools at $against"; continue; }
    echo "== 1c. list: $against (before) against $now (after): ${scan_files[*]}"
    python3 "$repo/bench/list/speed.py" --rounds "${LIST_ROUNDS:-21}" --toolkit-rounds 0 \
      --outputs-may-differ "$against" "$now" "${scan_files[@]}" 2>&1 \
      | tee -a "$OUT/list-scan.log" | tail -12
  done
  for f in "${scan_files[@]}"; do
    "$F" list --format json "$f" | python3 -c '
import collections, json, sys
rows = json.load(sys.stdin)
found = collections.Counter(r["found"] for r in rows)
emb = [r for r in rows if r["found"] == "embedded"]
print(sys.argv[1], "rows by where found:", dict(found), "| embedded containers:",
      len({(r["section"], r["fatbin_offset"]) for r in emb}), "in", sorted({r["section"] for r in emb}))' "$f" \
      | tee -a "$OUT/list-scan.log"
  done
  # The same rows from the tools of the intermediate build, on every library with device code
  # under the environment (the search now runs beside the registered reads: same bytes out).
  prev="$carry/prev/nvcc-forge-tools"
  if [ -x "$prev" ]; then
    same=0 differ=0
    while IFS= read -r lib; do
      a=$("$prev" list --format json "$lib" 2>&1; echo "exit $?")
      b=$("$now" list --format json "$lib" 2>&1; echo "exit $?")
      if [ "$a" = "$b" ]; then same=$((same + 1)); else differ=$((differ + 1)); echo "DIFFER: $lib"; fi
    done < <(find "$site/nvidia" "$site/torch/lib" -name '*.so*' -type f -size +1M 2>/dev/null | sort)
    echo "list --format json, intermediate build against this one: $same files identical, $differ differ" \
      | tee -a "$OUT/list-scan.log"
  fi
fi

if [ "$step" = all ] || [ "$step" = torch ]; then
  echo "== 2. torch extension through the shim (inject mode)"
  shim=/tmp/forge-cuda-shim
  rm -rf "$shim"
  "$F" shim --cuda-home "$real_cuda" --out "$shim"
  policy=$(NVCC_FORGE_REAL_NVCC="$real_cuda/bin/nvcc" "$F" resolve --format torch)
  echo "policy for the installed toolkit: $policy"
  work=/tmp/forge-torch-ext
  rm -rf "$work"
  cp -r "$repo/examples/torch_ext" "$work"
  (
    cd "$work"
    export CUDA_HOME="$shim" NVCC_FORGE_MODE=inject NVCC_FORGE_ARCH_LIST="$policy" \
           NVCC_FORGE_LOG="$OUT/torch_ext_compile.jsonl" TORCH_CUDA_ARCH_LIST="9.0" MAX_JOBS=8
    t0=$(date +%s)
    python3 setup.py build_ext --inplace > "$OUT/torch_ext_build.log" 2>&1
    echo "build exit $? in $(( $(date +%s) - t0 )) s (log: torch_ext_build.log)"
    grep -m5 -E 'nvcc-forge|/bin/nvcc' "$OUT/torch_ext_build.log" || true
    python3 run_check.py
    echo "run exit $?"
    "$F" log summarize "$NVCC_FORGE_LOG"
    "$F" verify forge_demo_ext/_C*.so --arch-list "$policy"
    echo "verify exit $?"
    "$F" list forge_demo_ext/_C*.so
  ) 2>&1 | tee "$OUT/torch_ext.log"
fi

if [ "$step" = all ] || [ "$step" = bundle ]; then
  echo "== 3. bundles on the GPU's driver"
  libdir=""
  for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
    if [ -e "$d/libcuda.so.1" ] || [ -e "$d/libcuda.so" ]; then libdir=$d; break; fi
  done
  for b in "$carry"/bundles/*/; do
    name=$(basename "$b")
    g++ -std=c++17 -O2 -I"$real_cuda/include" -I"$repo/wrapper/include" -I"$b" \
      "$repo/bench/bundle/gpu_load.cpp" -o "/tmp/gpu_load_$name" -L"$libdir" -l:libcuda.so.1 \
      || { echo "bundle $name: build failed"; continue; }
    echo "-- bundle $name ($(cat "$b/README" 2>/dev/null))"
    EXPECT_TOOLKIT="$(cat "$b/EXPECT" 2>/dev/null)" "/tmp/gpu_load_$name"
    echo "bundle $name exit $?"
  done 2>&1 | tee "$OUT/bundles.log"
fi

if [ "$step" = all ] || [ "$step" = overhead ]; then
  echo "== 4. wrapper overhead (bench/wrapper/bench_wrapper.py)"
  python3 "$repo/bench/wrapper/bench_wrapper.py" --forge "$F" --version-rounds 500 \
    --compile-rounds 21 2>&1 | tee "$OUT/overhead.log"
fi

overhead_wheel() {
  echo "== 4b. wrapper overhead: the wheel's bin/nvcc-forge next to the build's (bench_wrapper.py)"
  local whls whl venv
  whls=("$repo"/.whl/nvcc_forge-*-py3-none-linux_x86_64.whl)
  whl="${whls[0]}"
  [ -f "$whl" ] || { echo "overhead-wheel: no nvcc_forge-*-py3-none-linux_x86_64.whl in .whl/"; return 2; }
  venv=/tmp/forge-wheel-venv
  rm -rf "$venv"
  # Offline: the wheel has no dependencies. Without ensurepip, the same layout by pip --prefix.
  if python3 -m venv "$venv" 2>/dev/null; then
    "$venv/bin/pip" install -q --disable-pip-version-check --no-index --no-deps "$whl" || return 2
  else
    echo "overhead-wheel: no venv module here: pip install --prefix $venv"
    python3 -m pip install -q --disable-pip-version-check --no-index --no-deps --prefix "$venv" "$whl" || return 2
  fi
  echo "wheel: $(basename "$whl"): $("$venv/bin/nvcc-forge" --version); $(file -b "$venv/bin/nvcc-forge" 2>/dev/null | cut -d, -f1-4)"
  echo "build: $F: $("$F" --version)"
  python3 "$repo/bench/wrapper/bench_wrapper.py" --forge "$venv/bin/nvcc-forge" --label wheel \
    --forge "$F" --label build --version-rounds "${WHEEL_VERSION_ROUNDS:-500}" \
    --compile-rounds "${WHEEL_COMPILE_ROUNDS:-21}" 2>&1 | tee "$OUT/overhead-wheel.log"
}
if [ "$step" = overhead-wheel ]; then
  overhead_wheel
fi
