#!/usr/bin/env python3
"""nvcc-forge resolve / coverage / cell-key, run as a user runs them: output formats, exit codes,
error messages naming file:line and key, the probed toolkit (a stand-in nvcc replaying captured
output), the self-contained coverage matrix page; and policy.nvcc_tables: every nvcc_supported row
of policy/arch_policy.yml equals what its toolkit really accepts."""
import glob
import html.parser
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402
from forge_test import check  # noqa: E402

T = ROOT = FIX = POLICY = None  # set by setup()
ROW_128 = "7.5 8.0 8.6 9.0+PTX 10.0 12.0+PTX"


def setup(t):
    global T, ROOT, FIX, POLICY
    T, ROOT = t, t.source
    FIX = os.path.join(ROOT, "tests", "fixtures", "policy")
    POLICY = os.path.join(ROOT, "policy", "arch_policy.yml")


def run(*args, env=None, expect=0):
    """nvcc-forge ARGS (env: variables added to the environment); checks the exit code unless
    expect is None."""
    p = T.forge(*args, env=T.env(**(env or {})), timeout=60, text=True)
    if expect is not None:
        p.expect_rc(expect)
    return p


def mini(*args, **kw):
    return run(*args, "--policy", os.path.join(FIX, "mini_policy.yml"),
               "--packages-dir", os.path.join(FIX, "packages"), **kw)


@ft.case("policy.cli.resolve_torch")
def case_resolve_torch(t):
    out = run("resolve", "--cuda", "12.8", "--torch", "2.9").stdout.strip()
    check(out == "7.0 7.5 8.0 8.6 9.0+PTX 10.0 12.0+PTX", out)
    check(run("resolve", "--cuda", "12.8").stdout.strip() == ROW_128, "12.8 row")
    check(run("resolve", "--cuda", "12.4", "--torch", "2.6").stdout.strip() == "6.0 7.0 7.5 8.0 8.6 9.0+PTX", "12.4")


@ft.case("policy.cli.resolve_cmake")
def case_resolve_cmake(t):
    out = run("resolve", "--cuda", "12.8", "--format", "cmake").stdout.strip()
    check(out == "75-real;80-real;86-real;90;100-real;120", out)


@ft.case("policy.cli.resolve_gencode")
def case_resolve_gencode(t):
    flags = run("resolve", "--cuda", "12.8", "--format", "gencode").stdout.split()
    check(len(flags) == 8, flags)
    check("-gencode=arch=compute_90,code=compute_90" in flags, flags)
    check("-gencode=arch=compute_120,code=compute_120" in flags, flags)
    check("-gencode=arch=compute_75,code=sm_75" in flags, flags)
    check(not any("compute_75,code=compute_75" in f for f in flags), flags)


@ft.case("policy.cli.resolve_json")
def case_resolve_json(t):
    # the x86 lane named: this case also runs on the aarch64 lane, whose default is its own platform
    x86 = ("--platform", "linux_x86_64")
    j = json.loads(run("resolve", "--cuda", "12.8", "--torch", "2.9", *x86, "--format", "json").stdout)
    for key in ("arch_list", "tokens", "source", "clamped", "cuda", "torch", "platform", "package",
                "targets", "ptx_added", "build_epoch", "policy_sha256"):
        check(key in j, f"missing {key}")
    check(j["source"] == "arch_exceptions[12.8/2.9]", j["source"])
    check(j["tokens"] == ["7.0", "7.5", "8.0", "8.6", "9.0+PTX", "10.0", "12.0+PTX"], j["tokens"])
    check(j["clamped"] == [], j["clamped"])
    check(re.fullmatch(r"[0-9a-f]{64}", j["policy_sha256"]), j["policy_sha256"])
    check(isinstance(j["build_epoch"], int), j["build_epoch"])
    # clamped tokens carry reasons, also on stderr for the plain formats
    c = run("resolve", "--cuda", "12.8", "--torch", "2.11", "--package", "torchao", *x86, "--format", "json")
    j = json.loads(c.stdout)
    check([x["token"] for x in j["clamped"]] == ["7.0"], j["clamped"])
    check("torch 2.11" in j["clamped"][0]["reason"], j["clamped"][0])
    p = run("resolve", "--cuda", "12.8", "--torch", "2.11", "--package", "torchao", *x86)
    check("clamped 7.0" in p.stderr, p.stderr)
    check(p.stdout.strip() == "7.5 8.0 8.6 8.9 9.0+PTX 10.0 12.0+PTX", p.stdout)


@ft.case("policy.cli.resolve_versions")
def case_resolve_versions(t):
    j = json.loads(run("resolve", "--cuda", "12.8.1", "--torch", "2.9.1+cu128", "--python", "3.12.4",
                       "--format", "json").stdout)
    check(j["cuda"] == "12.8" and j["torch"] == "2.9" and j["python"] == "3.12", j)
    check(j["source"] == "arch_exceptions[12.8/2.9]", j["source"])
    bad = run("resolve", "--cuda", "12.x", expect=2)
    check("12.x" in bad.stderr, bad.stderr)
    bad = run("resolve", "--cuda", "12.8", "--platform", "linux_arm64", expect=2)
    check("linux_aarch64" in bad.stderr, bad.stderr)


@ft.case("policy.cli.resolve_aarch64")
def case_resolve_aarch64(t):
    out = run("resolve", "--cuda", "13.0", "--platform", "linux_aarch64").stdout.strip()
    check(out == "8.0 9.0+PTX 10.0 11.0 12.0+PTX", out)
    # exceptions never read on ARM, x86 overrides invisible
    p = mini("resolve", "--cuda", "12.8", "--torch", "2.9", "--platform", "linux_aarch64",
             "--package", "x86only", "--format", "json")
    j = json.loads(p.stdout)
    check(j["source"] == "arch_policy_aarch64[12.8]", j["source"])
    check(j["arch_list"] == "8.7 9.0+PTX", j["arch_list"])
    check(any("torch clamp not applied" in n for n in j["notes"]), j["notes"])


