// The model against the real nvcc: for a table of command lines, the images parse_invocation()
// predicts must be the images `nvcc -dryrun` plans (fatbinary --image3 kind=elf/ptx/nvvm, nvlink
// --arch, with the cicc -arch and ptxas -arch passes consistent with them); every command line the
// model rejects must be rejected by nvcc and vice versa; inject() round trips through nvcc.
#include "../../unit/nvcc/caps_fixture.h"
#include "nvcc/cmdline.h"
#include "toolkit/probe.h"

#include <boost/process.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <random>
#include <regex>
#include <sstream>

namespace forge::nvcc {
namespace {

namespace bp = boost::process;
namespace fs = std::filesystem;
using arch::Kind;
using arch::Target;
using toolkit::probe_toolkit;
using toolkit::query_native_sm;
using toolkit::ToolkitCaps;
using Argv = std::vector<std::string>;

std::string nvcc_path() {
    if (const char* e = std::getenv("FORGE_REAL_NVCC"); e && *e) return e;
    return FORGE_REAL_NVCC;
}

std::string names(const std::set<Target>& ts) {
    std::string s;
    for (const auto& t : ts)
        s += (s.empty() ? "" : " ") + t.name();
    return s;
}

Argv words(const std::string& s) {
    Argv out;
    std::istringstream in(s);
    for (std::string w; in >> w;)
        out.push_back(w);
    return out;
}

struct Plan {
    int rc = -1;
    std::string output;
    std::set<Target> images; // fatbinary --image3 entries
    std::set<Target> cicc;   // virtual passes
    std::set<Target> ptxas;  // ptxas -arch=sm_X ... (SASS assembled)
    std::set<Target> nvlink; // nvlink --arch=sm_X
};

std::set<Target> collect(const std::string& text, const std::regex& re, const std::string& prefix) {
    std::set<Target> out;
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
        auto t = arch::parse_target(prefix + (*it)[1].str());
        EXPECT_TRUE(t.ok()) << (*it)[0];
        if (t) out.insert(*t);
    }
    return out;
}

class Dryrun : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        if (nvcc_path().empty() || !fs::exists(nvcc_path())) return;
        dir_ = fs::path(FORGE_TEST_BINARY_DIR) / "nvcc-dryrun";
        fs::create_directories(dir_ / "sub");
        std::ofstream(dir_ / "k.cu") << "__global__ void k() {}\n";
        std::ofstream(dir_ / "h.cpp") << "int main() { return 0; }\n";
        auto caps = probe_toolkit(nvcc_path());
        ASSERT_TRUE(caps.ok()) << caps.error().to_string();
        caps_ = *caps;
        // -arch=native follows the build machine's GPU (none on CI: nvcc's default).
        caps_.native_sm = query_native_sm(nvcc_path());
    }
    void SetUp() override {
        if (nvcc_path().empty() || !fs::exists(nvcc_path()))
            GTEST_SKIP() << "no real nvcc (set FORGE_REAL_NVCC)";
    }

    static Plan dryrun(const Argv& argv, const std::string& pre = "", const std::string& app = "") {
        Plan p;
        auto env = boost::this_process::environment();
        bp::environment child_env = env;
        child_env.erase("NVCC_PREPEND_FLAGS");
        child_env.erase("NVCC_APPEND_FLAGS");
        if (!pre.empty()) child_env["NVCC_PREPEND_FLAGS"] = pre;
        if (!app.empty()) child_env["NVCC_APPEND_FLAGS"] = app;
        Argv args = argv; // -dryrun first: a trailing value-taking option must not eat it
        args.insert(args.begin(), "-dryrun");
        bp::ipstream out;
        std::error_code ec;
        bp::child c(bp::exe = nvcc_path(), bp::args = args, bp::start_dir = dir_.string(),
                    bp::env = child_env, (bp::std_out & bp::std_err) > out, bp::std_in < bp::null,
                    ec);
        EXPECT_FALSE(ec) << ec.message();
        p.output.assign(std::istreambuf_iterator<char>(out), {});
        c.wait(ec);
        p.rc = c.exit_code();
        static const std::regex elf(R"(--image3=kind=elf,sm=([0-9]+[af]?))");
        static const std::regex ptx(R"(--image3=kind=ptx,sm=([0-9]+[af]?))");
        static const std::regex nvvm(R"(--image3=kind=nvvm,sm=([0-9]+[af]?))");
        static const std::regex cicc(R"(cicc"? [^\n]* -arch (compute_[0-9]+[af]?))");
        static const std::regex ptxas(R"(#\$ ptxas -arch=sm_([0-9]+[af]?)[^\n]* -o )");
        static const std::regex nvlink(R"(nvlink [^\n]*--arch=sm_([0-9]+[af]?))");
        for (auto [re, prefix, dest] :
             {std::tuple{&elf, "sm_", &p.images}, std::tuple{&ptx, "compute_", &p.images},
              std::tuple{&nvvm, "lto_", &p.images}, std::tuple{&cicc, "", &p.cicc},
              std::tuple{&ptxas, "sm_", &p.ptxas}, std::tuple{&nvlink, "sm_", &p.nvlink}}) {
            auto got = collect(p.output, *re, prefix);
            dest->insert(got.begin(), got.end());
        }
        return p;
    }

    static Result<Invocation> model(const Argv& argv, const std::string& pre = "",
                                    const std::string& app = "") {
        return parse_invocation(argv, pre, app, dir_.string(), caps_);
    }

    // The model's prediction equals nvcc's plan, and the plan's passes are consistent with it.
    static void expect_same(const Argv& argv, const std::string& pre = "",
                            const std::string& app = "") {
        std::string what;
        for (const auto& a : argv)
            what += a + " ";
        if (!pre.empty()) what += "[PREPEND " + pre + "] ";
        if (!app.empty()) what += "[APPEND " + app + "]";
        SCOPED_TRACE(what);
        Plan plan = dryrun(argv, pre, app);
        ASSERT_EQ(plan.rc, 0) << plan.output;
        auto inv = model(argv, pre, app);
        ASSERT_TRUE(inv.ok()) << inv.error().to_string();
        EXPECT_EQ(names(inv->requested), names(plan.images));
        std::set<Target> sass_folded, ptxas_folded, ptx;
        for (const auto& t : plan.images) {
            if (t.kind == Kind::Sass) sass_folded.insert(t.folded());
            if (t.kind == Kind::Ptx) ptx.insert(t);
        }
        // SASS comes from ptxas, or from nvlink when a -dlto link makes it from LTO-IR.
        for (const auto& t : plan.ptxas)
            ptxas_folded.insert(t.folded());
        for (const auto& t : plan.nvlink)
            ptxas_folded.insert(t.folded());
        const bool device_link = inv->sources.empty();
        if (device_link) {
            EXPECT_EQ(names(plan.nvlink), names(inv->requested));
        } else {
            EXPECT_EQ(names(ptxas_folded), names(sass_folded)) << "ptxas passes";
            for (const auto& t : ptx)
                EXPECT_TRUE(plan.cicc.contains(t)) << "no cicc pass " << t.name();
        }
    }

    static inline fs::path dir_;
    static inline ToolkitCaps caps_;
};

