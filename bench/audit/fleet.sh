#!/usr/bin/env bash
# `nvcc-forge audit` at farm scale (issue 38): for each fleet size, generate the fleet
# (bench/audit/fleet.py: stamped with `stamp`, a known mix of right, moved, wrong, lost,
# ledger-only and unprovenanced wheels), audit it with and without the ledger, check every
# classification against the generator's truth, then delete it. Appends a dated section with wall
# time, CPU time, peak RSS, wheels/s and the growth factors between sizes to bench/RESULTS.md.
#   bench/audit/fleet.sh NVCC_FORGE [WORKDIR]
# Env: SIZES ("6800 68000"; add 680000 for the largest, run it at nice -n 19), JOBS (2),
# BEFORE (another nvcc-forge audited beside this one at the sizes in BEFORE_SIZES, "6800"),
# NICE (0: the audits' niceness; the generation is mostly I/O), MODES ("none ledger"), NVCC (/usr/local/cuda/bin/nvcc), RESULTS (bench/RESULTS.md), NOTE (a line for the
# section). Exit 1 when any wheel was misclassified. Numbers, no timing assertion.
set -euo pipefail
FORGE="$(realpath "${1:?usage: fleet.sh NVCC_FORGE [WORKDIR]}")"
WORK="${2:-/tmp/nvcc-forge-bench-fleet}"
SIZES="${SIZES:-6800 68000}"
JOBS="${JOBS:-2}"
BEFORE_SIZES="${BEFORE_SIZES:-6800}"
NICE="${NICE:-0}"
NVCC="${NVCC:-/usr/local/cuda/bin/nvcc}"
HERE="$(cd "$(dirname "$0")" && pwd)"
RESULTS="${RESULTS:-$HERE/../RESULTS.md}"
K1="$HERE/../../tests/fixtures/binary/k1.cu"
mkdir -p "$WORK/so"

# The two extensions, built once from the binary fixtures' k1.cu.
if [[ ! -f "$WORK/so/good.so" || ! -f "$WORK/so/narrow.so" ]]; then
  "$NVCC" -shared -cudart shared -Xcompiler -fPIC -o "$WORK/so/good.so" "$K1" \
    -gencode arch=compute_80,code=sm_80 -gencode "arch=compute_90,code=[sm_90,compute_90]"
  "$NVCC" -shared -cudart shared -Xcompiler -fPIC -o "$WORK/so/narrow.so" "$K1" \
    -gencode arch=compute_80,code=sm_80
fi

rows="$WORK/rows.tsv"
: > "$rows"
bad=0
for n in $SIZES; do
  dir="$WORK/n$n"
  rm -rf "$dir"; mkdir -p "$dir"
  t0="$(date +%s.%N)"
  python3 "$HERE/fleet.py" generate "$FORGE" "$WORK/so" "$dir" "$n"
  t1="$(date +%s.%N)"
  echo "== $n wheels generated in $(python3 -c "print(round($t1 - $t0, 1))") s," \
    "$(du -sh "$dir" | cut -f1) on disk, $(wc -l < "$dir/ledger.jsonl") ledger lines;" \
    "$(df -h --output=avail /work | tail -n 1 | tr -d ' ') left on /work" >&2
  for mode in ${MODES:-none ledger}; do
    args=("$dir/fleet" --arch-list "8.0 9.0+PTX" --jobs "$JOBS" --format json)
    [[ "$mode" == ledger ]] && args+=(--ledger "$dir/ledger.jsonl")
    builds="after"
    [[ -n "${BEFORE:-}" && " $BEFORE_SIZES " == *" $n "* ]] && builds="before after"
    for build in $builds; do
      exe="$FORGE"
      [[ "$build" == before ]] && exe="$BEFORE"
      set +e
      nice -n "$NICE" /usr/bin/time -f "%e %M %U %S" -o "$WORK/time.txt" "$exe" audit "${args[@]}" \
        2>"$WORK/stderr.txt" | python3 "$HERE/fleet.py" check "$n" "$mode" > "$WORK/check.json"
      status=("${PIPESTATUS[@]}")
      set -e
      read -r wall kb user sys < <(tail -n 1 "$WORK/time.txt")
      cpu="$(python3 -c "print(round($user + $sys, 2))")"
      check="$(cat "$WORK/check.json")"
      [[ "${status[1]}" == 0 ]] || { bad=1; echo "MISCLASSIFIED ($build, $mode): $check" >&2; }
      echo "$n $mode $build: ${wall} s, $cpu s CPU, $((kb >> 10)) MiB, exit ${status[0]}: $check" >&2
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$mode" "$build" "$wall" "$kb" \
        "${status[0]}" "$check" "$cpu" >> "$rows"
    done
  done
  rm -rf "$dir"
done

python3 "$HERE/fleet.py" render "$RESULTS" "${NOTE:-}" "$rows"
echo "== appended to $RESULTS" >&2
exit "$bad"
