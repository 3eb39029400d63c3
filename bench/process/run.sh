#!/usr/bin/env bash
# Boost.Process against the project's runner (core/process.h, posix_spawn), one program per
# behaviour the front end needs (docs/DEVELOPING.md, "Why this process runner"):
#
#   bash bench/process/run.sh [ROUNDS]      (ROUNDS of the start-up timing, default 2000)
#
# Builds each program of this folder with g++ against core/process.cpp, Boost.Process v1 (Debian
# 12's Boost 1.74: libboost1.74-dev, and libboost-filesystem1.74-dev for the library v1 links),
# Boost.Process v2 of Debian 12's Boost 1.81 (unpacked, see below) and v2 of Boost 1.85 (PyPI's
# boost-headers==1.85.0.post1, header-only through v2's src.hpp); the Boost copies are cached
# beside the other tools in $NVCC_FORGE_TOOLS_DIR. Prints one table row per behaviour, then times
# the static entries side by side (startup.cpp): no runner, and one per runner. Not part of CI:
# about 5 minutes of CPU.
# A library that is not there is skipped with the command that installs it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
source "$root/.ci/env.sh"
rounds="${1:-2000}"
out="${BENCH_PROCESS_DIR:-$root/build/bench-process}"
mkdir -p "$out"
cxx=(g++ -std=c++20 -O2 -DNDEBUG -Wall -pthread -DFMT_HEADER_ONLY)
forge_flags=(-I "$root/wrapper/src")
# The project's runner and what it needs from core/, compiled once.
for f in process result text; do
  [ "$out/core_$f.o" -nt "$root/wrapper/src/core/$f.cpp" ] ||
    "${cxx[@]}" "${forge_flags[@]}" -c "$root/wrapper/src/core/$f.cpp" -o "$out/core_$f.o"
done
forge_objs=("$out"/core_process.o "$out"/core_result.o "$out"/core_text.o)

runners=(posix_spawn)
v1_flags=(-DBENCH_BOOST_V1 -DBOOST_ALLOW_DEPRECATED_HEADERS)
v1_libs=(-l:libboost_filesystem.a)
if [ -f /usr/include/boost/process/child.hpp ] && [ -f /usr/lib/x86_64-linux-gnu/libboost_filesystem.a ]; then
  runners+=(boost-v1)
else
  echo "process: Boost.Process v1 skipped: apt-get install libboost1.74-dev libboost-filesystem1.74-dev" >&2
fi
v2_version=1.85.0.post1 # the last Boost whose Process v2 builds header-only (src.hpp; 1.86+ is compiled)
v2_dir="$NVCC_FORGE_TOOLS_DIR/boost-headers-$v2_version"
if [ ! -f "$v2_dir/boost_headers/include/boost/process/v2/src.hpp" ]; then
  python3 -m pip install -q --disable-pip-version-check --no-deps --target "$v2_dir" \
    "boost-headers==$v2_version" >&2 || true
fi
v2_flags=(-DBENCH_BOOST_V2 -DBENCH_V2_LABEL='"boost-v2-1.85"' -DBOOST_PROCESS_USE_STD_FS
          -DBOOST_PROCESS_V2_SEPARATE_COMPILATION -isystem "$v2_dir/boost_headers/include")
if [ -f "$v2_dir/boost_headers/include/boost/process/v2/src.hpp" ]; then
  runners+=(boost-v2-1.85)
else
  echo "process: Boost.Process v2 skipped: pip install --target $v2_dir boost-headers==$v2_version" >&2