const Argv kCompile = {"-c", "k.cu", "-o", "k.o"};

Argv cat(Argv a, const Argv& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

Argv compile(const std::string& extra) {
    Argv a = kCompile;
    for (auto& w : words(extra))
        a.push_back(w);
    return a;
}

TEST_F(Dryrun, ProbeMatchesTheToolkit) {
    auto t0 = std::chrono::steady_clock::now();
    auto caps = probe_toolkit(nvcc_path());
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - t0);
    ASSERT_TRUE(caps.ok());
    EXPECT_LT(ms.count(), 2000);
    EXPECT_GE(caps->version.major, 11);
    EXPECT_EQ(caps->default_sm, caps->version.major >= 13 ? 75 : 52);
    // The default the probe derives is what nvcc really does with no target flag.
    Plan plan = dryrun(kCompile);
    EXPECT_TRUE(plan.images.contains(Target{Kind::Sass, caps->default_sm, arch::Suffix::None}));
    // Every a/f target in the caps is accepted by this nvcc.
    for (const auto& t : caps->emittable) {
        if (t.kind != Kind::Sass || t.suffix == arch::Suffix::None) continue;
        Plan p = dryrun(compile("-gencode arch=compute_" + std::to_string(t.sm) +
                                std::string(arch::suffix_string(t.suffix)) + ",code=" + t.name()));
        EXPECT_EQ(p.rc, 0) << t.name() << p.output;
    }
    // The unit tests' captured nvcc 13.0 output is what this toolkit says, if it is 13.0.
    if (caps->version.major == 13 && caps->version.minor == 0) {
        EXPECT_EQ(names(caps->emittable), names(testing::caps13().emittable));
        EXPECT_EQ(caps->default_sm, testing::caps13().default_sm);
    }
    auto bad = probe_toolkit("/nonexistent/bin/nvcc");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().to_string().find("/nonexistent/bin/nvcc"), std::string::npos);
}

