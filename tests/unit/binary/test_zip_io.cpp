// The zip layer (binary/zip_io.h) on zips built byte by byte here: a wrong CRC or a member longer
// than declared is caught while inflating, other compression methods are refused, a raw copy
// keeps what a member carries, zip64 is read and written where a size, offset or count needs it,
// large members are spilled to an unnamed file, and a zip without its end says where it looked.
#include "binary/zip.h"
#include "binary/zip_io.h"
#include "support.h"

#include "../temp_dir.h"

#include <filesystem>
#include <fstream>
#include <zlib.h>

namespace forge::binary::test {
namespace {

// A scratch directory removed when the test ends.
struct temp_dir_guard {
    explicit temp_dir_guard(const std::string& name) : path(forge::test::temp_dir(name).string()) {}
    temp_dir_guard(const temp_dir_guard&) = delete;
    temp_dir_guard& operator=(const temp_dir_guard&) = delete;
    ~temp_dir_guard() { std::filesystem::remove_all(path); }
    std::string path;
};

struct RawEntry {
    std::string name;
    std::uint16_t method = 0;
    std::string stored; // the bytes as they sit in the zip
    std::uint32_t crc = 0;
    std::uint32_t size = 0; // declared inflated size
    std::string extra;
    std::string comment;
    std::uint32_t external = 0;
    std::uint16_t flags = 0; // general purpose bits (11: the name is UTF-8)
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
        local.u32(0x04034b50).u16(20).u16(e.flags).u16(e.method).u16(0).u16(0x21);
        local.u32(e.crc).u32(static_cast<std::uint32_t>(e.stored.size())).u32(e.size);
        local.u16(static_cast<std::uint16_t>(e.name.size())).u16(0).str(e.name).str(e.stored);
        central.u32(0x02014b50).u16((3 << 8) | 20).u16(20).u16(e.flags).u16(e.method).u16(0);
        central.u16(0x21);
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

// An ELF64 header and nothing else (no section table): what the readers accept as a file with
// no device code.
const std::string kElf = [] {
    Buf f;
    elf64_header(f, {});
    return std::string(f.b.begin(), f.b.end());
}();

Status visit_all(const std::vector<std::uint8_t>& zip, std::vector<std::string>* names,
                 std::uint64_t spill_above = 64 << 20) {
    std::uint64_t total = 0;
    ZipOptions options{1 << 20, 1 << 20, &total, spill_above};
    Bytes bytes{zip.data(), zip.size()};
    Where where{"mem.zip"};
    return for_each_zip_member(
        bytes, where, options, [](const Bytes&) { return true; },
        [&](const std::string& name, const Bytes& data) -> Status {
            names->push_back(name + ":" + std::to_string(data.size()) + ":" +
                             std::string(data.view().substr(0, 4)));
            return ok_status();
        });
}

TEST(ZipIo, StoredAndDeflatedMembersRead) {
    auto d = RawEntry{"pkg/b.so", 8, deflated(kElf), crc_of(kElf),
                      static_cast<std::uint32_t>(kElf.size())};
    std::vector<std::string> names;
    auto s = visit_all(zip_of({stored("pkg/a.so", kElf), d}), &names);
    ASSERT_TRUE(s.ok()) << s.error().to_string();
    EXPECT_EQ(names, (std::vector<std::string>{"pkg/a.so:64:\x7f"
                                               "ELF",
                                               "pkg/b.so:64:\x7f"
                                               "ELF"}));
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

// A member larger than the spill limit reaches the readers from an unnamed temporary file, with
// the same bytes as one held in memory.
TEST(ZipIo, LargeMembersAreSpilledToAnUnnamedFile) {
    std::string big = kElf + std::string(300000, 'x');
    std::vector<std::string> in_memory;
    std::vector<std::string> spilled;
    auto zip = zip_of({stored("pkg/big.so", big)});
    ASSERT_TRUE(visit_all(zip, &in_memory).ok());
    // The spill directory is TMPDIR: what the read leaves there is nothing.
    temp_dir_guard tmp("spill");
    ::setenv("TMPDIR", tmp.path.c_str(), 1);
    auto s = visit_all(zip, &spilled, /*spill_above=*/1000);
    ::unsetenv("TMPDIR");
    ASSERT_TRUE(s.ok()) << s.error().to_string();
    EXPECT_EQ(spilled, in_memory);
    EXPECT_TRUE(std::filesystem::is_empty(tmp.path)) << "a spilled member left a file";
}

TEST(ZipIo, InstallPathsAsPipNormalisesThem) {
    EXPECT_EQ(zipio::install_path("demo/_C.so"), "demo/_C.so");
    EXPECT_EQ(zipio::install_path("demo//./_C.so"), "demo/_C.so");
    EXPECT_EQ(zipio::install_path("demo/x/../_C.so"), "demo/_C.so");
    EXPECT_EQ(zipio::install_path("demo/"), "demo");
    std::string why;
    for (const char* refused :
         {"../x", "demo/../../x", "/abs/x", "C:/x.so", "a\\b", ".", "a/..", ""}) {
        EXPECT_FALSE(zipio::install_path(refused, &why)) << refused;
        EXPECT_FALSE(why.empty()) << refused;
    }
    EXPECT_FALSE(zipio::install_path(std::string("a.so\0x", 6)));
}

TEST(ZipIo, SymlinksAreTheUnixModesThatSayLink) {
    zipio::Entry e;
    e.version_made_by = 3u << 8;
    e.external_attributes = 0120777u << 16;
    EXPECT_TRUE(e.is_symlink());
    e.external_attributes = 0100755u << 16;
    EXPECT_FALSE(e.is_symlink());
    e.external_attributes = 0120777u << 16;
    e.version_made_by = 0; // made on MS-DOS: the high half is not a mode
    EXPECT_FALSE(e.is_symlink());
}

TEST(ZipIo, AZipWithoutItsEndRecordSaysWhereItLooked) {
    auto zip = zip_of({stored("pkg/a.so", kElf)});
    zip.resize(zip.size() - 30); // the end record and a part of the central directory
    auto a = zipio::Archive::open_memory(Bytes{zip.data(), zip.size()});
    ASSERT_FALSE(a.ok());
    EXPECT_NE(a.error().message.find(fmt::format("in none of the last {} bytes (0x0..0x{:x})",
                                                 zip.size(), zip.size())),
              std::string::npos)
        << a.error().message;
    ASSERT_TRUE(a.error().offset);
    EXPECT_EQ(*a.error().offset, 0u);
}

// A zip's 32-bit end record turned into zip64 records: `records` zip64 end records for the same
// central directory, the first right after it, the last right before the locator (where Python's
// zipfile reads one), the locator pointing to the first.
std::vector<std::uint8_t> with_zip64_records(std::vector<std::uint8_t> zip, int records) {
    Buf z;
    z.b = std::move(zip);
    std::uint16_t count = 0;
    std::uint32_t cd_size = 0;
    std::uint32_t cd_at = 0;
    std::memcpy(&count, &z.b[z.b.size() - 12], 2);
    std::memcpy(&cd_size, &z.b[z.b.size() - 10], 4);
    std::memcpy(&cd_at, &z.b[z.b.size() - 6], 4);
    z.b.resize(z.b.size() - 22);
    const std::uint64_t first = z.b.size();
    for (int i = 0; i < records; ++i) {
        z.u32(0x06064b50).u64(44).u16(45).u16(45).u32(0).u32(0).u64(count).u64(count);
        z.u64(cd_size).u64(cd_at);
    }
    z.u32(0x07064b50).u32(0).u64(first).u32(1);
    z.u32(0x06054b50).u16(0).u16(0).u16(0xFFFF).u16(0xFFFF).u32(0xFFFFFFFF).u32(0xFFFFFFFF).u16(0);
    return z.b;
}

// Issue 36, 1: the locator must point where the format (and pip's reader) puts the record.
TEST(ZipIo, AZip64RecordNotRightBeforeItsLocatorIsRefused) {
    const auto zip = zip_of({stored("pkg/a.so", kElf)});
    const auto right = with_zip64_records(zip, 1);
    auto ok = zipio::Archive::open_memory(Bytes{right.data(), right.size()});
    ASSERT_TRUE(ok.ok()) << ok.error().to_string();
    EXPECT_EQ(ok->entries().size(), 1u);
    const auto decoy = with_zip64_records(zip, 2);
    auto a = zipio::Archive::open_memory(Bytes{decoy.data(), decoy.size()});
    ASSERT_FALSE(a.ok());
    EXPECT_NE(a.error().message.find("not to the 56 bytes right before it"), std::string::npos)
        << a.error().message;
    ASSERT_TRUE(a.error().offset);
    EXPECT_EQ(*a.error().offset, decoy.size() - 22 - 20);
}

// Issue 36, 2: pip installs `<dist>.data/platlib/` and `purelib/` where the root goes.
TEST(ZipIo, DataSchemeTwinsAreOneInstallPath) {
    EXPECT_EQ(zipio::install_path("demo-1.0.data/platlib/demo/_C.so"), "demo/_C.so");
    EXPECT_EQ(zipio::install_path("demo-1.0.data/purelib/demo/x.py"), "demo/x.py");
    EXPECT_EQ(zipio::install_path("demo-1.0.data/scripts/run"), "demo-1.0.data/scripts/run");
    EXPECT_EQ(zipio::install_path("demo-1.0.data/platlib/"), "demo-1.0.data/platlib");
    for (const char* twin : {"demo-1.0.data/platlib/demo/_C.so", "demo-1.0.data/purelib/demo/_C.so",
                             "x.data/platlib/./demo/_C.so"}) {
        const auto zip = zip_of({stored("demo/_C.so", kElf), stored(twin, kElf)});
        auto a = zipio::Archive::open_memory(Bytes{zip.data(), zip.size()});
        ASSERT_FALSE(a.ok()) << twin;
        EXPECT_EQ(a.error().key, twin);
        EXPECT_NE(a.error().message.find("a second member for the file demo/_C.so"),
                  std::string::npos)
            << a.error().message;
    }
}

// Issue 36, 3: a name without the UTF-8 flag is code page 437 to pip; one with it, UTF-8.
TEST(ZipIo, NamesAreComparedAsPipDecodesThem) {
    RawEntry utf8 = stored("lib\xc3\x87.so", kElf);
    utf8.flags = 1u << 11;
    RawEntry cp437 = stored("lib\x80.so", kElf); // 0x80 is U+00C7 in code page 437
    const auto zip = zip_of({utf8, cp437});
    auto a = zipio::Archive::open_memory(Bytes{zip.data(), zip.size()});
    ASSERT_FALSE(a.ok());
    EXPECT_NE(a.error().message.find("a second member for the file lib\xc3\x87.so"),
              std::string::npos)
        << a.error().message;
    // The same bytes without the flag are another name (U+251C U+00E7 in code page 437).
    RawEntry plain = stored("lib\xc3\x87.so", kElf);
    const auto two = zip_of({plain, cp437});
    EXPECT_TRUE(zipio::Archive::open_memory(Bytes{two.data(), two.size()}).ok());
    // Flagged UTF-8 and not UTF-8: pip cannot read the name.
    RawEntry bad = stored("lib\x80.so", kElf);
    bad.flags = 1u << 11;
    const auto three = zip_of({bad});
    auto b = zipio::Archive::open_memory(Bytes{three.data(), three.size()});
    ASSERT_FALSE(b.ok());
    EXPECT_NE(b.error().message.find("flagged UTF-8 and is not"), std::string::npos)
        << b.error().message;
}

// Issue 36, 13: an error about a member names its central-directory header, never byte 0.
TEST(ZipIo, MemberErrorsNameTheCentralHeader) {
    RawEntry bad = stored("pkg/_C.so", kElf);
    bad.crc ^= 1;
    RawEntry encrypted = stored("pkg/_D.so", kElf);
    encrypted.flags = 1;
    for (const auto& second : {bad, encrypted}) {
        const auto zip = zip_of({stored("pkg/a.so", kElf), second});
        auto a = zipio::Archive::open_memory(Bytes{zip.data(), zip.size()});
        ASSERT_TRUE(a.ok());
        std::vector<std::string> names;
        auto s = visit_all(zip, &names);
        ASSERT_FALSE(s.ok());
        EXPECT_EQ(s.error().key, second.name);
        ASSERT_TRUE(s.error().offset) << s.error().to_string();
        EXPECT_EQ(*s.error().offset, a->entries()[1].header_offset) << s.error().to_string();
        EXPECT_NE(*s.error().offset, 0u);
    }
}

// Little-endian fields of a crafted zip64 member: sizes 0xFFFFFFFF in both headers and the real
// ones in zip64 extra blocks (APPNOTE 4.5.3).
std::vector<std::uint8_t> zip64_member_zip(std::uint64_t declared, const std::string& stored) {
    const std::string name = "pkg/huge.so";
    Buf z;
    Buf extra;
    extra.u16(1).u16(16).u64(declared).u64(stored.size());
    z.u32(0x04034b50).u16(45).u16(0).u16(8).u16(0).u16(0x21).u32(0).u32(0xFFFFFFFF).u32(0xFFFFFFFF);
    z.u16(static_cast<std::uint16_t>(name.size())).u16(static_cast<std::uint16_t>(extra.b.size()));
    z.str(name).raw(extra.b.data(), extra.b.size()).str(stored);
    const auto cd = static_cast<std::uint32_t>(z.b.size());
    z.u32(0x02014b50).u16((3 << 8) | 45).u16(45).u16(0).u16(8).u16(0).u16(0x21).u32(0);
    z.u32(0xFFFFFFFF).u32(0xFFFFFFFF).u16(static_cast<std::uint16_t>(name.size()));
    z.u16(static_cast<std::uint16_t>(extra.b.size())).u16(0).u16(0).u16(0).u32(0100644u << 16);
    z.u32(0).str(name).raw(extra.b.data(), extra.b.size());
    const auto cd_size = static_cast<std::uint32_t>(z.b.size()) - cd;
    z.u32(0x06054b50).u16(0).u16(0).u16(1).u16(1).u32(cd_size).u32(cd).u16(0);
    return z.b;
}

// Sizes past 4 GiB survive a raw copy: the copy's headers get zip64 blocks of their own (the
// source's are not copied twice) and read back the same.
TEST(ZipIo, RawCopyWritesZip64ForSizesPast4GiB) {
    temp_dir_guard dir("zip64_copy");
    const std::uint64_t declared = (5ull << 30) + 7;
    auto src = zip64_member_zip(declared, deflated(""));
    auto in = zipio::Archive::open_memory(Bytes{src.data(), src.size()});
    ASSERT_TRUE(in.ok()) << in.error().to_string();
    ASSERT_EQ(in->entries().size(), 1u);
    ASSERT_EQ(in->entries()[0].size, declared);
    const std::string out_path = dir.path + "/copy.zip";
    {
        auto w = zipio::Writer::create(out_path);
        ASSERT_TRUE(w.ok());
        ASSERT_TRUE(w->copy_raw(*in, in->entries()[0]).ok());
        ASSERT_TRUE(w->close("").ok());
    }
    auto copy = zipio::Archive::open_file(out_path);
    ASSERT_TRUE(copy.ok()) << copy.error().to_string();
    ASSERT_EQ(copy->entries().size(), 1u);
    EXPECT_EQ(copy->entries()[0].size, declared);
    // One zip64 block holding the size only: the stored size and the offset fit in 32 bits.
    EXPECT_EQ(copy->entries()[0].extra.size(), 12u);
    const auto bytes = slurp(out_path);
    const std::string text(bytes.begin(), bytes.end());
    EXPECT_EQ(text.find("PK\x06\x06"), std::string::npos) << "one entry needs no zip64 end record";
}

// 65,535 entries is the count an end record cannot hold (0xFFFF reads as "see the zip64 record"
// to unzip): the writer adds the zip64 end record and its locator, and the reader follows them.
TEST(ZipIo, WriterAddsZip64EndRecordsFrom65535Entries) {
    temp_dir_guard dir("zip64_count");
    // (A count below needs none: RawCopyWritesZip64ForSizesPast4GiB writes one entry.)
    for (std::size_t count : {65535u}) {
        const std::string path = dir.path + "/n" + std::to_string(count) + ".zip";
        {
            auto w = zipio::Writer::create(path);
            ASSERT_TRUE(w.ok());
            for (std::size_t i = 0; i < count; ++i)
                ASSERT_TRUE(w->add(fmt::format("d/{}", i), "", zipio::kMethodStore, 0).ok());
            ASSERT_TRUE(w->close("").ok());
        }
        const auto bytes = slurp(path);
        const std::string text(bytes.begin(), bytes.end());
        const bool zip64 = text.find(std::string("PK\x06\x06", 4)) != std::string::npos &&
                           text.find(std::string("PK\x06\x07", 4)) != std::string::npos;
        EXPECT_EQ(zip64, count >= 65535) << count;
        auto back = zipio::Archive::open_file(path);
        ASSERT_TRUE(back.ok()) << back.error().to_string();
        EXPECT_EQ(back->entries().size(), count);
    }
}

// A member past 4 GiB: its offset in a zip64 extra field, the central directory behind a zip64
// end record. The file is sparse (a hole before the member), so the test writes a few KB.
TEST(ZipIo, ReadsAMemberPast4GiB) {
    temp_dir_guard dir("zip64_far");
    const std::string path = dir.path + "/far.zip";
    const std::uint64_t at = (4ull << 30) + 4096;
    const std::string name = "pkg/far.so";
    // A first member at 0, as in any zip (readers recognise one by its first bytes).
    const std::string first = "pkg/__init__.py";
    Buf head;
    head.u32(0x04034b50).u16(20).u16(0).u16(0).u16(0).u16(0x21).u32(crc_of("")).u32(0).u32(0);
    head.u16(static_cast<std::uint16_t>(first.size())).u16(0).str(first);
    Buf local;
    local.u32(0x04034b50).u16(45).u16(0).u16(0).u16(0).u16(0x21).u32(crc_of(kElf));
    local.u32(static_cast<std::uint32_t>(kElf.size())).u32(static_cast<std::uint32_t>(kElf.size()));
    local.u16(static_cast<std::uint16_t>(name.size())).u16(0).str(name).str(kElf);
    const std::uint64_t cd_at = at + local.b.size();
    Buf tail;
    tail.u32(0x02014b50).u16((3 << 8) | 20).u16(20).u16(0).u16(0).u16(0).u16(0x21).u32(crc_of(""));
    tail.u32(0).u32(0).u16(static_cast<std::uint16_t>(first.size())).u16(0).u16(0).u16(0).u16(0);
    tail.u32(0100644u << 16).u32(0).str(first);
    tail.u32(0x02014b50).u16((3 << 8) | 45).u16(45).u16(0).u16(0).u16(0).u16(0x21);
    tail.u32(crc_of(kElf)).u32(static_cast<std::uint32_t>(kElf.size()));
    tail.u32(static_cast<std::uint32_t>(kElf.size())).u16(static_cast<std::uint16_t>(name.size()));
    tail.u16(12).u16(0).u16(0).u16(0).u32(0100644u << 16).u32(0xFFFFFFFF).str(name);
    tail.u16(1).u16(8).u64(at); // zip64: the local header's offset only
    const std::uint64_t cd_size = tail.b.size();
    const std::uint64_t end64_at = cd_at + cd_size;
    tail.u32(0x06064b50).u64(44).u16(45).u16(45).u32(0).u32(0).u64(2).u64(2).u64(cd_size);
    tail.u64(cd_at);
    tail.u32(0x07064b50).u32(0).u64(end64_at).u32(1);
    tail.u32(0x06054b50).u16(0).u16(0).u16(2).u16(2).u32(static_cast<std::uint32_t>(cd_size));
    tail.u32(0xFFFFFFFF).u16(0);
    {
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(head.b.data()),
                  static_cast<std::streamsize>(head.b.size()));
        out.seekp(static_cast<std::streamoff>(at));
        out.write(reinterpret_cast<const char*>(local.b.data()),
                  static_cast<std::streamsize>(local.b.size()));
        out.write(reinterpret_cast<const char*>(tail.b.data()),
                  static_cast<std::streamsize>(tail.b.size()));
    }
    auto z = zipio::Archive::open_file(path);
    ASSERT_TRUE(z.ok()) << z.error().to_string();
    ASSERT_EQ(z->entries().size(), 2u);
    EXPECT_EQ(z->entries()[1].local_offset, at);
    auto r = zipio::MemberReader::open(*z, z->entries()[1]);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    std::string bytes(kElf.size() + 1, '\0');
    auto got = r->read(reinterpret_cast<std::uint8_t*>(bytes.data()), bytes.size());
    ASSERT_TRUE(got.ok()) << got.error().to_string();
    EXPECT_EQ(bytes.substr(0, *got), kElf);
    // The readers of `list` (the file mapped, read with pread) take the same path.
    auto exts = read_extensions(path);
    ASSERT_TRUE(exts.ok()) << exts.error().to_string();
}

// Issue 36, the zip differential (bench/fuzz/zip_diff.py): what Python's zipfile (pip's reader)
// refuses, the reader refuses; these are the classes the differential found accepted.
Status open_zip(const std::vector<std::uint8_t>& zip) {
    auto a = zipio::Archive::open_memory(Bytes{zip.data(), zip.size()});
    return a ? ok_status() : Status(std::move(a).error());
}

// The central header's offset of the first entry (zip_of writes one end record, no comment).
std::size_t central_at(const std::vector<std::uint8_t>& zip) {
    std::uint32_t cd = 0;
    std::memcpy(&cd, &zip[zip.size() - 6], 4);
    return cd;
}

TEST(ZipDifferential, AnEndSignatureWithoutItsRecordIsNoZip) {
    // zipfile takes the last "PK\5\6" for the record; with fewer than 22 bytes after it the file
    // is no zip to it, whatever record comes before.
    const auto zip = zip_of({stored("pkg/a.so", kElf)}, std::string("xPK\x05\x06", 5));
    const Status s = open_zip(zip);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("fewer than 22 bytes after it"), std::string::npos)
        << s.error().message;
    EXPECT_TRUE(open_zip(zip_of({stored("pkg/a.so", kElf)}, "a comment")).ok());
}

TEST(ZipDifferential, EntriesZipfileDoesNotReadAreRefused) {
    auto version = zip_of({stored("pkg/a.so", kElf)});
    Buf b{version};
    b.put16(central_at(version) + 6, 64); // needs zip 6.4
    Status s = open_zip(b.b);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("needs zip version 6.4"), std::string::npos)
        << s.error().message;
    for (std::uint16_t bit : {5, 6}) {
        RawEntry e = stored("pkg/a.so", kElf);
        e.flags = static_cast<std::uint16_t>(1u << bit);
        RawEntry dir = stored("pkg/", "");
        dir.flags = e.flags; // a directory pip never opens
        std::vector<std::string> names;
        EXPECT_TRUE(visit_all(zip_of({dir}), &names).ok()) << bit;
        s = visit_all(zip_of({e}), &names);
        ASSERT_FALSE(s.ok()) << bit;
        EXPECT_NE(s.error().message.find(fmt::format("(bit {})", bit)), std::string::npos)
            << s.error().message;
    }
    RawEntry corrupt = stored("pkg/a.so", kElf);
    corrupt.extra = std::string("\x34\x12\x28\x00xxxx", 8); // 40 bytes declared, 4 there
    s = open_zip(zip_of({corrupt}));
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("block 0x1234 at byte 0 declares 40 bytes"), std::string::npos)
        << s.error().message;
}

