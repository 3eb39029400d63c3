// The option table's own invariants, and the table checked against nvcc 13.0's --help text.
#include "caps_fixture.h"
#include "nvcc/options.h"

#include <gtest/gtest.h>
#include <map>
#include <regex>
#include <set>

namespace forge::nvcc {
namespace {

std::vector<std::string_view> spellings(const OptionSpec& o) {
    std::vector<std::string_view> s;
    if (!o.long_name.empty()) s.push_back(o.long_name);
    if (!o.short_name.empty()) s.push_back(o.short_name);
    return s;
}

TEST(OptionTable, SpellingsAreUniqueAndWellFormed) {
    std::set<std::string_view> seen;
    for (const auto& o : option_table()) {
        ASSERT_FALSE(o.long_name.empty() && o.short_name.empty());
        if (!o.long_name.empty()) EXPECT_TRUE(o.long_name.starts_with("--")) << o.long_name;
        if (!o.short_name.empty()) {
            EXPECT_TRUE(o.short_name.starts_with("-") && !o.short_name.starts_with("--"))
                << o.short_name;
        }
        for (auto s : spellings(o)) {
            EXPECT_TRUE(seen.insert(s).second) << "duplicate spelling " << s;
            EXPECT_EQ(s.find('='), std::string_view::npos) << s;
        }
    }
}

TEST(OptionTable, LookupFindsEverySpellingAndNothingElse) {
    for (const auto& o : option_table())
        for (auto s : spellings(o))
            EXPECT_EQ(find_option(s), &o) << s;
    for (auto s : {"-arc", "--arch", "-gpu-architecture", "--gencode", "-generate-code", "-Ia",
                   "--gpu-arch", "-MQ", "-use-fast-math", ""})
        EXPECT_EQ(find_option(s), nullptr) << s;
}

TEST(OptionTable, FlagsAreConsistent) {
    const std::set<std::string_view> attached_ok = {"-I", "-D", "-U", "-L", "-l", "-O", "-t"};
    for (const auto& o : option_table()) {
        const std::string name(o.long_name.empty() ? o.short_name : o.long_name);
        if (o.targets) EXPECT_EQ(o.arg, ArgKind::Required) << name;
        if (o.opaque) EXPECT_TRUE(o.arg == ArgKind::Required && o.list) << name;
        if (o.list) EXPECT_EQ(o.arg, ArgKind::Required) << name;
        if (o.attached) EXPECT_TRUE(attached_ok.contains(o.short_name)) << name;
        EXPECT_EQ(o.role == Role::Phase, o.phase != PhaseFlag::None) << name;
        const bool value_role = o.role == Role::Output || o.role == Role::OptionsFile ||
                                o.role == Role::Language || o.role == Role::GpuArch ||
                                o.role == Role::GpuCode || o.role == Role::GenCode ||
                                o.role == Role::Rdc;
        if (value_role) EXPECT_EQ(o.arg, ArgKind::Required) << name;
    }
    for (auto s : attached_ok) {
        ASSERT_NE(find_option(s), nullptr) << s;
        EXPECT_TRUE(find_option(s)->attached) << s;
    }
    // Exactly the three target-selecting options, and the -X family is opaque.
    int targets = 0;
    for (const auto& o : option_table())
        targets += o.targets;
    EXPECT_EQ(targets, 3);
    for (auto s : {"-Xcompiler", "-Xptxas", "-Xnvlink", "-Xlinker", "-Xarchive", "-Xcicc",
                   "-Xcudafe", "-Xfatbin"})
        EXPECT_TRUE(find_option(s) && find_option(s)->opaque) << s;
}

// A spelling that starts with an attached single-letter option (-lineinfo vs -l, -time vs -t,
// -Ofc vs -O, -Werror vs nothing) must still read as itself.
TEST(OptionTable, NoPrefixCollisionWithAttachedOptions) {
    int hazards = 0;
    for (const auto& a : option_table()) {
        if (!a.attached) continue;
        for (const auto& b : option_table()) {
            for (auto s : spellings(b)) {
                if (&a == &b || !s.starts_with(a.short_name) || s.starts_with("--")) continue;
                ++hazards;
                TokenMatch m = match_token(s);
                EXPECT_EQ(m.spec, &b) << s << " read as " << a.short_name;
                EXPECT_FALSE(m.value.has_value()) << s;
            }
        }
    }
    EXPECT_GE(hazards, 9); // -lineinfo -ldir -lib -link -lto -Ofc -time -target-dir ...
}

TEST(OptionTable, MatchTokenForms) {
    for (const auto& o : option_table()) {
        for (auto s : spellings(o)) {
            std::string sp(s);
            TokenMatch plain = match_token(sp);
            EXPECT_EQ(plain.spec, &o);
            EXPECT_EQ(plain.needs_next, o.arg == ArgKind::Required) << sp;
            const std::string with_value = sp + "=v1";
            TokenMatch eq = match_token(with_value);
            if (o.arg == ArgKind::Required) {
                EXPECT_EQ(eq.spec, &o) << sp;
                ASSERT_TRUE(eq.value.has_value()) << sp;
                EXPECT_EQ(*eq.value, "v1");
                EXPECT_FALSE(eq.needs_next);
            } else {
                EXPECT_NE(eq.spec, &o) << sp << "=v1 must not be the flag " << sp;
            }
        }
    }
    EXPECT_EQ(match_token("k.cu").spec, nullptr);
    EXPECT_EQ(match_token("-").spec, nullptr);
    EXPECT_EQ(match_token("-fPIC").spec, nullptr);
    EXPECT_EQ(match_token("--arch=sm_80").spec, nullptr); // nvcc: Unknown option
    EXPECT_EQ(match_token("-archsm_80").spec, nullptr);   // no attached -arch
    EXPECT_EQ(match_token("-ofoo.o").spec, nullptr);      // no attached -o
    EXPECT_EQ(match_token("-xcu").spec, nullptr);         // no attached -x
    EXPECT_EQ(match_token("-G=1").spec, nullptr);         // flag with a value
    auto d = match_token("-DX=a,b");
    ASSERT_EQ(d.spec, find_option("-D"));
    EXPECT_EQ(*d.value, "X=a,b");
    auto i = match_token("-I=inc");
    ASSERT_EQ(i.spec, find_option("-I"));
    EXPECT_EQ(*i.value, "inc");
    auto o3 = match_token("-O3");
    ASSERT_EQ(o3.spec, find_option("-O"));
    EXPECT_EQ(*o3.value, "3");
    auto t4 = match_token("-t4");
    ASSERT_EQ(t4.spec, find_option("-t"));
    EXPECT_EQ(*t4.value, "4");
    auto l = match_token("-lcudart");
    ASSERT_EQ(l.spec, find_option("-l"));
    EXPECT_EQ(*l.value, "cudart");
    EXPECT_EQ(match_token("-lineinfo").spec, find_option("--generate-line-info"));
    EXPECT_EQ(match_token("-lto").spec->role, Role::Dlto); // "Alias for -dlto."
    EXPECT_EQ(match_token("-arch-ls").spec->role, Role::ListGpu);
    EXPECT_EQ(match_token("-code-ls").spec->role, Role::ListGpu);
}

// Every option nvcc 13.0 documents is in the table with the same spellings, argument and list
// shape (help line: `--long <arg>,...   (-short)`).
TEST(OptionTable, MatchesNvccHelp) {
    const std::string help = testing::read_data("help.txt");
    ASSERT_FALSE(help.empty());
    static const std::regex line(
        R"((^|\n)(--[A-Za-z0-9_+-]+)( [^ \n][^\n]*?)?\s+(\(-[^ )]+\)|--[A-Za-z0-9-]+)\s*(?=\n))");
    int count = 0;
    for (std::sregex_iterator it(help.begin(), help.end(), line), end; it != end; ++it) {
        const std::string long_name = (*it)[2];
        const std::string argtext = (*it)[3];
        std::string short_name = (*it)[4];
        if (short_name.starts_with("("))
            short_name = short_name.substr(1, short_name.size() - 2);
        else
            short_name.clear(); // long-only: the column repeats the long name
        ++count;
        const OptionSpec* o = find_option(long_name);
        ASSERT_NE(o, nullptr) << long_name;
        EXPECT_EQ(o->short_name, short_name) << long_name;
        EXPECT_FALSE(o->hidden) << long_name;
        // Two options show no <arg> in --help but consume one [obs: `-MF x.d`, `-qpp-config v`].
        const bool takes_arg =
            !argtext.empty() || long_name == "--qpp-config" || long_name == "--dependency-output";
        EXPECT_EQ(o->arg == ArgKind::Required, takes_arg) << long_name;
        EXPECT_EQ(o->list, argtext.find(",...") != std::string::npos) << long_name;
    }
    EXPECT_EQ(count, 143);
    int documented = 0;
    for (const auto& o : option_table())
        documented += !o.hidden;
    EXPECT_EQ(documented, 143); // nothing invented
}

} // namespace
} // namespace forge::nvcc
