#!/usr/bin/env python3
"""Listing speed of one NVIDIA release's Windows DLL against its Linux .so, side by side.

    bench/list/pe_pair.py NVCC_FORGE [RUNS]     (default 21 runs)

Takes the curand wheel pair that tests/integration/binary/fetch_pe_truth.sh caches in
$NVCC_FORGE_TOOLS_DIR/pe-truth, extracts curand64_10.dll and libcurand.so.10 to a temporary
directory, then times `NVCC_FORGE list FILE` and `list --format json FILE` (a monotonic timer
around the whole process, spawn included) alternating DLL and .so, and prints the medians.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

forge = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 21
cache = os.path.join(os.environ.get("NVCC_FORGE_TOOLS_DIR",
                                    os.path.expanduser("~/.cache/nvcc-forge-tools")), "pe-truth")
here = os.path.dirname(os.path.abspath(__file__))
subprocess.run(["bash", os.path.join(here, "..", "..", "tests", "integration", "binary",
                                     "fetch_pe_truth.sh"), cache], check=True)
tmp = tempfile.mkdtemp()
files = {}
for whl in sorted(os.listdir(cache)):
    if not whl.endswith(".whl"):
        continue
    with zipfile.ZipFile(os.path.join(cache, whl)) as z:
        for n in z.namelist():
            if n.endswith((".dll", ".so.10")):
                files["dll" if n.endswith(".dll") else "so"] = z.extract(n, tmp)


def timed(args):
    t0 = time.perf_counter_ns()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter_ns() - t0) / 1e6


for mode in ([], ["--format", "json"]):
    samples = {"dll": [], "so": []}
    for _ in range(runs):
        for k in ("dll", "so"):
            samples[k].append(timed([forge, "list", *mode, files[k]]))
    label = "list " + " ".join(mode) if mode else "list"
    for k in ("dll", "so"):
        size = os.path.getsize(files[k]) / 2**20
        print(f"{label:<20} {os.path.basename(files[k]):<18} {size:6.1f} MiB  median "
              f"{statistics.median(samples[k]):7.2f} ms  (min {min(samples[k]):.2f}, {runs} runs)")
