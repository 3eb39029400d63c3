#!/usr/bin/env python3
"""nvcc-forge resolve / coverage / cell-key, run as a user runs them.

usage: test_policy_cli.py FORGE_EXE REPO_ROOT CASE
"""
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

EXE, ROOT, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
FIX = os.path.join(ROOT, "tests", "fixtures", "policy")
POLICY = os.path.join(ROOT, "policy", "arch_policy.yml")
ROW_128 = "7.5 8.0 8.6 9.0+PTX 10.0 12.0+PTX"


def run(*args, env=None, expect=0):
    full_env = dict(os.environ)
    full_env.update(env or {})
    p = subprocess.run([EXE, *args], capture_output=True, text=True, env=full_env, timeout=60)
    if expect is not None and p.returncode != expect:
        sys.exit(f"FAIL: {' '.join(args)}: exit {p.returncode}, expected {expect}\n"
                 f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def check(cond, msg):
    if not cond:
        sys.exit(f"FAIL: {msg}")


def mini(*args, **kw):
    return run(*args, "--policy", os.path.join(FIX, "mini_policy.yml"),
               "--packages-dir", os.path.join(FIX, "packages"), **kw)


def case_resolve_torch():
    out = run("resolve", "--cuda", "12.8", "--torch", "2.9").stdout.strip()
    check(out == "7.0 7.5 8.0 8.6 9.0+PTX 10.0 12.0+PTX", out)
    check(run("resolve", "--cuda", "12.8").stdout.strip() == ROW_128, "12.8 row")
    check(run("resolve", "--cuda", "12.4", "--torch", "2.6").stdout.strip() == "6.0 7.0 7.5 8.0 8.6 9.0+PTX", "12.4")


def case_resolve_cmake():
    out = run("resolve", "--cuda", "12.8", "--format", "cmake").stdout.strip()
    check(out == "75-real;80-real;86-real;90;100-real;120", out)


def case_resolve_gencode():
    flags = run("resolve", "--cuda", "12.8", "--format", "gencode").stdout.split()
    check(len(flags) == 8, flags)
    check("-gencode=arch=compute_90,code=compute_90" in flags, flags)
    check("-gencode=arch=compute_120,code=compute_120" in flags, flags)
    check("-gencode=arch=compute_75,code=sm_75" in flags, flags)
    check(not any("compute_75,code=compute_75" in f for f in flags), flags)


def case_resolve_json():
    j = json.loads(run("resolve", "--cuda", "12.8", "--torch", "2.9", "--format", "json").stdout)
    for key in ("arch_list", "tokens", "source", "clamped", "cuda", "torch", "platform", "package",
                "targets", "ptx_added", "build_epoch", "policy_sha256"):
        check(key in j, f"missing {key}")
    check(j["source"] == "arch_exceptions[12.8/2.9]", j["source"])
    check(j["tokens"] == ["7.0", "7.5", "8.0", "8.6", "9.0+PTX", "10.0", "12.0+PTX"], j["tokens"])
    check(j["clamped"] == [], j["clamped"])
    check(re.fullmatch(r"[0-9a-f]{64}", j["policy_sha256"]), j["policy_sha256"])
    check(isinstance(j["build_epoch"], int), j["build_epoch"])
    # clamped tokens carry reasons, also on stderr for the plain formats
    c = run("resolve", "--cuda", "12.8", "--torch", "2.11", "--package", "torchao", "--format", "json")
    j = json.loads(c.stdout)
    check([x["token"] for x in j["clamped"]] == ["7.0"], j["clamped"])
    check("torch 2.11" in j["clamped"][0]["reason"], j["clamped"][0])
    p = run("resolve", "--cuda", "12.8", "--torch", "2.11", "--package", "torchao")
    check("clamped 7.0" in p.stderr, p.stderr)
    check(p.stdout.strip() == "7.5 8.0 8.6 8.9 9.0+PTX 10.0 12.0+PTX", p.stdout)


def case_resolve_versions():
    j = json.loads(run("resolve", "--cuda", "12.8.1", "--torch", "2.9.1+cu128", "--python", "3.12.4",
                       "--format", "json").stdout)
    check(j["cuda"] == "12.8" and j["torch"] == "2.9" and j["python"] == "3.12", j)
    check(j["source"] == "arch_exceptions[12.8/2.9]", j["source"])
    bad = run("resolve", "--cuda", "12.x", expect=2)
    check("12.x" in bad.stderr, bad.stderr)
    bad = run("resolve", "--cuda", "12.8", "--platform", "linux_arm64", expect=2)
    check("linux_aarch64" in bad.stderr, bad.stderr)


def case_resolve_aarch64():
    out = run("resolve", "--cuda", "13.0", "--platform", "linux_aarch64").stdout.strip()
    check(out == "8.0 9.0+PTX 10.0 11.0 12.0+PTX", out)
    # exceptions never read on ARM, x86 overrides invisible
    p = mini("resolve", "--cuda", "12.8", "--torch", "2.9", "--platform", "linux_aarch64",
             "--package", "x86only", "--format", "json")
    j = json.loads(p.stdout)
    check(j["source"] == "arch_policy_aarch64[12.8]", j["source"])
    check(j["arch_list"] == "8.7 9.0+PTX", j["arch_list"])
    check(any("torch clamp not applied" in n for n in j["notes"]), j["notes"])


def case_resolve_package():
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
    check(j["arch_list"] == "8.6+PTX" and j["ptx_added"] == "8.6", j)


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


def case_resolve_probed():
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


def case_resolve_missing_key():
    p = run("resolve", "--cuda", "13.1", expect=2)
    check("arch_policy[13.1]" in p.stderr and "arch_policy.yml" in p.stderr, p.stderr)
    p = run("resolve", "--cuda", "12.4", "--platform", "linux_aarch64", expect=2)
    check("arch_policy_aarch64[12.4]" in p.stderr, p.stderr)
    p = run("resolve", "--cuda", "12.8", "--torch", "2.3", expect=2)
    check("torch_runnable[12.8].releases" in p.stderr, p.stderr)


def case_resolve_unknown_key():
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


def case_resolve_collapse():
    p = mini("resolve", "--cuda", "12.8", "--package", "collapse", expect=1)
    check("collapses to an empty arch list" in p.stderr and "sm_70" in p.stderr, p.stderr)
    check(p.stdout == "", p.stdout)


def case_resolve_usage():
    for args in (["--bogus"], ["--cuda"], ["--cuda", "12.8", "--format", "xml"]):
        p = run("resolve", *args, expect=2)
        check(p.stderr.strip() != "", args)
    check("--packages-dir" in run("resolve", "--help").stdout, "help")


def coverage_json(*args):
    return json.loads(run("coverage", *args, "--format", "json").stdout)


def case_coverage_json():
    j = coverage_json("--arch-list", ROW_128)
    gpus = open(os.path.join(ROOT, "policy", "gpus.yml")).read()
    check(len(j) == len(re.findall(r'^  "\d+\.\d+":', gpus, re.M)), len(j))
    tiers = {cc: v["tier"] for cc, v in j.items()}
    for cc in ("8.9", "10.3", "12.1"):
        check(tiers[cc] == "native", (cc, tiers[cc]))
    check(tiers["11.0"] == "jit", tiers["11.0"])
    for cc in ("7.0", "8.7"):
        check(tiers[cc] == "dead", (cc, tiers[cc]))
    check("B300" in j["10.3"]["products"], j["10.3"])
    check("Tegra" in j["8.7"]["why"], j["8.7"]["why"])
    # separators and spellings are all one list
    check(coverage_json("--arch-list", "75-real;80-real;86-real;90;100-real;120") == j, "cmake spelling")


def case_coverage_text():
    out = run("coverage", "--arch-list", ROW_128).stdout
    check(re.search(r"^\s+7\.0\s+dead\s+Tesla V100", out, re.M), out)
    check("Excluded" in out and "jit:    10.1 11.0" in out, out)
    check("major 11 has no cubin; compute_90 PTX below it is the JIT net" in out, out)


def case_coverage_markdown():
    out = run("coverage", "--arch-list", ROW_128, "--format", "markdown").stdout
    check("| 11.0 | jit |" in out and "### Excluded" in out, out)


def case_coverage_resolve_options():
    j = coverage_json("--cuda", "12.8", "--torch", "2.9")
    check(j["7.0"]["tier"] == "native", j["7.0"])
    j = coverage_json("--cuda", "12.8", "--torch", "2.11")
    check(j["7.0"]["tier"] == "dead", j["7.0"])
    p = run("coverage", "--cuda", "12.8", "--torch", "2.11", "--package", "torchao")
    check("Clamped from the requested list" in p.stdout and "7.0:" in p.stdout, p.stdout)


def case_coverage_gap():
    p = run("coverage", "--arch-list", "8.0 12.0+PTX", "--fail-on-gap", expect=1)
    check("FINDING: major 9 has no cubin and no PTX below it" in p.stdout, p.stdout)
    run("coverage", "--arch-list", ROW_128, "--fail-on-gap", expect=0)


def case_coverage_bad_list():
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


def case_coverage_matrix_html():
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
    gpus = len(j[0]["coverage"])
    check(len(rows) == len(j) * gpus, (len(rows), len(j), gpus))
    for cuda, torch in (("12.8", "2.9"), ("12.8", "2.11"), ("13.2", "2.12")):
        check(f"CUDA {cuda} &middot; torch {torch}" in page, (cuda, torch))
    check("CUDA 13.0 &middot; torch any &middot; linux_aarch64" in page, "aarch64 row")
    check("excluded: 5.0" in page, "exclusions in words")


def case_coverage_matrix_json():
    j = json.loads(run("coverage", "--matrix", "--format", "json").stdout)
    cells = {(c["cuda"], c["torch"], tuple(c["platforms"])): c for c in j}
    x86 = ("linux_x86_64", "win_amd64")
    check(cells[("12.8", "2.9", x86)]["coverage"]["7.0"]["tier"] == "native", "12.8/2.9 V100")
    check(cells[("12.8", "2.7", x86)]["coverage"]["7.0"]["tier"] == "dead", "12.8/2.7 V100")
    arm = cells[("13.0", None, ("linux_aarch64",))]
    check(arm["coverage"]["11.0"]["tier"] == "native", arm["coverage"]["11.0"])
    check(cells[("12.8", "2.9", x86)]["coverage"]["11.0"]["tier"] == "jit", "x86 Thor")
    p = run("coverage", "--matrix", "--format", "text", expect=2)
    check("html" in p.stderr, p.stderr)


def case_cell_key():
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


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}
if CASE not in CASES:
    sys.exit(f"unknown case {CASE}")
CASES[CASE]()
print(f"ok {CASE}")
