// The probe: nvcc's --version / --list-gpu-code / --help parsed from captured output, and a
// stand-in nvcc (a shell script replaying that output) probed end to end.
#include "../files.h"
#include "core/process.h"
#include "fake_nvcc.h"
#include "toolkit/probe.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <unistd.h>

using namespace forge;
using namespace forge::toolkit;

namespace {

std::string fixtures() {
    return toolkit_test::toolkit_fixtures();
}
using toolkit_test::fake_nvcc;

arch::Target T(std::string_view name) {
    auto t = arch::parse_target(name);
    EXPECT_TRUE(t.ok()) << name;
    return t ? *t : arch::Target{};
}

using forge::test::slurp;

} // namespace

TEST(ProbeTest, AVersionTooLargeForAnIntIsAnErrorNotACrash) {
    // std::stoi threw std::out_of_range on these (issue 40): nvcc's output is input.
    EXPECT_FALSE(parse_nvcc_version("Cuda compilation tools, release 99999999999.0").ok());
    auto v = parse_nvcc_version("release 12.8, V12.8.99999999999");
    ASSERT_TRUE(v.ok()) << v.error().to_string(); // the release alone, as without a V-string
    EXPECT_EQ(v->full(), "12.8");
    EXPECT_FALSE(parse_version_text("12.99999999999").ok());
}

TEST(ToolkitParsers, VersionFromRealOutput) {
    EXPECT_EQ(parse_nvcc_version(slurp(fixtures() + "/nvcc-13.0/version.txt"))->full(), "13.0.88");
    EXPECT_EQ(parse_nvcc_version(slurp(fixtures() + "/nvcc-13.2/version.txt"))->full(), "13.2.86");
    EXPECT_EQ(parse_nvcc_version("Cuda compilation tools, release 12.4")->full(), "12.4");
    EXPECT_FALSE(parse_nvcc_version("gcc (Debian 12.2.0-14) 12.2.0").ok());
}

TEST(ToolkitParsers, HelpAllowedValuesIncludeSuffixedTargets) {
    auto help = parse_help_gpu_codes(slurp(fixtures() + "/nvcc-13.0/help.txt"));
    ASSERT_TRUE(help.ok()) << help.error().to_string();
    const auto& targets = *help;
    EXPECT_TRUE(targets.count(*arch::parse_target("sm_90a")));
    EXPECT_TRUE(targets.count(*arch::parse_target("compute_100f")));
    EXPECT_TRUE(targets.count(*arch::parse_target("lto_121a")));
    EXPECT_TRUE(targets.count(*arch::parse_target("sm_88")));
    EXPECT_FALSE(targets.count(*arch::parse_target("sm_70")));
    EXPECT_FALSE(targets.count(*arch::parse_target("sm_101")));
    // --help's other "Allowed values" lists (e.g. -cudart none/shared/static) add nothing
    EXPECT_EQ(targets.size(), 23u * 3u);
    auto plain = parse_target_list(slurp(fixtures() + "/nvcc-13.0/list-gpu-code.txt"));
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(plain->size(), 12u);
    EXPECT_TRUE(plain->count(*arch::parse_target("sm_110")));
    EXPECT_FALSE(parse_help_gpu_codes("no such option").ok());
}

TEST(ToolkitProbe, ReadsAFakeNvcc) {
    auto nvcc = fake_nvcc("nvcc-13.0", true);
    auto tk = probe_toolkit(nvcc.string());
    ASSERT_TRUE(tk.ok()) << tk.error().to_string();
    EXPECT_EQ(tk->version.release(), "13.0");
    EXPECT_EQ(tk->version.full(), "13.0.88");
    EXPECT_TRUE(tk->emittable.count(*arch::parse_target("sm_100f")));
    // without usable --help, --list-gpu-code gives the plain targets
    auto nohelp = fake_nvcc("nvcc-13.2", false);
    auto tk2 = probe_toolkit(nohelp.string());
    ASSERT_TRUE(tk2.ok()) << tk2.error().to_string();
    EXPECT_EQ(tk2->version.release(), "13.2");
    EXPECT_TRUE(tk2->emittable.count(*arch::parse_target("compute_121")));
    EXPECT_FALSE(tk2->emittable.count(*arch::parse_target("sm_90a")));
    std::filesystem::remove_all(nvcc.parent_path());
}

TEST(Probe, ParsersRejectGarbage) {
    EXPECT_FALSE(parse_nvcc_version("nvcc: NVIDIA (R) Cuda compiler driver\n").ok());
    auto r = parse_nvcc_version("Cuda compilation tools, release 12.8, V12.8.93");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->major, 12);
    EXPECT_EQ(r->minor, 8);
    auto bad = parse_target_list("sm_80\nbogus\n");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().key, "bogus");
    EXPECT_FALSE(parse_target_list("").ok());
    EXPECT_FALSE(parse_help_gpu_codes("--gpu-architecture <arch> (-arch)\n").ok());
}

