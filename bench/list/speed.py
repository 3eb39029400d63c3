#!/usr/bin/env python3
"""Before/after of `nvcc-forge list` on real libraries, side by side in one run.

usage: speed.py [--rounds N] [--toolkit-rounds N] [--outputs-may-differ] TOOLS_BEFORE TOOLS_AFTER FILE...

TOOLS_* are nvcc-forge-tools binaries (or `nvcc-forge`). For each file and each command (`list`,
`list --format json`, `list --toolkit --format json`) the two binaries run alternately; every run
is timed from fork to reap (spawn included) by bench/list/measure.py, which also gives its peak
RSS and CPU time. Prints medians (wall, CPU) and the largest peak RSS, and checks that both binaries print
byte-identical output (exit 1 if not, unless --outputs-may-differ: a change that lists more rows,
such as the embedded-fatbin scan). `--toolkit-rounds 0` leaves `list --toolkit` out. The last
column is the ratio of the median wall times, after / before. No assertions on time: numbers only.
"""
import argparse
import os
import statistics
import subprocess
import sys

from measure import measure


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--toolkit-rounds", type=int, default=7)
    ap.add_argument("--outputs-may-differ", action="store_true")
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    tools = {"before": os.path.abspath(a.before), "after": os.path.abspath(a.after)}
    print(f"load average at start: {os.getloadavg()}")
    rows = []
    for f in a.files:
        size = os.path.getsize(f) / 2**20
        for args, rounds in ((["list"], a.rounds), (["list", "--format", "json"], a.rounds),
                             (["list", "--toolkit", "--format", "json"], a.toolkit_rounds)):
            if rounds == 0:
                continue
            outs = {k: subprocess.run([t] + args + [f], capture_output=True).stdout
                    for k, t in tools.items()}
            same = outs["before"] == outs["after"]
            samples = {k: [] for k in tools}
            for _ in range(rounds):
                for k, t in tools.items():
                    samples[k].append(measure([t] + args + [f]))
            r = {"file": os.path.basename(f), "mib": size, "cmd": " ".join(args), "same": same}
            for k, s in samples.items():
                r[k] = (statistics.median(x[0] for x in s) * 1e3,
                        statistics.median(x[1] for x in s) * 1e3, max(x[2] for x in s),
                        {x[3] for x in s})
            rows.append(r)
            b, n = r["before"], r["after"]
            print(f"{r['file']} ({size:.1f} MiB) `{r['cmd']}` x{rounds}: "
                  f"before {b[0]:.2f} ms wall, {b[1]:.2f} ms cpu, {b[2]:.1f} MiB | "
                  f"after {n[0]:.2f} ms wall, {n[1]:.2f} ms cpu, {n[2]:.1f} MiB | "
                  f"exit {sorted(b[3])}/{sorted(n[3])} | output {'identical' if same else 'DIFFERS'}",
                  flush=True)
    print(f"load average at end: {os.getloadavg()}")
    print("\n| file | command | before: wall / CPU (ms), peak RSS (MiB) | after: wall / CPU (ms), "
          "peak RSS (MiB) | output | after / before (wall) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        b, n = r["before"], r["after"]
        print(f"| `{r['file']}` ({r['mib']:.0f} MiB) | `{r['cmd']}` | {b[0]:.1f} / {b[1]:.1f}, "
              f"{b[2]:.1f} | {n[0]:.1f} / {n[1]:.1f}, {n[2]:.1f} | "
              f"{'identical' if r['same'] else 'DIFFERS'} | {n[0] / b[0]:.2f}x |")
    return 0 if a.outputs_may_differ or all(r["same"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
