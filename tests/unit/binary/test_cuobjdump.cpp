// The cuobjdump backend: parsing its listing (format verified with cuobjdump 13.x), the model of
// its rules, and a cross-check against the real tool on every fixture when it is installed.
#include "binary/cuobjdump.h"
#include "support.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <tuple>
#include <unistd.h>

namespace forge::binary::test {
namespace {

Entry native(const char* section, arch::Kind kind, int sm, arch::Suffix s = arch::Suffix::None,
             std::optional<std::string> member = std::nullopt) {
    Entry e;
    e.file = "x.so";
    e.section = section;
    e.target = arch::Target{kind, sm, s};
    e.member = std::move(member);
    return e;
}

TEST(BinaryCuobjdump, ParsesListingWithMembersAndSuffixes) {
    const std::string text = "\nmember /tmp/libk.a:k1.o:\n"
                             "ELF file    1: libk.1.sm_90a.cubin\n"
                             "PTX file    1: libk.1.sm_90a.ptx\n"
                             "ELF file    2: libk.2.sm_100.cubin\n"
                             "PTX file    2: libk.2.sm_100f.ptx\n"
                             "\nmember /tmp/libk.a:nok.o:\n"
                             "ELF file    3: libk.3.sm_80.cubin\n";
    auto r = parse_cuobjdump_listing(text, "libk.a");
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_EQ(r->size(), 5u);
    EXPECT_EQ((*r)[0].target.name(), "sm_90a");
    EXPECT_EQ((*r)[0].member, "k1.o");
    EXPECT_EQ((*r)[1].target.name(), "compute_90a");
    EXPECT_EQ((*r)[3].target.name(), "compute_100f");
    EXPECT_EQ((*r)[4].member, "nok.o");
    EXPECT_EQ((*r)[4].section, "libk.3.sm_80.cubin");

    auto bad = parse_cuobjdump_listing("ELF file    1: weird.cubin\n", "w.so");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("line 1: cannot read an arch from the image name "
                                       "'weird.cubin'"),
              std::string::npos)
        << bad.error().message;
}

// A line cuobjdump does not write is an error naming it, never skipped: a listing made of
// skipped lines would read as "no device code".
TEST(BinaryCuobjdump, RefusesLinesItCannotParse) {
    auto chatter = parse_cuobjdump_listing("ELF file    1: k.1.sm_90.cubin\n\n"
                                           "Fatbin elf code:\n",
                                           "k.so");
    ASSERT_FALSE(chatter.ok());
    EXPECT_EQ(chatter.error().file, "k.so");
    EXPECT_NE(chatter.error().message.find("line 3: 'Fatbin elf code:'"), std::string::npos)
        << chatter.error().message;
    auto echoed = parse_cuobjdump_listing("--list-elf --list-ptx /x/k.so\n", "k.so");
    ASSERT_FALSE(echoed.ok());
    EXPECT_NE(echoed.error().message.find("line 1: '--list-elf --list-ptx /x/k.so'"),
              std::string::npos)
        << echoed.error().message;
    auto blank = parse_cuobjdump_listing("\n  \r\n", "k.so");
    ASSERT_TRUE(blank.ok()) << blank.error().to_string();
    EXPECT_TRUE(blank->empty());
}

TEST(BinaryCuobjdump, ModelDropsRelocatableFatbinsLtoAndFamilySuffixOfCubins) {
    using arch::Kind;
    using arch::Suffix;
    std::vector<Entry> n{native(".nv_fatbin", Kind::Sass, 100, Suffix::Family),
                         native(".nv_fatbin", Kind::Ptx, 100, Suffix::Family),
                         native("__nv_relfatbin", Kind::Sass, 80),
                         native("__nv_relfatbin", Kind::Ptx, 80),
                         native("__nv_relfatbin", Kind::Lto, 80),
                         // another archive member without an executable fatbin: all listed
                         native("__nv_relfatbin", Kind::Sass, 90, Suffix::Specific, "r.o")};
    auto names = [](const std::vector<arch::Target>& v) {
        std::vector<std::string> out;
        for (const auto& t : v)
            out.push_back(t.name());
        return out;
    };
    EXPECT_EQ(names(cuobjdump_view(n, false)),
              (std::vector<std::string>{"sm_100", "compute_100f", "sm_90a"}));
    EXPECT_EQ(
        names(cuobjdump_view(n, true)),
        (std::vector<std::string>{"sm_100", "compute_100f", "sm_80", "compute_80", "sm_90a"}));
    std::vector<Entry> c{native("c", Kind::Sass, 100), native("c", Kind::Ptx, 100, Suffix::Family),
                         native("c", Kind::Sass, 90, Suffix::Specific)};
    EXPECT_TRUE(compare_with_cuobjdump(n, c, false).empty());
    c.push_back(native("c", Kind::Sass, 100));
    auto diffs = compare_with_cuobjdump(n, c, false);
    ASSERT_EQ(diffs.size(), 1u);
    EXPECT_EQ(diffs[0], "sm_100 (sass): native 1, cuobjdump 2");
    EXPECT_EQ(compare_with_cuobjdump(n, c, true).size(), 3u); // sm_100, sm_80, compute_80
}

TEST(BinaryCuobjdump, ExplicitPathMustBeExecutable) {
    auto r = locate_cuobjdump(std::string("/nonexistent/cuobjdump"));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().file, "/nonexistent/cuobjdump");
}

