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


def build(t, gen, case, mode, extra=()):
    """Configures and builds the project for `case` (again: reconfigures the case's tree);
    returns (build rc, log text, build dir). `extra`: more -D arguments."""
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
    cfg += list(extra)
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
    elif case == "observe":
        if rc == 0:
            fail("observe does not change the build: the gate must still fail")
        compiles = [r for r in ft.jsonl(compile_log)
                    if any(src.endswith("kernels.cu") for src in r.get("sources", []))]
        if not compiles:
            fail("compile log has no record of the kernels.cu compile")
        for r in compiles:
            # The drop itself, not a mention of sm_90 anywhere (the "policy" array always has it).
            if not {"sm_90", "compute_90"} <= set(r["missing"]) or r["mode"] != "observe" \
                    or r["injected"] or "sm_80" not in r["requested"]:
                fail(f"compile log record does not show the drop in observe mode: {r}")
        if "dropped" not in log:
            fail("no drop line on the compile's stderr")
    elif case == "inject":
        if rc != 0:
            fail("inject mode puts the policy's targets back: the gate must pass")
        compiles = [r for r in ft.jsonl(compile_log)
                    if any(src.endswith("kernels.cu") for src in r.get("sources", []))]
        if not compiles or any(r["action"] != "injected" or not {"sm_90", "compute_90"} <= set(r["injected"])
                               for r in compiles):
            fail(f"log shows no injection of sm_90 compute_90: {compiles}")


# Each forge_assert_fatbin option: on, the build passes and the verify table says why; then the
# same tree reconfigured with the option off relinks (the POST_BUILD command changed) and fails
# naming the target the option excused.
OPTIONS = {
    "allow_missing": (["sm_90 (--allow-missing)", "compute_90 (--allow-missing)"], ["missing sm_90"]),
    "allow_extra": (["sm_86"], ["not in the list: sm_86"]),
    "allow_pure_python": (["allow_pure_python"], ["device-code"]),
    "max_toolkit": (["every cubin within its toolkit bound"], ["> 1.0"]),
}


def check_option(t, option):
    on_words, off_words = OPTIONS[option]
    rc, log, _, fail = build(t, "Ninja", option, "path", ["-DOPT=ON"])
    if rc != 0:
        fail(f"{option} on: the build must pass")
    for w in ["PASS", "verdict: pass"] + on_words:
        if w not in log:
            fail(f"{option} on: build log lacks {w!r}")
    rc, log, _, fail = build(t, "Ninja", option, "path", ["-DOPT=OFF"])
    if rc == 0:
        fail(f"{option} off: the same target must fail the gate")
    for w in ["FAIL", "verdict: FAIL"] + off_words:
        if w not in log:
            fail(f"{option} off: build log lacks {w!r}")


for _opt in OPTIONS:
    ft.add_case(f"cmake.option.{_opt}", lambda t, o=_opt: check_option(t, o))

for _gen in GENERATORS:
    for _case in ("pass", "narrow", "observe", "inject"):
        ft.add_case(f"cmake.{_case}.{_gen.replace(' ', '_')}",
                    lambda t, g=_gen, c=_case: check_case(t, g, c))
ft.add_case("cmake.find_package", lambda t: check_case(t, "Ninja", "pass", "find_package"))

if __name__ == "__main__":
    sys.exit(ft.main())
