#!/usr/bin/env python3
"""Wrapper overhead: the real nvcc vs the same call through nvcc-forge (a PATH symlink named nvcc),
measured interleaved in one run (each round runs both, in a random order), so machine noise hits
both sides alike.

  bench_wrapper.py --forge build/wrapper/nvcc-forge [--label NAME] [--forge ... --label ...]
                   [--nvcc /usr/local/cuda/bin/nvcc] [--version-rounds 300]
                   [--compile-rounds 15] [--json]

--forge is any front end: a build tree's, an install prefix's, or the wheel's (`pip install` into
a venv, then --forge <venv>/bin/nvcc-forge: the same native binary, same budget). Given more than
once (each with its --label, in the same order), every round runs the real nvcc and each front end
once, all in one random order, so the front ends are compared side by side under the same noise;
each has its own PATH symlink, caps cache and log.

Cases:
  version          `nvcc --version`, policy configured (NVCC_FORGE_ARCH_LIST) + JSON log
  version-bare     `nvcc --version`, nothing configured (the plain exec path)
  compile-1arch    `nvcc -c k.cu -arch=sm_90` of a one-kernel file, policy = 9.0, inject mode + log
                   (parsed, compared, nothing to inject: the wrapper's fixed cost on a real compile)
  floor-spawn      `nvcc --version` behind a 10-line static C program that posix_spawns nvcc and
                   waits (built here with cc -static; skipped without one): what one extra
                   process costs on this machine, the least any wrapper that logs the exit
                   status can add
  floor-exec       the same C program exec'ing nvcc in place: the least the plain exec path adds
  floor-compile    the one-arch compile behind the spawner: the run-to-run noise of the compile
                   case when the added work is known to be ~0.5 ms
Targets (issue 3): median added time <= 2 ms on --version, <= 1 % on the one-arch compile.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

KERNEL = """__global__ void scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
"""


FLOOR_C = r"""
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
extern char** environ;
int main(int argc, char** argv) {
    pid_t pid;
    int st;
    if (argc < 3) return 2;
    if (argv[1][0] == 'x') { execv(argv[2], argv + 2); return 127; }
    if (posix_spawn(&pid, argv[2], 0, 0, argv + 2, environ) != 0) return 127;
    if (waitpid(pid, &st, 0) < 0) return 127;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}
"""


def build_floor(tmp):
    """A minimal static spawner (the floor of any wrapper process), or None without a C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    src, exe = os.path.join(tmp, "floor.c"), os.path.join(tmp, "floor")
    with open(src, "w") as f:
        f.write(FLOOR_C)
    for flags in (["-static"], []):
        if subprocess.run([cc, "-O2", *flags, src, "-o", exe], capture_output=True).returncode == 0:
            return exe
    return None


