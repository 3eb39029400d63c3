#!/usr/bin/env python3
"""ForgeArch end to end: tests/integration/cmake/project configured and built with the real nvcc,
with both generators, in each scenario the project's CASE selects (pass, narrow, observe, inject),
and once through find_package(NvccForge) from an installed tree."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GENERATORS = ("Ninja", "Unix Makefiles")


def build(t, gen, case, mode):
    """Configures and builds the project for `case`; returns (build rc, log text, build dir)."""
    bdir = t.work
    log_path = os.path.join(bdir, "log")
    log = []

    def fail(msg):
        ft.fail(f"{msg}\n---- build log\n" + "".join(log))

    cfg = ["-S", os.path.join(HERE, "project"), "-B", os.path.join(bdir, "b"), "-G", gen, f"-DCASE={case}",
           f"-DFORGE_SOURCE_DIR={t.source}", f"-DFORGE_PACKAGES_DIR={t.fixtures('cmake', 'packages')}",
           "-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc"]
    if mode == "find_package":
        prefix = os.path.join(bdir, "prefix")
        r = t.run(["cmake", "--install", t.build, "--prefix", prefix])
        ft.write(os.path.join(bdir, "install.log"), r.out + r.err)
        if r.rc != 0:
            fail(f"install\n{r!r}")
        ft.check(os.access(os.path.join(prefix, "bin", "nvcc-forge"), os.X_OK),
                 "install did not produce bin/nvcc-forge")
        ft.check(os.path.isfile(os.path.join(prefix, "lib", "cmake", "NvccForge", "NvccForgeConfigVersion.cmake")),
                 "no CMake package version file")
        ft.check(os.path.isfile(os.path.join(prefix, "share", "nvcc-forge", "policy", "arch_policy.yml")),
                 "no installed policy data")
        cfg += ["-DUSE_FIND_PACKAGE=ON", f"-DCMAKE_PREFIX_PATH={prefix}"]
    else:
        cfg += [f"-DNvccForge_EXECUTABLE={t.forge_exe}"]
    r = t.run(["cmake", *cfg], timeout=280)
    log.append(r.out + r.err)
    if r.rc != 0:
        ft.write(log_path, "".join(log))
        fail("configure")
    r = t.run(["cmake", "--build", os.path.join(bdir, "b")], timeout=280)
    log.append(r.out + r.err)
    ft.write(log_path, "".join(log))
    return r.rc, "".join(log), os.path.join(bdir, "b"), fail


def check_case(t, gen, case, mode="path"):
    rc, log, b, fail = build(t, gen, case, mode)
    compile_log = os.path.join(b, "forge-compile.jsonl")
    if case == "pass":
        if rc != 0:
            fail("build should pass")
        if "PASS" not in log:
            fail("no verify table in the build log")
    elif case == "narrow":
        if rc == 0:
            fail("a target that narrows its own CUDA_ARCHITECTURES must fail at POST_BUILD")
        if "missing sm_90" not in log:
            fail("verify table does not name the missing sm_90")
    elif case == "expect_missing":
        if rc == 0:
            fail("EXPECT_EXTENSION names a module the project never builds: POST_BUILD must fail")
        if "libkernels_sm90*.so" not in log or "extensions   FAIL" not in log:
            fail("the verify table does not name the absent module")
    elif case == "observe":
        if rc == 0:
            fail("observe does not change the build: the gate must still fail")
        text = ft.read(compile_log) if os.path.exists(compile_log) else ""
        if '"missing":["sm_90"' not in text and "sm_90" not in text:
            fail("compile log does not show the drop")
        if "dropped" not in log:
            fail("no drop line on the compile's stderr")
    elif case == "inject":
        if rc != 0:
            fail("inject mode puts the policy's targets back: the gate must pass")
        text = ft.read(compile_log) if os.path.exists(compile_log) else ""
        if '"action":"injected"' not in text:
            fail("log shows no injection")


for _gen in GENERATORS:
    for _case in ("pass", "narrow", "observe", "inject"):
        ft.add_case(f"cmake.{_case}.{_gen.replace(' ', '_')}",
                    lambda t, g=_gen, c=_case: check_case(t, g, c))
ft.add_case("cmake.expect_extension", lambda t: check_case(t, "Ninja", "expect_missing"))
ft.add_case("cmake.find_package", lambda t: check_case(t, "Ninja", "pass", "find_package"))

if __name__ == "__main__":
    sys.exit(ft.main())