// A stand-in nvcc (a shell script printing captured 13.0 output) whose --help has no allowed-values
// list: the plain targets and their PTX still come from --list-gpu-code.
TEST(Probe, WithoutAllowedValuesInHelpKeepsPtxOfListedArchs) {
    const auto dir =
        std::filesystem::temp_directory_path() / ("forge_nvcc_probe_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto data = fixtures() + "/nvcc-13.0/";
    const auto nvcc = dir / "nvcc";
    {
        std::ofstream out(nvcc);
        out << "#!/bin/sh\ncase \"$1\" in\n"
            << "  --version) cat '" << data << "version.txt' ;;\n"
            << "  --list-gpu-code) cat '" << data << "list-gpu-code.txt' ;;\n"
            << "  --help) echo 'Usage: nvcc [options] <inputfile>' ;;\n"
            << "  *) exit 1 ;;\nesac\n";
    }
    std::filesystem::permissions(nvcc, std::filesystem::perms::owner_all);
    auto caps = probe_toolkit(nvcc.string());
    std::filesystem::remove_all(dir);
    ASSERT_TRUE(caps.ok()) << caps.error().to_string();
    EXPECT_EQ(caps->version.major, 13);
    EXPECT_EQ(caps->default_sm, 75);
    EXPECT_TRUE(caps->emittable.contains(T("sm_120")));
    EXPECT_TRUE(caps->emittable.contains(T("compute_120")));
    EXPECT_TRUE(caps->emittable.contains(T("compute_75")));
    EXPECT_FALSE(caps->emittable.contains(T("sm_90a"))); // a/f/lto only from --help
    EXPECT_EQ(caps->emittable.size(), 12u * 2);
    // An nvcc that is not there: an error value naming it.
    EXPECT_FALSE(probe_toolkit((dir / "missing").string()).ok());
}

TEST(Probe, DeviceQueryOutput) {
    EXPECT_EQ(parse_device_query("90\n"), 90);
    EXPECT_EQ(parse_device_query("90,80"), 80);
    EXPECT_EQ(parse_device_query("120"), 120);
    EXPECT_EQ(parse_device_query(""), std::nullopt);
    EXPECT_EQ(parse_device_query("failed to call load_driver_entries()"), std::nullopt);
}

TEST(Probe, DryrunHereLine) {
    EXPECT_EQ(parse_dryrun_here("#$ _NVVM_BRANCH_=nvvm\n#$ _HERE_=/usr/local/cuda-13.0/bin\n#$ "
                                "_THERE_=/usr/local/cuda-13.0/bin\n"),
              "/usr/local/cuda-13.0/bin");
    EXPECT_EQ(parse_dryrun_here("#$ _HERE_=/opt/cuda/bin"), "/opt/cuda/bin");
    EXPECT_FALSE(parse_dryrun_here("x#$ _HERE_=/opt/cuda/bin"));
    EXPECT_FALSE(parse_dryrun_here("nvcc fatal   : No input files specified"));
}

TEST(RunCapture, ErrorsAreValues) {
    EXPECT_FALSE(run_capture({"/nonexistent/binary"}).ok());
    EXPECT_FALSE(run_capture({"/bin/false"}).ok());
    auto echo = run_capture({"/bin/echo", "a;b", "$HOME"}); // no shell: nothing expands
    ASSERT_TRUE(echo.ok());
    EXPECT_EQ(*echo, "a;b $HOME\n");
}

// The policy CLI's stand-in nvcc fails `--help` (exit 1): the caps still come from
// --list-gpu-code, with each sm_X's compute_X, exactly as for an nvcc whose help has no list.
TEST(Probe, FailingHelpIsNotAnError) {
    const auto dir =
        std::filesystem::temp_directory_path() / ("forge_nohelp_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto fx = fixtures() + "/nvcc-13.2/";
    const auto nvcc = dir / "nvcc";
    {
        std::ofstream out(nvcc);
        out << "#!/bin/sh\ncase \"$1\" in\n"
            << "  --version) cat '" << fx << "version.txt' ;;\n"
            << "  --list-gpu-code) cat '" << fx << "list-gpu-code.txt' ;;\n"
            << "  *) exit 1 ;;\nesac\n";
    }
    std::filesystem::permissions(nvcc, std::filesystem::perms::owner_all);
    auto caps = probe_toolkit(nvcc.string());
    auto listed = parse_target_list(slurp(fx + "list-gpu-code.txt"));
    std::filesystem::remove_all(dir);
    ASSERT_TRUE(caps.ok()) << caps.error().to_string();
    ASSERT_TRUE(listed.ok());
    EXPECT_EQ(caps->version.full(), "13.2.86");
    EXPECT_EQ(caps->nvcc, nvcc.string());
    EXPECT_EQ(caps->emittable.size(), listed->size() * 2);
    for (const auto& t : *listed) {
        EXPECT_TRUE(caps->emittable.contains(t)) << t.name();
        EXPECT_TRUE(caps->emittable.contains(arch::Target{arch::Kind::Ptx, t.sm, t.suffix}));
    }
}

TEST(CudaVersion, FullAndReleaseAndOrder) {
    EXPECT_EQ((CudaVersion{12, 8, 93}).full(), "12.8.93");
    EXPECT_EQ((CudaVersion{12, 8}).full(), "12.8"); // patch unknown
    EXPECT_EQ((CudaVersion{12, 10, 0}).release(), "12.10");
    EXPECT_LT((CudaVersion{12, 9, 86}), (CudaVersion{12, 10, 0}));
    EXPECT_FALSE(parse_nvcc_version("Cuda compilation tools, release 12.8, V13.0.88").ok());
}
