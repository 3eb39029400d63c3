#!/usr/bin/env python3
"""nvcc-forge toolkits / bundle / verify-bundle end to end, with the real toolkits on the machine
(/usr/local/cuda 13.0, plus any second toolkit in NVCC_FORGE_NVCC_CANDIDATES or the tools dir).
A case whose toolkit is absent is skipped (exit 77)."""
import filecmp
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402

ENV = None  # the environment every command runs in (setup())


def setup(t):
    # A second toolkit installed by .ci/install-deps.sh (install_cu13x.sh) is found even when the
    # environment does not name it.
    global ENV
    ENV = dict(os.environ)
    for extra in (os.path.join(t.tools_dir, "cu131", "nvidia", "cu13"),
                  os.path.join(t.tools_dir, "cu128", "nvidia", "cuda_nvcc")):
        if os.access(os.path.join(extra, "bin", "nvcc"), os.X_OK):
            old = ENV.get("NVCC_FORGE_NVCC_CANDIDATES")
            ENV["NVCC_FORGE_NVCC_CANDIDATES"] = f"{old}:{extra}" if old else extra


def forge(t, *args, env=None):
    """nvcc-forge ARGS in the case's directory; out+err are checked together (expect_output)."""
    return t.forge(*args, env=env or ENV)


def fx(t, name):
    return t.fixtures("bundle", name)


def has_release(t, rel, sms):
    """A discovered toolkit of release `rel` can emit every sm_ in `sms`."""
    r = forge(t, "toolkits", "--format", "json")
    try:
        tks = json.loads(r.out)
        return any(k["release"] == rel and all("sm_" + s in k["sass"] for s in sms.split()) for k in tks)
    except (ValueError, KeyError, TypeError):
        return False


def need_cuda13(t):
    if not has_release(t, "13.0", "90 100 110 120"):
        ft.skip("no CUDA 13.0 toolkit found")


def check_unchanged(path, text, msg):
    ft.check(ft.read(path) == text, msg)


@ft.case("toolkits.toolkits_json")
def toolkits_json(t):
    need_cuda13(t)
    # A symlink named nvcc to the wrapper, first on PATH and in the candidates, must not count.
    shim = os.path.join(t.work, "shim")
    os.makedirs(shim)
    os.symlink(t.forge_exe, os.path.join(shim, "nvcc"))
    env = t.env(ENV, PATH=shim + os.pathsep + ENV["PATH"], NVCC_FORGE_NVCC_CANDIDATES=os.path.join(shim, "nvcc"))
    r = forge(t, "toolkits", "--format", "json", env=env)
    ft.check(r.rc == 0, f"toolkits exited {r.rc}\n{r!r}")
    tks = r.json()
    ft.check(isinstance(tks, list) and tks, tks)
    for k in tks:
        for key in ("version", "path", "sass", "ptx"):
            ft.check(key in k, (key, k))
        ft.check(os.path.realpath(k["path"]) != os.path.realpath(t.forge_exe), k)
        ft.check(len(k["version"].split(".")) == 3, k["version"])
    paths = [k["path"] for k in tks]
    ft.check(len(paths) == len(set(paths)), paths)
    real = os.path.realpath("/usr/local/cuda/bin/nvcc")
    if os.path.exists(real):
        mine = [k for k in tks if k["path"] == real]
        ft.check(len(mine) == 1, (real, paths))
        k = mine[0]
        ft.check(k["version"].startswith("13.0."), k["version"])
        ft.check("sm_110" in k["sass"] and "sm_100f" in k["sass"] and "sm_60" not in k["sass"], k["sass"])
        ft.check("compute_120" in k["ptx"], k["ptx"])


@ft.case("toolkits.toolkits_text")
def toolkits_text(t):
    need_cuda13(t)
    r = forge(t, "toolkits").expect_rc(0)
    r.expect_output("CUDA 13.0.")
    r.expect_output("sass: sm_75")
    forge(t, "toolkits", "--format", "yaml").expect_rc(2)


@ft.case("toolkits.bundle_missing_toolkit")
def bundle_missing_toolkit(t):
    # 90 pinned to a toolkit nobody has: exit 2 before compiling, naming what is missing and found.
    ft.write(t.path("pin.yml"), '90: "==11.0"\n110: ">=13.0"\n')
    r = forge(t, "bundle", fx(t, "kernels.cu"), "--sm", "90,110,121", "--sm-toolkit", "pin.yml",
              "--symbol", "k", "--out", "k.h").expect_rc(2)
    r.expect_output("sm_90: needs CUDA ==11.0")
    r.expect_output("sm_121: no toolkit spec")
    r.expect_output("discovered toolkits:")
    r.expect_output("nothing was compiled")
    ft.check(not os.path.lexists(t.path("k.h")), "a header was written")


