"""One home for timing a child process in the list benchmarks (bench/list/speed.py,
bench/gpu/compare_listing.py): `measure(cmd)` -> (wall s, user+sys s, peak RSS MiB, exit code),
the wall time from fork to reap (spawn included), through bench/list/spawn_rss.c, compiled once
with the system's C compiler (its comment says why a Python fork would overstate the peak RSS).
"""
import os
import shutil
import subprocess
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
_launcher = None


def launcher():
    """Path of the compiled spawn_rss (built into a temporary directory on first use)."""
    global _launcher
    if _launcher is None:
        cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        if not cc:
            raise SystemExit("measure.py: no C compiler (cc) to build bench/list/spawn_rss.c")
        out = os.path.join(tempfile.mkdtemp(prefix="forge-spawn-rss-"), "spawn_rss")
        subprocess.run([cc, "-O2", "-o", out, os.path.join(_HERE, "spawn_rss.c")], check=True)
        _launcher = out
    return _launcher


def measure_detail(cmd, env=None):
    """One run of cmd, output discarded: {wall, cpu, sys (s), rss (MiB), code, minflt, majflt}."""
    out = subprocess.run([launcher()] + list(cmd), stdout=subprocess.PIPE, check=True,
                         env=env).stdout
    wall_ns, cpu_us, rss_kib, code, sys_us, minflt, majflt = (int(x) for x in out.split())
    return {"wall": wall_ns / 1e9, "cpu": cpu_us / 1e6, "sys": sys_us / 1e6,
            "rss": rss_kib / 1024.0, "code": code, "minflt": minflt, "majflt": majflt}


def measure(cmd, env=None):
    """(wall s, user+sys s, peak RSS MiB, exit code) of one run of cmd, output discarded."""
    d = measure_detail(cmd, env)
    return d["wall"], d["cpu"], d["rss"], d["code"]