TEST(ZipDifferential, ALocalNameUnderAnotherUtf8FlagIsRefused) {
    RawEntry e = stored("lib\xc3\x87.so", kElf);
    e.flags = 1u << 11;
    auto zip = zip_of({e});
    Buf b{zip};
    b.put16(6, 0); // the local header's flags: cp437, so another name to zipfile
    auto a = zipio::Archive::open_memory(Bytes{b.b.data(), b.b.size()});
    ASSERT_TRUE(a.ok()) << a.error().to_string();
    auto r = zipio::MemberReader::open(*a, a->entries()[0]);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("UTF-8 flag differs"), std::string::npos) << r.error().message;
}

TEST(ZipDifferential, AnEmptyMemberIsReadToItsEnd) {
    std::vector<std::string> names;
    EXPECT_TRUE(visit_all(zip_of({stored("pkg/empty.py", "")}), &names).ok());
    RawEntry crc = stored("pkg/empty.py", "");
    crc.crc = 1; // zipfile: "Bad CRC-32"
    Status s = visit_all(zip_of({crc}), &names);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("CRC error"), std::string::npos) << s.error().message;
    RawEntry garbage{"pkg/empty.py", 8, "\xff\xff\xff", 0, 0}; // no deflate stream
    s = visit_all(zip_of({garbage}), &names);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("cannot inflate"), std::string::npos) << s.error().message;
}