TEST_F(Dryrun, DefaultAndArchShorthands) {
    for (const char* extra :
         {"", "-arch=sm_80", "-arch sm_80", "--gpu-architecture=sm_80", "--gpu-architecture sm_80",
          "-arch=compute_80", "-arch=compute_90", "-arch=sm_90a", "-arch=compute_90a",
          "-arch=sm_100a", "-arch=sm_100f", "-arch=compute_100f", "-arch=sm_120f", "-arch=sm_121a",
          "-arch=all", "-arch=all-major", "-arch=native", "-arch=sm_80 -arch=sm_86"}) {
        expect_same(compile(extra));
    }
}

TEST_F(Dryrun, CodeListsGencodeSpellingsAndMixing) {
    for (const char* extra : {
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
             "-t2 -arch=sm_80",
         }) {
        expect_same(compile(extra));
    }
    // Literal double quotes reach nvcc from Makefiles (`\"...\"`).
    expect_same(cat(compile(""), Argv{"-gencode", "arch=compute_80,code=\"sm_80,compute_80\""}));
    expect_same(cat(compile(""), Argv{"-gencode", "arch=compute_80, code=sm_80"}));
}

TEST_F(Dryrun, RdcDltoAndDeviceLinks) {
    for (const char* line : {
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
             "-dlto k.cu a.o -o app -arch=all-major",
         }) {
        expect_same(words(line));
    }
}

TEST_F(Dryrun, EnvFlagsAndOptionsFiles) {
    expect_same(compile("-arch=sm_80"), "", "-arch=sm_86");
    expect_same(compile("-arch=sm_80"), "-arch=sm_86");
    expect_same(compile(""), "", "-gencode=arch=compute_80,code=\"sm_80,compute_80\"");
    expect_same(compile(""), "-ccbin=g++ -DA=\"x y\"", "-gencode arch=compute_90,code=sm_90");
    std::ofstream(dir_ / "o1.rsp")
        << "-gencode=arch=compute_90,code=[sm_90,compute_90] -DX=\"a b\" -DY=a\\ b\n";
    std::ofstream(dir_ / "o2.rsp") << "-optf o1.rsp -arch=sm_86\n";
    std::ofstream(dir_ / "sub" / "n.rsp") << "-optf o1.rsp\n"; // resolves against the cwd
    std::ofstream(dir_ / "files.rsp") << "k.cu -c -o k.o\n";
    expect_same(compile("--options-file o2.rsp"));
    expect_same(compile("-optf=o2.rsp"));
    expect_same(compile("-optf sub/n.rsp"));
    expect_same(words("--options-file=sub/n.rsp,files.rsp -arch=sm_86"));
    for (const char* bad : {"-optf missing.rsp", "-optf=sub/o2.rsp"}) {
        Plan p = dryrun(compile(bad));
        EXPECT_NE(p.rc, 0) << bad;
        EXPECT_FALSE(model(compile(bad)).ok()) << bad;
    }
    // Quoted paths and escapes: the model's -o is the file nvcc writes.
    std::ofstream(dir_ / "p.rsp") << "-c \"k.cu\" -o \"out dir/k.o\" -DQ=c\\d\n";
    {
        Plan p = dryrun({"-optf", "p.rsp"});
        ASSERT_EQ(p.rc, 0) << p.output;
        EXPECT_NE(p.output.find("-o \"out dir/k.o\""), std::string::npos) << p.output;
        EXPECT_NE(p.output.find("-D \"Q=cd\""), std::string::npos) << p.output;
        auto inv = model({"-optf", "p.rsp"});
        ASSERT_TRUE(inv.ok());
        EXPECT_EQ(inv->output, "out dir/k.o");
        EXPECT_EQ(inv->sources, std::vector<std::string>{"k.cu"});
    }
    std::ofstream(dir_ / "stray.rsp") << "-DA=\"b\n";
    EXPECT_NE(dryrun(compile("-optf stray.rsp")).rc, 0);
    EXPECT_FALSE(model(compile("-optf stray.rsp")).ok());
    EXPECT_NE(dryrun(compile(""), "", "-DA=\"b").rc, 0);
    EXPECT_FALSE(model(compile(""), "", "-DA=\"b").ok());
    std::ofstream(dir_ / "q.rsp") << "-gencode=arch=compute_90,code=\"sm_90,compute_90\"\n";
    EXPECT_NE(dryrun(compile("-optf q.rsp")).rc, 0);
    EXPECT_FALSE(model(compile("-optf q.rsp")).ok());
}

