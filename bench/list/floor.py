#!/usr/bin/env python3
"""`list --toolkit` against its physical floor, side by side in one run.

usage: floor.py [--rounds N] [--syscalls] [--cuobjdump PATH] TOOLS FLOOR FILE...

TOOLS is nvcc-forge-tools (or nvcc-forge), FLOOR the forge-decode-floor of the same build
(bench/list/decode_floor.cpp: every compressed image decoded by the same zstd/lz4, on the same
threads, into one reused buffer per thread, nothing kept). For each file, alternating in every
round: the floor; `list --toolkit --format json` with an empty cache directory (the first run);
the same with the cache the first runs filled (the cached run, $NVCC_FORGE_CACHE_DIR/toolkit);
`list --format json` (headers only). Each process is timed from fork to reap by measure.py:
medians of wall, CPU and system time and of minor page faults, the largest peak RSS. Prints the
ratios the targets are stated in (first / floor, cuobjdump / cached) and checks that the first and
the cached run print the same bytes (exit 1 if not). --syscalls adds one `strace -f -c` of a first
run (where the system time goes, by call). cuobjdump: --cuobjdump, else $CUOBJDUMP, else PATH.
Numbers only; the figures are in bench/RESULTS.md.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from measure import measure_detail


def median(xs, key):
    return statistics.median(x[key] for x in xs)


def summary(name, xs):
    return (f"{name:<22} wall {median(xs, 'wall') * 1e3:9.1f} ms  cpu {median(xs, 'cpu') * 1e3:9.1f} ms"
            f"  sys {median(xs, 'sys') * 1e3:8.1f} ms  minflt {median(xs, 'minflt'):9.0f}"
            f"  peak {max(x['rss'] for x in xs):6.1f} MiB  exit {sorted({x['code'] for x in xs})}")


def syscalls(tools, path, work):
    """strace -c of one first run: the calls by system time, the top ten."""
    if not shutil.which("strace"):
        return "strace not found"
    out = os.path.join(work, "strace.txt")
    env = dict(os.environ, NVCC_FORGE_CACHE_DIR=tempfile.mkdtemp(dir=work))
    subprocess.run(["strace", "-f", "-c", "-o", out, tools, "list", "--toolkit", "--format", "json",
                    path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    lines = open(out).read().splitlines()
    return "\n".join(lines[:14])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--syscalls", action="store_true")
    ap.add_argument("--cuobjdump", default=os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump"))
    ap.add_argument("tools")
    ap.add_argument("floor")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    tools, floor = os.path.abspath(a.tools), os.path.abspath(a.floor)
    work = tempfile.mkdtemp(prefix="forge-floor-")
    warm = os.path.join(work, "warm")
    print(f"load average at start: {os.getloadavg()}; cores {os.cpu_count()}; "
          f"NVCC_FORGE_LIST_THREADS={os.environ.get('NVCC_FORGE_LIST_THREADS', '(default)')}")
    status = 0
    for f in a.files:
        size = os.path.getsize(f) / 2**20
        # Warm the page cache and the cached run's cache; the floor says what it decodes.
        described = subprocess.run([floor, f], capture_output=True, text=True)
        lines = described.stdout.splitlines()
        print(f"== {f} ({size:.1f} MiB): {lines[0] if lines else described.stderr.strip()}")
        # The floor under the workers' memory bound (decode_floor.cpp): what --toolkit could reach.
        for line in lines[1:]:
            if " bounded " in line:
                print(f"   {line}")
        cmd = [tools, "list", "--toolkit", "--format", "json", f]
        first_out = subprocess.run(cmd, capture_output=True,
                                   env=dict(os.environ, NVCC_FORGE_CACHE_DIR=warm)).stdout
        cached_out = subprocess.run(cmd, capture_output=True,
                                    env=dict(os.environ, NVCC_FORGE_CACHE_DIR=warm)).stdout
        same = first_out == cached_out
        samples = {"floor": [], "toolkit (first)": [], "toolkit (cached)": [], "list": []}
        for i in range(a.rounds):
            samples["floor"].append(measure_detail([floor, f]))
            empty = tempfile.mkdtemp(dir=work)
            samples["toolkit (first)"].append(
                measure_detail(cmd, env=dict(os.environ, NVCC_FORGE_CACHE_DIR=empty)))
            shutil.rmtree(empty)
            samples["toolkit (cached)"].append(
                measure_detail(cmd, env=dict(os.environ, NVCC_FORGE_CACHE_DIR=warm)))
            samples["list"].append(measure_detail([tools, "list", "--format", "json", f]))
        for name, xs in samples.items():
            print(summary(name, xs), flush=True)
        fl, first = median(samples["floor"], "wall"), median(samples["toolkit (first)"], "wall")
        cached = median(samples["toolkit (cached)"], "wall")
        print(f"first / floor: {first / fl:.2f}x wall, "
              f"{median(samples['toolkit (first)'], 'cpu') / median(samples['floor'], 'cpu'):.2f}x CPU "
              f"(target <= 1.25x at <= 64 MiB); cached / list: {cached / median(samples['list'], 'wall'):.2f}x")
        if a.cuobjdump:
            both = sum(measure_detail([a.cuobjdump, flag, f])["wall"] for flag in ("--list-elf", "--list-ptx"))
            print(f"cuobjdump --list-elf + --list-ptx: {both:.2f} s; cached --toolkit is {both / cached:.0f}x "
                  f"faster (target >= 1000x); first {both / first:.1f}x")
        print(f"first and cached output: {'identical' if same else 'DIFFER'}")
        if a.syscalls:
            print(syscalls(tools, f, work))
        status = status or (0 if same else 1)
    shutil.rmtree(work, ignore_errors=True)
    print(f"load average at end: {os.getloadavg()}")
    return status


if __name__ == "__main__":
    sys.exit(main())
