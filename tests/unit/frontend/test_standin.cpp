// The plan stand-in's pure parts: which flags the stub compile keeps, where the call's outputs
// and dependency files go, the plan configuration, the configure probes left to the real nvcc,
// and the kept stubs (a poisoned one is refused).
#include "../nvcc/caps_fixture.h"
#include "../temp_dir.h"
#include "core/plan_marker.h"
#include "frontend/standin.h"

#include "../files.h"
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <optional>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace forge;
using namespace forge::frontend;

namespace {

using forge::test::slurp;

nvcc::Invocation parse(const std::vector<std::string>& argv) {
    auto inv = nvcc::parse_invocation(argv, "", "", "/tmp", nvcc::testing::caps13());
    EXPECT_TRUE(inv.ok());
    return *inv;
}

using Strings = std::vector<std::string>;

} // namespace

TEST(StandinStub, KeepsTargetsAndOutputKindDropsTheRest) {
    auto p = plan_stub(
        parse({"-c", "-O3", "-Ipath", "-DX=1", "--use_fast_math", "-std=c++17", "-Xcompiler",
               "-fPIC,-Wall", "-gencode", "arch=compute_80,code=sm_80",
               "-gencode=arch=compute_90,code=compute_90", "csrc/k.cu", "-o", "build/k.o"}));
    EXPECT_EQ(p.flags, (Strings{"-c", "-Xcompiler", "-fPIC", "-gencode=arch=compute_80,code=sm_80",
                                "-gencode=arch=compute_90,code=compute_90"}));
    EXPECT_EQ(p.outputs, Strings{"build/k.o"});
    EXPECT_TRUE(p.depfiles.empty());
    EXPECT_FALSE(p.per_output);
}

TEST(StandinStub, SharedRdcHostCompilerAndArchKept) {
    auto p = plan_stub(parse({"-shared", "-rdc=true", "-ccbin", "/usr/bin/g++-12", "-arch=sm_90a",
                              "-lcuda", "k.cu", "-o", "k.so"}));
    EXPECT_EQ(p.flags, (Strings{"-shared", "-rdc=true", "-ccbin=/usr/bin/g++-12", "-arch=sm_90a"}));
    EXPECT_FALSE(p.per_output); // a linked library: one module per output, nothing to clash
}

TEST(StandinStub, DefaultOutputsOdirAndDepfiles) {
    auto p = plan_stub(parse({"-c", "-MD", "-odir", "obj", "-arch=sm_80", "a/x.cu", "b/y.cu"}));
    EXPECT_EQ(p.outputs, (Strings{"obj/x.o", "obj/y.o"}));
    ASSERT_EQ(p.depfiles.size(), 2u);
    EXPECT_EQ(p.depfiles[0].path, "obj/x.d");
    EXPECT_EQ(p.depfiles[0].target, "obj/x.o");

    p = plan_stub(parse({"-dc", "--generate-dependencies-with-compile", "--dependency-output",
                         "deps/k.d", "-MT", "k.obj", "k.cu", "-o", "k.o"}));
    ASSERT_EQ(p.depfiles.size(), 1u);
    EXPECT_EQ(p.depfiles[0].path, "deps/k.d");
    EXPECT_EQ(p.depfiles[0].target, "k.obj");
    EXPECT_TRUE(p.per_output); // rdc objects: nvlink refuses two copies of one module id

    EXPECT_EQ(plan_stub(parse({"-ptx", "-arch=compute_80", "k.cu"})).outputs, Strings{"k.ptx"});
    EXPECT_EQ(plan_stub(parse({"-lib", "-arch=sm_80", "k.cu"})).outputs, Strings{"a.a"});
    EXPECT_EQ(plan_stub(parse({"-arch=sm_80", "k.cu"})).outputs, Strings{"a.out"});
}

TEST(StandinStub, DepfileTextEscapesForMake) {
    EXPECT_EQ(depfile_text("out/k.o", {"src/k.cu"}), "out/k.o: src/k.cu\n");
    EXPECT_EQ(depfile_text("a b.o", {"$x#.cu"}), "a\\ b.o: $$x\\#.cu\n");
}

