#!/usr/bin/env bash
# Wheels in bounded memory (docs/wheels.md): `list` and `verify` of real CUDA wheels, peak resident
# set and wall time, for two builds side by side in one run (BEFORE: a build without the streaming
# reader, AFTER: this one), against the time of one inflate of the wheel's largest member (Python's
# zlib, CRC included). Rewrites the "Wheels in bounded memory" section of bench/RESULTS.md.
#   bench/wheels/run.sh BEFORE_NVCC_FORGE AFTER_NVCC_FORGE [WORKDIR]
# Env: WHEELS ("cusparse cufft torch"), REPEAT (3, best of), RESULTS (the RESULTS.md to update).
# Downloads (pip download, cached in WORKDIR): nvidia-cusparse-cu12 12.5.10.65 (366 MB, one 487 MB
# .so), nvidia-cufft-cu12 11.4.1.4, torch 2.9.1 (x86_64, CPython 3.12). No assertions: numbers.
set -euo pipefail
BEFORE="$(realpath "${1:?usage: run.sh BEFORE_NVCC_FORGE AFTER_NVCC_FORGE [WORKDIR]}")"
AFTER="$(realpath "${2:?usage: run.sh BEFORE_NVCC_FORGE AFTER_NVCC_FORGE [WORKDIR]}")"
WORK="${3:-/tmp/nvcc-forge-bench-wheels}"
REPEAT="${REPEAT:-3}"
HERE="$(cd "$(dirname "$0")" && pwd)"
RESULTS="${RESULTS:-$HERE/../RESULTS.md}"
mkdir -p "$WORK"
export TMPDIR="$WORK/tmp" # where AFTER spills a large member (unnamed: nothing is left)
mkdir -p "$TMPDIR"