@ft.case("policy.cli.resolve_package")
def case_resolve_package(t):
    j = json.loads(run("resolve", "--cuda", "12.8", "--package", "flash_attn", "--format", "json").stdout)
    check(j["source"] == "packages/flash_attn/arch_override.yml:arch_list", j["source"])
    check(j["arch_list"] == "8.0 8.6 9.0+PTX 10.0 12.0+PTX", j["arch_list"])
    check(j["verify"]["allow_missing_archs"] == ["sm_86"], j["verify"])
    j = json.loads(run("resolve", "--cuda", "13.0", "--package", "flash-attn", "--platform", "linux_aarch64",
                       "--format", "json").stdout)
    check(j["source"] == "arch_policy_aarch64[13.0]", j["source"])  # no aarch64 override: seed behaviour
    j = json.loads(mini("resolve", "--cuda", "12.8", "--torch", "2.9", "--python", "3.12", "--package", "lanes",
                        "--format", "json").stdout)
    check(j["source"] == "packages/lanes/build_matrix.yml:combinations[0].arch_list", j["source"])
    check(j["arch_list"] == "8.6+PTX" and j["ptx_added"] == ["8.6"], j)


# NVCC_FORGE_PACKAGES_DIR values that name no usable directory: a missing directory, a file, a
# value longer than any path (the 131 KB, within what execve takes), a value with a newline.
def unusable_packages_dirs(t):
    as_file = ft.write(t.path("not_a_dir"), "a file\n")
    return {"missing": t.path("no", "such", "dir"), "a file": as_file,
            "130000 bytes": "/" + "d" * 129999, "a newline": os.path.join(FIX, "packages") + "\n"}


@ft.case("policy.cli.packages_dir_unusable_is_exit_2")
def case_packages_dir_unusable(t):
    """A packages directory named by NVCC_FORGE_PACKAGES_DIR or --packages-dir that cannot be used
    is exit 2 naming it in every command that reads the policy (it resolved the policy row without
    a word); a usable one is read, as the wrapper reads it."""
    so = ft.write(t.path("x.so"), "not read: the packages directory is checked first\n")
    commands = [("resolve", "--cuda", "12.8", "--package", "lanes"), ("env", "--cuda", "12.8"),
                ("verify", so, "--arch-list", "8.0"), ("coverage", "--cuda", "12.8"),
                ("coverage", "--matrix", "--package", "lanes")]
    with ft.Soft() as s:
        for what, value in unusable_packages_dirs(t).items():
            for cmd in commands:
                p = run(*cmd, env={"NVCC_FORGE_PACKAGES_DIR": value}, expect=None)
                s.check(p.rc == 2 and "NVCC_FORGE_PACKAGES_DIR" in p.err and
                        value[:20] in p.err and len(p.err) < 2000,
                        f"{what}: {' '.join(cmd[:2])}: exit {p.rc}: {p.err[:600]}")
            p = run("resolve", "--cuda", "12.8", "--packages-dir", value, expect=None)
            s.check(p.rc == 2 and "--packages-dir" in p.err, f"{what}: --packages-dir: {p.err[:600]}")
        # A usable directory in the variable is the one the commands read (the wrapper's).
        pkgs = os.path.join(FIX, "packages")
        j = json.loads(run("resolve", "--cuda", "12.8", "--torch", "2.9", "--python", "3.12",
                           "--package", "lanes", "--format", "json",
                           env={"NVCC_FORGE_PACKAGES_DIR": pkgs}).stdout)
        s.check_eq(j["source"], "packages/lanes/build_matrix.yml:combinations[0].arch_list",
                   "the variable's package")


@ft.case("policy.cli.package_arch_list_form")
def case_package_arch_list_form(t):
    # sageattention's setup.py splits on ';' and ',' and builds only `a` targets: its package file
    # says so, and every output that hands the list to its build follows.
    j = json.loads(run("resolve", "--cuda", "12.8", "--package", "sageattention", "--format", "json").stdout)
    check(j["arch_list"] == "8.0 8.6 8.9 9.0 10.0 12.0", j["arch_list"])  # no +PTX tail
    check(j["torch_arch_list"] == "8.0;8.6;8.9;9.0;10.0;12.0", j["torch_arch_list"])
    check(j["ptx_added"] == [], j["ptx_added"])
    check(j["ptx_not_added"].startswith("packages/sageattention/arch_override.yml:forward_ptx: "),
          j["ptx_not_added"])
    check(j["wrapper"]["arch_list_separator"] == ";", j["wrapper"])
    out = run("resolve", "--cuda", "12.8", "--package", "sageattention").stdout.strip()
    check(out == "8.0;8.6;8.9;9.0;10.0;12.0", out)
    env_out = run("env", "--cuda", "12.8", "--package", "sageattention").stdout
    check("export TORCH_CUDA_ARCH_LIST='8.0;8.6;8.9;9.0;10.0;12.0'\n" in env_out, env_out)
    # The wrapper's list is what the build compiles (its target_forms): the gate's expectation.
    check("export NVCC_FORGE_ARCH_LIST='8.0 8.6 8.9 9.0a 10.0a 12.0a'\n" in env_out, env_out)
    # Other packages keep the space form and the tail.
    j = json.loads(run("resolve", "--cuda", "12.8", "--format", "json").stdout)
    check(j["torch_arch_list"] == ROW_128 and j["ptx_not_added"] is None, j)
    env_out = run("env", "--cuda", "12.8", "--package", "flash_attn").stdout
    check("export TORCH_CUDA_ARCH_LIST='8.0 8.6 9.0+PTX 10.0 12.0+PTX'\n" in env_out, env_out)


