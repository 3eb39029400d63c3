#!/usr/bin/env bash
# The commands whose input grows with a fleet or a build, each at two sizes (issue 38): `stamp`
# of a wheel with STAMP_SIZES members, `log summarize` of a compile log of LOG_SIZES lines, `plan`
# of a build of PLAN_SIZES TUs (stand-in compiles), `coverage --matrix` of the bundled policy and
# of one with COVERAGE_FACTOR times the torch minors per CUDA row (so as many more cells). Wall time and peak RSS from
# /usr/bin/time, the growth factor between the two sizes; appends a dated section to
# bench/RESULTS.md. Numbers, no assertions.
#   bench/scale/run.sh NVCC_FORGE [WORKDIR]
# Env: STAMP_SIZES ("10000 100000"), LOG_SIZES ("100000 1000000"), PLAN_SIZES ("1000 10000"),
# COVERAGE_FACTOR (10), WHAT ("stamp log plan coverage"), NVCC, RESULTS, NOTE.
set -euo pipefail
FORGE="$(realpath "${1:?usage: run.sh NVCC_FORGE [WORKDIR]}")"
WORK="${2:-/tmp/nvcc-forge-bench-scale}"
HERE="$(cd "$(dirname "$0")" && pwd)"
RESULTS="${RESULTS:-$HERE/../RESULTS.md}"
NVCC="${NVCC:-/usr/local/cuda/bin/nvcc}"
WHAT="${WHAT:-stamp log plan coverage}"
mkdir -p "$WORK"
rows="$WORK/rows.tsv"
: > "$rows"

# measure NAME SIZE UNIT CMD...: one row (wall s, peak KiB, exit status).
measure() {
  local name="$1" size="$2" unit="$3"
  shift 3
  set +e
  /usr/bin/time -f "%e %M %U %S" -o "$WORK/time.txt" "$@" > "$WORK/out.txt" 2> "$WORK/err.txt"
  local rc=$?
  set -e
  read -r wall kb user sys < <(tail -n 1 "$WORK/time.txt")
  local cpu
  cpu="$(python3 -c "print(round($user + $sys, 2))")"
  echo "$name $size $unit: $wall s, $cpu s CPU, $((kb >> 10)) MiB, exit $rc" >&2
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$size" "$unit" "$wall" "$kb" "$rc" "$cpu" >> "$rows"
}

if [[ " $WHAT " == *" stamp "* ]]; then
  so="$WORK/good.so"
  [[ -f "$so" ]] || "$NVCC" -shared -cudart shared -Xcompiler -fPIC -o "$so" \
    "$HERE/../../tests/fixtures/binary/k1.cu" -gencode arch=compute_80,code=sm_80
  for n in ${STAMP_SIZES:-10000 100000}; do
    python3 "$HERE/gen.py" wheel "$so" "$WORK/big-1.0-cp312-cp312-linux_x86_64.whl" "$n"
    measure stamp "$n" members "$FORGE" stamp "$WORK/big-1.0-cp312-cp312-linux_x86_64.whl" \
      --arch-list 8.0 --ledger "$WORK/ledger.jsonl"
    rm -f "$WORK/big-1.0-cp312-cp312-linux_x86_64.whl" "$WORK/ledger.jsonl"
  done
fi

if [[ " $WHAT " == *" log "* ]]; then
  for n in ${LOG_SIZES:-100000 1000000}; do
    python3 "$HERE/gen.py" log "$WORK/forge.log" "$n"
    measure "log summarize" "$n" lines "$FORGE" log summarize "$WORK/forge.log" --format json
    rm -f "$WORK/forge.log"
  done
fi

if [[ " $WHAT " == *" plan "* ]]; then
  for n in ${PLAN_SIZES:-1000 10000}; do
    rm -rf "$WORK/tus"
    python3 "$HERE/gen.py" tus "$WORK/tus" "$n"
    export NVCC_FORGE_CACHE_DIR="$WORK/cache" # the stand-in's stubs: one per target set
    # Both sizes with the stub cached: plan once over one TU first (its nvcc compile is a constant).
    python3 "$HERE/gen.py" tus "$WORK/warm" 1
    (cd "$WORK/warm" && "$FORGE" plan --arch-list "8.0 9.0+PTX" -- python3 build.py . 1 1 \
      > /dev/null 2>&1) || true
    rm -rf "$WORK/warm"
    (cd "$WORK/tus" && measure plan "$n" TUs "$FORGE" plan --arch-list "8.0 9.0+PTX" \
      --format json -- python3 build.py . "$n" 2)
    unset NVCC_FORGE_CACHE_DIR
    rm -rf "$WORK/tus"
  done
fi

if [[ " $WHAT " == *" coverage "* ]]; then
  # The bundled policy, and the same with made-up torch minors (bench/scale/gen.py policy).
  policy="$HERE/../../policy/arch_policy.yml"
  measure "coverage --matrix" 1 "x the policy" "$FORGE" coverage --matrix --format json \
    --policy "$policy"
  python3 "$HERE/gen.py" policy "$policy" "$WORK/policy.yml" "${COVERAGE_FACTOR:-10}"
  measure "coverage --matrix" "${COVERAGE_FACTOR:-10}" "x the policy" "$FORGE" coverage \
    --matrix --format json --policy "$WORK/policy.yml"
fi

python3 - "$rows" "$RESULTS" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "${NOTE:-}" <<'EOF'
import datetime, sys
rows_path, results, cpus, load, note = sys.argv[1:6]
rows = [l.rstrip("\n").split("\t") for l in open(rows_path)]
out = [f"## Commands at fleet and build scale ({datetime.date.today()}, issue 38)", "",
       f"`bench/scale/run.sh` on {cpus} CPUs shared with other builds (load {load} at the end); "
       "/usr/bin/time's wall and maximum resident set, one run each. " + note, "",
       "| command | input | wall (s) | CPU (s) | peak (MiB) | exit | × input | × wall | × CPU | "
       "× memory |",
       "|---------|------:|---------:|--------:|-----------:|-----:|--------:|-------:|------:|"
       "---------:|"]
prev = {}
for name, size, unit, wall, kb, rc, cpu in rows:
    wall, cpu, mib, size_n = float(wall), float(cpu), int(kb) / 1024, float(size)
    p = prev.get(name)
    growth = (f"{size_n / p[0]:.0f} | {wall / p[1]:.1f} | {cpu / max(p[3], 0.01):.1f} | "
              f"{mib / p[2]:.2f}" if p and p[1] > 0 else "— | — | — | —")
    out.append(f"| `{name}` | {size} {unit} | {wall:.2f} | {cpu:.2f} | {mib:.1f} | {rc} | "
               f"{growth} |")
    prev[name] = (size_n, wall, mib, cpu)
text = open(results).read().rstrip() + "\n\n" + "\n".join(out) + "\n"
open(results, "w").write(text)
EOF
echo "== appended to $RESULTS" >&2
