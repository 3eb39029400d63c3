#!/usr/bin/env python3
"""Fetches NVIDIA wheels and keeps only their shared libraries: the one way the fetch_*_truth.sh
scripts download (pip, no dependencies, binary wheels for the given platform) and extract
(each member streamed out of its wheel; the wheels are deleted after).

    wheel_libs.py OUT [--only NAME]... [--by-wheel] SPEC@PLATFORM...

Each library (a member named *.so* or *.dll, or only the NAMEs given) goes to OUT, or with
--by-wheel to OUT/<distribution>-<version>-<platform>/. Exit 1 when a wheel cannot be fetched.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import zipfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--by-wheel", action="store_true")
    ap.add_argument("wheels", nargs="+", metavar="SPEC@PLATFORM")
    a = ap.parse_args()
    tmp = os.path.join(a.out, ".wheels")
    shutil.rmtree(tmp, ignore_errors=True)
    for w in a.wheels:
        spec, platform = w.rsplit("@", 1)
        dest = os.path.join(tmp, platform)
        r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
                            "--no-cache-dir", "--no-deps", "--only-binary=:all:", "--platform", platform,
                            "-d", dest, spec])
        if r.returncode != 0:
            return 1
    for whl in glob.glob(os.path.join(tmp, "*", "*.whl")):
        name, version = os.path.basename(whl).split("-")[:2]
        platform = os.path.basename(os.path.dirname(whl))
        out = os.path.join(a.out, f"{name}-{version}-{platform}") if a.by_wheel else a.out
        os.makedirs(out, exist_ok=True)
        with zipfile.ZipFile(whl) as z:
            for info in z.infolist():
                base = os.path.basename(info.filename)
                if (base in a.only) if a.only else (".so" in base or base.endswith(".dll")):
                    part = os.path.join(out, base + ".part")
                    with z.open(info) as src, open(part, "wb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 20)
                    os.replace(part, os.path.join(out, base))
    shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
