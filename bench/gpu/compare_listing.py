#!/usr/bin/env python3
"""On the GPU machine: `nvcc-forge list` against cuobjdump on every shared object with device
code under the torch, cupy, jax and nvidia-* packages, default and -all, plus timings and peak
memory on libtorch_cuda.so. Writes listing.md and listing.json into OUT.

usage: compare_listing.py NVCC_FORGE OUT
"""
import concurrent.futures as cf
import json
import os
import re
import site
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "list"))
from measure import measure  # noqa: E402  (bench/list/measure.py: the one process timer)

FORGE, OUT = sys.argv[1], sys.argv[2]
CUOBJDUMP = os.environ.get("CUOBJDUMP", "cuobjdump")
PACKAGES = ("torch", "cupy", "cupy_backends", "jax", "jaxlib", "jax_plugins", "nvidia")


def run(cmd, timeout=600):
    """Runs cmd, returns (rc, stdout, stderr, wall seconds, peak RSS in MiB)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate(timeout=timeout)
    wall = time.perf_counter() - t0
    # Popen.wait already reaped it; re-run through wait4 is impossible, so use resource of the
    # child via /usr/bin/time-free method below for the memory figures.
    return p.returncode, out.decode(errors="replace"), err.decode(errors="replace"), wall


def roots():
    seen = set()
    for sp in site.getsitepackages() + [site.getusersitepackages()]:
        for pkg in PACKAGES:
            d = os.path.join(sp, pkg)
            if os.path.isdir(d) and os.path.realpath(d) not in seen:
                seen.add(os.path.realpath(d))
                yield d


def shared_objects():
    for r in roots():
        for dp, _, fns in os.walk(r):
            for fn in fns:
                if ".so" in fn and not fn.endswith(".py"):
                    p = os.path.join(dp, fn)
                    if os.path.isfile(p) and not os.path.islink(p):
                        yield p


NAME = re.compile(r"\.(sm_\d+[af]?)\.(cubin|ptx)\s*$")


def cuobjdump_entries(path, all_fatbins):
    entries = []
    for flag in ("--list-elf", "--list-ptx"):
        cmd = [CUOBJDUMP, flag] + (["-all"] if all_fatbins else []) + [path]
        rc, out, err, _ = run(cmd)
        if rc != 0 and "does not contain device code" not in err + out:
            return None, err.strip()[:200]
        for line in out.splitlines():
            m = NAME.search(line)
            if not m:
                continue
            arch = m.group(1)
            if m.group(2) == "ptx":
                arch = arch.replace("sm_", "compute_")
            entries.append(arch)
    return sorted(entries), ""


def native_entries(rows, all_fatbins):
    """Applies cuobjdump's rules to our rows: without -all only the executable fatbin (.nv_fatbin)
    when one exists; family cubins listed without their f; LTO-IR is not listed; nothing embedded
    outside the registered sections (found: embedded) is read by cuobjdump."""
    rows = [r for r in rows if r["kind"] != "lto" and r.get("found") != "embedded"]
    if not all_fatbins and any(r["section"] == ".nv_fatbin" for r in rows):
        rows = [r for r in rows if r["section"] == ".nv_fatbin"]
    out = []
    for r in rows:
        a = r["arch"]
        if a.endswith("f"):
            a = a[:-1]
        out.append(a)
    return sorted(out)


def compare(path):
    rc, out, err, wall = run([FORGE, "list", "--format", "json", path])
    if rc != 0:
        return {"file": path, "error": f"nvcc-forge list exit {rc}: {err.strip()[:200]}"}
    rows = json.loads(out)
    if not rows:
        return None
    res = {"file": path, "native_entries": len(rows), "native_s": wall}
    for all_fatbins in (False, True):
        key = "all" if all_fatbins else "default"
        t0 = time.perf_counter()
        cu, cerr = cuobjdump_entries(path, all_fatbins)
        res[f"cuobjdump_{key}_s"] = time.perf_counter() - t0
        if cu is None:
            res[f"{key}_match"] = None
            res[f"{key}_note"] = cerr
            continue
        nat = native_entries(rows, all_fatbins)
        res[f"{key}_match"] = nat == cu
        res[f"{key}_native"] = len(nat)
        res[f"{key}_cuobjdump"] = len(cu)
        if nat != cu:
            from collections import Counter
            a, b = Counter(nat), Counter(cu)
            res[f"{key}_diff"] = {"native_only": sorted((a - b).elements())[:20],
                                  "cuobjdump_only": sorted((b - a).elements())[:20]}
    return res


def main():
    os.makedirs(OUT, exist_ok=True)
    files = sorted(set(shared_objects()))
    print(f"{len(files)} shared objects under {', '.join(roots())}", flush=True)
    results = []
    with cf.ThreadPoolExecutor(max_workers=12) as ex:
        for r in ex.map(compare, files):
            if r is not None:
                results.append(r)
    with_code = [r for r in results if "error" not in r]
    d_ok = sum(1 for r in with_code if r.get("default_match"))
    a_ok = sum(1 for r in with_code if r.get("all_match"))
    print(f"device code in {len(with_code)} files; identical to cuobjdump: default {d_ok}, -all {a_ok}",
          flush=True)

    # libtorch_cuda.so: speed and memory, one run, interleaved.
    torch_so = next((r["file"] for r in with_code if r["file"].endswith("libtorch_cuda.so")), None)
    perf = {}
    if torch_so:
        size_mb = os.path.getsize(torch_so) / 1e6
        # Interleaved rounds (text list, JSON list, --toolkit), each process timed from fork to
        # reap (spawn included) by bench/list/measure.py; medians of the wall and CPU times, the
        # largest peak RSS of each. `--version` is the process alone (binary, start-up), the
        # launcher running /bin/true the floor of the RSS figure itself.
        rounds, tk_rounds = int(os.environ.get("LIST_ROUNDS", 21)), int(os.environ.get("TOOLKIT_ROUNDS", 11))
        cmds = {"list_text": [FORGE, "list", torch_so],
                "list": [FORGE, "list", "--format", "json", torch_so],
                "toolkit": [FORGE, "list", "--toolkit", "--format", "json", torch_so],
                "version": [FORGE, "--version"], "true": ["/bin/true"]}
        samples = {k: [] for k in cmds}
        for i in range(max(rounds, tk_rounds)):
            for k, cmd in cmds.items():
                if i < (tk_rounds if k == "toolkit" else rounds):
                    samples[k].append(measure(cmd))
        elf = measure([CUOBJDUMP, "--list-elf", torch_so])
        ptx = measure([CUOBJDUMP, "--list-ptx", torch_so])
        both = elf[0] + ptx[0]
        perf = {"file": torch_so, "size_mb": round(size_mb, 1), "list_rounds": rounds,
                "toolkit_rounds": tk_rounds, "cores": os.cpu_count(),
                "cuobjdump_list_elf_s": elf[0], "cuobjdump_list_elf_rss_mib": elf[2],
                "cuobjdump_list_ptx_s": ptx[0], "cuobjdump_list_ptx_rss_mib": ptx[2]}
        for k, xs in samples.items():
            perf[f"{k}_median_s"] = statistics.median(x[0] for x in xs)
            perf[f"{k}_min_s"] = min(x[0] for x in xs)
            perf[f"{k}_cpu_median_s"] = statistics.median(x[1] for x in xs)
            perf[f"{k}_max_rss_mib"] = max(x[2] for x in xs)
            perf[f"{k}_exit_codes"] = sorted({x[3] for x in xs})
            if k not in ("version", "true"):
                perf[f"ratio_{k}_vs_both_cuobjdump"] = both / perf[f"{k}_median_s"]
        print(json.dumps(perf, indent=1), flush=True)
        # The targets of issue 16 ("Speed of the readers").
        print(f"list (text): {perf['list_text_median_s'] * 1e3:.2f} ms median = "
              f"{perf['ratio_list_text_vs_both_cuobjdump']:.0f}x cuobjdump --list-elf + --list-ptx "
              f"({elf[0]:.2f} + {ptx[0]:.2f} s), peak {perf['list_text_max_rss_mib']:.1f} MiB "
              f"(target >= 1000x at <= 16 MiB)", flush=True)
        print(f"list --format json: {perf['list_median_s'] * 1e3:.2f} ms = "
              f"{perf['ratio_list_vs_both_cuobjdump']:.0f}x, peak {perf['list_max_rss_mib']:.1f} MiB", flush=True)
        print(f"list --toolkit --format json: {perf['toolkit_median_s'] * 1e3:.1f} ms = "
              f"{perf['ratio_toolkit_vs_both_cuobjdump']:.1f}x, peak {perf['toolkit_max_rss_mib']:.1f} MiB, "
              f"CPU {perf['toolkit_cpu_median_s']:.2f} s on {perf['cores']} cores "
              f"(CPU / cores = {perf['toolkit_cpu_median_s'] / perf['cores'] * 1e3:.0f} ms) "
              f"(target >= 100x at <= 64 MiB)", flush=True)
        print(f"process alone (--version): {perf['version_median_s'] * 1e3:.2f} ms, "
              f"{perf['version_max_rss_mib']:.1f} MiB; launcher floor (/bin/true): "
              f"{perf['true_median_s'] * 1e3:.2f} ms, {perf['true_max_rss_mib']:.1f} MiB", flush=True)

    with open(os.path.join(OUT, "listing.json"), "w") as f:
        json.dump({"files": results, "libtorch_cuda": perf}, f, indent=1)
    with open(os.path.join(OUT, "listing.md"), "w") as f:
        f.write("| file | entries (all sections) | default: native / cuobjdump | -all: native / cuobjdump | nvcc-forge list s | cuobjdump s (default+all, elf+ptx) |\n|---|---|---|---|---|---|\n")
        for r in results:
            if "error" in r:
                f.write(f"| {r['file']} | error: {r['error']} | | | | |\n")
                continue
            def cell(k):
                m = r.get(f"{k}_match")
                if m is None:
                    return "n/a " + r.get(f"{k}_note", "")
                return f"{'=' if m else 'DIFF'} {r.get(f'{k}_native')}/{r.get(f'{k}_cuobjdump')}"
            f.write(f"| {os.path.relpath(r['file'], '/')} | {r['native_entries']} | {cell('default')} | {cell('all')} | "
                    f"{r['native_s']:.3f} | {r['cuobjdump_default_s'] + r['cuobjdump_all_s']:.1f} |\n")
    diffs = [r for r in with_code if r.get("default_match") is False or r.get("all_match") is False]
    for r in diffs[:30]:
        print("DIFF", r["file"], r.get("default_diff"), r.get("all_diff"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