TEST(StandinStub, CacheKeyChangesWithEveryInput) {
    const Strings f{"-c", "-arch=sm_80"};
    const std::string k = stub_cache_key("/cuda/bin/nvcc", f, "", "", "");
    EXPECT_EQ(k, stub_cache_key("/cuda/bin/nvcc", f, "", "", ""));
    EXPECT_NE(k, stub_cache_key("/cuda2/bin/nvcc", f, "", "", ""));
    EXPECT_NE(k, stub_cache_key("/cuda/bin/nvcc", {"-c", "-arch=sm_90"}, "", "", ""));
    EXPECT_NE(k, stub_cache_key("/cuda/bin/nvcc", f, "-G", "", ""));
    EXPECT_NE(k, stub_cache_key("/cuda/bin/nvcc", f, "", "-G", ""));
    EXPECT_NE(k, stub_cache_key("/cuda/bin/nvcc", f, "", "", "/abs/k.o"));
}

TEST(StandinStub, ThreadsAndShortHeaderOnTheStubCompileOnly) {
    const Strings call{"-c", "-O3", "-arch=sm_80", "k.cu", "-o", "k.o"};
    const StubPlan p = plan_stub(parse(call));
    EXPECT_FALSE(p.threads_given);
    // The flags (the cache key) stay the call's; the stub compile adds its own two.
    EXPECT_EQ(p.flags, (Strings{"-c", "-arch=sm_80"}));
    const toolkit::CudaVersion cuda{13, 0};
    EXPECT_EQ(stub_compile_args(p, "/st", cuda, false),
              (Strings{"-c", "-arch=sm_80", "--threads", "0", "-I/st/include"}));
    EXPECT_EQ(stub_compile_args(p, "/st", cuda, true),
              (Strings{"-c", "-arch=sm_80", "--threads", "0"}));
    // Before CUDA 11.2 nvcc has no --threads.
    EXPECT_EQ(stub_compile_args(p, "/st", toolkit::CudaVersion{11, 1}, true),
              (Strings{"-c", "-arch=sm_80"}));
    EXPECT_EQ(stub_compile_args(p, "/st", toolkit::CudaVersion{11, 2}, true).size(), 4u);
    // The build's own call is never given them: the rewrite is the stub compile's.
    EXPECT_EQ(link_args(parse(call), call), call);

    // The call's or the environment's --threads stands (nvcc warns on a second one).
    for (const Strings& own : {Strings{"-t", "4"}, Strings{"--threads=2"}}) {
        Strings argv = call;
        argv.insert(argv.end(), own.begin(), own.end());
        const StubPlan q = plan_stub(parse(argv));
        EXPECT_TRUE(q.threads_given) << own.front();
        EXPECT_EQ(stub_compile_args(q, "/st", cuda, true), (Strings{"-c", "-arch=sm_80"}));
    }
    auto env = nvcc::parse_invocation(call, "", "--threads 16", "/tmp", nvcc::testing::caps13());
    ASSERT_TRUE(env.ok());
    EXPECT_TRUE(plan_stub(*env).threads_given);
}

TEST(StandinStub, ShortHeaderIsTheToolkitsOnTheHostPass) {
    const std::string h = stub_header();
    const auto arch = h.find("#if defined(__CUDA_ARCH__)");
    const auto next = h.find("#include_next <cuda_runtime.h>");
    ASSERT_NE(arch, std::string::npos);
    ASSERT_NE(next, std::string::npos);
    EXPECT_LT(h.find("#else"), next);
    EXPECT_GT(h.find("#else"), arch);
}

TEST(StandinStub, ToolkitIdentityFollowsTheToolkitsFiles) {
    const fs::path dir =
        fs::path(FORGE_TEST_BINARY_DIR) / "frontend_tmp" / ("tk." + std::to_string(::getpid()));
    fs::remove_all(dir);
    for (const char* root : {"a", "b"}) {
        fs::create_directories(dir / root / "bin");
        fs::create_directories(dir / root / "nvvm" / "bin");
        std::ofstream(dir / root / "bin" / "nvcc") << "nvcc";
        std::ofstream(dir / root / "nvvm" / "bin" / "cicc") << "cicc";
    }
    const std::string a = toolkit_identity(dir / "a" / "bin" / "nvcc");
    EXPECT_EQ(a, toolkit_identity(dir / "a" / "bin" / "nvcc"));
    EXPECT_NE(a, toolkit_identity(dir / "b" / "bin" / "nvcc")); // another toolkit
    const Strings f{"-c", "-arch=sm_80"};
    EXPECT_NE(stub_cache_key(a, f, "", "", ""),
              stub_cache_key(toolkit_identity(dir / "b" / "bin" / "nvcc"), f, "", "", ""));
    std::ofstream(dir / "a" / "nvvm" / "bin" / "cicc", std::ios::app) << " patched";
    EXPECT_NE(a, toolkit_identity(dir / "a" / "bin" / "nvcc")); // a component changed in place
    const std::string a2 = toolkit_identity(dir / "a" / "bin" / "nvcc");
    std::ofstream(dir / "a" / "bin" / "nvcc", std::ios::app) << " 13.1";
    EXPECT_NE(a2, toolkit_identity(dir / "a" / "bin" / "nvcc")); // nvcc upgraded in place
    fs::remove_all(dir);
}