// Command-line shapes of real builds (docs/real-world.md, docs/nvcc-command-line.md).
TEST_F(Dryrun, RealWorldShapes) {
    // torch BuildExtension: single-token gencodes after -o, quoted host options, depfile.
    expect_same(
        Argv{"-c", "k.cu", "-o", "k.o", "-D__CUDA_NO_HALF_OPERATORS__", "--expt-relaxed-constexpr",
             "--compiler-options", "'-fPIC'", "-O3", "-std=c++17", "-MD", "-MF", "k.o.d",
             "-gencode=arch=compute_90,code=compute_90", "-gencode=arch=compute_90,code=sm_90"});
    // flash-attention FA2 ladder: family archs with plain codes embed family images.
    expect_same(
        compile("-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 "
                "-gencode arch=compute_100f,code=sm_100 -gencode arch=compute_110f,code=sm_110 "
                "-gencode arch=compute_120f,code=sm_120"));
    // CMake (CUDA_ARCHITECTURES 80;90a-real;120-virtual), separable compilation.
    expect_same(Argv{"-forward-unknown-to-host-compiler",
                     "-ccbin=g++",
                     "-DX=1",
                     "-Isub",
                     "-O3",
                     "-DNDEBUG",
                     "--generate-code=arch=compute_80,code=[compute_80,sm_80]",
                     "--generate-code=arch=compute_90a,code=[sm_90a]",
                     "--generate-code=arch=compute_120,code=[compute_120]",
                     "-Xcompiler=-fPIC",
                     "-rdc=true",
                     "-x",
                     "cu",
                     "-MD",
                     "-MT",
                     "k.o",
                     "-MF",
                     "k.o.d",
                     "-c",
                     "k.cu",
                     "-o",
                     "k.o"});
    // CMake IPO: compile to LTO-IR, device link with -dlto.
    expect_same(words("-dc k.cu -o k.o --generate-code=arch=compute_80,code=[compute_80,lto_80]"));
    expect_same(words("-Xcompiler=-fPIC -Wno-deprecated-gpu-targets -shared -dlink -dlto a.o "
                      "--generate-code=arch=compute_80,code=[compute_80,sm_80] -o d.o "
                      "-lcudadevrt -lcudart_static"));
    // nccl-tests: a link of objects with the full gencode list.
    expect_same(
        words("-o app a.o -gencode=arch=compute_80,code=sm_80 "
              "-gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90"));
    // llama.cpp-style list: 75-virtual;...;90-virtual;120a-real.
    expect_same(compile("--generate-code=arch=compute_75,code=[compute_75] "
                        "--generate-code=arch=compute_90,code=[compute_90] "
                        "--generate-code=arch=compute_120a,code=[sm_120a]"));
    // gpu-burn: a PTX-only fatbin.
    expect_same(words("-fatbin k.cu -o compare.fatbin -arch=compute_75"));
    // vllm: per-source arch-specific lists on top of the target's.
    expect_same(compile(
        "--generate-code=arch=compute_90,code=[sm_90] -gencode arch=compute_90a,code=sm_90a"));
}

