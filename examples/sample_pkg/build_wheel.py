#!/usr/bin/env python3
"""Builds the sample package's wheel the way many real CUDA packages do: it reads
TORCH_CUDA_ARCH_LIST itself and emits -gencode flags through a hard-coded ladder (the
flash-attention pattern), silently dropping every arch outside {8.0, 9.0, 10.0, 12.0} and never
emitting PTX. nvcc-forge's wrapper, in front of `nvcc`, sees what is really asked.

usage: build_wheel.py OUT_DIR      (uses `nvcc` from PATH, the wrapper when PATH-prepended)
"""
import base64
import hashlib
import os
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
VERSION = "0.1.0"


def cuda_archs():
    raw = os.environ.get("TORCH_CUDA_ARCH_LIST", "8.0")
    return [tok.replace("+PTX", "").replace(".", "") for tok in raw.replace(";", " ").split()]


def ladder_flags():
    archs = cuda_archs()
    flags = []
    # The ladder: only what the package author knew about. Everything else is dropped, silently.
    for sm in ("80", "90", "100", "120"):
        if sm in archs:
            flags += ["-gencode", f"arch=compute_{sm},code=sm_{sm}"]
    return flags


def run(cmd):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def main(out_dir):
    build = os.path.join(out_dir, "build")
    os.makedirs(build, exist_ok=True)
    nvcc = os.environ.get("NVCC", "nvcc")
    objs = []
    for src in ("add.cu", "scale.cu"):
        obj = os.path.join(build, src.replace(".cu", ".o"))
        run([nvcc, "-c", os.path.join(HERE, "csrc", src), "-o", obj, "-Xcompiler", "-fPIC", "-O2"]
            + ladder_flags())
        objs.append(obj)
    so = os.path.join(build, "_C.so")
    run([nvcc, "-shared", "-o", so] + objs + ladder_flags())

    wheel = os.path.join(out_dir, f"sample_pkg-{VERSION}-py3-none-linux_x86_64.whl")
    dist = f"sample_pkg-{VERSION}.dist-info"
    files = {
        "sample_pkg/__init__.py": open(os.path.join(HERE, "sample_pkg", "__init__.py"), "rb").read(),
        "sample_pkg/_C.so": open(so, "rb").read(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: sample-pkg\nVersion: {VERSION}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: nvcc-forge-demo\nRoot-Is-Purelib: false\nTag: py3-none-linux_x86_64\n",
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    print(wheel)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