TEST(BinaryCuobjdump, AgreesWithNativeReaderOnEveryFixture) {
    auto tool = locate_cuobjdump();
    if (!tool) GTEST_SKIP() << tool.error().to_string();
    FORGE_NEED_FIXTURES(dir);
    int compared = 0;
    for (const auto& d : std::filesystem::directory_iterator(dir)) {
        const std::string name = d.path().filename();
        const std::string ext = d.path().extension();
        if (ext != ".o" && ext != ".so" && ext != ".a" && ext != ".cubin" && ext != ".fatbin")
            continue;
        if (name == "libbsd.a") continue; // cuobjdump does not read BSD long names
        auto mine = read_entries(d.path());
        ASSERT_TRUE(mine.ok()) << mine.error().to_string();
        for (bool all : {false, true}) {
            auto theirs = read_entries_cuobjdump(*tool, d.path(), all);
            ASSERT_TRUE(theirs.ok()) << theirs.error().to_string();
            auto diffs = compare_with_cuobjdump(*mine, *theirs, all);
            EXPECT_TRUE(diffs.empty()) << name << (all ? " -all" : "") << ": " << diffs.front();
            ++compared;
        }
    }
    EXPECT_GE(compared, 30);
}

// The backend runs cuobjdump through core/process: a stand-in script shows the three outcomes
// (a listing with chatter on stderr, "no device code", a failure with its message).
TEST(BinaryCuobjdump, RunsTheToolAndReadsBothStreams) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "forge-cuobjdump-XXXXXX").string();
    const std::filesystem::path dir = ::mkdtemp(tmpl.data());
    const auto input = dir / "k.o";
    std::ofstream(input) << "\x7f"
                            "ELF";
    auto script = [&](const std::string& name, const std::string& body) {
        auto p = dir / name;
        std::ofstream(p) << "#!/bin/sh\n" << body;
        std::filesystem::permissions(p, std::filesystem::perms::owner_all);
        return p.string();
    };
    auto ok = read_entries_cuobjdump(
        script("ok", "echo 'warning: chatter' >&2\necho 'ELF file    1: k.1.sm_90.cubin'\n"
                     "echo 'PTX file    1: k.1.sm_90.ptx'\n"),
        input.string(), false);
    ASSERT_TRUE(ok.ok()) << ok.error().to_string();
    ASSERT_EQ(ok->size(), 2u);
    EXPECT_EQ((*ok)[0].target.name(), "sm_90");
    EXPECT_EQ((*ok)[1].target.name(), "compute_90");
    auto none = read_entries_cuobjdump(
        script("none", "echo \"cuobjdump info    : File '$3' does not contain device code\" >&2\n"
                       "exit 255\n"),
        input.string(), false);
    ASSERT_TRUE(none.ok()) << none.error().to_string();
    EXPECT_TRUE(none->empty());
    // "No device code" only from a tool that says so about this file: /bin/echo's line is not a
    // listing, silence is not an answer, nor is the sentence about another file.
    for (const auto& [name, body, says] :
         std::vector<std::tuple<std::string, std::string, std::string>>{
             {"echo", "echo \"$@\"\n", "cannot parse cuobjdump's output, line 1: '--list-elf"},
             {"silent", "exit 0\n", "listed no image and did not say"},
             {"other", "echo \"cuobjdump info    : File 'b.o' does not contain device code\" >&2\n",
              "listed no image and did not say"}}) {
        auto r = read_entries_cuobjdump(script(name, body), input.string(), false);
        ASSERT_FALSE(r.ok()) << name;
        EXPECT_EQ(r.error().file, input.string()) << name;
        EXPECT_NE(r.error().message.find(says), std::string::npos)
            << name << ": " << r.error().message;
    }
    auto bad =
        read_entries_cuobjdump(script("bad", "echo boom >&2\nexit 3\n"), input.string(), false);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("cuobjdump failed (exit 3): boom"), std::string::npos)
        << bad.error().message;
    std::filesystem::remove_all(dir);
}

} // namespace
} // namespace forge::binary::test
