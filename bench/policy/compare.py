#!/usr/bin/env python3
"""Wall time of the policy commands (resolve, coverage, coverage --matrix) of two nvcc-forge
builds, side by side: each round runs every command once per build, in alternating order, so the
ratios come from one run on the same (shared) machine. Prints the median per command and build.

Usage: compare.py BASE_EXE NEW_EXE [--rounds N]
"""
import argparse
import statistics
import subprocess
import time

COMMANDS = {
    "resolve --cuda 12.8 --torch 2.9 --format json":
        ["resolve", "--cuda", "12.8", "--torch", "2.9", "--format", "json"],
    "coverage --cuda 13.0 --torch 2.10 --package sageattention":
        ["coverage", "--cuda", "13.0", "--torch", "2.10", "--package", "sageattention"],
    "coverage --matrix --format json": ["coverage", "--matrix", "--format", "json"],
    "coverage --matrix --format html": ["coverage", "--matrix", "--format", "html"],
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=15)
    a = ap.parse_args()
    exes = {"base": a.base, "new": a.new}
    times = {}
    for r in range(a.rounds):
        for name, argv in COMMANDS.items():
            order = list(exes.items()) if r % 2 == 0 else list(reversed(exes.items()))
            for label, exe in order:
                t0 = time.perf_counter()
                p = subprocess.run([exe] + argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                dt = time.perf_counter() - t0
                if p.returncode != 0:
                    raise SystemExit(f"{label}: {name} exited {p.returncode}: {p.stderr[-500:]!r}")
                times.setdefault((name, label), []).append(dt)
    print("| command | base (ms) | new (ms) | new/base |\n|---|---:|---:|---:|")
    for name in COMMANDS:
        b = statistics.median(times[(name, "base")]) * 1000
        n = statistics.median(times[(name, "new")]) * 1000
        print(f"| `{name}` | {b:.1f} | {n:.1f} | {n / b:.2f} |")


if __name__ == "__main__":
    main()