fi
# Debian 12's own v2: libboost1.81-dev, which cannot be installed beside the 1.74 the project
# builds with (both are /usr/include/boost), unpacked instead (apt-get download, dpkg-deb -x). Its
# header-only std::filesystem mode does not compile (v2/detail/config.hpp uses boost::optional
# undeclared), so it links 1.81's Boost.Filesystem.
d181="$NVCC_FORGE_TOOLS_DIR/boost-1.81-debian"
if [ ! -f "$d181/usr/lib/x86_64-linux-gnu/libboost_filesystem.a" ]; then
  tmp="$(mktemp -d)"
  (cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root libboost1.81-dev \
     libboost-filesystem1.81-dev libboost-atomic1.81-dev >&2 &&
   for deb in ./*.deb; do dpkg-deb -x "$deb" "$d181"; done) || true
  rm -rf "$tmp"
fi
v181_flags=(-DBENCH_BOOST_V2 -DBENCH_V2_LABEL='"boost-v2-1.81"' -DBOOST_PROCESS_V2_SEPARATE_COMPILATION
            -isystem "$d181/usr/include")
v181_libs=("$d181/usr/lib/x86_64-linux-gnu/libboost_filesystem.a" "$d181/usr/lib/x86_64-linux-gnu/libboost_atomic.a")
if [ -f "${v181_libs[0]}" ] && [ -f "$d181/usr/include/boost/process/v2/src.hpp" ]; then
  runners+=(boost-v2-1.81)
else
  echo "process: Debian's Boost.Process v2 (1.81) skipped: apt-get download libboost1.81-dev ..." >&2
fi

build() { # <runner> <source> <output> [extra flags...]; kept while newer than its sources
  local runner="$1" src="$2" exe="$3"
  shift 3
  if [ "$exe" -nt "$src" ] && [ "$exe" -nt "$here/check.h" ] && [ "$exe" -nt "$root/wrapper/src/core/process.cpp" ]; then
    return 0
  fi
  case "$runner" in
    posix_spawn) "${cxx[@]}" "$@" "${forge_flags[@]}" "$src" "${forge_objs[@]}" -o "$exe" ;;
    boost-v1) "${cxx[@]}" "$@" "${v1_flags[@]}" "$src" "${v1_libs[@]}" -o "$exe" ;;
    boost-v2-1.85) "${cxx[@]}" "$@" "${v2_flags[@]}" "$src" -o "$exe" ;;
    boost-v2-1.81) "${cxx[@]}" "$@" "${v181_flags[@]}" "$src" "${v181_libs[@]}" -o "$exe" ;;
    plain) "${cxx[@]}" "$@" -DBENCH_PLAIN "$src" -o "$exe" ;;
  esac
}

"${cxx[@]}" -static "$here/child.cpp" -o "$out/child"
export BENCH_CHILD="$out/child"
behaviours=(no_shell exact_argv signals stdin_copy e2big exec_in_place inherit_fds)
rows="$out/rows.tsv"
: >"$rows"
for runner in "${runners[@]}"; do
  for b in "${behaviours[@]}"; do
    exe="$out/$b.$runner"
    build "$runner" "$here/$b.cpp" "$exe" -I "$here"
    work="$out/work.$b.$runner"
    rm -rf "$work" && mkdir -p "$work"
    rc=0
    line="$(cd "$work" && "$exe")" || rc=$?
    # signals.cpp ends by the child's signal (SIGTERM: 143) once it has printed its verdict.
    if [ "$b" = signals ] && [ "$rc" -ne 143 ]; then
      line="$(printf '%s' "$line" | awk -F'\t' -v rc="$rc" 'BEGIN{OFS="\t"} {$3="no"; $4=$4 "; ended with status " rc ", not by SIGTERM"; print}')"
    elif [ "$b" != signals ] && [ "$rc" -ne 0 ]; then
      line="$(printf '%s\t%s\tno\tthe program failed (status %s)' "$b" "$runner" "$rc")"
    fi
    printf '%s\n' "$line" >>"$rows"
  done
done
echo "behaviour | runner | does it | how"
echo "---|---|---|---"
sed 's/\t/ | /g' "$rows"

# Start-up: four static entries, one runner each (entry.cpp), side by side.
entries=()
for runner in plain "${runners[@]}"; do
  build "$runner" "$here/entry.cpp" "$out/entry-$runner" -static -s
  entries+=("$out/entry-$runner")
done
"${cxx[@]}" "$here/startup.cpp" -o "$out/startup"
echo
echo "kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$out/startup" "$rounds" "$out/child" "${entries[@]}"
# The CPU each start costs (perf's task-clock: the exec, the loader's work, the static
# constructors, exit), which unlike wall time does not grow with the machine's load; 10 rounds,
# each running every entry in turn, so all of them see the same machine.
if command -v perf >/dev/null && perf stat -e task-clock true >/dev/null 2>&1; then
  per_round=$((rounds / 40 > 0 ? rounds / 40 : 1))
  declare -A clock faults
  for round in $(seq 10); do
    for e in "${entries[@]}"; do
      stats="$(perf stat -r "$per_round" -x, -e task-clock,page-faults "$e" 2>&1 >/dev/null)"
      clock[$e]+="$(awk -F, '$3 ~ /task-clock/ {print $1}' <<<"$stats") "
      faults[$e]="$(awk -F, '$3 ~ /page-faults/ {print $1}' <<<"$stats")"
    done
  done
  echo "binary (static)              task-clock ms (median of 10 rounds x $per_round)   page faults"
  for e in "${entries[@]}"; do
    printf '%-28s %12s %28s\n' "$(basename "$e")" \
      "$(tr ' ' '\n' <<<"${clock[$e]}" | sort -n | awk 'NF {v[n++]=$1} END {printf "%.3f", v[int(n/2)]}')" \
      "${faults[$e]}"
  done
fi