@ft.case("toolkits.bundle_bad_policy")
def bundle_bad_policy(t):
    forge(t, "bundle", fx(t, "kernels.cu"), "--sm", "90", "--sm-toolkit", fx(t, "sm_toolkit_bad_spec.yml"),
          "--symbol", "k", "--out", "k.h").expect_rc(2).expect_output("sm_toolkit_bad_spec.yml:3")
    forge(t, "bundle", fx(t, "kernels.cu"), "--sm", "90", "--sm-toolkit", fx(t, "sm_toolkit_13.yml"),
          "--symbol", "9k", "--out", "k.h").expect_rc(2)
    forge(t, "bundle", fx(t, "kernels.cu"), "--sm", "hopper", "--sm-toolkit", fx(t, "sm_toolkit_13.yml"),
          "--symbol", "k", "--out", "k.h").expect_rc(2)
    forge(t, "bundle", fx(t, "missing.cu"), "--sm", "90", "--sm-toolkit", fx(t, "sm_toolkit_13.yml"),
          "--symbol", "k", "--out", "k.h").expect_rc(2)


@ft.case("toolkits.bundle_compile_error")
def bundle_compile_error(t):
    need_cuda13(t)
    ft.write(t.path("broken.cu"), 'extern "C" __global__ void k(int* p) { p[0] = undefined_name; }\n')
    ft.write(t.path("k.h"), "previous\n")
    r = forge(t, "bundle", "broken.cu", "--sm", "90", "--sm-toolkit", fx(t, "sm_toolkit_13.yml"),
              "--symbol", "k", "--out", "k.h").expect_rc(2)
    r.expect_output("undefined_name")
    r.expect_output("arch=compute_90,code=sm_90")
    check_unchanged(t.path("k.h"), "previous\n", "a failed bundle replaced the header")


@ft.case("toolkits.bundle_deterministic")
def bundle_deterministic(t):
    need_cuda13(t)
    forge(t, "bundle", fx(t, "kernels.cu"), "--sm", "90,100,110,120", "--sm-toolkit", fx(t, "sm_toolkit_13.yml"),
          "--symbol", "kernels", "--out", "a.h").expect_rc(0)
    os.makedirs(t.path("elsewhere"))
    shutil.copy(fx(t, "kernels.cu"), t.path("elsewhere"))
    forge(t, "bundle", "elsewhere/kernels.cu", "--sm", "120,110,100,90", "--sm-toolkit",
          fx(t, "sm_toolkit_13.yml"), "--symbol", "kernels", "--out", "b.h").expect_rc(0)
    ft.check(filecmp.cmp(t.path("a.h"), t.path("b.h"), shallow=False), "two runs gave different headers")
    header = ft.read(t.path("a.h"))
    ft.check(t.work not in header, "the header contains the work path")
    ft.check("NVCC_FORGE_BUNDLE_KERNELS_H_" in header, "no include guard")
    forge(t, "verify-bundle", "a.h", "--layout", fx(t, "layout_13_ok.yml")).expect_rc(0) \
        .expect_output("sm_110 built by CUDA 13.0")


def corrupt_magic(text):
    """The first `0x50, 0xed` after the line naming _blob0[ becomes `0x51, 0xed`."""
    out, head, done = [], True, False
    for line in text.splitlines(keepends=True):
        if head:
            head = not re.search(r"_blob0\[", line)
        elif not done and "0x50, 0xed" in line:
            line, done = line.replace("0x50, 0xed", "0x51, 0xed", 1), True
        out.append(line)
    return "".join(out)


@ft.case("toolkits.verify_bundle_mismatch")
def verify_bundle_mismatch(t):
    need_cuda13(t)
    forge(t, "bundle", fx(t, "kernels.cu"), "--sm", "90,100,110,120", "--sm-toolkit", fx(t, "sm_toolkit_13.yml"),
          "--symbol", "kernels", "--out", "a.h").expect_rc(0)
    r = forge(t, "verify-bundle", "a.h", "--layout", fx(t, "layout_13_wrong_toolkit.yml")).expect_rc(1)
    r.expect_output("sm_90 cubin")
    r.expect_output("was built by CUDA 13.0, the layout expects CUDA 12.8")
    r = forge(t, "verify-bundle", "a.h", "--layout", fx(t, "layout_13_wrong_sms.yml")).expect_rc(1)
    r.expect_output("sm_110 cubin")
    r.expect_output("is not in the layout")
    forge(t, "verify-bundle", "a.h", "--layout", fx(t, "layout_bad.yml")).expect_rc(2) \
        .expect_output("layout_bad.yml:2")
    # clang-format on a committed header must not break the check
    if shutil.which("clang-format"):
        shutil.copy(t.path("a.h"), t.path("f.h"))
        t.run(["clang-format", "-i", "f.h"])
        forge(t, "verify-bundle", "f.h", "--layout", fx(t, "layout_13_ok.yml")).expect_rc(0)
    # a header someone edited by hand: the table's SM count no longer matches its array
    text = ft.read(t.path("a.h"))
    ft.write(t.path("edited.h"), "".join(line.replace("kernels_blob0_sms, 4,", "kernels_blob0_sms, 3,", 1)
                                         for line in text.splitlines(keepends=True)))
    forge(t, "verify-bundle", "edited.h", "--layout", fx(t, "layout_13_ok.yml")).expect_rc(2) \
        .expect_output("edited.h:")
    # a byte of the fatbin magic changed: unreadable blob
    corrupt = corrupt_magic(text)
    ft.check(corrupt != text, "corruption did not apply")
    ft.write(t.path("corrupt.h"), corrupt)
    forge(t, "verify-bundle", "corrupt.h", "--layout", fx(t, "layout_13_ok.yml")).expect_rc(2) \
        .expect_output("corrupt.h[blob 0]")


