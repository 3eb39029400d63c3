#!/usr/bin/env python3
"""The conformance matrix (tests/fixtures/binary/conformance) held against the CUDA driver on a
real GPU: for every product, what `nvcc-forge coverage FILE` says this GPU gets (native, jit or
nothing) against what the driver does with each registered fatbin container of the file
(cuModuleLoadData on the container's bytes: the driver picks the image as it does at a launch).

    driver_conformance.py TOOLS PRODUCTS_DIR [--cc 9.0]

TOOLS is nvcc-forge (or nvcc-forge-tools); PRODUCTS_DIR is where build.py wrote the cells.
A claim of native or jit must be matched by every container with kernels loading; a claim of
nothing by a container the driver refuses for this GPU. In a linked file of an -rdc build the
runtime falls back to the objects' relocatable images (__nv_relfatbin) when the device link's
cubin does not fit the GPU, and JIT-links their PTX (rdc_ptx_trial.sh ran such a kernel on an
H200 whose device link held sm_80 only): there the linked container or every relocatable one must
load.
Prints one row per product and a summary; exit 1 on a disagreement.
"""
import ctypes
import json
import os
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CELLS = os.path.join(HERE, "..", "..", "tests", "fixtures", "binary", "conformance", "cells.json")
FATBIN_MAGIC = 0xBA55ED50


class Driver:
    def __init__(self):
        self.cu = ctypes.CDLL("libcuda.so.1")
        self.check(self.cu.cuInit(0), "cuInit")
        dev = ctypes.c_int()
        self.check(self.cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.cu.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)  # COMPUTE_CAPABILITY_MAJOR
        self.cu.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)  # COMPUTE_CAPABILITY_MINOR
        self.cc = f"{major.value}.{minor.value}"
        self.ctx = ctypes.c_void_p()
        self.check(self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), dev), "ctx")
        self.check(self.cu.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")

    def error_name(self, rc):
        s = ctypes.c_char_p()
        self.cu.cuGetErrorName(rc, ctypes.byref(s))
        return s.value.decode() if s.value else str(rc)

    def check(self, rc, what):
        if rc != 0:
            raise SystemExit(f"{what}: CUDA driver error {rc}")

    def load(self, data):
        """'ok' or the driver's error name for this image."""
        mod = ctypes.c_void_p()
        buf = ctypes.create_string_buffer(bytes(data), len(data))
        rc = self.cu.cuModuleLoadData(ctypes.byref(mod), buf)
        if rc == 0:
            self.cu.cuModuleUnload(mod)
            return "ok"
        return self.error_name(rc)


def containers(tools, path):
    """{fatbin_offset: [rows]} of the file's registered containers (not inside an archive or a
    wheel member)."""
    r = subprocess.run([tools, "list", "--toolkit", "--format", "json", path], capture_output=True,
                       text=True)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1:] or [f"exit {r.returncode}"]
    out = {}
    for row in json.loads(r.stdout):
        if row["member"] is None and row["found"] == "registered":
            out.setdefault(row["fatbin_offset"], []).append(row)
    return out, None


def claim(tools, path, cc):
    r = subprocess.run([tools, "coverage", path, "--format", "json"], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        return f"exit {r.returncode}"
    tiers = set()
    for m in json.loads(r.stdout)["extensions"]:
        if m.get("coverage") and cc in m["coverage"]:
            tiers.add(m["coverage"][cc]["tier"])
    return "/".join(sorted(tiers)) or "not rated"


def is_relocatable(data):
    """An ELF cubin of type ET_REL (1)."""
    return len(data) > 18 and data[:4] == b"\x7fELF" and struct.unpack_from("<H", data, 16)[0] == 1


def main():
    tools, products = sys.argv[1], os.path.abspath(sys.argv[2])
    drv = Driver()
    cc = sys.argv[sys.argv.index("--cc") + 1] if "--cc" in sys.argv else drv.cc
    cells = json.load(open(CELLS))["cells"]
    rows, bad = [], []
    for cell in cells:
        for product in cell["products"]:
            path = os.path.join(products, cell["name"], product)
            if not os.path.isfile(path) or product.endswith((".a", ".ptx")):
                continue
            with open(path, "rb") as f:
                data = f.read()
            said = claim(tools, path, cc)
            if product.endswith(".cubin"):
                loads = ["relocatable" if is_relocatable(data) else drv.load(data)]
            else:
                found, err = containers(tools, path)
                if found is None:
                    rows.append((cell["name"], product, said, f"list failed: {err}"))
                    bad.append(product)
                    continue
                loads, rel_loads = [], []
                for off, entries in sorted(found.items()):
                    if struct.unpack_from("<I", data, off)[0] != FATBIN_MAGIC:
                        loads.append("not-a-container")
                        continue
                    hsize = struct.unpack_from("<H", data, off + 6)[0]
                    fsize = struct.unpack_from("<Q", data, off + 8)[0]
                    blob = data[off:off + hsize + fsize]
                    # PTX is code; a cubin without kernels (nvlink's stub) is not.
                    if not any(e["kind"] == "ptx" or (e["kernels"] or 0) > 0 for e in entries):
                        loads.append("stub")
                        continue
                    res = drv.load(blob)
                    if entries[0]["section"] == "__nv_relfatbin" and len(found) > 1:
                        rel_loads.append(res)
                        res = "rel:" + res
                    loads.append(res)
                if rel_loads:  # the runtime's fallback: the linked image, else the relocatable ones
                    linked = [x for x in loads if not x.startswith("rel:") and x != "stub"]
                    fallback = "ok" if all(x == "ok" for x in rel_loads) else "CUDA_ERROR_NO_BINARY_FOR_GPU"
                    loads = loads + [f"=> {'ok' if any(x == 'ok' for x in linked) else fallback}"]
            judged = [x for x in loads if x not in ("stub", "relocatable") and not x.startswith("rel:")]
            if any(x.startswith("=> ") for x in judged):
                judged = [x[3:] for x in judged if x.startswith("=> ")]
            if not judged:
                verdict = "not judged (relocatable or stub only)"
            elif said == "dead":
                verdict = "agree" if any(x != "ok" for x in judged) else "DISAGREE"
            elif said in ("native", "jit", "jit/native"):
                verdict = "agree" if all(x == "ok" for x in judged) else "DISAGREE"
            else:
                verdict = f"DISAGREE (coverage: {said})"
            if verdict == "DISAGREE":
                bad.append(product)
            rows.append((cell["name"], product, said, ",".join(loads) + " -> " + verdict))
    print(f"GPU cc {drv.cc}, judged for {cc}")
    for r in rows:
        print(" | ".join(r))
    judged = sum(1 for r in rows if "agree" in r[3].lower() and "not judged" not in r[3])
    print(f"driver_conformance: {len(rows)} products, {judged} judged, {len(bad)} disagreement(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