TEST(StandinStub, ExecutableLinksForgiveUnresolvedSymbols) {
    const Strings exe{"a.o", "b.o", "-o", "app"};
    EXPECT_EQ(link_args(parse(exe), exe).back(), "--unresolved-symbols=ignore-all");
    const Strings so{"-shared", "a.o", "-o", "x.so"};
    EXPECT_EQ(link_args(parse(so), so), so);
    const Strings dl{"-dlink", "-arch=sm_80", "a.o", "-o", "d.o"};
    EXPECT_EQ(link_args(parse(dl), dl), dl);
}

TEST(StandinStub, ConfigureProbesAndSourceCarryTheMark) {
    EXPECT_TRUE(is_configure_probe("/b/CMakeFiles/3.28.3/CMakeCUDACompilerABI.cu"));
    EXPECT_TRUE(is_configure_probe("/b/CMakeFiles/CMakeScratch/TryCompile-x/main.cu"));
    EXPECT_FALSE(is_configure_probe("/b/src/CMakeFiles.cu"));
    EXPECT_NE(stub_source().find(kPlanMarkerSection), std::string::npos);
    EXPECT_NE(stub_source().find("__global__"), std::string::npos);
}

TEST(StandinConfig, RoundTripAndApply) {
    const fs::path dir =
        fs::path(FORGE_TEST_BINARY_DIR) / "frontend_tmp" / ("plan." + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "cuda" / "bin");
    PlanConfig c;
    c.arch_list = "8.0 9.0+PTX";
    c.package = "sageattention";
    c.log = (dir / "calls.jsonl").string();
    c.state_dir = dir;
    c.stub_cache = dir / "kept";
    ASSERT_TRUE(write_plan_files(dir / "cuda", c).ok());
    EXPECT_TRUE(fs::is_regular_file(stub_source_path(dir)));
    EXPECT_TRUE(fs::is_regular_file(stub_include_dir(dir) / "cuda_runtime.h"));
    auto back = read_plan_config(dir / "cuda" / "bin" / kPlanConfigFile);
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    EXPECT_EQ(back->arch_list, c.arch_list);
    EXPECT_EQ(back->state_dir, dir);
    EXPECT_EQ(back->stub_cache, dir / "kept");
    FrontendEnv env;
    env.arch_list = "7.5";
    env.mode = "observe";
    env.log = "/elsewhere.jsonl";
    apply_plan_config(*back, env);
    EXPECT_EQ(env.arch_list, "8.0 9.0+PTX");
    EXPECT_EQ(env.package, "sageattention");
    EXPECT_EQ(env.mode, "observe"); // the caller's mode applies to the plan
    EXPECT_EQ(env.log, c.log);
    std::ofstream(dir / "bad.json") << "{\"arch_list\": 1}";
    EXPECT_FALSE(read_plan_config(dir / "bad.json").ok());
    EXPECT_FALSE(read_plan_config(dir / "absent.json").ok());
    fs::remove_all(dir);
}

namespace {

void write_bytes(const fs::path& p, const std::string& bytes) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f << bytes;
}

// A stub kept under `key` as the stand-in keeps one: compiled into a temporary file, then kept.
void keep(const fs::path& dir, const std::string& key, const std::string& bytes) {
    const fs::path compiled = dir / (key + ".out.1.tmp");
    write_bytes(compiled, bytes);
    auto kept = keep_stub(dir, key, compiled);
    EXPECT_TRUE(kept.ok()) << kept.error().to_string();
    EXPECT_FALSE(fs::exists(compiled)) << "renamed into place";
}

} // namespace