@ft.case("toolkits.bundle_rdc_cudadevrt")
def bundle_rdc_cudadevrt(t):
    need_cuda13(t)
    r = forge(t, "bundle", fx(t, "graph_cond.cu"), "--sm", "90,110", "--sm-toolkit", fx(t, "sm_toolkit_13.yml"),
              "--rdc", "--devlink-lib", "cudadevrt", "--symbol", "graph_cond", "--out", "g.h", "-v").expect_rc(0)
    r.expect_output("-rdc=true")
    r.expect_output("-lcudadevrt")
    forge(t, "verify-bundle", "g.h", "--layout", fx(t, "layout_13_rdc.yml")).expect_rc(0)
    forge(t, "bundle", fx(t, "graph_cond.cu"), "--sm", "90", "--sm-toolkit", fx(t, "sm_toolkit_13.yml"),
          "--devlink-lib", "cudadevrt", "--symbol", "g", "--out", "g2.h").expect_rc(2)


@ft.case("toolkits.load_fatbin_compiles")
def load_fatbin_compiles(t):
    need_cuda13(t)
    cuda_inc = "/usr/local/cuda/include"
    if not os.path.isfile(os.path.join(cuda_inc, "cuda.h")):
        ft.skip(f"no {cuda_inc}/cuda.h")
    forge(t, "bundle", fx(t, "kernels.cu"), "--sm", "90,110", "--sm-toolkit", fx(t, "sm_toolkit_13.yml"),
          "--symbol", "kernels", "--out", "kernels_fatbin.h").expect_rc(0)
    libs = []
    if os.path.isfile("/usr/local/cuda/lib64/stubs/libcuda.so"):
        libs = ["-L/usr/local/cuda/lib64/stubs", "-lcuda"]
    flags = ["-I" + cuda_inc, "-I" + t.src("wrapper", "include"), "-I.", '-DBUNDLE_HEADER="kernels_fatbin.h"',
             "-DBUNDLE_SYMBOL=kernels_blobs"]
    for std in ("c++11", "c++17", "c++20"):
        r = t.run(["g++", f"-std={std}", "-Wall", "-Wextra", "-Werror", *flags, fx(t, "load_test.cpp"),
                   "-o", f"load_{std}", *libs])
        ft.check(r.rc == 0, f"load_test.cpp does not compile with -std={std}\n{r!r}")
    r = t.run(["gcc", "-std=c11", "-Wall", "-Werror", "-Wno-unused-const-variable", *flags,
               "-DBUNDLE_COUNT=kernels_blob_count", fx(t, "load_test.c"), "-o", "load_c"])
    ft.check(r.rc == 0, f"the header is not valid C11\n{r!r}")
    r = t.run([t.path("load_c")])
    ft.check(r.rc == 0, f"C view of the table is wrong\n{r!r}")
    # nvcc compiles it too (a .cu translation unit including both headers)
    shutil.copy(fx(t, "load_test.cpp"), t.path("load_test.cu"))
    r = t.run(["/usr/local/cuda/bin/nvcc", "-std=c++17", *flags, "-c", "load_test.cu", "-o", "load_test.o"])
    ft.check(r.rc == 0, f"nvcc cannot compile it\n{r!r}")