// Random lines from a pool of target-related tokens: whenever nvcc accepts a line, the model does
// too and predicts exactly nvcc's images.
TEST_F(Dryrun, RandomLinesAgreeWithNvcc) {
    const Argv pool = {"-c",
                       "-dc",
                       "k.cu",
                       "k.cu",
                       "-o",
                       "k.o",
                       "-arch=sm_80",
                       "-arch",
                       "sm_90a",
                       "compute_90",
                       "-arch=all-major",
                       "-code=sm_90",
                       "-code",
                       "sm_90,compute_90",
                       "-gencode",
                       "arch=compute_80,code=[sm_80,compute_80]",
                       "arch=compute_100f,code=sm_103",
                       "-gencode=arch=compute_90a,code=sm_90a",
                       "--generate-code=arch=compute_120,code=compute_120",
                       "-dlto",
                       "-Xptxas",
                       "-v",
                       "-t",
                       "2",
                       "-lineinfo",
                       "-x",
                       "cu",
                       "h.cpp",
                       "-dlink",
                       "a.o",
                       "-rdc=true",
                       "-arch=lto_90",
                       "--gpu-code",
                       "lto_80",
                       "-arch=sm_100f",
                       "-Xnvlink",
                       "-arch=compute_80",
                       "-fatbin",
                       "-ptx",
                       "-E"};
    const std::vector<Argv> bases = {words("-c k.cu -o k.o"),
                                     words("-dc k.cu -o k.o"),
                                     words("-dlink a.o -o d.o"),
                                     words("k.cu -o app"),
                                     {}};
    std::mt19937 rng(2026);
    int accepted = 0, compared = 0;
    for (int round = 0; round < 250; ++round) {
        Argv argv = bases[rng() % bases.size()];
        const int n = 1 + static_cast<int>(rng() % 6);
        for (int i = 0; i < n; ++i)
            argv.push_back(pool[rng() % pool.size()]);
        Plan plan = dryrun(argv);
        if (plan.rc != 0) continue;
        ++accepted;
        std::string line;
        for (const auto& a : argv)
            line += a + " ";
        auto inv = model(argv);
        ASSERT_TRUE(inv.ok()) << line << ": " << inv.error().to_string();
        if (inv->no_device != NoDeviceReason::None || inv->phase == Phase::Ptx ||
            inv->phase == Phase::Cubin)
            continue;
        ++compared;
        EXPECT_EQ(names(inv->requested), names(plan.images)) << line;
    }
    EXPECT_GT(accepted, 30);
    EXPECT_GT(compared, 20);
}

// Every command line the model rejects, nvcc rejects; the valid neighbours pass both.
TEST_F(Dryrun, RejectedByBoth) {
    for (Argv extra : {
             Argv{"-code=sm_80"},
             Argv{"-arch=sm_80", "-code=sm_80"},
             Argv{"-gencode", "arch=compute_80,code=sm_80,sm_86"},
             Argv{"-gencode=arch=compute_80,code=[]"},
             Argv{"-gencode=arch=sm_80,code=sm_80"},
             Argv{"-gencode=arch=compute_80,code=sm_80,arch=compute_90"},
             Argv{"-gencode=arch=compute_80"},
             Argv{"-gencode=code=sm_80"},
             Argv{"-gencode=arch=compute_90,code=sm_80"},
             Argv{"-gencode=arch=compute_90a,code=sm_90"},
             Argv{"-gencode=arch=compute_100f,code=sm_110f"},
             Argv{"-gencode=arch=compute_80,code=compute_86"},
             Argv{"-gencode=arch=all,code=sm_80"},
             Argv{"-gencode", "arch=compute_80,code=[sm_80, sm_86]"},
             Argv{"-arch=sm_80,sm_86"},
             Argv{"-arch=80"},
             Argv{"-arch=SM_80"},
             Argv{"-arch=sm_80a"},
             Argv{"-arch=all", "-code=sm_80"},
             Argv{"-arch=compute_90f"},
             Argv{"-dlto", "-gencode", "arch=compute_90,code=lto_90"},
         }) {
        Argv argv = cat(compile(""), extra);
        std::string what;
        for (const auto& a : extra)
            what += a + " ";
        EXPECT_NE(dryrun(argv).rc, 0) << what;
        EXPECT_FALSE(model(argv).ok()) << what;
    }
}