@ft.case("policy.cli.package_arch_knob")
def case_package_arch_knob(t):
    """flash-attention reads FLASH_ATTN_CUDA_ARCHS, not TORCH_CUDA_ARCH_LIST: its package file
    declares it, `resolve` gives its value per lane and names what it cannot express, `env`
    exports it (x86: no 110, so no sm_110f; aarch64 13.0: 110)."""
    j = json.loads(run("resolve", "--cuda", "13.0", "--package", "flash_attn", "--format",
                       "json").stdout)
    knob = ft.only(j["arch_knobs"], what="knob")
    check(knob["variable"] == "FLASH_ATTN_CUDA_ARCHS" and knob["value"] == "80;90;100;120", knob)
    check(knob["form"] == "digits" and knob["ptx"] == "newest" and knob["separator"] == ";", knob)
    check("flash-attention" in knob["source"] and knob["reason"], knob)
    gaps = [(g["token"], g["targets"]) for g in j["knob_cannot_express"]]
    check(gaps == [("8.6", ["sm_86"]), ("9.0+PTX", ["compute_90"])], gaps)
    p = run("resolve", "--cuda", "13.0", "--package", "flash_attn")
    check(p.stdout.strip() == "8.0 8.6 9.0+PTX 10.0 12.0+PTX", p.stdout)
    check("nvcc-forge resolve: knob FLASH_ATTN_CUDA_ARCHS=80;90;100;120\n" in p.stderr, p.stderr)
    check("nvcc-forge resolve: knob_cannot_express 8.6 (FLASH_ATTN_CUDA_ARCHS): the build script "
          "has no branch for it (it builds 80 90 100 110 120); left to the wrapper's injection\n"
          in p.stderr, p.stderr)
    check(p.stderr.count("knob_cannot_express") == 2, p.stderr)
    env_out = run("env", "--cuda", "13.0", "--package", "flash_attn").stdout
    check("export FLASH_ATTN_CUDA_ARCHS='80;90;100;120'\n" in env_out, env_out)
    env_out = run("env", "--cuda", "13.0", "--package", "flash_attn", "--platform",
                  "linux_aarch64").stdout
    check("export FLASH_ATTN_CUDA_ARCHS='80;90;100;110;120'\n" in env_out, env_out)
    j = json.loads(run("resolve", "--cuda", "13.0", "--package", "flash_attn", "--platform",
                       "linux_aarch64", "--format", "json").stdout)
    check([g["token"] for g in j["knob_cannot_express"]] == ["9.0+PTX"], j["knob_cannot_express"])
    # NATTEN's knob: dotted, no +PTX spelling.
    env_out = run("env", "--cuda", "13.0", "--package", "natten").stdout
    check("export NATTEN_CUDA_ARCH='8.0;8.6;8.9;9.0;10.0;10.3;12.0'\n" in env_out, env_out)
    # A package without a knob exports none; a broken declaration is exit 2 naming file:line.
    env_out = run("env", "--cuda", "13.0", "--package", "torchao").stdout
    check("FLASH_ATTN" not in env_out and "NATTEN" not in env_out, env_out)
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "bad"))
        with open(os.path.join(d, "bad", "arch_override.yml"), "w") as f:
            f.write("arch_knobs:\n  - variable: X_ARCHS\n    separator: \";\"\n    form: hex\n"
                    "    ptx: none\n    reason: r\n    source: s\n")
        p = run("env", "--cuda", "13.0", "--package", "bad", "--packages-dir", d, expect=2)
        check("arch_override.yml:4" in p.stderr and "hex" in p.stderr, p.stderr)



@ft.case("policy.cli.package_smuggles_no_setting")
def case_package_smuggles_no_setting(t):
    """Issue 36, 9: a newline in --package wrote NVCC_FORGE_MODE=observe into the shim's trailer and
    .nvcc-forge-policy; an unknown package rode the policy row with a note."""
    for command in (("env",), ("resolve",)):
        p = run(*command, "--cuda", "13.0", "--package", "flash_attn\nNVCC_FORGE_MODE=observe", expect=2)
        check("is not a package name" in p.stderr and "flash_attn\\nNVCC_FORGE_MODE" in p.stderr, p.stderr)
        check("export" not in p.stdout, p.stdout)
    for command in (("env",), ("resolve",)):
        p = run(*command, "--cuda", "13.0", "--package", "flash-atn", expect=2)
        check("unknown package 'flash-atn'" in p.stderr and "did you mean 'flash_attn'?" in p.stderr, p.stderr)
    # Every shipped package still resolves under its name.
    for name in sorted(os.listdir(os.path.join(ROOT, "packages"))):
        if os.path.isdir(os.path.join(ROOT, "packages", name)):
            run("resolve", "--cuda", "13.0", "--package", name)

def fake_nvcc(tmp, version_dir):
    path = os.path.join(tmp, "nvcc")
    fx = os.path.join(ROOT, "tests", "fixtures", "toolkit", version_dir)
    with open(path, "w") as f:
        f.write("#!/bin/sh\ncase \"$1\" in\n"
                f"  --version) cat '{fx}/version.txt' ;;\n"
                f"  --list-gpu-code) cat '{fx}/list-gpu-code.txt' ;;\n"
                "  *) exit 1 ;;\nesac\n")
    os.chmod(path, 0o755)
    return path


@ft.case("policy.cli.resolve_probed")
def case_resolve_probed(t):
    with tempfile.TemporaryDirectory() as tmp:
        nvcc = fake_nvcc(tmp, "nvcc-13.2")
        j = json.loads(run("resolve", "--format", "json", env={"NVCC_FORGE_REAL_NVCC": nvcc}).stdout)
        check(j["cuda"] == "13.2", j["cuda"])
        check(j["source"] == "arch_policy[13.2]", j["source"])
        check(nvcc in j["nvcc_source"], j["nvcc_source"])
        # found on PATH when the variable is unset
        env = {"NVCC_FORGE_REAL_NVCC": "", "PATH": tmp + ":/usr/bin:/bin"}
        j = json.loads(run("resolve", "--format", "json", env=env).stdout)
        check(j["cuda"] == "13.2", j)
        bad = run("resolve", env={"NVCC_FORGE_REAL_NVCC": "/nonexistent/nvcc"}, expect=2)
        check("NVCC_FORGE_REAL_NVCC" in bad.stderr, bad.stderr)
    if os.path.exists("/usr/local/cuda/bin/nvcc"):
        j = json.loads(run("resolve", "--format", "json",
                           env={"NVCC_FORGE_REAL_NVCC": "/usr/local/cuda/bin/nvcc"}).stdout)
        check(j["arch_list"] == ROW_128 and j["cuda"].startswith("13."), j)


@ft.case("policy.cli.resolve_missing_key")
def case_resolve_missing_key(t):
    p = run("resolve", "--cuda", "13.1", expect=2)
    check("arch_policy[13.1]" in p.stderr and "arch_policy.yml" in p.stderr, p.stderr)
    p = run("resolve", "--cuda", "12.4", "--platform", "linux_aarch64", expect=2)
    check("arch_policy_aarch64[12.4]" in p.stderr, p.stderr)
    p = run("resolve", "--cuda", "12.8", "--torch", "2.3", expect=2)
    check("torch_runnable[12.8].releases" in p.stderr, p.stderr)


