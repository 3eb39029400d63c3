#!/usr/bin/env python3
"""The CPU seconds of each CTest test: where a test phase's time goes, on a loaded machine too.

    test_cpu.py BUILD_DIR [-j N] [-R REGEX] [-L LABEL] [-E REGEX] [--top N]

Runs the tests `ctest -R/-L/-E` selects (CTest's own list: command, environment, working
directory), N at a time, each as CTest would, and reads each one's user + system CPU from wait4(2)
(the test and every process it waited for: nvcc, cmake, the compilers). CPU seconds, unlike wall
seconds, barely change with the machine's load, so tests can be compared while other work runs.
Prints the tests by CPU, the sum per area (the name up to its first dot) and the total; exit 1 if
a test failed (its output is printed), 77-skips count as skipped.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import time


def listed(build, args):
    cmd = ["ctest", "--test-dir", build, "-N", "--show-only=json-v1"]
    for flag in ("R", "L", "E"):
        if getattr(args, flag):
            cmd += [f"-{flag}", getattr(args, flag)]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    tests = []
    for t in json.loads(r.stdout).get("tests", []):
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        if props.get("DISABLED") or not t.get("command"):
            continue
        tests.append((t["name"], t["command"], props.get("WORKING_DIRECTORY", build),
                      props.get("ENVIRONMENT", []), props.get("SKIP_RETURN_CODE")))
    return tests


def run(test):
    name, command, cwd, env_list, skip_rc = test
    env = dict(os.environ)
    env.update(e.split("=", 1) for e in env_list)
    start = time.monotonic()
    p = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    rc = p.returncode
    state = "passed" if rc == 0 else "skipped" if skip_rc is not None and rc == int(skip_rc) else "FAILED"
    return name, usage.ru_utime + usage.ru_stime, time.monotonic() - start, state, out.decode(errors="replace")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1)
    ap.add_argument("-R")
    ap.add_argument("-L")
    ap.add_argument("-E")
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args()
    tests = listed(args.build, args)
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.j) as pool:
        for r in pool.map(run, tests):
            results.append(r)
            if r[3] == "FAILED":
                print(f"FAILED {r[0]}:\n{r[4][-3000:]}", file=sys.stderr)
    results.sort(key=lambda r: -r[1])
    print(f"{'test':60} {'CPU s':>7} {'wall s':>7}")
    for name, cpu, wall, state, _ in results[:args.top]:
        print(f"{name:60} {cpu:7.1f} {wall:7.1f}" + ("" if state == "passed" else f"  {state}"))
    areas = {}
    for name, cpu, _, _, _ in results:
        a = areas.setdefault(name.split(".")[0], [0, 0.0])
        a[0] += 1
        a[1] += cpu
    print("\nper area (tests, CPU s):")
    for area, (n, cpu) in sorted(areas.items(), key=lambda kv: -kv[1][1]):
        print(f"  {area:20} {n:4} {cpu:8.1f}")
    total = sum(r[1] for r in results)
    states = {s: sum(1 for r in results if r[3] == s) for s in ("passed", "skipped", "FAILED")}
    print(f"\n{len(results)} tests, {total:.0f} s of CPU; " + ", ".join(f"{n} {s}" for s, n in states.items()))
    return 1 if states["FAILED"] else 0


if __name__ == "__main__":
    sys.exit(main())
