#!/usr/bin/env python3
"""The unconfigured path once a build has been told it has no policy (issue 27): this process is
the build; one device compile through the new front end says "no policy is set", after which every
call takes the fast path (the build's note looked up, then a plain exec). Interleaved, random
order, CPU (user + sys, wait4) added over calling nvcc directly, median of ROUNDS:

  bare_after_note.py OLD_NVCC_FORGE NEW_NVCC_FORGE [ROUNDS] [--nvcc /usr/local/cuda/bin/nvcc]
"""
import argparse
import os
import random
import statistics
import subprocess
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("rounds", nargs="?", type=int, default=150)
    ap.add_argument("--nvcc", default="/usr/local/cuda/bin/nvcc")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    k = os.path.join(tmp, "k.cu")
    with open(k, "w") as f:
        f.write("__global__ void f() {}\n")
    env = {key: v for key, v in os.environ.items() if not key.startswith("NVCC_")}
    env["NVCC_FORGE_CACHE_DIR"] = os.path.join(tmp, "cache")
    r = subprocess.run([a.new, a.nvcc, "-c", k, "-o", os.path.join(tmp, "k.o")], env=env,
                       capture_output=True, text=True)
    if "no policy is set" not in r.stderr:
        raise SystemExit(f"the first compile did not say the note: {r.stderr}")
    quiet = [(os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
             (os.POSIX_SPAWN_OPEN, 2, "/dev/null", os.O_WRONLY, 0)]

    def cpu_ms(argv):
        pid = os.posix_spawn(argv[0], argv, env, file_actions=quiet)
        _, _, ru = os.wait4(pid, 0)
        return (ru.ru_utime + ru.ru_stime) * 1000

    runs = {"real": [a.nvcc, "--version"], "old": [a.old, a.nvcc, "--version"],
            "new": [a.new, a.nvcc, "--version"]}
    got = {name: [] for name in runs}
    for _ in range(a.rounds):
        order = list(runs.items())
        random.shuffle(order)
        for name, argv in order:
            got[name].append(cpu_ms(argv))
    real = statistics.median(got["real"])
    for name in ("old", "new"):
        print(f"{name}: added CPU (median of {a.rounds}) {statistics.median(got[name]) - real:.3f} ms")
    print(f"load average (1 min): {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