@ft.case("policy.cli.resolve_unknown_key")
def case_resolve_unknown_key(t):
    with tempfile.TemporaryDirectory() as tmp:
        text = open(POLICY).read().replace("arch_policy_aarch64:", "arch_policy_arm64:", 1)
        bad = os.path.join(tmp, "arch_policy.yml")
        open(bad, "w").write(text)
        line = text.splitlines().index("arch_policy_arm64:") + 1
        p = run("resolve", "--cuda", "12.8", "--policy", bad, expect=2)
        check(f"{bad}:{line}" in p.stderr and "arch_policy_arm64" in p.stderr, p.stderr)
        pkgs = os.path.join(tmp, "packages", "typo")
        os.makedirs(pkgs)
        open(os.path.join(pkgs, "arch_override.yml"), "w").write('arch_list: "8.0"\narch_list_by_cuda_arm:\n  "12.8": "9.0"\n')
        p = run("resolve", "--cuda", "12.8", "--packages-dir", os.path.join(tmp, "packages"), "--package", "typo",
                expect=2)
        check("arch_override.yml:2" in p.stderr and "arch_list_by_cuda_arm" in p.stderr, p.stderr)


@ft.case("policy.cli.fifo_in_a_yaml_files_place")
def case_fifo_policy(t):
    """Issue 36: a FIFO where a policy or package YAML file should be hung `resolve` in open()
    waiting for a writer. It is exit 2 naming the file, at once."""
    with tempfile.TemporaryDirectory() as tmp:
        fifo = os.path.join(tmp, "arch_policy.yml")
        os.mkfifo(fifo)
        r = t.forge("resolve", "--cuda", "12.8", "--policy", fifo, timeout=30)
        check(r.rc == 2 and fifo in r.err and "not a regular file" in r.err, repr(r))
        pkg = os.path.join(tmp, "packages", "piped")
        os.makedirs(pkg)
        os.mkfifo(os.path.join(pkg, "arch_override.yml"))
        r = t.forge("resolve", "--cuda", "12.8", "--policy", POLICY, "--packages-dir",
                    os.path.join(tmp, "packages"), "--package", "piped", timeout=30)
        # The package's files are looked for as regular files: the FIFO is not one of them.
        check(r.rc == 2 and "piped" in r.err and "arch_override.yml" in r.err, repr(r))


@ft.case("policy.cli.resolve_collapse")
def case_resolve_collapse(t):
    p = mini("resolve", "--cuda", "12.8", "--package", "collapse", expect=1)
    check("collapses to an empty arch list" in p.stderr and "sm_70" in p.stderr, p.stderr)
    check(p.stdout == "", p.stdout)


@ft.case("policy.cli.resolve_usage")
def case_resolve_usage(t):
    for args in (["--bogus"], ["--cuda"], ["--cuda", "12.8", "--format", "xml"]):
        p = run("resolve", *args, expect=2)
        check(p.stderr.strip() != "", args)
    check("--packages-dir" in run("resolve", "--help").stdout, "help")


def coverage_json(*args):
    return json.loads(run("coverage", *args, "--format", "json").stdout)


@ft.case("policy.cli.coverage_json")
def case_coverage_json(t):
    # aarch64 without --cuda: every GPU of the table (Jetson parts, both names of Thor)
    j = coverage_json("--arch-list", ROW_128, "--platform", "linux_aarch64")
    gpus = open(os.path.join(ROOT, "policy", "gpus.yml")).read()
    # one row per entry of the `gpus:` map; `retired:` (Kepler) is not coverage's
    table = re.search(r"^gpus:\n((?:[ #].*\n|\n)*)", gpus, re.M).group(1)
    check(len(j) == len(re.findall(r'^  "\d+\.\d+":', table, re.M)), len(j))
    # x86-64 (named: this case also runs on the aarch64 lane): no Jetson part, so no Tegra CC, no Thor
    x86 = coverage_json("--arch-list", ROW_128, "--platform", "linux_x86_64")
    for cc in ("5.3", "6.2", "7.2", "8.7", "10.1", "11.0"):
        check(cc not in x86, (cc, sorted(x86)))
    check(len(x86) == len(j) - 6, len(x86))
    check(len(re.findall(r'^  "\d+\.\d+":', gpus, re.M)) > len(j), "retired entries in gpus.yml")
    check("3.7" not in j and "3.5" not in j, sorted(j))
    tiers = {cc: v["tier"] for cc, v in j.items()}
    for cc in ("8.9", "10.3", "12.1"):
        check(tiers[cc] == "native", (cc, tiers[cc]))
    check(tiers["11.0"] == "jit", tiers["11.0"])
    for cc in ("7.0", "8.7"):
        check(tiers[cc] == "dead", (cc, tiers[cc]))
    check("B300" in j["10.3"]["products"], j["10.3"])
    check("Tegra" in j["8.7"]["why"], j["8.7"]["why"])
    # separators and spellings are all one list
    check(coverage_json("--arch-list", "75-real;80-real;86-real;90;100-real;120",
                        "--platform", "linux_aarch64") == j, "cmake spelling")


@ft.case("policy.cli.coverage_text")
def case_coverage_text(t):
    out = run("coverage", "--arch-list", ROW_128, "--platform", "linux_aarch64").stdout
    check(re.search(r"^\s+7\.0\s+dead\s+Tesla V100", out, re.M), out)
    check("Excluded" in out and "jit:    10.1 11.0" in out, out)
    check("major 11 has no cubin; compute_90 PTX below it is the JIT net, but +PTX belongs on "
          "10.0" in out, out)
    x86 = run("coverage", "--arch-list", ROW_128).stdout
    check("jit:    none" in x86 and "Major gaps" not in x86, x86)


@ft.case("policy.cli.coverage_markdown")
def case_coverage_markdown(t):
    out = run("coverage", "--arch-list", ROW_128, "--format", "markdown", "--platform",
              "linux_aarch64").stdout
    check("| 11.0 | jit |" in out and "### Excluded" in out, out)