@ft.case("toolkits.bundle_two_toolkits_13x")
def bundle_two_toolkits_13x(t):
    need_cuda13(t)
    if not has_release(t, "13.1", "110"):
        ft.skip("no CUDA 13.1 toolkit (tests/integration/toolkits/install_cu13x.sh installs one)")
    forge(t, "bundle", fx(t, "kernels.cu"), "--sm", "90,100,110,120", "--sm-toolkit",
          fx(t, "sm_toolkit_13_two.yml"), "--symbol", "kernels", "--out", "two.h").expect_rc(0)
    forge(t, "verify-bundle", "two.h", "--layout", fx(t, "layout_two13_ok.yml")).expect_rc(0) \
        .expect_output("blob 1: sm_110 built by CUDA 13.1")
    r = forge(t, "verify-bundle", "two.h", "--layout", fx(t, "layout_two13_wrong.yml")).expect_rc(1)
    r.expect_output("sm_110 cubin")
    r.expect_output("no sm_120 cubin")
    forge(t, "verify-bundle", "two.h", "--layout", fx(t, "layout_13_ok.yml")).expect_rc(1) \
        .expect_output("2 blob(s)")


@ft.case("toolkits.bundle_cu128")
def bundle_cu128(t):
    need_cuda13(t)
    if not has_release(t, "12.8", "90 100 120"):
        ft.skip("no CUDA 12.8 toolkit with nvcc (PyPI's nvidia-cuda-nvcc-cu12 ships none; point "
                "NVCC_FORGE_NVCC_CANDIDATES at one)")
    # the shipped policy/sm_toolkit.yml: 12.8 for 90/100/120, >=13.0 for 110
    forge(t, "bundle", fx(t, "kernels.cu"), "--sm", "90,100,110,120", "--symbol", "kernels",
          "--out", "k.h").expect_rc(0)
    forge(t, "bundle", fx(t, "graph_cond.cu"), "--sm", "90,100,110,120", "--rdc", "--devlink-lib", "cudadevrt",
          "--symbol", "graph_cond", "--out", "g.h").expect_rc(0)
    for h in ("k.h", "g.h"):
        forge(t, "verify-bundle", h, "--layout", fx(t, "layout_128_ok.yml")).expect_rc(0) \
            .expect_output("sm_120 built by CUDA 12.8")
        forge(t, "verify-bundle", h, "--layout", fx(t, "layout_128_wrong_toolkit.yml")).expect_rc(1) \
            .expect_output("sm_120 cubin")
        forge(t, "verify-bundle", h, "--layout", fx(t, "layout_128_wrong_sms.yml")).expect_rc(1)


@ft.case("toolkits.load_fatbin_selection")
def load_fatbin_selection(t):
    """load_fatbin.h keeps the first blob the device accepts, and says why when none loads: a host
    program with a fake driver (tests/fixtures/bundle/load_select.cpp) against the real cuda.h."""
    inc = "/usr/local/cuda/include"
    if not os.path.exists(os.path.join(inc, "cuda.h")):
        ft.skip(f"no {inc}/cuda.h")
    exe = t.path("load_select")
    r = t.run(["g++", "-std=c++11", "-Wall", "-Wextra", "-Werror", "-I", t.src("wrapper", "include"),
               "-I", inc, fx(t, "load_select.cpp"), "-o", exe])
    ft.check(r.rc == 0, f"load_select.cpp does not compile\n{r!r}")
    t.run([exe]).expect_rc(0).expect_out("all scenarios hold")


@ft.case("toolkits.bundle_shipped_pins")
def bundle_shipped_pins(t):
    """The shipped policy/sm_toolkit.yml with the toolkits that exist here: sm_110 (>=13.0) builds
    with CUDA 13.x; an SM pinned ==12.8 is refused, exit 2, naming the pin, when no 12.8 nvcc is
    installed (PyPI has none: README "Several toolkits"), never built by another toolkit."""
    need_cuda13(t)
    r = forge(t, "bundle", fx(t, "kernels.cu"), "--sm", "110", "--symbol", "kernels", "--out", "k110.h")
    r.expect_rc(0)
    ft.check(os.path.getsize(t.path("k110.h")) > 0, "empty header")
    rel = ft.nvcc_release(t.nvcc())
    ok = ft.write(t.path("layout_110.yml"), f'blobs:\n  - {{toolkit: "{rel}", sms: [110]}}\n')
    forge(t, "verify-bundle", "k110.h", "--layout", ok).expect_rc(0)
    wrong = ft.write(t.path("layout_110_12.yml"), 'blobs:\n  - {toolkit: "12.8", sms: [110]}\n')
    forge(t, "verify-bundle", "k110.h", "--layout", wrong).expect_rc(1)
    r = forge(t, "bundle", fx(t, "kernels.cu"), "--sm", "90,110", "--symbol", "kernels", "--out", "k90.h")
    if has_release(t, "12.8", "90"):
        r.expect_rc(0)
    else:
        r.expect_rc(2).expect_output("12.8")
        ft.check(not os.path.exists(t.path("k90.h")), "a refused bundle leaves no header")


if __name__ == "__main__":
    sys.exit(ft.main(setup=setup))
