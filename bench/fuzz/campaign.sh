#!/usr/bin/env bash
# A fuzzing campaign on a many-core machine: every target in BIN_DIR run with WORKERS parallel
# libFuzzer jobs (one shared corpus per target, seeded from bench/fuzz/corpus) until RUNS
# executions per worker or SECONDS per target, then one summary line per target: executions
# summed over the workers, the largest coverage (edges) and features any worker reached, the
# corpus size, crashes. Exit 1 when any target left a crash, timeout or leak artifact, or ran
# no input at all, or fewer than MIN_EXECS executions (summed over the workers).
#   bench/fuzz/campaign.sh BIN_DIR [WORKERS] [RUNS_PER_WORKER] [SECONDS_PER_TARGET] [WORK]
# Env: TARGETS="fuzz_pe fuzz_wheel" runs only those (one call per target fits a 10-minute command
# limit); MIN_EXECS=10000000 makes a short campaign a failure; RSS_MB (2048) and TIMEOUT_S (10) are
# libFuzzer's per-process memory and per-input time limits.
# The binaries come from bench/fuzz/run.sh (FUZZ_WORK=DIR bench/fuzz/run.sh 1 builds them).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="$(cd "${1:?usage: campaign.sh BIN_DIR [WORKERS] [RUNS] [SECONDS] [WORK]}" && pwd)"
WORKERS="${2:-$(nproc)}"
RUNS="${3:-700000}"
SECONDS_PER_TARGET="${4:-180}"
WORK="${5:-/tmp/nvcc-forge-campaign}"
mkdir -p "$WORK"
status=0
printf '%-12s %12s %8s %8s %8s %8s %8s %s\n' target executions cov ft corpus rss_mb seconds artifacts
MIN_EXECS="${MIN_EXECS:-0}"
for exe in "$BIN"/fuzz_*; do
  target="$(basename "$exe")"
  if [ -n "${TARGETS:-}" ] && [[ " $TARGETS " != *" $target "* ]]; then continue; fi
  corpus="$WORK/corpus-$target"; logs="$WORK/logs-$target"; artifacts="$WORK/artifacts-$target/"
  mkdir -p "$corpus" "$logs" "$artifacts"
  t0=$(date +%s)
  (cd "$logs" && "$exe" "$corpus" "$HERE/corpus" -jobs="$WORKERS" -workers="$WORKERS" \
     -runs="$RUNS" -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb="${RSS_MB:-2048}" \
     -timeout="${TIMEOUT_S:-10}" \
     -max_len=65536 -artifact_prefix="$artifacts" -print_final_stats=1 >/dev/null 2>&1)
  t1=$(date +%s)
  execs=0; cov=0; ft=0; rss=0
  for log in "$logs"/fuzz-*.log; do
    [ -f "$log" ] || continue
    n=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
    execs=$((execs + ${n:-0}))
    c=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$'); c=${c:-0}
    f=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$'); f=${f:-0}
    ((c > cov)) && cov=$c
    ((f > ft)) && ft=$f
    m=$(grep -o 'stat::peak_rss_mb: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$'); m=${m:-0}
    ((m > rss)) && rss=$m
  done
  nart=$(find "$artifacts" -type f | wc -l)
  ((nart > 0)) && status=1
  # A target that did not run (a library missing, a bad flag) is a failure, not zero findings.
  ((execs == 0)) && { echo "!! $target ran no input (see $logs)" >&2; status=1; }
  ((execs < MIN_EXECS)) && { echo "!! $target: $execs executions, fewer than $MIN_EXECS" >&2; status=1; }
  printf '%-12s %12s %8s %8s %8s %8s %8s %s\n' "$target" "$execs" "$cov" "$ft" \
    "$(find "$corpus" -type f | wc -l)" "$rss" "$((t1 - t0))" "$nart"
done
exit $status