fetch() { # NAME PIP_SPEC [pip options...] -> the wheel's path
  local name="$1" spec="$2"
  shift 2
  if ! compgen -G "$WORK/$name/*.whl" >/dev/null; then
    echo "== pip download $spec" >&2
    python3 -m pip download -q --no-deps "$spec" --only-binary=:all: -d "$WORK/$name" "$@" >&2
  fi
  local found=("$WORK/$name"/*.whl)
  echo "${found[0]}"
}

# best_of CMD... -> "WALL_S MAXRSS_KB CPU_S": the best wall, the largest peak and the least CPU
# (user + sys) of REPEAT runs
best_of() {
  local best="" rss=0 cpu="" wall kb user sys c
  for _ in $(seq 1 "$REPEAT"); do
    /usr/bin/time -f "%e %M %U %S" -o "$WORK/time.txt" "$@" >/dev/null 2>&1 || true
    read -r wall kb user sys < <(tail -n 1 "$WORK/time.txt") # after "Command exited with ..."
    c="$(python3 -c "print(f'{$user + $sys:.2f}')")"
    if [[ -z "$best" ]] || python3 -c "import sys; sys.exit(0 if $wall < $best else 1)"; then
      best="$wall"
    fi
    if [[ -z "$cpu" ]] || python3 -c "import sys; sys.exit(0 if $c < $cpu else 1)"; then
      cpu="$c"
    fi
    if [[ "$kb" -gt "$rss" ]]; then rss="$kb"; fi
  done
  echo "$best $rss $cpu"
}

# One inflate of the largest member: zlib at C speed, the member's CRC checked (zipfile). Prints
# the best wall and CPU seconds of 3, the member's name and size.
inflate_s() {
  python3 - "$1" <<'PY'
import sys, time, zipfile
z = zipfile.ZipFile(sys.argv[1])
m = max(z.infolist(), key=lambda i: i.file_size)
best = cpu = None
for _ in range(3):
    t, c = time.perf_counter(), time.process_time()
    with z.open(m) as f:
        while f.read(16 << 20):
            pass
    d, dc = time.perf_counter() - t, time.process_time() - c
    best = d if best is None or d < best else best
    cpu = dc if cpu is None or dc < cpu else cpu
print(f"{best:.2f} {cpu:.2f} {m.filename} {m.file_size}")
PY
}

rows=""
for w in ${WHEELS:-cusparse cufft torch}; do
  case "$w" in
    cusparse) whl="$(fetch cusparse nvidia-cusparse-cu12==12.5.10.65 --platform manylinux2014_x86_64)" ;;
    cufft) whl="$(fetch cufft nvidia-cufft-cu12==11.4.1.4 --platform manylinux2014_x86_64)" ;;
    torch) whl="$(fetch torch torch==2.9.1 --platform manylinux_2_28_x86_64 --python-version 3.12)" ;;
    *) echo "unknown wheel $w" >&2; exit 2 ;;
  esac
  read -r inflate inflate_cpu member member_size <<<"$(inflate_s "$whl")"
  size_mib=$(( $(stat -c %s "$whl") >> 20 ))
  echo "== $w: $(basename "$whl") ($size_mib MiB), largest member $member ($(( member_size >> 20 )) MiB), one inflate ${inflate} s (CPU ${inflate_cpu} s)" >&2
  for cmd in list verify; do
    args=("$cmd" "$whl")
    if [[ "$cmd" == verify ]]; then args+=(--arch-list "8.0 9.0"); fi
    read -r bw brss bcpu <<<"$(best_of "$BEFORE" "${args[@]}")"
    read -r aw arss acpu <<<"$(best_of "$AFTER" "${args[@]}")"
    ratio="$(python3 -c "print(f'{$aw / $inflate:.2f}')")"
    cpu_ratio="$(python3 -c "print(f'{$acpu / $inflate_cpu:.2f}')")"
    printf "%-9s %-7s before %6.2f s (CPU %6.2f) %6d MiB   after %6.2f s (CPU %6.2f) %6d MiB   (%sx one inflate, CPU %sx)\n" \
      "$w" "$cmd" "$bw" "$bcpu" "$((brss >> 10))" "$aw" "$acpu" "$((arss >> 10))" "$ratio" "$cpu_ratio" >&2
    rows+="| $w | \`$cmd\` | $size_mib MiB, \`$(basename "$member")\` $(( member_size >> 20 )) MiB | $inflate / $inflate_cpu | $bw / $bcpu | $((brss >> 10)) | $aw / $acpu | $((arss >> 10)) | $ratio / $cpu_ratio |"$'\n'
  done
done

section="## Wheels in bounded memory

\`bench/wheels/run.sh\` ($(date -u +%Y-%m-%d), $(nproc) CPUs shared with other builds, load average
$(cut -d' ' -f1-3 /proc/loadavg) at the end; /usr/bin/time over $REPEAT runs: the best wall, the
least CPU (user + sys), the largest peak resident set; both builds in the same run; on a loaded
machine the CPU columns are the comparison). Before: every member inflated whole into memory.
After: a member above 64 MiB inflated as a stream into an unnamed temporary file the readers map
(docs/wheels.md); \`verify\` also hashes every member for the RECORD check. \"One inflate\":
Python's zlib over the largest member, CRC included, best of 3.

| wheel | command | size, largest member | one inflate, wall / CPU (s) | before, wall / CPU (s) | before (MiB) | after, wall / CPU (s) | after (MiB) | after / one inflate (wall / CPU) |
|---|---|---|--:|--:|--:|--:|--:|--:|
$rows"
python3 - "$RESULTS" "$section" <<'PY'
import os, re, sys
path, section = sys.argv[1], sys.argv[2].rstrip() + "\n"
text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
pat = re.compile(r"^## Wheels in bounded memory\n.*?(?=^## |\Z)", re.S | re.M)
text = pat.sub(lambda m: section + "\n", text) if pat.search(text) else text.rstrip() + "\n\n" + section
open(path, "w").write(text)
PY
echo "wrote the \"Wheels in bounded memory\" section of $RESULTS" >&2
