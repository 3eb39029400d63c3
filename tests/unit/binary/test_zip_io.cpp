// The zip layer (binary/zip_io.h) on zips built byte by byte here: what minizip would let through
// (a wrong CRC, a member longer than declared) is caught by the project's own inflating, other
// compression methods are refused, and a raw copy keeps what a member carries.
#include "binary/zip.h"
#include "binary/zip_io.h"
#include "support.h"

#include <filesystem>
#include <fstream>
#include <zlib.h>

namespace forge::binary::test {
namespace {

struct RawEntry {
    std::string name;
    std::uint16_t method = 0;
    std::string stored; // the bytes as they sit in the zip
    std::uint32_t crc = 0;
    std::uint32_t size = 0; // declared inflated size
    std::string extra;
    std::string comment;
    std::uint32_t external = 0;
};

std::uint32_t crc_of(const std::string& s) {
    return static_cast<std::uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size())));
}

std::string deflated(const std::string& s) {
    z_stream z{};
    deflateInit2(&z, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    std::string out(deflateBound(&z, s.size()), '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(s.data()));
    z.avail_in = static_cast<uInt>(s.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    deflate(&z, Z_FINISH);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

// APPNOTE 4.3.7 / 4.3.12 / 4.3.16, one disk, no data descriptors.
std::vector<std::uint8_t> zip_of(const std::vector<RawEntry>& entries,
                                 const std::string& comment = "") {
    Buf local;
    Buf central;
    for (const auto& e : entries) {
        const auto offset = static_cast<std::uint32_t>(local.b.size());
        local.u32(0x04034b50).u16(20).u16(0).u16(e.method).u16(0).u16(0x21);
        local.u32(e.crc).u32(static_cast<std::uint32_t>(e.stored.size())).u32(e.size);
        local.u16(static_cast<std::uint16_t>(e.name.size())).u16(0).str(e.name).str(e.stored);
        central.u32(0x02014b50).u16((3 << 8) | 20).u16(20).u16(0).u16(e.method).u16(0).u16(0x21);
        central.u32(e.crc).u32(static_cast<std::uint32_t>(e.stored.size())).u32(e.size);
        central.u16(static_cast<std::uint16_t>(e.name.size()))
            .u16(static_cast<std::uint16_t>(e.extra.size()))
            .u16(static_cast<std::uint16_t>(e.comment.size()));
        central.u16(0).u16(0).u32(e.external).u32(offset).str(e.name).str(e.extra).str(e.comment);
    }
    Buf out{local.b};
    const auto cd_offset = static_cast<std::uint32_t>(out.b.size());
    out.raw(central.b.data(), central.b.size());
    const auto n = static_cast<std::uint16_t>(entries.size());
    out.u32(0x06054b50).u16(0).u16(0).u16(n).u16(n);
    out.u32(static_cast<std::uint32_t>(central.b.size())).u32(cd_offset);
    out.u16(static_cast<std::uint16_t>(comment.size())).str(comment);
    return out.b;
}

RawEntry stored(const std::string& name, const std::string& data) {
    return RawEntry{name, 0, data, crc_of(data), static_cast<std::uint32_t>(data.size())};
}

const std::string kElf = std::string("\x7f"
                                     "ELF\x02\x01\x01",
                                     7) +
                         std::string(57, '\0');

Status visit_all(const std::vector<std::uint8_t>& zip, std::vector<std::string>* names) {
    std::uint64_t total = 0;
    ZipLimits limits{1 << 20, 1 << 20, &total};
    Bytes bytes{zip.data(), zip.size()};
    Where where{"mem.zip"};
    return for_each_zip_member(
        bytes, where, limits, [](const Bytes&) { return true; },
        [&](const std::string& name, std::vector<std::uint8_t>&& data) -> Status {
            names->push_back(name + ":" + std::to_string(data.size()));
            return ok_status();
        });
}

TEST(ZipIo, StoredAndDeflatedMembersRead) {
    auto d = RawEntry{"pkg/b.so", 8, deflated(kElf), crc_of(kElf),
                      static_cast<std::uint32_t>(kElf.size())};
    std::vector<std::string> names;
    auto s = visit_all(zip_of({stored("pkg/a.so", kElf), d}), &names);
    ASSERT_TRUE(s.ok()) << s.error().to_string();
    EXPECT_EQ(names, (std::vector<std::string>{"pkg/a.so:64", "pkg/b.so:64"}));
}

TEST(ZipIo, WrongCrcIsAnError) {
    for (std::uint16_t method : {0, 8}) {
        RawEntry e = stored("pkg/_C.so", kElf);
        if (method == 8) e = RawEntry{"pkg/_C.so", 8, deflated(kElf), e.crc, e.size};
        e.crc ^= 1;
        std::vector<std::string> names;
        auto s = visit_all(zip_of({e}), &names);
        ASSERT_FALSE(s.ok()) << "method " << method;
        EXPECT_EQ(s.error().key, "pkg/_C.so");
        EXPECT_NE(s.error().message.find("CRC error"), std::string::npos) << s.error().message;
    }
}

TEST(ZipIo, DeflatedLongerThanDeclaredIsAnError) {
    RawEntry e{"pkg/_C.so", 8, deflated(kElf), crc_of(kElf.substr(0, 32)), 32};
    std::vector<std::string> names;
    auto s = visit_all(zip_of({e}), &names);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("more than the 32 bytes it declares"), std::string::npos)
        << s.error().message;
}

TEST(ZipIo, OtherMethodsAreRefusedNotSkipped) {
    RawEntry e = stored("pkg/_C.so", kElf);
    e.method = 12; // bzip2
    std::vector<std::string> names;
    auto s = visit_all(zip_of({e}), &names);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().key, "pkg/_C.so");
    EXPECT_NE(s.error().message.find("method 12 is not supported"), std::string::npos)
        << s.error().message;
}

TEST(ZipIo, RawCopyKeepsAttributesExtraAndComments) {
    namespace fs = std::filesystem;
    auto dir = fs::temp_directory_path() / ("forge_zip_io_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    RawEntry e = stored("pkg/run.sh", "#!/bin/sh\n");
    e.external = 0100755u << 16;
    e.extra = std::string("\xfe\xca\x02\x00zz", 6); // one unknown block of 2 bytes
    e.comment = "member note";
    auto bytes = zip_of({e}, "archive note");
    auto in = zipio::Archive::open_memory(Bytes{bytes.data(), bytes.size()});
    ASSERT_TRUE(in.ok()) << in.error().to_string();
    const auto out_path = (dir / "copy.zip").string();
    {
        auto w = zipio::Writer::create(out_path);
        ASSERT_TRUE(w.ok());
        ASSERT_TRUE(w->copy_raw(*in, in->entries()[0]).ok());
        ASSERT_TRUE(w->add("pkg/new.txt", "hello", zipio::kMethodDeflate, 0).ok());
        ASSERT_TRUE(w->close(in->global_comment()).ok());
    }
    auto copy = zipio::Archive::open_file(out_path);
    ASSERT_TRUE(copy.ok()) << copy.error().to_string();
    ASSERT_EQ(copy->entries().size(), 2u);
    const auto& c = copy->entries()[0];
    EXPECT_EQ(c.name, "pkg/run.sh");
    EXPECT_EQ(c.external_attributes, e.external);
    EXPECT_EQ(c.extra, e.extra);
    EXPECT_EQ(c.comment, e.comment);
    EXPECT_EQ(c.crc, e.crc);
    EXPECT_EQ(copy->global_comment(), "archive note");
    const auto& n = copy->entries()[1];
    EXPECT_EQ(n.external_attributes, 0100644u << 16);
    EXPECT_EQ(n.dos_time, (1u << 21) | (1u << 16)); // clamped to 1980-01-01 00:00:00
    auto r = zipio::MemberReader::open(*copy, n);
    ASSERT_TRUE(r.ok());
    std::string text(8, '\0');
    auto got = r->read(reinterpret_cast<std::uint8_t*>(text.data()), text.size());
    ASSERT_TRUE(got.ok()) << got.error().to_string();
    EXPECT_EQ(text.substr(0, *got), "hello");
    fs::remove_all(dir);
}

} // namespace
} // namespace forge::binary::test
