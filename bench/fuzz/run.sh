#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-14 (ASan + libFuzzer) and runs each for a while.
#   bench/fuzz/run.sh [SECONDS_PER_TARGET]      (default 60; FUZZ_JOBS=N for parallel workers)
# Not part of the default build. Seeds: bench/fuzz/corpus (read-only); the growing corpus and any
# crashers go to $FUZZ_WORK (default /tmp/nvcc-forge-fuzz). A crasher makes the script exit 1:
# fix the reader, then copy the (small) crasher into bench/fuzz/corpus so the unit test replays it.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SECONDS_PER_TARGET="${1:-60}"
WORK="${FUZZ_WORK:-/tmp/nvcc-forge-fuzz}"
CXX="${CXX_FUZZ:-clang++-14}"
mkdir -p "$WORK/bin"

SRC=("$ROOT"/wrapper/src/binary/{reader,elf,pe,fatbin,ar,zip,zip_io,wheel_record,cubin,mapped_file,result_cache}.cpp
     "$ROOT"/wrapper/src/arch/{arch,coverage,gencode}.cpp
     "$ROOT"/wrapper/src/core/{result,text,sha256,workers}.cpp)
FLAGS=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -I"$ROOT/wrapper/src" -DFORGE_VERSION=\"fuzz\")
LIBS=(-lfmt -llz4 -lzstd -lz)

for target in ${FUZZ_TARGETS:-fuzz_fatbin fuzz_wheel fuzz_pe}; do
  if [[ ! -x "$WORK/bin/$target" || "$HERE/$target.cpp" -nt "$WORK/bin/$target" || -n "${FUZZ_REBUILD:-}" ]]; then
    echo "== building $target"
    "$CXX" "${FLAGS[@]}" "$HERE/$target.cpp" "${SRC[@]}" "${LIBS[@]}" -o "$WORK/bin/$target"
  fi
done

status=0
for target in ${FUZZ_TARGETS:-fuzz_fatbin fuzz_wheel fuzz_pe}; do
  corpus="$WORK/corpus-$target"
  artifacts="$WORK/artifacts-$target/"
  mkdir -p "$corpus" "$artifacts"
  echo "== running $target for ${SECONDS_PER_TARGET}s"
  seeds=("$HERE/corpus")
  # The hostile wheels (tests/fixtures/wheels/make_hostile.py) seed the wheel reader too.
  if [[ "$target" == fuzz_wheel ]]; then seeds+=("$ROOT/tests/fixtures/wheels/hostile"); fi
  if ! "$WORK/bin/$target" "$corpus" "${seeds[@]}" -max_total_time="$SECONDS_PER_TARGET" \
      -rss_limit_mb=2048 -timeout=10 -max_len=65536 -artifact_prefix="$artifacts" \
      -print_final_stats=1 ${FUZZ_JOBS:+-jobs=$FUZZ_JOBS -workers=$FUZZ_JOBS} 2>&1 | tail -25; then
    status=1
  fi
  if compgen -G "$artifacts/*" >/dev/null; then
    echo "!! $target found crashers in $artifacts:"; ls -la "$artifacts"; status=1
  fi
done
exit $status