@ft.case("policy.cli.coverage_resolve_options")
def case_coverage_resolve_options(t):
    j = coverage_json("--cuda", "12.8", "--torch", "2.9")
    check(j["7.0"]["tier"] == "native", j["7.0"])
    j = coverage_json("--cuda", "12.8", "--torch", "2.11")
    check(j["7.0"]["tier"] == "dead (torch)", j["7.0"])
    p = run("coverage", "--cuda", "12.8", "--torch", "2.11", "--package", "torchao")
    check("Clamped from the requested list" in p.stdout and "7.0:" in p.stdout, p.stdout)


@ft.case("policy.cli.coverage_gap")
def case_coverage_gap(t):
    p = run("coverage", "--arch-list", "8.0 12.0+PTX", "--fail-on-gap", expect=1)
    check("FINDING: major 9 has no cubin and no PTX below it" in p.stdout, p.stdout)
    run("coverage", "--arch-list", ROW_128, "--fail-on-gap", expect=0)


@ft.case("policy.cli.coverage_bad_list")
def case_coverage_bad_list(t):
    p = run("coverage", "--arch-list", "8.0 banana", expect=2)
    check("banana" in p.stderr and "--arch-list" in p.stderr, p.stderr)
    run("coverage", "--arch-list", ROW_128, "--format", "html", expect=2)