def run_once(argv, env, cwd):
    """(wall ms, cpu ms) of one spawn+wait (posix_spawn: no shell, no Python subprocess overhead).
    CPU = user+sys of the process and the children it waited for (wait4's rusage): the part of
    the cost that does not depend on how loaded the machine is."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        t0 = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, env,
                             file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1),
                                           (os.POSIX_SPAWN_DUP2, devnull, 2)])
        _, status, ru = os.wait4(pid, 0)
        dt = (time.perf_counter() - t0) * 1000.0
        cpu = (ru.ru_utime + ru.ru_stime) * 1000.0
    finally:
        os.close(devnull)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv} failed ({status})")
    return dt, cpu


def measure(name, real_argv, sides, cwd, rounds, warmup=3):
    """sides: [(label, argv, env)]; real_argv runs with the first side's env. One result per side,
    each against the real nvcc's times of the same rounds."""
    real_env = sides[0][2]
    runs = [("real", real_argv, real_env)] + list(sides)
    for _ in range(warmup):
        for _, argv, env in runs:
            run_once(argv, env, cwd)
    wall = {label: [] for label, _, _ in runs}
    cpu = {label: [] for label, _, _ in runs}
    diffs = {label: [] for label, _, _ in sides}
    for _ in range(rounds):
        order = list(runs)
        random.shuffle(order)
        got = {label: run_once(argv, env, cwd) for label, argv, env in order}
        for label in wall:
            wall[label].append(got[label][0])
            cpu[label].append(got[label][1])
        for label in diffs:
            diffs[label].append(got[label][0] - got["real"][0])
    r, rc = statistics.median(wall["real"]), statistics.median(cpu["real"])
    results = []
    for label, _, _ in sides:
        f, fc = statistics.median(wall[label]), statistics.median(cpu[label])
        results.append({
            "case": name, "forge": label, "rounds": rounds,
            "real_median_ms": round(r, 3), "forge_median_ms": round(f, 3),
            "added_ms_median_of_pairs": round(statistics.median(diffs[label]), 3),
            "added_ms": round(f - r, 3), "added_pct": round(100.0 * (f - r) / r, 2),
            "real_cpu_ms": round(rc, 3), "forge_cpu_ms": round(fc, 3),
            "added_cpu_ms": round(fc - rc, 3), "added_cpu_pct": round(100.0 * (fc - rc) / rc, 2),
            "loadavg_1min": round(os.getloadavg()[0], 2),
        })
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--forge", required=True, action="append")
    ap.add_argument("--label", action="append", default=[])
    ap.add_argument("--nvcc", default="/usr/local/cuda/bin/nvcc")
    ap.add_argument("--version-rounds", type=int, default=300)
    ap.add_argument("--compile-rounds", type=int, default=15)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.label and len(a.label) != len(a.forge):
        ap.error("give one --label per --forge, or none")
    labels = a.label or (["forge"] if len(a.forge) == 1 else [f"forge{i + 1}" for i in range(len(a.forge))])
    if len(set(labels)) != len(labels):
        ap.error(f"labels must differ: {labels}")
    nvcc = os.path.realpath(a.nvcc)
    with tempfile.TemporaryDirectory(prefix="forge-bench-") as tmp:
        with open(os.path.join(tmp, "k.cu"), "w") as f:
            f.write(KERNEL)
        base = {k: v for k, v in os.environ.items() if not k.startswith("NVCC_")}
        base["NVCC_FORGE_REAL_NVCC"] = nvcc
        out = os.path.join(tmp, "k.o")
        compile_args = ["-c", os.path.join(tmp, "k.cu"), "-o", out, "-arch=sm_90"]
        # One PATH symlink named nvcc, caps cache and log per front end: none reads another's.
        bare, configured, logs = [], [], []
        for i, (label, forge) in enumerate(zip(labels, a.forge)):
            wrapdir = os.path.join(tmp, f"bin{i}")
            os.makedirs(wrapdir)
            wrapper = os.path.join(wrapdir, "nvcc")
            os.symlink(os.path.realpath(forge), wrapper)
            env = dict(base, NVCC_FORGE_CACHE_DIR=os.path.join(tmp, f"cache{i}"))
            logs.append(os.path.join(tmp, f"log{i}.jsonl"))
            bare.append((label, wrapper, env))
            configured.append((label, wrapper, dict(env, NVCC_FORGE_ARCH_LIST="9.0",
                                                    NVCC_FORGE_MODE="inject", NVCC_FORGE_LOG=logs[-1])))

        def sides(which, args):
            return [(label, [wrapper] + args, env) for label, wrapper, env in which]

        results = (
            measure("version", [nvcc, "--version"], sides(configured, ["--version"]), tmp,
                    a.version_rounds)
            + measure("version-bare", [nvcc, "--version"], sides(bare, ["--version"]), tmp,
                      a.version_rounds)
            + measure("compile-1arch", [nvcc] + compile_args, sides(configured, compile_args),
                      tmp, a.compile_rounds, warmup=1))
        floor = build_floor(tmp)
        if floor is not None:
            env = bare[0][2]
            results += (
                measure("floor-spawn", [nvcc, "--version"],
                        [("floor", [floor, "s", nvcc, "--version"], env)], tmp, a.version_rounds)
                + measure("floor-exec", [nvcc, "--version"],
                          [("floor", [floor, "x", nvcc, "--version"], env)], tmp, a.version_rounds)
                + measure("floor-compile", [nvcc] + compile_args,
                          [("floor", [floor, "s", nvcc] + compile_args, env)], tmp,
                          a.compile_rounds, warmup=1))
        actions = {}
        for label, log in zip(labels, logs):
            with open(log) as f:
                actions[label] = sorted({json.loads(line)["action"] for line in f})
    if a.json:
        logged = actions[labels[0]] if len(labels) == 1 else actions
        print(json.dumps({"results": results, "logged_actions": logged}, indent=2))
        return 0
    many = len(labels) > 1
    head = f"{'case':<15} " + (f"{'forge':<10} " if many else "")
    print(head + f"{'rounds':>6} {'real ms':>9} {'forge ms':>9} {'added ms':>9} "
          f"{'pairs ms':>9} {'added %':>8} | {'cpu real':>9} {'cpu forge':>9} {'cpu added':>9} "
          f"{'cpu %':>7}")
    for r in results:
        row = f"{r['case']:<15} " + (f"{r['forge']:<10} " if many else "")
        print(row + f"{r['rounds']:>6} {r['real_median_ms']:>9.3f} "
              f"{r['forge_median_ms']:>9.3f} {r['added_ms']:>9.3f} "
              f"{r['added_ms_median_of_pairs']:>9.3f} {r['added_pct']:>7.2f}% | "
              f"{r['real_cpu_ms']:>9.3f} {r['forge_cpu_ms']:>9.3f} {r['added_cpu_ms']:>9.3f} "
              f"{r['added_cpu_pct']:>6.2f}%")
    print(f"load average (1 min) at the end: {results[-1]['loadavg_1min']}; nproc {os.cpu_count()}")
    for label in labels:
        print(f"logged actions{' (' + label + ')' if many else ''}: {', '.join(actions[label])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
