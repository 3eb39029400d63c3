#!/usr/bin/env python3
"""Inputs that grow with a fleet or a build, for bench/scale/run.sh (issue 38):

    gen.py wheel SO OUT.whl MEMBERS   # a wheel of MEMBERS members: SO as _C.so, the rest small
    gen.py log OUT LINES              # a compile log (NVCC_FORGE_LOG) of LINES records
    gen.py tus DIR TUS                # TUS small .cu files and build.py, which compiles them
    gen.py policy IN OUT FACTOR       # IN with FACTOR times the torch minors of each CUDA row
"""
import base64
import hashlib
import json
import os
import re
import sys
import zipfile


def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel(so, out, members):
    dist = "big"
    di = f"{dist}-1.0.dist-info"
    lines = []
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        data = open(so, "rb").read()
        z.writestr(f"{dist}/_C.so", data, zipfile.ZIP_DEFLATED)
        lines.append(f"{dist}/_C.so,{record_hash(data)},{len(data)}")
        for i in range(members - 4):
            name, body = f"{dist}/m{i // 1000:03d}/f{i:06d}.py", f"x = {i}\n".encode()
            z.writestr(name, body)
            lines.append(f"{name},{record_hash(body)},{len(body)}")
        for name, body in [(f"{di}/METADATA", b"Name: big\nVersion: 1.0\n"),
                           (f"{di}/WHEEL", b"Wheel-Version: 1.0\n")]:
            z.writestr(name, body)
            lines.append(f"{name},{record_hash(body)},{len(body)}")
        z.writestr(f"{di}/RECORD", "\n".join(lines + [f"{di}/RECORD,,"]) + "\n")


def log(out, n):
    """One record per call; one call in 7 dropped compute_120, one in 5 had sm_90 injected back,
    one in 11 asked for an extra sm_70; TUs named per call, in 100 build directories."""
    policy = ["sm_75", "sm_80", "sm_86", "sm_90", "compute_90", "sm_100", "sm_120", "compute_120"]
    with open(out, "w") as f:
        for i in range(n):
            missing, injected, extra, action = [], [], [], "compared"
            if i % 7 == 0:
                missing, action = ["compute_120"], "compared"
            if i % 5 == 0:
                missing, injected, action = missing + ["sm_90"], ["sm_90"], "injected"
            if i % 11 == 0:
                extra = ["sm_70"]
            rec = {"cwd": f"/build/d{i % 100}", "sources": [f"src/k{i}.cu"],
                   "output": f"obj/k{i}.o", "policy": policy,
                   "requested": [t for t in policy if t not in missing] + extra,
                   "missing": missing, "extra": extra, "injected": injected, "clamped": [],
                   "arch_specific": False, "arch_rule": None, "mode": "warn", "action": action,
                   "exit_code": 0, "duration_ms": 1200}
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")


def tus(d, n):
    os.makedirs(os.path.join(d, "src"), exist_ok=True)
    for i in range(n):
        with open(os.path.join(d, "src", f"k{i}.cu"), "w") as f:
            f.write(f"__global__ void k{i}(float* x) {{ x[threadIdx.x] += {i}.0f; }}\n")
    with open(os.path.join(d, "build.py"), "w") as f:
        f.write('''import os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
d, n, jobs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(os.path.join(d, "obj"), exist_ok=True)
def one(i):
    return subprocess.run(["nvcc", "-c", f"src/k{i}.cu", "-o", f"obj/k{i}.o",
                           "-gencode", "arch=compute_80,code=sm_80",
                           "-gencode", "arch=compute_90,code=[sm_90,compute_90]"], cwd=d).returncode
with ThreadPoolExecutor(jobs) as pool:
    sys.exit(max(pool.map(one, range(n)), default=0))
''')


def policy(src, out, factor):
    """Each torch_runnable row's releases, and as many made-up minors 3.N more (factor - 1 times
    as many): they take the index row, as a minor without a by_torch row does."""
    def more(m):
        rel = m.group(2).split()
        extra = [f"3.{j}" for j in range(len(rel) * (factor - 1))]
        return f'{m.group(1)}"{" ".join(rel + extra)}"'
    text = re.sub(r'^(\s+releases: )"([^"]*)"', more, open(src).read(), flags=re.M)
    open(out, "w").write(text)


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "wheel":
        wheel(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif what == "log":
        log(sys.argv[2], int(sys.argv[3]))
    elif what == "tus":
        tus(sys.argv[2], int(sys.argv[3]))
    elif what == "policy":
        policy(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        sys.exit(__doc__)