class Checker(html.parser.HTMLParser):
    VOID = {"meta", "br", "rect", "link", "img", "input", "hr"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.tags = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unbalanced </{tag}> (open: {self.stack[-3:]})")
            return
        self.stack.pop()


@ft.case("policy.cli.coverage_matrix_html")
def case_coverage_matrix_html(t):
    page = run("coverage", "--matrix", "--format", "html").stdout
    c = Checker()
    c.feed(page)
    c.close()
    check(not c.errors and not c.stack, (c.errors, c.stack))
    names = {t for t, _ in c.tags}
    check("script" not in names and "link" not in names and "img" not in names, names)
    check(not re.search(r"(src|href)=|https?://|@import|url\(", page), "external reference")
    rows = [a for t, a in c.tags if t == "td" and "t" in a.get("class", "").split()]
    j = json.loads(run("coverage", "--matrix", "--format", "json").stdout)
    check(len(rows) == sum(len(cell["coverage"]) for cell in j), (len(rows), len(j)))
    for cuda, torch in (("12.8", "2.9"), ("12.8", "2.11"), ("13.2", "2.12")):
        check(f"CUDA {cuda} &middot; torch {torch}" in page, (cuda, torch))
    check("CUDA 13.0 &middot; torch 2.11 &middot; linux_aarch64" in page, "aarch64 torch row")
    check("CUDA 12.6 &middot; torch any &middot; linux_aarch64" in page, "aarch64 row, no torch read")
    check("excluded: 5.0" in page, "exclusions in words")
    # the torch ceiling is its own tier, drawn and said in words
    torch_dead = [a for a in rows if "x" in a["class"].split()]
    check(torch_dead and all(" dead (torch): torch " in a["title"] for a in torch_dead), torch_dead[:2])
    check("dead (torch): the paired torch build cannot run on this GPU" in page, "legend")
    # one table per lane; the x86 table has no Jetson column, an aarch64 row one grey cell
    check(len([1 for t, a in c.tags if t == "table"]) == 2, "two lanes")
    absent = [a for t, a in c.tags if t == "td" and a.get("class") == "na"]
    check(len(absent) == sum(1 for cell in j if cell["platforms"] == ["linux_aarch64"]), len(absent))
    check("Thor is CC 10.1 up to CUDA 12.9 and CC 11.0" in page, "legend in words")


@ft.case("policy.cli.coverage_matrix_json")
def case_coverage_matrix_json(t):
    j = json.loads(run("coverage", "--matrix", "--format", "json").stdout)
    cells = {(c["cuda"], c["torch"], tuple(c["platforms"])): c for c in j}
    x86 = ("linux_x86_64", "win_amd64")
    check(cells[("12.8", "2.9", x86)]["coverage"]["7.0"]["tier"] == "native", "12.8/2.9 V100")
    check(cells[("12.8", "2.7", x86)]["coverage"]["7.0"]["tier"] == "dead (torch)", "12.8/2.7 V100")
    arm = cells[("13.0", "2.10", ("linux_aarch64",))]
    check(arm["coverage"]["11.0"]["tier"] == "native", arm["coverage"]["11.0"])
    check("10.1" not in arm["coverage"], "13.x names Thor 11.0 only")
    check("11.0" not in cells[("12.8", "2.9", x86)]["coverage"], "no Thor on x86")
    check(cells[("12.6", "2.8", x86)]["coverage"]["10.0"]["tier"] == "dead (torch)", "cu126 torch")
    p = run("coverage", "--matrix", "--format", "text", expect=2)
    check("html" in p.stderr, p.stderr)


def every_cc_packages(t):
    """A packages dir with `every`: a package asking for every CC of gpus.yml on both lanes, so
    resolve's torch clamp answers for every GPU of every cell."""
    gpus = open(os.path.join(ROOT, "policy", "gpus.yml")).read()
    table = re.search(r"^gpus:\n((?:[ #].*\n|\n)*)", gpus, re.M).group(1)
    ccs = " ".join(re.findall(r'^  "(\d+\.\d+)":', table, re.M))
    ft.write(t.path("packages", "every", "arch_override.yml"),
             f'arch_list: "{ccs}"\narch_list_aarch64: "{ccs}"\n')
    return t.path("packages")


@ft.case("policy.cli.matrix_one_truth")
def case_matrix_one_truth(t):
    """Every cell of `coverage --matrix`: a GPU that resolve's torch clamp removes is never native
    or jit in coverage, and every `dead (torch)` GPU is one that clamp removes."""
    pk = every_cc_packages(t)
    checked = 0
    for extra in ([], ["--package", "every", "--packages-dir", pk]):
        cells = json.loads(run("coverage", "--matrix", "--format", "json", *extra).stdout)
        soft = ft.Soft()
        for cell in cells:
            where = (cell["cuda"], cell["torch"], cell["platforms"][0], extra[1:2])
            soft.check("resolution" in cell, (where, cell.get("error")))
            if "resolution" not in cell:
                continue
            res, cov = cell["resolution"], cell["coverage"]
            torch_clamped = {c["token"].split("+")[0] for c in res["clamped"]
                             if c["reason"].startswith("torch ")}
            for cc in torch_clamped & set(cov):
                soft.check(cov[cc]["tier"] not in ("native", "jit"), (where, cc, cov[cc]["tier"]))
                soft.check(cov[cc]["tier"] == "dead (torch)", (where, cc, cov[cc]["tier"]))
                checked += 1
            if extra:  # every CC was asked for: each torch-dead GPU's token was clamped
                for cc, row in cov.items():
                    if row["tier"] == "dead (torch)":
                        clamped = {c["token"].split("+")[0] for c in res["clamped"]}
                        soft.check(cc in clamped, (where, cc, "dead (torch) but not clamped"))
        soft.done()
    check(checked > 50, checked)


@ft.case("policy.cli.coverage_torch_ceiling")
def case_coverage_torch_ceiling(t):
    # cu126 torch ships no PTX: B200 and the 12.x GPUs are dead in its process, with the reason
    out = run("coverage", "--cuda", "12.6", "--torch", "2.8").stdout
    check(re.search(r"^\s+10\.0\s+dead \(torch\)\s+B200", out, re.M), out)
    check("dead (torch): 10.0 10.3 12.0 12.1" in out, out)
    check("torch 2.8 (CUDA 12.6) cannot run on CC 10.0" in out, out)
    j = coverage_json("--cuda", "12.6", "--torch", "2.8")
    check(j["12.0"]["tier"] == "dead (torch)" and "torch_runnable[12.6]" in j["12.0"]["why"], j["12.0"])
    # without a torch the same row keeps its tiers
    check(coverage_json("--cuda", "12.6")["10.0"]["tier"] == "jit", "no torch, no ceiling")
    # a list with --cuda and --torch gets the same ceiling
    j = coverage_json("--arch-list", "8.0 9.0+PTX", "--cuda", "12.6", "--torch", "2.8")
    check(j["10.0"]["tier"] == "dead (torch)", j["10.0"])
    md = run("coverage", "--cuda", "12.6", "--torch", "2.8", "--format", "markdown").stdout
    check("| 10.0 | dead (torch) |" in md, md)


@ft.case("policy.cli.package_target_forms")
def case_package_target_forms(t):
    # sageattention's kernels are a targets: 10.3 and 12.1 are not served by sm_100a/sm_120a
    j = coverage_json("--cuda", "12.8", "--torch", "2.8", "--package", "sageattention")
    for cc in ("10.3", "12.1"):
        check(j[cc]["tier"] == "dead", (cc, j[cc]))
    check(j["10.0"]["via"] == ["sm_100a"], j["10.0"])
    # its list leaves out 7.5 (narrowed): that costs Turing, not B300/GB10, which the forms lose
    text = run("coverage", "--cuda", "12.8", "--torch", "2.8", "--package", "sageattention").stdout
    costs = text[text.index("costs:"):text.index("Clamped")]
    check("7.5 " in costs and "10.3" not in costs and "12.1" not in costs, costs)
    r = json.loads(run("resolve", "--cuda", "12.8", "--torch", "2.8", "--package", "sageattention",
                       "--format", "json").stdout)
    check(r["builds_as"] == ["sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a", "sm_120a"], r["builds_as"])
    check(r["target_forms"].startswith("packages/sageattention/arch_override.yml:target_forms"), r)
    p = run("resolve", "--cuda", "12.8", "--torch", "2.8", "--package", "sageattention")
    check("builds_as sm_80 sm_86 sm_89 sm_90a sm_100a sm_120a" in p.stderr, p.stderr)
    check(p.stdout.strip() == "8.0;8.6;8.9;9.0;10.0;12.0", p.stdout)  # the request, its separator
    # the aarch64 lane: GB300 and DGX Spark declared, no +PTX, the same forms
    r = json.loads(run("resolve", "--cuda", "13.0", "--platform", "linux_aarch64", "--package",
                       "sageattention", "--format", "json").stdout)
    check(r["arch_list"] == "8.0 9.0 10.0 10.3 11.0 12.0 12.1", r["arch_list"])
    check(not [x for x in r["builds_as"] if x.startswith("compute_")], r["builds_as"])
    check("sm_121a" in r["builds_as"] and "sm_100a" in r["builds_as"], r["builds_as"])
    # flash-attention's family cubins from CUDA 12.9: 10.3 rides sm_100f
    j = coverage_json("--cuda", "12.9", "--package", "flash_attn")
    check(j["10.3"]["via"] == ["sm_100f"], j["10.3"])


@ft.case("policy.cli.forward_ptx_packages")
def case_forward_ptx_packages(t):
    # natten and nunchaku ship no forward PTX: the row's/override's +PTX are left out, with reasons
    for pkg in ("natten", "nunchaku"):
        r = json.loads(run("resolve", "--cuda", "13.0", "--torch", "2.9", "--package", pkg,
                           "--format", "json").stdout)
        check("+PTX" not in r["arch_list"], (pkg, r["arch_list"]))
        check([d["token"] for d in r["ptx_dropped"]] == ["9.0+PTX", "12.0+PTX"], (pkg, r["ptx_dropped"]))
        check(r["ptx_not_added"] and "forward_ptx" in r["ptx_not_added"], (pkg, r["ptx_not_added"]))
    # torchao's _C takes torch's own flags: +PTX stays plain PTX there
    r = json.loads(run("resolve", "--cuda", "13.0", "--torch", "2.9", "--package", "torchao",
                       "--format", "json").stdout)
    check("compute_90" in r["targets"] and r["ptx_dropped"] == [], r)
    # a compute_Xa form without forward_ptx: false is refused with its file and line
    pk = t.path("packages")
    ft.write(os.path.join(pk, "bad", "arch_override.yml"),
             'target_forms:\n  reason: r\n  source: s\n  forms:\n    "9.0": {sass: sm_90a, ptx: compute_90a}\n')
    p = run("resolve", "--cuda", "13.0", "--package", "bad", "--packages-dir", pk, expect=2)
    check("arch_override.yml:5" in p.stderr and "forward_ptx" in p.stderr, p.stderr)


@ft.case("policy.cli.gap_ptx_one_rule")
def case_gap_ptx_one_rule(t):
    pk = t.path("packages")
    ft.write(os.path.join(pk, "gappy", "arch_override.yml"),
             'arch_list: "8.0 10.0 12.0"\narch_list_aarch64: "8.0 10.0 12.0"\n')
    arm = ("--cuda", "13.0", "--platform", "linux_aarch64")
    out = run("resolve", *arm, "--package", "gappy", "--packages-dir", pk).stdout.strip()
    check(out == "8.0+PTX 10.0+PTX 12.0+PTX", out)  # Thor JITs compute_100, H100/GH200 compute_80
    # the case: 8.0+PTX already nets Thor, but the rule puts its PTX on 10.0
    ft.write(os.path.join(pk, "netted", "arch_override.yml"), 'arch_list_aarch64: "8.0+PTX 10.0 12.0"\n')
    out = run("resolve", *arm, "--package", "netted", "--packages-dir", pk).stdout.strip()
    check(out == "8.0+PTX 10.0+PTX 12.0+PTX", out)
    # coverage of the list as written advises exactly that, from the same rule
    p = run("coverage", "--arch-list", "8.0 10.0 12.0", *arm, "--fail-on-gap", expect=1)
    check("major 9 has no cubin and no PTX below it: add +PTX on 8.0" in p.stdout, p.stdout)
    check("major 11 has no cubin and no PTX below it: add +PTX on 10.0" in p.stdout, p.stdout)
    p = run("coverage", "--arch-list", "8.0+PTX 10.0 12.0", *arm)
    check("+PTX belongs on 10.0" in p.stdout, p.stdout)
    run("coverage", "--arch-list", out, *arm, "--fail-on-gap", expect=0)
    # x86-64 has no major-11 GPU: only major 9 is a gap there
    x86 = run("resolve", "--cuda", "13.0", "--package", "gappy", "--packages-dir", pk).stdout.strip()
    check(x86 == "8.0+PTX 10.0 12.0+PTX", x86)


@ft.case("policy.cli.aarch64_torch_rows")
def case_aarch64_torch_rows(t):
    j = json.loads(run("resolve", "--cuda", "13.0", "--torch", "2.11", "--platform",
                       "linux_aarch64", "--format", "json").stdout)
    check(j["torch_ceiling"] == "torch_runnable_aarch64[13.0].by_torch[2.11]", j["torch_ceiling"])
    check(not any("torch clamp not applied" in n for n in j["notes"]), j["notes"])
    check(j["arch_list"] == "8.0 9.0+PTX 10.0 11.0 12.0+PTX", j["arch_list"])
    j = json.loads(run("resolve", "--cuda", "12.8", "--torch", "2.7", "--platform",
                       "linux_aarch64", "--format", "json").stdout)
    check([c["token"] for c in j["clamped"]] == ["8.0"], j["clamped"])
    # Orin is Tegra (docs/arch-rules.md, where the design documents disagree): the SBSA torch has
    # no sm_87, so on an aarch64 cell with a torch it is dead (torch), not native through sm_80
    cov = coverage_json("--cuda", "12.8", "--torch", "2.9", "--platform", "linux_aarch64")
    check(cov["8.7"]["tier"] == "dead (torch)", cov["8.7"])
    # cu128 without a torch: no Volta cubin (the exceptions add it for torch 2.8-2.10 only)
    check(run("resolve", "--cuda", "12.8").stdout.strip() == ROW_128, "cu128 row without 7.0")
    # every aarch64 torch row cites the file it was read from
    text = open(POLICY).read()
    block = text[text.index("torch_runnable_aarch64:"):]
    for reason in re.findall(r'reason: "(.*)"', block):
        check(".ci/" in reason or "the x86 row" in reason or "as 2.11" in reason, reason)


@ft.case("policy.cli.cell_key")
def case_cell_key(t):
    args = ["cell-key", "--cuda", "12.8", "--torch", "2.9", "--python", "3.12", "--package", "flash_attn"]
    k1 = run(*args).stdout.strip()
    check(re.fullmatch(r"[0-9a-f]{64}", k1), k1)
    check(run(*args).stdout.strip() == k1, "stable")
    check(run("cell-key", "--cuda", "12.8.1", "--torch", "2.9.1", "--python", "3.12", "--package",
              "flash_attn").stdout.strip() == k1, "normalised inputs")
    check(run(*args[:-2]).stdout.strip() != k1, "package")
    check(run("cell-key", "--cuda", "12.8", "--torch", "2.9", "--python", "3.11", "--package",
              "flash_attn").stdout.strip() != k1, "python")
    with tempfile.TemporaryDirectory() as tmp:
        bumped = os.path.join(tmp, "arch_policy.yml")
        text = open(POLICY).read()
        epoch = int(re.search(r"^build_epoch: (\d+)", text, re.M).group(1))
        open(bumped, "w").write(re.sub(r"^build_epoch: \d+", f"build_epoch: {epoch + 1}", text, flags=re.M))
        check(run(*args, "--policy", bumped).stdout.strip() != k1, "build_epoch bump")
    run("cell-key", "--cuda", "13.1", expect=2)


def allowed_sm(tool, option):
    help_text = ft.run([tool, "--help"]).expect_rc(0).out
    start = help_text.index(option)
    allowed = help_text.index("Allowed values for this option:", start)
    end = help_text.index("'.", allowed)
    return set(re.findall(r"'(sm_\d+[af]?)'", help_text[allowed:end + 2]))


def version_of(tool):
    out = ft.run([tool, "--version"]).expect_rc(0).out
    return re.search(r"V(\d+\.\d+\.\d+)", out).group(1)


@ft.case("policy.data_dir.installed")
def case_data_dir(t):
    """An installed binary reads the data installed next to it (any prefix, also after the prefix
    moves), NVCC_FORGE_DATA_DIR overrides it, and without data it fails naming where it looked:
    never the source tree it was built from."""
    import shutil
    p1 = t.path("p1")
    r = t.run(["cmake", "--install", t.build, "--prefix", p1])
    check(r.rc == 0, f"install failed\n{r!r}")
    p2 = t.path("moved", "p2")
    os.makedirs(os.path.dirname(p2))
    os.rename(p1, p2)
    exe = os.path.join(p2, "bin", "nvcc-forge")
    env = t.env(NVCC_FORGE_DATA_DIR=None)

    def resolve_json(env):
        return json.loads(t.run([exe, "resolve", "--cuda", "12.8", "--format", "json"], env=env)
                          .expect_rc(0).out)

    j = resolve_json(env)
    check(j["policy_file"] == os.path.join(p2, "share", "nvcc-forge", "policy", "arch_policy.yml"), j["policy_file"])
    check(j["arch_list"] == ROW_128, j["arch_list"])
    # NVCC_FORGE_DATA_DIR: a copy whose 12.8 row differs.
    custom = t.path("custom")
    shutil.copytree(os.path.join(p2, "share", "nvcc-forge"), custom)
    pol = os.path.join(custom, "policy", "arch_policy.yml")
    text = ft.read(pol)
    row = re.search(r"^  \"?12\.8\"?:.*\n(?:    .*\n)*?    list: .*$", text, re.M)
    check(row, "no 12.8 row found in the installed policy")
    new_row = re.sub(r"list: .*$", 'list: "8.0 9.0"', row.group(0))
    ft.write(pol, text.replace(row.group(0), new_row, 1))
    j = resolve_json(t.env(NVCC_FORGE_DATA_DIR=custom))
    check(j["policy_file"] == pol, j["policy_file"])
    check(j["arch_list"] == "8.0 9.0+PTX", j["arch_list"])
    # No data next to the binary: exit 2, naming the installed path.
    shutil.rmtree(os.path.join(p2, "share", "nvcc-forge"))
    r = t.run([exe, "resolve", "--cuda", "12.8"], env=env).expect_rc(2)
    r.expect_err(os.path.join(p2, "share", "nvcc-forge"))
    check(os.path.join(t.source, "policy", "arch_policy.yml") not in r.err,
          f"fell back to the source tree: {r.err}")
    r = t.run([exe, "resolve", "--cuda", "12.8", "--format", "json"], env=env)
    check(r.rc == 2 and '"policy_file"' not in r.out, f"no data, yet: {r!r}")


@ft.case("policy.nvcc_tables")
def case_nvcc_tables(t):
    """Toolkits: /usr/local/cuda (13.0) and the wheels install_nvcc_tables.sh puts in
    $FORGE_NVCC_TABLE_WHEELS (default SOURCE/.tools/nvcc-tables). A row whose toolkit is absent
    fails: every row names a toolkit that install_nvcc_tables.sh installs."""
    import yaml

    policy = yaml.safe_load(open(os.path.join(ROOT, "policy", "arch_policy.yml")))
    wheels = os.environ.get("FORGE_NVCC_TABLE_WHEELS", os.path.join(ROOT, ".tools", "nvcc-tables"))
    checked, failures = 0, []
    for cuda, row in policy["nvcc_supported"].items():
        codes = set(row["codes"].split())
        tools = []
        if cuda == "13.0" and os.path.exists("/usr/local/cuda/bin/nvcc"):
            tools.append("/usr/local/cuda/bin/nvcc")
        tools += sorted(glob.glob(os.path.join(wheels, f"{cuda}.*", "nvidia", "*", "bin", "nvcc")))
        tools += sorted(glob.glob(os.path.join(wheels, f"{cuda}.*", "nvidia", "*", "bin", "ptxas")))
        if not tools:
            # Every row was read off a toolkit that install_nvcc_tables.sh (run by
            # .ci/install-deps.sh) downloads: a row that cannot be checked is a failure.
            failures.append(f"{cuda}: no toolkit to check the row against (bash "
                            f"tests/integration/policy/install_nvcc_tables.sh {wheels})")
            continue
        tool = tools[0]
        option = "--gpu-architecture <arch>" if tool.endswith("nvcc") else "--gpu-name"
        real = allowed_sm(tool, option)
        version = version_of(tool)
        checked += 1
        if real != codes:
            failures.append(f"{cuda}: table {sorted(codes - real)} not in {tool}; missing {sorted(real - codes)}")
        if version not in row["read_from"]:
            failures.append(f"{cuda}: read_from '{row['read_from']}' does not name {version}")
        print(f"{cuda}: {os.path.basename(tool)} {version}: {len(real)} sm_ targets "
              f"{'ok' if real == codes else 'DIFFER'}")
    if failures:
        ft.fail("\n" + "\n".join(failures))
    check(checked == len(policy["nvcc_supported"]), f"checked {checked} rows")


@ft.case("policy.cli.not_utf8")
def case_not_utf8(t):
    """YAML text that is not UTF-8 is exit 2 at load time naming file:line (issue 30: a byte 0xFF
    in a package file's reason or a gpus.yml product name killed the JSON output with SIGABRT),
    for the text and the JSON output alike."""
    pkgs = t.path("packages")
    override = ft.write(os.path.join(pkgs, "bad", "arch_override.yml"),
                        b'# a package\narch_list: {list: "8.0 9.0", reason: "fast \xff path", source: "t"}\n')
    gpus_text = ft.read(os.path.join(ROOT, "policy", "gpus.yml")).encode()
    line = gpus_text[:gpus_text.index(b'"H100"')].count(b"\n") + 1
    gpus = ft.write(t.path("gpus.yml"), gpus_text.replace(b'"H100"', b'"H1\xff00"', 1))
    cases = [(("resolve", "--cuda", "12.8", "--packages-dir", pkgs, "--package", "bad"), f"{override}:2"),
             (("coverage", "--cuda", "12.8", "--gpus", gpus), f"{gpus}:{line}"),
             (("verify", t.forge_exe, "--cuda", "12.8", "--packages-dir", pkgs, "--package", "bad"),
              f"{override}:2"),
             (("verify", t.forge_exe, "--cuda", "12.8", "--gpus", gpus), f"{gpus}:{line}"),
             (("plan", "--cuda", "12.8", "--packages-dir", pkgs, "--package", "bad", "--", "true"),
              f"{override}:2")]
    with ft.Soft() as soft:
        for args, where in cases:
            for fmt in ((), ("--format", "json")):
                r = t.forge(*(args[:1] + fmt + args[1:]))
                soft.check(r.rc == 2, f"{args} {fmt}: exit {r.rc} (not 2)\n{r!r}")
                soft.check(f"{where}: " in r.err and "not UTF-8: byte 0xff" in r.err,
                           f"{args} {fmt}: no '{where}' in\n{r!r}")


if __name__ == "__main__":
    sys.exit(ft.main(setup=setup))
