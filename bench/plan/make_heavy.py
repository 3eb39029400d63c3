#!/usr/bin/env python3
"""Writes TUS heavy CUDA translation units into DIR: each holds KERNELS kernels, each a chain of
DEPTH template instantiations that the compiler inlines into one long straight-line body, so
cicc and ptxas take seconds per target. Usage: make_heavy.py DIR [TUS] [KERNELS] [DEPTH]"""
import os
import sys

out = sys.argv[1]
tus = int(sys.argv[2]) if len(sys.argv) > 2 else 2
kernels = int(sys.argv[3]) if len(sys.argv) > 3 else 8
depth = int(sys.argv[4]) if len(sys.argv) > 4 else 300
os.makedirs(out, exist_ok=True)
for t in range(tus):
    src = [
        "template <int N, int S> struct Step {",
        "    __device__ __forceinline__ static float run(float x, const float* c) {",
        "        return Step<N - 1, S>::run(x * c[(N * 7 + S) % 64] + __sinf(x + N), c);",
        "    }",
        "};",
        "template <int S> struct Step<0, S> {",
        "    __device__ __forceinline__ static float run(float x, const float*) { return x; }",
        "};",
    ]
    for k in range(kernels):
        src += [
            f"__global__ void heavy_{t}_{k}(float* out, const float* c) {{",
            "    float x = out[threadIdx.x];",
            f"    x = Step<{depth}, {k}>::run(x, c);",
            "    out[threadIdx.x] = x;",
            "}",
        ]
    with open(os.path.join(out, f"heavy{t}.cu"), "w") as f:
        f.write("\n".join(src) + "\n")