// Calls the model passes through produce no device step at all.
TEST_F(Dryrun, PassthroughCallsHaveNoDeviceSteps) {
    for (const char* line : {"-E k.cu -arch=sm_90", "-M k.cu", "-MM k.cu", "-c h.cpp -arch=sm_90",
                             "-x c++ -c k.cu -o k.o", "-c h.cpp -o h.o"}) {
        SCOPED_TRACE(line);
        Plan p = dryrun(words(line));
        auto inv = model(words(line));
        ASSERT_TRUE(inv.ok());
        EXPECT_NE(inv->no_device, NoDeviceReason::None);
        EXPECT_TRUE(p.images.empty() && p.ptxas.empty() && p.nvlink.empty()) << p.output;
        EXPECT_EQ(p.output.find("cicc"), std::string::npos);
    }
    // ... and -x cu makes a .cpp a device source.
    expect_same(words("-c h.cpp -o h.o -arch=sm_90 -x cu"));
}

struct RoundTrip {
    Argv argv;
    std::vector<std::string> missing;
    bool clamp = false;
    std::string append = {};
};

// inject(): nvcc accepts the rewritten line and plans exactly requested ∪ missing.
TEST_F(Dryrun, InjectRoundTrips) {
    for (const auto& rt : std::vector<RoundTrip>{
             {compile("-arch=sm_80"), {"sm_90", "compute_90", "sm_120"}},
             {compile(""), {"sm_90", "compute_120"}},
             {compile("-arch=sm_80"), {"sm_80", "compute_80", "sm_86"}},
             {compile("-arch=compute_80 -code=sm_80"), {"sm_90a", "sm_100f", "compute_120f"}},
             {compile("-gencode arch=compute_80,code=[sm_80,compute_80]"), {"sm_110", "sm_121"}},
             {compile("-arch=sm_90a"), {"sm_90", "sm_100"}},
             {compile("-arch=all"), {"sm_90a", "compute_121"}},
             {compile("-arch=native"), {"sm_80"}},
             {compile("-arch=sm_80"), {"sm_90"}, false, "-arch=sm_86"},
             {compile("-arch=sm_80 -Xcompiler"), {"sm_90"}, false, "-fPIC"},
             {compile("-Xptxas -v -arch=sm_80 -t 2"), {"sm_90", "compute_90"}},
             // flash-attention ladder with policy 8.0 9.0+PTX 10.0 11.0 12.0+PTX (+12.1).
             {compile(
                  "-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 "
                  "-gencode arch=compute_100f,code=sm_100 -gencode arch=compute_120f,code=sm_120"),
              {"compute_90", "sm_110", "compute_120", "sm_121"}},
             {words("-dlink a.o -o d.o -arch=sm_80"), {"sm_90", "compute_90"}},
             {words("a.o -o app"), {"sm_90"}},
             {words("-dlink -dlto a.o -o d.o -arch=sm_80"), {"sm_90"}},
             {words("-dc k.cu -o k.o -dlto -arch=sm_80"), {"sm_90", "sm_80", "compute_100"}},
             {words("-dc k.cu -o k.o -dlto -arch sm_90a"), {"sm_100"}},
             {words("-dc k.cu -o k.o -dlto"), {"sm_90"}},
             {words("-dc k.cu -o k.o -dlto -arch=all"), {"compute_121"}},
         }) {
        std::string what;
        for (const auto& a : rt.argv)
            what += a + " ";
        SCOPED_TRACE(what);
        Plan before = dryrun(rt.argv, "", rt.append);
        ASSERT_EQ(before.rc, 0) << before.output;
        auto inv = model(rt.argv, "", rt.append);
        ASSERT_TRUE(inv.ok());
        std::vector<Target> missing;
        for (const auto& m : rt.missing)
            missing.push_back(*arch::parse_target(m));
        Rewrite rw = inject(*inv, missing, rt.clamp, caps_);
        Plan after = dryrun(rw.argv, "", rt.append);
        ASSERT_EQ(after.rc, 0) << after.output;
        std::set<Target> expected = before.images;
        const bool device_link = inv->sources.empty();
        for (const auto& t : missing) {
            if (device_link && t.kind != Kind::Sass) continue;
            if (inv->dlto && !device_link && t.kind == Kind::Sass) {
                expected.insert(Target{Kind::Lto, t.sm, t.suffix});
                if (!before.images.contains(Target{Kind::Lto, t.sm, t.suffix}))
                    expected.insert(Target{Kind::Ptx, t.sm, t.suffix});
                continue;
            }
            expected.insert(t);
        }
        EXPECT_EQ(names(after.images), names(expected));
        // The model reads the rewritten line the way nvcc does, too.
        auto again = model(rw.argv, "", rt.append);
        ASSERT_TRUE(again.ok());
        EXPECT_EQ(names(again->requested), names(after.images));
        for (std::size_t i = 0; i < rw.argv.size(); ++i)
            if (rw.argv[i] == "-gencode") EXPECT_LT(i + 1, rw.argv.size());
    }
}