TEST(ZipDifferential, AUnicodePathFieldNamingAnotherFileIsRefused) {
    RawEntry e = stored("readme.txt", kElf);
    const std::string other = "demo/_C.so";
    Buf x;
    x.u16(0x7075).u16(static_cast<std::uint16_t>(5 + other.size())).u8(1).u32(crc_of(e.name));
    x.str(other);
    e.extra.assign(x.b.begin(), x.b.end());
    Status s = open_zip(zip_of({e}));
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("names 'demo/_C.so'"), std::string::npos) << s.error().message;
    // The same name, or a CRC of another name (the field is stale): one name to every reader.
    Buf same;
    same.u16(0x7075).u16(15).u8(1).u32(crc_of(e.name)).str(e.name);
    e.extra.assign(same.b.begin(), same.b.end());
    EXPECT_TRUE(open_zip(zip_of({e})).ok());
    x.put32(5, crc_of(e.name) ^ 1);
    e.extra.assign(x.b.begin(), x.b.end());
    EXPECT_TRUE(open_zip(zip_of({e})).ok());
}

TEST(ZipDifferential, OneByteMoreThanDeclaredIsNamedSoNotACrcError) {
    // zipfile stops at the declared size and checks the CRC of that: the size is what is wrong.
    const std::string head = kElf.substr(0, kElf.size() - 1);
    RawEntry e{"pkg/_C.so", 8, deflated(kElf), crc_of(head),
               static_cast<std::uint32_t>(head.size())};
    std::vector<std::string> names;
    const Status s = visit_all(zip_of({e}), &names);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(
        s.error().message.find(fmt::format("more than the {} bytes it declares", head.size())),
        std::string::npos)
        << s.error().message;
}

TEST(ZipDifferential, DataMembersAsPip23InstallsThem) {
    // The scheme is told by the first component as written, read after normalising.
    EXPECT_EQ(zipio::install_path("x.data/../y/platlib/demo/_C.so"), "demo/_C.so");
    EXPECT_EQ(zipio::install_path("x.data/platlib/../purelib/demo/_C.so"), "demo/_C.so");
    EXPECT_EQ(zipio::install_path("a/../x.data/platlib/demo/_C.so"), "x.data/platlib/demo/_C.so");
    EXPECT_EQ(zipio::install_path("x.data/headers/demo.h"), "x.data/headers/demo.h");
    std::string why;
    for (const char* refused : {"x.data/_C.so", "x.data/platlib", "x.data/lib/demo/_C.so",
                                "x.data/../demo/_C.so", ".data/x"}) {
        EXPECT_FALSE(zipio::install_path(refused, &why)) << refused;
        EXPECT_FALSE(why.empty()) << refused;
    }
    EXPECT_EQ(zipio::install_path("x.data/"), "x.data"); // a directory: pip skips it
}

} // namespace
} // namespace forge::binary::test
