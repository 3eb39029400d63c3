#!/usr/bin/env python3
"""The nvcc command-line model checked against the real nvcc, black box, through the front end.

For a table of command lines, the targets the model reads (the `requested` of the compile-log
record nvcc-forge writes in observe mode) must be the images `nvcc -dryrun` plans (fatbinary
--image3 kind=elf/ptx/nvvm, nvlink --arch, with the cicc -arch and ptxas -arch passes consistent
with them); every command line the model rejects (the call goes to nvcc untouched, logged with no
sources and no output) must be rejected by nvcc and vice versa.

Inject mode is checked the same way: the call nvcc-forge rewrites (recorded by a stand-in nvcc) is
accepted by nvcc and plans what was asked plus what was injected. inject() and clamp round trips
with chosen missing lists, and the probe itself, are library checks (inputs the front end never
builds): tests/unit/nvcc/test_dryrun.cpp. Skipped without nvcc."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
import forge_test as ft  # noqa: E402


# ---- nvcc's plan ------------------------------------------------------------------------------

class Plan:
    """What `nvcc -dryrun ARGV` plans: exit code, output, and the targets of each step."""
    ELF = re.compile(r"--image3=kind=elf,sm=([0-9]+[af]?)")
    PTX = re.compile(r"--image3=kind=ptx,sm=([0-9]+[af]?)")
    NVVM = re.compile(r"--image3=kind=nvvm,sm=([0-9]+[af]?)")
    CICC = re.compile(r'cicc"? [^\n]* -arch (compute_[0-9]+[af]?)')
    PTXAS = re.compile(r"#\$ ptxas -arch=sm_([0-9]+[af]?)[^\n]* -o ")
    NVLINK = re.compile(r"nvlink [^\n]*--arch=sm_([0-9]+[af]?)")

    def __init__(self, result):
        self.rc = result.rc
        self.output = result.out + result.err
        text = self.output

        def collect(regex, prefix):
            return {prefix + m.group(1) for m in regex.finditer(text)}

        self.images = collect(self.ELF, "sm_") | collect(self.PTX, "compute_") | collect(self.NVVM, "lto_")
        self.cicc = collect(self.CICC, "")
        self.ptxas = collect(self.PTXAS, "sm_")
        self.nvlink = collect(self.NVLINK, "sm_")


def kind(target):
    return target.split("_", 1)[0]  # sm, compute, lto


def folded(target):
    """sm_90a -> sm_90: the target with its a/f suffix dropped."""
    return target.rstrip("af")


class Model:
    """The compile-log record of one call through the front end (observe mode)."""

    def __init__(self, record):
        self.record = record
        # A line the model cannot read goes to nvcc untouched and is logged before anything of it
        # is known: no sources, no output, no targets. A line it reads logs its device sources or
        # its -o (every line these cases call rejected has both). A line with neither that the
        # model reads as having no device code logs the same as a rejected one: `ok` is then
        # None, and tests/unit/nvcc/test_dryrun.cpp checks that the model reads it.
        known = record["action"] != "passthrough" or record["sources"] or record["output"] or record["requested"]
        self.ok = True if known else None
        self.requested = set(record["requested"])
        self.sources = record["sources"]
        self.output = record["output"]
        # Calls the model passes through untouched: no device code (version, -E, -M, host-only
        # sources), or one target only (-ptx, -cubin); the policy is set, so nothing else is.
        self.passthrough = record["action"] == "passthrough"
        self.no_device = self.passthrough and record["requested"] == []


class Dryrun:
    """The case's directory with k.cu and h.cpp, nvcc -dryrun, and the model through nvcc-forge."""

    def __init__(self, t):
        self.t = t
        self.nvcc = t.nvcc()
        self.dir = t.work
        os.makedirs(os.path.join(self.dir, "sub"))
        ft.write(os.path.join(self.dir, "k.cu"), "__global__ void k() {}\n")
        ft.write(os.path.join(self.dir, "h.cpp"), "int main() { return 0; }\n")
        self.log = os.path.join(self.dir, "log.jsonl")
        self.cache = os.path.join(self.dir, "cache")

    def env(self, pre="", app="", **kw):
        e = {k: v for k, v in os.environ.items()
             if not k.startswith("NVCC_FORGE_") and k not in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS")}
        if pre:
            e["NVCC_PREPEND_FLAGS"] = pre
        if app:
            e["NVCC_APPEND_FLAGS"] = app
        e.update(kw)
        return e

    def write(self, name, text):
        ft.write(os.path.join(self.dir, name), text)

    def dryrun(self, argv, pre="", app=""):
        # -dryrun first: a trailing value-taking option must not eat it
        return Plan(self.t.run([self.nvcc, "-dryrun", *argv], env=self.env(pre, app), cwd=self.dir))

    def model(self, argv, pre="", app=""):
        """The model's reading of argv: nvcc-forge as a launcher in front of nvcc -dryrun, observe
        mode, a policy set so that every call the model reads is compared and logged."""
        if os.path.exists(self.log):
            os.remove(self.log)
        env = self.env(pre, app, NVCC_FORGE_MODE="observe", NVCC_FORGE_ARCH_LIST="8.0",
                       NVCC_FORGE_LOG=self.log, NVCC_FORGE_CACHE_DIR=self.cache)
        r = self.t.run([self.t.forge_exe, self.nvcc, "-dryrun", *argv], env=env, cwd=self.dir)
        recs = ft.jsonl(self.log)
        if len(recs) != 1:
            ft.fail(f"expected one log record for {argv}, got {recs}\n{r!r}")
        return Model(recs[0])

    def expect_same(self, soft, argv, pre="", app=""):
        """The model's prediction equals nvcc's plan, and the plan's passes are consistent with it."""
        what = " ".join(argv) + (f" [PREPEND {pre}]" if pre else "") + (f" [APPEND {app}]" if app else "")
        plan = self.dryrun(argv, pre, app)
        if not soft.check(plan.rc == 0, f"{what}: nvcc -dryrun exited {plan.rc}: {plan.output}"):
            return
        inv = self.model(argv, pre, app)
        if not soft.check(inv.ok, f"{what}: the model rejects it: {inv.record}"):
            return
        soft.check_eq(sorted(inv.requested), sorted(plan.images), f"{what}: requested vs nvcc's images")
        sass_folded = {folded(x) for x in plan.images if kind(x) == "sm"}
        ptx = {x for x in plan.images if kind(x) == "compute"}
        # SASS comes from ptxas, or from nvlink when a -dlto link makes it from LTO-IR.
        ptxas_folded = {folded(x) for x in plan.ptxas | plan.nvlink}
        if not inv.sources:  # a device link
            soft.check_eq(sorted(plan.nvlink), sorted(inv.requested), f"{what}: nvlink --arch")
        else:
            soft.check_eq(sorted(ptxas_folded), sorted(sass_folded), f"{what}: ptxas passes")
            for x in sorted(ptx):
                soft.check(x in plan.cicc, f"{what}: no cicc pass {x}")


COMPILE = ["-c", "k.cu", "-o", "k.o"]


def compile_(extra):
    return COMPILE + extra.split()


def words(line):
    return line.split()


# ---- the cases (each the GoogleTest case it replaces, in snake_case) --------------------------

@ft.case("nvcc.default_and_arch_shorthands")
def default_and_arch_shorthands(t):
    d = Dryrun(t)
    with ft.Soft() as soft:
        for extra in ("", "-arch=sm_80", "-arch sm_80", "--gpu-architecture=sm_80", "--gpu-architecture sm_80",
                      "-arch=compute_80", "-arch=compute_90", "-arch=sm_90a", "-arch=compute_90a",
                      "-arch=sm_100a", "-arch=sm_100f", "-arch=compute_100f", "-arch=sm_120f", "-arch=sm_121a",
                      "-arch=all", "-arch=all-major", "-arch=native", "-arch=sm_80 -arch=sm_86"):
            d.expect_same(soft, compile_(extra))


@ft.case("nvcc.code_lists_gencode_spellings_and_mixing")
def code_lists_gencode_spellings_and_mixing(t):
    d = Dryrun(t)
    with ft.Soft() as soft:
        for extra in (
                "-arch=compute_80 -code=sm_80,sm_86",
                "-arch=compute_80 -code=sm_80,compute_80",
                "-arch compute_80 -code sm_80 --gpu-code=sm_86",
                "-arch=compute_90a -code=sm_90a",
                "-arch=compute_100f -code=sm_103",
                "-arch=lto_90 -code=sm_90",
                "-gencode arch=lto_90,code=sm_90",
                "-arch=lto_90a -code=sm_90a",
                "-gencode arch=compute_80,code=sm_80",
                "-gencode=arch=compute_80,code=sm_80",
                "--generate-code arch=compute_80,code=[sm_80,compute_80]",
                "--generate-code=arch=compute_80,code=[sm_80,compute_80]",
                "-gencode code=[sm_80,compute_80],arch=compute_80",
                "-gencode arch=compute_80,code=[sm_80,sm_86,sm_89]",
                "-gencode arch=compute_80,code=sm_80 -gencode arch=compute_80,code=sm_80",
                "-gencode arch=compute_90a,code=sm_90a",
                "-gencode arch=compute_90,code=sm_90a",
                "-gencode arch=compute_100f,code=sm_103",
                "-gencode arch=compute_100f,code=sm_103a",
                "-gencode arch=compute_100,code=sm_100f",
                "-gencode arch=compute_120f,code=sm_121f",
                "-gencode arch=compute_120f,code=[sm_120f,compute_120f]",
                "-arch=sm_80 -gencode arch=compute_90,code=sm_90",
                "-arch=compute_80 -code=sm_80 -gencode arch=compute_90,code=sm_90",
                "-arch=all -gencode arch=compute_90a,code=sm_90a",
                "-arch=native -gencode arch=compute_80,code=sm_80",
                "-Xptxas -arch=sm_86 -arch=sm_80",
                "--ptxas-options=-arch=sm_86 -arch=sm_80",
                "-Xnvlink -arch=sm_86",
                "-Xcompiler -march=native",
                "-t 2 -arch=sm_80",
                "-t2 -arch=sm_80"):
            d.expect_same(soft, compile_(extra))
        # Literal double quotes reach nvcc from Makefiles (`\"...\"`).
        d.expect_same(soft, compile_("") + ["-gencode", 'arch=compute_80,code="sm_80,compute_80"'])
        d.expect_same(soft, compile_("") + ["-gencode", "arch=compute_80, code=sm_80"])


@ft.case("nvcc.rdc_dlto_and_device_links")
def rdc_dlto_and_device_links(t):
    d = Dryrun(t)
    with ft.Soft() as soft:
        for line in (
                "-dc k.cu -o k.o -dlto -arch=sm_80",
                "-dc k.cu -o k.o --lto -arch=sm_90a",
                "-dc k.cu -o k.o -dlto",
                "-dc k.cu -o k.o -dlto -arch=compute_80",
                "-dc k.cu -o k.o -dlto -arch=all",
                "-dc k.cu -o k.o -arch=lto_80",
                "-dc k.cu -o k.o -arch=lto_90a",
                "-c k.cu -o k.o -dlto -arch=sm_80",
                "-dc k.cu -o k.o -gencode arch=compute_90,code=[compute_90,lto_90]",
                "-rdc=true -c k.cu -o k.o -arch=sm_90",
                "-dlink a.o -o d.o",
                "-dlink a.o -o d.o -arch=sm_80",
                "-dlink a.o -o d.o -arch=sm_90a",
                "-dlink a.o -o d.o -arch=compute_80",
                "-dlink a.o -o d.o -arch=all",
                "-dlink a.o -o d.o -gencode arch=compute_80,code=[sm_80,compute_80]",
                "-dlink -dlto a.o -o d.o -arch=sm_80",
                "-dlink -dlto a.o -o d.o --generate-code=arch=compute_80,code=[compute_80,sm_80]",
                "a.o -o app",
                "a.o -o app -arch=sm_90",
                "-fatbin k.cu -o k.fatbin -arch=sm_80",
                "-fatbin k.cu -o k.fatbin",
                "-cuda k.cu -arch=sm_90a",
                "-lib k.cu -o libk.a -arch=sm_90",
                "-dw k.cu -o k.o -arch=sm_86",
                "k.cu -o app -arch=sm_86",
                "k.cu a.o -o app -arch=sm_86",
                "-rdc=true k.cu -o app -arch=sm_86",
                "-dlink k.cu -o d.o -arch=sm_80",
                "-c -dlink k.cu -o k.o -arch=sm_80",
                "k.cu -o app -dlto -arch=sm_80",
                "k.cu -o app -dlto",
                "-dlto k.cu a.o -o app -arch=all-major"):
            d.expect_same(soft, words(line))


@ft.case("nvcc.env_flags_and_options_files")
def env_flags_and_options_files(t):
    d = Dryrun(t)
    with ft.Soft() as soft:
        d.expect_same(soft, compile_("-arch=sm_80"), "", "-arch=sm_86")
        d.expect_same(soft, compile_("-arch=sm_80"), "-arch=sm_86")
        d.expect_same(soft, compile_(""), "", '-gencode=arch=compute_80,code="sm_80,compute_80"')
        d.expect_same(soft, compile_(""), '-ccbin=g++ -DA="x y"', "-gencode arch=compute_90,code=sm_90")
        d.write("o1.rsp", '-gencode=arch=compute_90,code=[sm_90,compute_90] -DX="a b" -DY=a\\ b\n')
        d.write("o2.rsp", "-optf o1.rsp -arch=sm_86\n")
        d.write("sub/n.rsp", "-optf o1.rsp\n")  # resolves against the cwd
        d.write("files.rsp", "k.cu -c -o k.o\n")
        d.expect_same(soft, compile_("--options-file o2.rsp"))
        d.expect_same(soft, compile_("-optf=o2.rsp"))
        d.expect_same(soft, compile_("-optf sub/n.rsp"))
        d.expect_same(soft, words("--options-file=sub/n.rsp,files.rsp -arch=sm_86"))
        for bad in ("-optf missing.rsp", "-optf=sub/o2.rsp"):
            soft.check(d.dryrun(compile_(bad)).rc != 0, f"{bad}: nvcc accepts it")
            soft.check(not d.model(compile_(bad)).ok, f"{bad}: the model accepts it")
        # Quoted paths and escapes: the model's -o is the file nvcc writes.
        d.write("p.rsp", '-c "k.cu" -o "out dir/k.o" -DQ=c\\d\n')
        p = d.dryrun(["-optf", "p.rsp"])
        if soft.check(p.rc == 0, p.output):
            soft.check('-o "out dir/k.o"' in p.output, p.output)
            soft.check('-D "Q=cd"' in p.output, p.output)
            inv = d.model(["-optf", "p.rsp"])
            if soft.check(inv.ok, inv.record):
                soft.check_eq(inv.output, "out dir/k.o", "the model's -o")
                soft.check_eq(inv.sources, ["k.cu"], "the model's sources")
        d.write("stray.rsp", '-DA="b\n')
        soft.check(d.dryrun(compile_("-optf stray.rsp")).rc != 0, "nvcc accepts a stray quote in a file")
        soft.check(not d.model(compile_("-optf stray.rsp")).ok, "the model accepts a stray quote in a file")
        soft.check(d.dryrun(compile_(""), "", '-DA="b').rc != 0, "nvcc accepts a stray quote in APPEND")
        soft.check(not d.model(compile_(""), "", '-DA="b').ok, "the model accepts a stray quote in APPEND")
        d.write("q.rsp", '-gencode=arch=compute_90,code="sm_90,compute_90"\n')
        soft.check(d.dryrun(compile_("-optf q.rsp")).rc != 0, "nvcc accepts a quoted code list in a file")
        soft.check(not d.model(compile_("-optf q.rsp")).ok, "the model accepts a quoted code list in a file")


# Command-line shapes of real builds (docs/real-world.md).
@ft.case("nvcc.real_world_shapes")
def real_world_shapes(t):
    d = Dryrun(t)
    with ft.Soft() as soft:
        # torch BuildExtension: single-token gencodes after -o, quoted host options, depfile.
        d.expect_same(soft, ["-c", "k.cu", "-o", "k.o", "-D__CUDA_NO_HALF_OPERATORS__", "--expt-relaxed-constexpr",
                             "--compiler-options", "'-fPIC'", "-O3", "-std=c++17", "-MD", "-MF", "k.o.d",
                             "-gencode=arch=compute_90,code=compute_90", "-gencode=arch=compute_90,code=sm_90"])
        # flash-attention FA2 ladder: family archs with plain codes embed family images.
        d.expect_same(soft, compile_("-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 "
                                     "-gencode arch=compute_100f,code=sm_100 -gencode arch=compute_110f,code=sm_110 "
                                     "-gencode arch=compute_120f,code=sm_120"))
        # CMake (CUDA_ARCHITECTURES 80;90a-real;120-virtual), separable compilation.
        d.expect_same(soft, ["-forward-unknown-to-host-compiler", "-ccbin=g++", "-DX=1", "-Isub", "-O3", "-DNDEBUG",
                             "--generate-code=arch=compute_80,code=[compute_80,sm_80]",
                             "--generate-code=arch=compute_90a,code=[sm_90a]",
                             "--generate-code=arch=compute_120,code=[compute_120]",
                             "-Xcompiler=-fPIC", "-rdc=true", "-x", "cu", "-MD", "-MT", "k.o", "-MF", "k.o.d",
                             "-c", "k.cu", "-o", "k.o"])
        # CMake IPO: compile to LTO-IR, device link with -dlto.
        d.expect_same(soft, words("-dc k.cu -o k.o --generate-code=arch=compute_80,code=[compute_80,lto_80]"))
        d.expect_same(soft, words("-Xcompiler=-fPIC -Wno-deprecated-gpu-targets -shared -dlink -dlto a.o "
                                  "--generate-code=arch=compute_80,code=[compute_80,sm_80] -o d.o "
                                  "-lcudadevrt -lcudart_static"))
        # nccl-tests: a link of objects with the full gencode list.
        d.expect_same(soft, words("-o app a.o -gencode=arch=compute_80,code=sm_80 "
                                  "-gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90"))
        # llama.cpp-style list: 75-virtual;...;90-virtual;120a-real.
        d.expect_same(soft, compile_("--generate-code=arch=compute_75,code=[compute_75] "
                                     "--generate-code=arch=compute_90,code=[compute_90] "
                                     "--generate-code=arch=compute_120a,code=[sm_120a]"))
        # gpu-burn: a PTX-only fatbin.
        d.expect_same(soft, words("-fatbin k.cu -o compare.fatbin -arch=compute_75"))
        # vllm: per-source arch-specific lists on top of the target's.
        d.expect_same(soft, compile_("--generate-code=arch=compute_90,code=[sm_90] -gencode arch=compute_90a,code=sm_90a"))


class MT19937:
    """std::mt19937 (C++'s, seeded the C++ way), so the random lines are the ones the GoogleTest
    version drew."""

    def __init__(self, seed):
        import random
        mt = [seed & 0xffffffff]
        for i in range(1, 624):
            mt.append((1812433253 * (mt[-1] ^ (mt[-1] >> 30)) + i) & 0xffffffff)
        self.r = random.Random()
        self.r.setstate((3, tuple(mt) + (624,), None))

    def __call__(self):
        return self.r.getrandbits(32)


# Random lines from a pool of target-related tokens: whenever nvcc accepts a line, the model does
# too and predicts exactly nvcc's images.
@ft.case("nvcc.random_lines_agree_with_nvcc")
def random_lines_agree_with_nvcc(t):
    d = Dryrun(t)
    with ft.Soft() as soft:
        pool = ["-c", "-dc", "k.cu", "k.cu", "-o", "k.o", "-arch=sm_80", "-arch", "sm_90a", "compute_90",
                "-arch=all-major", "-code=sm_90", "-code", "sm_90,compute_90", "-gencode",
                "arch=compute_80,code=[sm_80,compute_80]", "arch=compute_100f,code=sm_103",
                "-gencode=arch=compute_90a,code=sm_90a", "--generate-code=arch=compute_120,code=compute_120",
                "-dlto", "-Xptxas", "-v", "-t", "2", "-lineinfo", "-x", "cu", "h.cpp", "-dlink", "a.o",
                "-rdc=true", "-arch=lto_90", "--gpu-code", "lto_80", "-arch=sm_100f", "-Xnvlink",
                "-arch=compute_80", "-fatbin", "-ptx", "-E"]
        bases = [words("-c k.cu -o k.o"), words("-dc k.cu -o k.o"), words("-dlink a.o -o d.o"),
                 words("k.cu -o app"), []]
        seed = int(os.environ.get("FORGE_TEST_SEED") or "2026", 0)
        print(f"random seed {seed} (replay with FORGE_TEST_SEED={seed})")
        rng = MT19937(seed)
        accepted = compared = unread = 0
        for _ in range(250):
            argv = list(bases[rng() % len(bases)])
            n = 1 + rng() % 6
            for _ in range(n):
                argv.append(pool[rng() % len(pool)])
            plan = d.dryrun(argv)
            if plan.rc != 0:
                continue
            accepted += 1
            line = " ".join(argv)
            inv = d.model(argv)
            if inv.ok is None:  # no device source, no -o, passed through: Dryrun.RandomLinesParse
                unread += 1
                continue
            if not inv.ok:
                soft.errors.append(f"{line}: nvcc accepts it, the model does not: {inv.record}")
                return  # as the GoogleTest ASSERT: the rest of the case is not run
            if inv.passthrough:  # no device code, or -ptx / -cubin (the pool has no other single target)
                continue
            compared += 1
            soft.check_eq(sorted(inv.requested), sorted(plan.images), f"{line}: requested vs nvcc's images")
        print(f"{accepted} lines accepted by nvcc, {compared} compared, {unread} passed through without "
              "a device source or -o")
        soft.check(accepted > 30, f"only {accepted} lines accepted by nvcc")
        soft.check(compared > 20, f"only {compared} lines compared")


# Every command line the model rejects, nvcc rejects; the valid neighbours pass both.
@ft.case("nvcc.rejected_by_both")
def rejected_by_both(t):
    d = Dryrun(t)
    with ft.Soft() as soft:
        for extra in (
                ["-code=sm_80"],
                ["-arch=sm_80", "-code=sm_80"],
                ["-gencode", "arch=compute_80,code=sm_80,sm_86"],
                ["-gencode=arch=compute_80,code=[]"],
                ["-gencode=arch=sm_80,code=sm_80"],
                ["-gencode=arch=compute_80,code=sm_80,arch=compute_90"],
                ["-gencode=arch=compute_80"],
                ["-gencode=code=sm_80"],
                ["-gencode=arch=compute_90,code=sm_80"],
                ["-gencode=arch=compute_90a,code=sm_90"],
                ["-gencode=arch=compute_100f,code=sm_110f"],
                ["-gencode=arch=compute_80,code=compute_86"],
                ["-gencode=arch=all,code=sm_80"],
                ["-gencode", "arch=compute_80,code=[sm_80, sm_86]"],
                ["-arch=sm_80,sm_86"],
                ["-arch=80"],
                ["-arch=SM_80"],
                ["-arch=sm_80a"],
                ["-arch=all", "-code=sm_80"],
                ["-arch=compute_90f"],
                ["-dlto", "-gencode", "arch=compute_90,code=lto_90"]):
            argv = compile_("") + extra
            what = " ".join(extra)
            soft.check(d.dryrun(argv).rc != 0, f"{what}: nvcc accepts it")
            soft.check(not d.model(argv).ok, f"{what}: the model accepts it")


# Calls the model passes through produce no device step at all.
@ft.case("nvcc.passthrough_calls_have_no_device_steps")
def passthrough_calls_have_no_device_steps(t):
    d = Dryrun(t)
    with ft.Soft() as soft:
        for line in ("-E k.cu -arch=sm_90", "-M k.cu", "-MM k.cu", "-c h.cpp -arch=sm_90", "-x c++ -c k.cu -o k.o",
                     "-c h.cpp -o h.o"):
            p = d.dryrun(words(line))
            inv = d.model(words(line))
            # That the model reads each of these lines is Dryrun.PassthroughCallsParse
            # (tests/unit/nvcc/test_dryrun.cpp): -c h.cpp -arch=sm_90 (no device source, no -o) logs
            # the same whether it was read or rejected.
            soft.check(inv.no_device, f"{line}: the model sees device code: {inv.record}")
            soft.check(not p.images and not p.ptxas and not p.nvlink, f"{line}: {p.output}")
            soft.check("cicc" not in p.output, f"{line}: {p.output}")
        # ... and -x cu makes a .cpp a device source.
        d.expect_same(soft, words("-c h.cpp -o h.o -arch=sm_90 -x cu"))


# ---- inject mode, black box -----------------------------------------------------------------
# The front end in inject mode in front of a recording stand-in for nvcc: the policy is the missing
# list, the rewritten call is what the stand-in received. (tests/unit/nvcc/test_dryrun.cpp checks
# inject() itself, with missing lists the front end would not compute.)

RECORDER = """#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
if not any(a in ("--version", "--help", "-h", "--list-gpu-code", "--list-gpu-arch") for a in args):
    with open(os.environ["FORGE_TEST_ARGV_LOG"], "a") as f:
        f.write(json.dumps(args) + "\\n")
os.execv({real!r}, [{real!r}] + args)
"""


def recorder(d):
    """WORK/rec/nvcc: records each compile's argv, then runs the real nvcc."""
    path = os.path.join(d.dir, "rec", "nvcc")
    if not os.path.exists(path):
        real = os.path.realpath(d.nvcc)
        ft.write(path, RECORDER.format(real=real), mode=0o755)
        query = os.path.join(os.path.dirname(real), "__nvcc_device_query")  # -arch=native
        if os.path.exists(query):
            os.symlink(query, os.path.join(d.dir, "rec", "__nvcc_device_query"))
        ft.write(os.path.join(d.dir, "packages", "rt", "arch_override.yml"),
                 'arch_list: "8.0"\nwrapper:\n  inject_arch_specific: true\n')
    return path


def through_inject(d, argv, policy, app=""):
    """(log record, the argv the front end ran nvcc with first) for `nvcc -dryrun ARGV` in inject
    mode with policy `policy` (arch-specific TUs opted in)."""
    argv_log = os.path.join(d.dir, "argv.jsonl")
    for f in (argv_log, d.log):
        if os.path.exists(f):
            os.remove(f)
    env = d.env("", app, NVCC_FORGE_MODE="inject", NVCC_FORGE_ARCH_LIST=policy, NVCC_FORGE_LOG=d.log,
                NVCC_FORGE_CACHE_DIR=d.cache, NVCC_FORGE_PACKAGE="rt",
                NVCC_FORGE_PACKAGES_DIR=os.path.join(d.dir, "packages"), FORGE_TEST_ARGV_LOG=argv_log)
    r = d.t.run([d.t.forge_exe, recorder(d), "-dryrun", *argv], env=env, cwd=d.dir)
    recs, calls = ft.jsonl(d.log), ft.jsonl(argv_log)
    if len(recs) != 1 or not calls:
        ft.fail(f"{argv}: expected one log record and a call, got {recs} {calls}\n{r!r}")
    ran = list(calls[0])
    ran.remove("-dryrun")  # dryrun() and model() put it first again
    return recs[0], ran


@ft.case("nvcc.inject_through_the_front_end")
def inject_through_the_front_end(t):
    d = Dryrun(t)
    with ft.Soft() as soft:
        """The rewritten call is accepted by nvcc, plans requested + injected, and the model reads it
        the way nvcc does."""
        for argv, missing, app in (
                (compile_("-arch=sm_80"), "sm_90 compute_90 sm_120", ""),
                (compile_(""), "sm_90 compute_120", ""),
                (compile_("-arch=sm_80"), "sm_80 compute_80 sm_86", ""),
                (compile_("-arch=compute_80 -code=sm_80"), "sm_90a sm_100f compute_120f", ""),
                (compile_("-gencode arch=compute_80,code=[sm_80,compute_80]"), "sm_110 sm_121", ""),
                (compile_("-arch=sm_90a"), "sm_90 sm_100", ""),
                (compile_("-arch=all"), "sm_90a compute_121", ""),
                (compile_("-arch=native"), "sm_80", ""),
                (compile_("-arch=sm_80"), "sm_90", "-arch=sm_86"),
                (compile_("-arch=sm_80 -Xcompiler"), "sm_90", "-fPIC"),
                (compile_("-Xptxas -v -arch=sm_80 -t 2"), "sm_90 compute_90", ""),
                (compile_("-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 "
                          "-gencode arch=compute_100f,code=sm_100 -gencode arch=compute_120f,code=sm_120"),
                 "compute_90 sm_110 compute_120 sm_121", ""),
                (words("-dlink a.o -o d.o -arch=sm_80"), "sm_90 compute_90", ""),
                (words("a.o -o app"), "sm_90", ""),
                (words("-dlink -dlto a.o -o d.o -arch=sm_80"), "sm_90", ""),
                (words("-dc k.cu -o k.o -dlto -arch=sm_80"), "sm_90 sm_80 compute_100", ""),
                (words("-dc k.cu -o k.o -dlto -arch sm_90a"), "sm_100", ""),
                (words("-dc k.cu -o k.o -dlto"), "sm_90", ""),
                (words("-dc k.cu -o k.o -dlto -arch=all"), "compute_121", "")):
            what = " ".join(argv) + (f" [APPEND {app}]" if app else "") + f" + {missing}"
            before = d.dryrun(argv, "", app)
            if not soft.check(before.rc == 0, f"{what}: nvcc refuses the original: {before.output}"):
                continue
            rec, ran = through_inject(d, argv, missing, app)
            soft.check_eq(sorted(rec["requested"]), sorted(before.images), f"{what}: requested")
            soft.check(set(rec["missing"]) <= set(missing.split()), f"{what}: missing beyond the policy: {rec}")
            if not rec["injected"]:
                soft.check(ran == argv, f"{what}: nothing injected, yet nvcc ran {ran}")
                continue
            soft.check_eq(rec["action"], "injected", f"{what}: action")
            after = d.dryrun(ran, "", app)
            if not soft.check(after.rc == 0, f"{what}: nvcc refuses the rewritten {ran}: {after.output}"):
                continue
            # The log names what was added as nvcc builds it (an -dlto compile's sm_90 is lto_90 and
            # compute_90), so the plan after is the plan before plus exactly those.
            want = before.images | set(rec["injected"])
            soft.check_eq(sorted(after.images), sorted(want), f"{what}: images after injection")
            again = d.model(ran, "", app)
            soft.check(again.ok, f"{what}: the model rejects the rewritten {ran}")
            soft.check_eq(sorted(again.requested), sorted(after.images), f"{what}: the rewritten line, read again")
            soft.check(ran[-1] != "-gencode", f"{what}: a trailing -gencode in {ran}")


@ft.case("nvcc.clamp_through_the_front_end")
def clamp_through_the_front_end(t):
    d = Dryrun(t)
    with ft.Soft() as soft:
        """Lines nvcc 13 refuses become lines it builds, nothing emittable lost (inject mode)."""
        for argv, policy in (
                (compile_("-gencode arch=compute_37,code=sm_37 -gencode arch=compute_80,code=sm_80 "
                          "-gencode arch=compute_37,code=compute_37"), "sm_90"),
                (compile_("-gencode arch=compute_80,code=[sm_80,sm_101,compute_80]"), "sm_80"),
                (compile_("-arch=compute_80 -code=sm_80,sm_101"), "sm_80"),
                (compile_("-arch=sm_37"), "sm_80 compute_80"),
                (compile_("-gencode arch=compute_50,code=[sm_50,compute_50]"), "sm_80"),
                (compile_("-arch compute_50 -code sm_50,sm_52 -gencode arch=compute_80,code=sm_80"), "sm_80")):
            what = " ".join(argv)
            soft.check(d.dryrun(argv).rc != 0, f"{what}: nvcc 13 should refuse the original")
            rec, ran = through_inject(d, argv, policy)
            if not soft.check(rec["clamped"], f"{what}: nothing clamped: {rec}"):
                continue
            after = d.dryrun(ran)
            if not soft.check(after.rc == 0, f"{what}: nvcc refuses the clamped {ran}: {after.output}"):
                continue
            for x in rec["injected"]:
                soft.check(x in after.images, f"{what}: injected {x} not built")
            for x in rec["clamped"]:
                soft.check(x not in after.images, f"{what}: clamped {x} still built")
            for x in rec["requested"]:
                if x not in rec["clamped"]:
                    soft.check(x in after.images, f"{what}: emittable {x} lost")
            again = d.model(ran)
            soft.check(again.ok, f"{what}: the model rejects the clamped {ran}")
            soft.check_eq(sorted(again.requested), sorted(after.images), f"{what}: the clamped line, read again")


if __name__ == "__main__":
    sys.exit(ft.main())
