#!/usr/bin/env python3
"""Runs a build tree's unit tests one executable at a time, each with all of its tests.

    unit_tests.py BUILD_DIR [-j N] [-E REGEX] [--timeout S]

The tests are the ones `ctest -L unit -E REGEX` would run (CTest lists them: each test's command,
with the cross build's emulator in front, its environment and working directory), run as one
process per test executable with a --gtest_filter naming exactly those tests, instead of one
process per test. The test command runs the unit tests this way: under the sanitizers every
process pays ASan's start-up, and under qemu every process pays the emulator's, which was most of
the time (469 tests of the aarch64 lane: 82 s of CPU as 469 processes, 22 s as 13; bench/RESULTS.md,
"Cold CI"). `ctest -L unit` stays the way to run them one by one.

Prints one line per executable; the whole output of one that fails. Exits 1 if any test fails or
an executable exits non-zero or runs past --timeout, 2 if CTest lists no unit test.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time

FILTER = "--gtest_filter="


def listed(build, exclude):
    """{(command prefix, cwd, env): [test names]} of what ctest -L unit -E exclude would run."""
    r = subprocess.run(["ctest", "--test-dir", build, "-N", "-L", "unit", "--show-only=json-v1"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"unit_tests: ctest --test-dir {build} -N exited {r.returncode}: {r.stderr.strip()}")
    out = r.stdout
    groups = {}
    for test in json.loads(out).get("tests", []):
        name, command = test["name"], test.get("command") or []
        if exclude and re.search(exclude, name):
            continue
        props = {p["name"]: p["value"] for p in test.get("properties", [])}
        if props.get("DISABLED"):
            continue
        at = next((i for i, a in enumerate(command) if a.startswith(FILTER)), None)
        if at is None:
            sys.exit(f"unit_tests: {name}: not a gtest_discover_tests command: {command}")
        key = (tuple(command[:at]), tuple(command[at + 1:]), props.get("WORKING_DIRECTORY", build),
               tuple(props.get("ENVIRONMENT", [])))
        # The gtest name: CTest's adds "  # GetParam() = ..." to a parameterised test's.
        groups.setdefault(key, []).append(command[at][len(FILTER):])
    return groups


def run(key, names, timeout):
    prefix, rest, cwd, env_list = key
    env = dict(os.environ)
    env.update(e.split("=", 1) for e in env_list)
    argv = [*prefix, FILTER + ":".join(names), *rest]
    start = time.monotonic()
    try:
        r = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, errors="replace",
                           timeout=timeout)
        rc, out = r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = None, (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
    passed = re.search(r"^\[  PASSED  \] (\d+) tests?\.", out, re.M)
    skipped = re.search(r"^\[  SKIPPED \] (\d+) tests?", out, re.M)
    ok = rc == 0 and passed is not None and int(passed.group(1)) + int(skipped.group(1) if skipped else 0) == len(names)
    return ok, rc, out, time.monotonic() - start, passed, skipped


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1)
    ap.add_argument("-E", dest="exclude", default="")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    groups = listed(args.build, args.exclude)
    if not groups:
        print(f"unit_tests: ctest lists no unit test in {args.build}", file=sys.stderr)
        return 2
    failed, total = 0, 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.j) as pool:
        # The executables with the most tests first: the longest runs do not start last.
        order = sorted(groups, key=lambda k: -len(groups[k]))
        futures = {pool.submit(run, k, groups[k], args.timeout): k for k in order}
        for f in concurrent.futures.as_completed(futures):
            key = futures[f]
            ok, rc, out, secs, passed, skipped = f.result()
            exe = os.path.basename(next(a for a in reversed(key[0]) if not a.startswith("-")))
            n = len(groups[key])
            total += n
            if ok:
                skip = f", {skipped.group(1)} skipped" if skipped else ""
                print(f"unit: {exe}: {n} tests passed{skip} ({secs:.1f} s)")
                continue
            failed += 1
            why = "timed out" if rc is None else f"exit {rc}"
            print(f"unit: {exe}: FAILED ({why}, {n} tests, {secs:.1f} s); its output:\n{out}")
    print(f"unit: {total} tests in {len(groups)} executables: "
          + ("all passed" if not failed else f"{failed} executables failed"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
