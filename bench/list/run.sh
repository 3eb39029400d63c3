#!/usr/bin/env bash
# Local benchmark of `nvcc-forge list` over generated fixtures: TUS translation units with KERNELS
# kernels each, compiled for every arch in ARCHS, once per compression mode; then times `list`,
# `list --toolkit` and (when found) cuobjdump --list-elf --list-ptx, with peak RSS.
#   bench/list/run.sh NVCC_FORGE [WORKDIR]
# Env: KERNELS (default 40), TUS (4), ARCHS ("75 80 86 89 90 90a 100 100f 120"), REPEAT (5),
#      NVCC (/usr/local/cuda/bin/nvcc), NVCC_FORGE_CUOBJDUMP (optional). No assertions: numbers.
set -euo pipefail
FORGE="$(realpath "${1:?usage: run.sh NVCC_FORGE [WORKDIR]}")"
WORK="${2:-/tmp/nvcc-forge-bench-list}"
KERNELS="${KERNELS:-40}"; TUS="${TUS:-4}"; REPEAT="${REPEAT:-5}"
ARCHS="${ARCHS:-75 80 86 89 90 90a 100 100f 120}"
NVCC="${NVCC:-/usr/local/cuda/bin/nvcc}"
mkdir -p "$WORK"; cd "$WORK"

GENCODE=()
for a in $ARCHS; do GENCODE+=(-gencode "arch=compute_${a},code=sm_${a}"); done
last="${ARCHS##* }"; GENCODE+=(-gencode "arch=compute_${last},code=compute_${last}")

for t in $(seq 1 "$TUS"); do
  f="tu$t.cu"
  [[ -f "$f" ]] && continue
  { for k in $(seq 1 "$KERNELS"); do
      echo "__global__ void k${t}_${k}(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;"
      echo "  if (i < n) x[i] = x[i] * ${k}.0f + ${t}.0f; }"
    done; } > "$f"
done
declare -A MODES=([none]="--compress-mode=none" [speed]="--compress-mode=speed"
                  [balance]="--compress-mode=balance" [size]="--compress-mode=size"
                  [all]="-Xfatbin -compress-all")
for m in "${!MODES[@]}"; do
  so="bench_${m}.so"
  [[ -f "$so" ]] && continue
  echo "== building $so (${TUS} TUs x ${KERNELS} kernels x {${ARCHS}})" >&2
  # shellcheck disable=SC2086
  "$NVCC" -shared -Xcompiler -fPIC -o "$so" tu*.cu "${GENCODE[@]}" ${MODES[$m]}
done

# time_cmd LABEL CMD... -> "label  best_ms  max_rss_kb" (wall from date +%s%N, RSS from GNU time)
time_cmd() {
  local label="$1"; shift
  local best="" rss=0 t0 t1 ms kb
  for _ in $(seq 1 "$REPEAT"); do
    t0="$(date +%s%N)"
    /usr/bin/time -o "$WORK/.time" -f '%M' "$@" >/dev/null 2>&1 || true
    t1="$(date +%s%N)"
    ms="$(( (t1 - t0) / 1000 ))"
    kb="$(tail -1 "$WORK/.time")"
    [[ -z "$best" || "$ms" -lt "$best" ]] && best="$ms"
    (( kb > rss )) && rss="$kb"
  done
  printf "%-34s %8s.%03d ms %8s KB\n" "$label" "$((best / 1000))" "$((best % 1000))" "$rss"
}

CUOBJDUMP="${NVCC_FORGE_CUOBJDUMP:-$(command -v cuobjdump || true)}"
printf "%-34s %15s %11s\n" "command" "best wall" "peak RSS"
for m in none speed balance size all; do
  so="bench_${m}.so"
  entries="$("$FORGE" list --format json "$so" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')"
  echo "-- $so: $(stat -c %s "$so") bytes, $entries entries"
  time_cmd "list $m" "$FORGE" list "$so"
  time_cmd "list --toolkit $m" "$FORGE" list --toolkit "$so"
  if [[ -n "$CUOBJDUMP" ]]; then
    time_cmd "cuobjdump -lelf -lptx $m" "$CUOBJDUMP" --list-elf --list-ptx "$so"
  fi
done
