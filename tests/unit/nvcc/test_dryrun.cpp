// The library against the real nvcc: probe_toolkit() reads the toolkit as nvcc behaves, and
// inject() round trips through `nvcc -dryrun` (the rewritten line is accepted and plans exactly
// requested + missing; clamping makes refused lines build). These call inject() with chosen missing
// lists, which the front end never builds, so they stay library tests; what parse_invocation()
// reads of a command line is checked black box through the CLI in
// tests/integration/nvcc/test_nvcc.py. Skipped without nvcc (FORGE_REAL_NVCC, else
// /usr/local/cuda/bin/nvcc).
#include "caps_fixture.h"
#include "core/process.h"
#include "nvcc/cmdline.h"
#include "toolkit/probe.h"

#include "../seed.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <random>
#include <regex>
#include <sstream>

namespace forge::nvcc {
namespace {

namespace fs = std::filesystem;
using arch::Kind;
using arch::Target;
using toolkit::probe_toolkit;
using toolkit::query_native_sm;
using toolkit::ToolkitCaps;
using Argv = std::vector<std::string>;

std::string nvcc_path() {
    if (const char* e = std::getenv("FORGE_REAL_NVCC"); e && *e) return e;
    return "/usr/local/cuda/bin/nvcc";
}

using testing::names;

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
        std::vector<std::string> child_env =
            environment_without({"NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"});
        if (!pre.empty()) child_env.push_back("NVCC_PREPEND_FLAGS=" + pre);
        if (!app.empty()) child_env.push_back("NVCC_APPEND_FLAGS=" + app);
        Argv args = argv; // -dryrun first: a trailing value-taking option must not eat it
        args.insert(args.begin(), "-dryrun");
        args.insert(args.begin(), nvcc_path());
        ProcessSpec spec{.path = nvcc_path(),
                         .argv = args,
                         .env = child_env,
                         .output = ProcessSpec::Output::Merged,
                         .null_stdin = true,
                         .working_dir = dir_.string()};
        auto ran = run_process(spec);
        EXPECT_TRUE(ran.ok()) << (ran.ok() ? "" : ran.error().to_string());
        if (ran.ok()) {
            p.output = ran->out;
            p.rc = ran->status_code();
        }
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

    static inline fs::path dir_;
    static inline ToolkitCaps caps_;
};

const Argv kCompile = {"-c", "k.cu", "-o", "k.o"};

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

// The halves of Dryrun.PassthroughCallsHaveNoDeviceSteps and Dryrun.RandomLinesAgreeWithNvcc
// (tests/integration/nvcc/test_nvcc.py) the CLI cannot show: a line without a device source and
// without -o logs the same whether the model read it or rejected it.
TEST_F(Dryrun, PassthroughCallsParse) {
    for (const char* line : {"-E k.cu -arch=sm_90", "-M k.cu", "-MM k.cu", "-c h.cpp -arch=sm_90",
                             "-x c++ -c k.cu -o k.o", "-c h.cpp -o h.o"}) {
        SCOPED_TRACE(line);
        auto inv = model(words(line));
        ASSERT_TRUE(inv.ok());
        EXPECT_NE(inv->no_device, NoDeviceReason::None);
    }
}

// Whenever nvcc accepts one of the random lines (the same pool, bases and seed as the Python
// case), the model reads it.
TEST_F(Dryrun, RandomLinesParse) {
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
    std::mt19937 rng(forge::test::test_seed(2026));
    int accepted = 0;
    for (int round = 0; round < 250; ++round) {
        Argv argv = bases[rng() % bases.size()];
        const int n = 1 + static_cast<int>(rng() % 6);
        for (int i = 0; i < n; ++i)
            argv.push_back(pool[rng() % pool.size()]);
        if (dryrun(argv).rc != 0) continue;
        ++accepted;
        std::string line;
        for (const auto& a : argv)
            line += a + " ";
        auto inv = model(argv);
        ASSERT_TRUE(inv.ok()) << line << ": " << inv.error().to_string();
    }
    EXPECT_GT(accepted, 30);
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
