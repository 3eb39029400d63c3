// binary/read_ar.cpp: archive members read as files of their own, offsets within the archive.
#include "support.h"

namespace forge::binary::test {
namespace {

TEST(BinaryHostile, ArchiveLies) {
    auto obj = host_elf(".nv_fatbin", fatbin_bytes({{}}));
    auto member = [](const std::string& name, const std::vector<std::uint8_t>& data,
                     std::string size = "") {
        if (size.empty()) size = std::to_string(data.size());
        Buf h;
        std::string n = name;
        n.resize(16, ' ');
        size.resize(10, ' ');
        h.str(n)
            .str(std::string(12, '0'))
            .str("0     0     644     ")
            .str(size)
            .str("`\n")
            .bytes(data);
        if (data.size() % 2) h.u8('\n');
        return h.b;
    };
    Buf ar;
    ar.str("!<arch>\n").bytes(member("k.o/", obj));
    auto r = read_memory(ar.b);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_EQ(r->size(), 1u);
    EXPECT_EQ((*r)[0].member, "k.o");
    EXPECT_EQ((*r)[0].entry_offset, 8u + 60 + 64 + 16); // offsets are within the archive file

    Buf lie;
    lie.str("!<arch>\n").bytes(member("k.o/", obj, std::to_string(obj.size() + 100)));
    auto e = must_fail(lie.b);
    EXPECT_EQ(e.offset, 8u + 48);
    Buf bad;
    bad.str("!<arch>\n").bytes(member("k.o/", obj, "12x"));
    EXPECT_EQ(must_fail(bad.b).offset, 8u + 48);
    Buf trunc;
    trunc.str("!<arch>\n").str("k.o/      ");
    EXPECT_EQ(must_fail(trunc.b).offset, 8u);
    Buf longname;
    longname.str("!<arch>\n").bytes(member("/999", obj));
    EXPECT_TRUE(mentions(must_fail(longname.b), "long name"));
    Buf thin;
    thin.str("!<thin>\n");
    EXPECT_TRUE(mentions(must_fail(thin.b), "thin"));
    // GNU long names through the "//" table.
    Buf gnu;
    std::string table = "a_member_name_longer_than_16.o/\n";
    std::vector<std::uint8_t> tbytes(table.begin(), table.end());
    gnu.str("!<arch>\n").bytes(member("//", tbytes)).bytes(member("/0", obj));
    r = read_memory(gnu.b);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ((*r)[0].member, "a_member_name_longer_than_16.o");
    // A member that holds a member that holds ... stops at the nesting limit.
    std::vector<std::uint8_t> nested = obj;
    for (int i = 0; i < 8; ++i) {
        Buf a;
        a.str("!<arch>\n").bytes(member("n.a/", nested));
        nested = a.b;
    }
    EXPECT_TRUE(mentions(must_fail(nested), "nested deeper"));
}

// A member's error is placed in the archive (its offsets are the archive's), under the member's
// name: a truncated object inside a well-formed member.
TEST(BinaryReadAr, AMembersErrorIsAtAnOffsetInsideTheMember) {
    auto obj = host_elf(".nv_fatbin", fatbin_bytes({{}}));
    obj.resize(100); // the section table lies past the end of what the member holds
    Buf h;
    std::string size = std::to_string(obj.size());
    size.resize(10, ' ');
    h.str("!<arch>\n").str("k.o/            ").str(std::string(12, '0'));
    h.str("0     0     644     ").str(size).str("`\n").bytes(obj);
    const Error e = must_fail(h.b);
    EXPECT_EQ(e.key, "k.o") << e.to_string();
    ASSERT_TRUE(e.offset);
    EXPECT_GE(*e.offset, 8u + 60); // inside the member's data, not at its own byte 0..59
    EXPECT_LT(*e.offset, h.b.size());
}

} // namespace
} // namespace forge::binary::test