// Clamp: lines nvcc 13 refuses become lines it builds, with nothing emittable lost.
TEST_F(Dryrun, ClampRoundTrips) {
    for (const auto& rt : std::vector<RoundTrip>{
             {compile("-gencode arch=compute_37,code=sm_37 -gencode arch=compute_80,code=sm_80 "
                      "-gencode arch=compute_37,code=compute_37"),
              {"sm_90"},
              true},
             {compile("-gencode arch=compute_80,code=[sm_80,sm_101,compute_80]"), {}, true},
             {compile("-arch=compute_80 -code=sm_80,sm_101"), {}, true},
             {compile("-arch=sm_37"), {"sm_80", "compute_80"}, true},
             {compile("-gencode arch=compute_50,code=[sm_50,compute_50]"), {"sm_80"}, true},
             {compile("-arch compute_50 -code sm_50,sm_52 -gencode arch=compute_80,code=sm_80"),
              {},
              true},
         }) {
        std::string what;
        for (const auto& a : rt.argv)
            what += a + " ";
        SCOPED_TRACE(what);
        EXPECT_NE(dryrun(rt.argv).rc, 0) << "nvcc 13 should refuse the original";
        auto inv = model(rt.argv);
        ASSERT_TRUE(inv.ok());
        std::vector<Target> missing;
        for (const auto& m : rt.missing)
            missing.push_back(*arch::parse_target(m));
        Rewrite rw = inject(*inv, missing, true, caps_);
        EXPECT_FALSE(rw.clamped.empty());
        Plan after = dryrun(rw.argv);
        ASSERT_EQ(after.rc, 0) << after.output;
        for (const auto& t : missing)
            EXPECT_TRUE(after.images.contains(t)) << t.name();
        for (const auto& t : rw.clamped_targets)
            EXPECT_FALSE(after.images.contains(t)) << t.name();
        // Everything emittable the user asked for survives.
        for (const auto& t : inv->requested)
            if (caps_.emittable.contains(t)) EXPECT_TRUE(after.images.contains(t)) << t.name();
        auto again = model(rw.argv);
        ASSERT_TRUE(again.ok());
        EXPECT_EQ(names(again->requested), names(after.images));
    }
}

} // namespace
} // namespace forge::nvcc