TEST(StandinStubCache, AKeptStubIsServedOnlyWhenItsChecksumSaysSo) {
    const fs::path dir = forge::test::temp_dir("stub_cache");
    const std::string a = std::string("\x7f"
                                      "ELF stub for sm_80",
                                      19);
    const std::string b = std::string("\x7f"
                                      "ELF stub for sm_80 sm_100",
                                      26);
    keep(dir, "ka", a);
    keep(dir, "kb", b);
    EXPECT_EQ(slurp(dir / "ka.sum").rfind(stub_sum("ka", a) + "file ", 0), 0u)
        << slurp(dir / "ka.sum");
    auto sound = read_kept_stub(dir, "ka");
    ASSERT_TRUE(sound.stub.has_value()) << sound.problem;
    EXPECT_EQ(*sound.stub->read_all(), a);
    EXPECT_EQ(sound.problem, "");
    auto none = read_kept_stub(dir, "kc");
    EXPECT_FALSE(none.stub.has_value());
    EXPECT_EQ(none.problem, "") << "nothing kept is no problem";

    // Each poisoning is refused, naming the file: junk, empty, another key's stub (with its sum or
    // without: the sum names its key), a stub without its sum.
    struct Poison {
        const char* what;
        std::string out;
        std::optional<std::string> sum; // nullopt: the sum left as it is; "" removes it
    };
    const std::vector<Poison> poisons{
        {"junk", "this is not an object file\n", std::nullopt},
        {"empty", "", std::nullopt},
        {"another key's stub", b, std::nullopt},
        {"another key's stub and sum", b, stub_sum("kb", b)},
        {"no sum", a, std::string()},
    };
    for (const auto& p : poisons) {
        keep(dir, "ka", a);
        write_bytes(dir / "ka.out", p.out);
        if (p.sum && p.sum->empty())
            fs::remove(dir / "ka.sum");
        else if (p.sum)
            write_bytes(dir / "ka.sum", *p.sum);
        auto kept = read_kept_stub(dir, "ka");
        EXPECT_FALSE(kept.stub.has_value()) << p.what;
        EXPECT_NE(kept.problem.find((dir / "ka.out").string()), std::string::npos)
            << p.what << ": " << kept.problem;
        drop_kept_stub(dir, "ka");
        EXPECT_FALSE(fs::exists(dir / "ka.out") || fs::exists(dir / "ka.sum")) << p.what;
    }
    EXPECT_TRUE(read_kept_stub(dir, "kb").stub.has_value()) << "the other entry untouched";
    // The same bytes written again (restored from a backup): no longer the file the sum was
    // written for, but its content has the sum's sha256.
    write_bytes(dir / "kb.out", b);
    EXPECT_TRUE(read_kept_stub(dir, "kb").stub.has_value());
    // A stub moved over another keeps its own inode: the sha256 decides.
    keep(dir, "ka", a);
    fs::rename(dir / "ka.out", dir / "kb.out");
    EXPECT_FALSE(read_kept_stub(dir, "kb").stub.has_value());
    fs::remove_all(dir);
}

TEST(StandinStubCache, OutputsGetTheStubsBytesAndMode) {
    const fs::path dir = forge::test::temp_dir("stub_output");
    const fs::path compiled = dir / "k.out.1.tmp";
    const std::string big(300 * 1024 + 7, 'x'); // more than one copy_file_range chunk may take
    write_bytes(compiled, big);
    fs::permissions(compiled, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
    auto kept = keep_stub(dir, "k", compiled);
    ASSERT_TRUE(kept.ok());
    ASSERT_TRUE(write_stub_output(*kept, (dir / "a.out").string()).ok());
    ASSERT_TRUE(write_stub_output(*kept, (dir / "b.out").string()).ok()) << "twice from one file";
    EXPECT_EQ(slurp(dir / "a.out"), big);
    EXPECT_EQ(slurp(dir / "b.out"), big);
    EXPECT_EQ(fs::status(dir / "a.out").permissions(),
              fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
    // The descriptor, not the name: what was checked is what is written, whatever takes the
    // name meanwhile.
    write_bytes(dir / "other", "replaced after the check");
    fs::rename(dir / "other", dir / "k.out");
    ASSERT_TRUE(write_stub_output(*kept, (dir / "c.out").string()).ok());
    EXPECT_EQ(slurp(dir / "c.out"), big);
    const fs::path empty = dir / "e.out.1.tmp";
    write_bytes(empty, "");
    EXPECT_FALSE(keep_stub(dir, "e", empty).ok()) << "an empty stub is never kept";
    EXPECT_FALSE(fs::exists(dir / "e.out"));
    EXPECT_FALSE(write_stub_output(*kept, (dir / "no" / "such" / "dir" / "k.o").string()).ok());
    fs::remove_all(dir);
}
