// --toolkit's per-image result cache (binary/result_cache.h): a second read of the same bytes
// decodes nothing and answers the same; a changed image is never answered from it; a corrupt
// cache file is named, not trusted, and rebuilt; concurrent writers leave a whole file.
#include "support.h"

#include "../temp_dir.h"
#include "binary/result_cache.h"

#include <chrono>
#include <lz4.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <zstd.h>

namespace forge::binary::test {
namespace {

// A cubin with `kernels` `.text.*` sections (new-ABI e_flags, sm_90).
std::vector<std::uint8_t> cubin_with(int kernels) {
    std::vector<SectionSpec> sections;
    for (int k = 0; k < kernels; ++k)
        sections.push_back({".text.k" + std::to_string(k), 1, std::vector<std::uint8_t>(64, 0)});
    Buf b{elf_with(sections, 190)};
    b.b[8] = 8;                            // EI_ABIVERSION
    b.put32(48, 0x06000002u | (90u << 8)); // e_flags: sm_90
    return b.b;
}

std::vector<std::uint8_t> padded(std::vector<std::uint8_t> v) {
    v.resize((v.size() + 7) & ~std::size_t{7}, 0);
    return v;
}

EntrySpec compressed(const std::vector<std::uint8_t>& image, Compression c,
                     std::uint16_t kind = 2) {
    std::vector<std::uint8_t> z;
    if (c == Compression::Zstd) {
        z.resize(ZSTD_compressBound(image.size()));
        z.resize(ZSTD_compress(z.data(), z.size(), image.data(), image.size(), 3));
    } else {
        z.resize(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(image.size()))));
        z.resize(static_cast<std::size_t>(LZ4_compress_default(
            reinterpret_cast<const char*>(image.data()), reinterpret_cast<char*>(z.data()),
            static_cast<int>(image.size()), static_cast<int>(z.size()))));
    }
    return EntrySpec{.kind = kind,
                     .arch = 90,
                     .flags =
                         (kind == 1 ? 0x1u : 0x11u) | (c == Compression::Zstd ? 0x8000u : 0x2000u),
                     .payload = padded(z),
                     .compressed_size = static_cast<std::uint32_t>(z.size()),
                     .uncompressed_size = image.size()};
}

std::vector<std::uint8_t> ptx_text(int entries) {
    std::string text = ".version 9.0\n.target sm_90\n";
    for (int k = 0; k < entries; ++k)
        text += ".entry k" + std::to_string(k) + "()\n{\n ret;\n}\n";
    return {text.begin(), text.end()};
}

// 24 images, enough for the worker pool: cubins of 1..3 kernels (ZSTD and LZ4), compressed PTX.
std::vector<EntrySpec> mixed_images() {
    std::vector<EntrySpec> specs;
    for (int i = 0; i < 24; ++i) {
        if (i % 4 == 3)
            specs.push_back(compressed(ptx_text(i % 3), Compression::Zstd, 1));
        else
            specs.push_back(compressed(cubin_with(1 + i % 3),
                                       i % 2 == 0 ? Compression::Zstd : Compression::Lz4));
    }
    return specs;
}

struct Read {
    Result<std::vector<Entry>> entries;
    std::vector<std::string> warnings;
    std::uint64_t cached = 0;
    std::uint64_t decoded = 0; // images read (not answered from the cache)
    std::uint64_t hashed = 0;  // keys computed from the bytes (not from an unchanged file's index)
    std::uint64_t scans_reused = 0; // embedded scans answered from the cache
};

Read read_cached(const std::filesystem::path& file, const std::filesystem::path& dir) {
    ResultCache cache(dir);
    ReadStats stats;
    ReadOptions o;
    o.inspect_payloads = true;
    o.stats = &stats;
    o.cache = &cache;
    auto r = read_entries(file.string(), o);
    return {std::move(r), cache.take_warnings(),
            stats.cached, stats.streamed + stats.decompressed + stats.ptx,
            stats.hashed, stats.scans_reused};
}

void write(const std::filesystem::path& p, const std::vector<std::uint8_t>& bytes) {
    std::ofstream(p, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
}

void expect_same_answers(const std::vector<Entry>& a, const std::vector<Entry>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        SCOPED_TRACE("entry " + std::to_string(i));
        EXPECT_EQ(a[i].kernels, b[i].kernels);
        EXPECT_EQ(a[i].toolkit, b[i].toolkit);
        EXPECT_EQ(a[i].stub, b[i].stub);
        EXPECT_EQ(a[i].cubin_arch_specific, b[i].cubin_arch_specific);
    }
}

std::vector<std::filesystem::path> packs(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> out;
    std::error_code ec;
    for (const auto& d : std::filesystem::directory_iterator(dir, ec))
        out.push_back(d.path());
    return out;
}

TEST(BinaryResultCache, SecondReadDecodesNothingAndAnswersTheSame) {
    const auto tmp = forge::test::temp_dir("cache_second_read");
    const auto file = tmp / "lib.fatbin", dir = tmp / "cache";
    write(file, fatbin_bytes(mixed_images()));
    ReadOptions plain;
    plain.inspect_payloads = true;
    auto want = read_entries(file.string(), plain);
    ASSERT_TRUE(want.ok()) << want.error().to_string();

    Read first = read_cached(file, dir);
    ASSERT_TRUE(first.entries.ok()) << first.entries.error().to_string();
    EXPECT_EQ(first.cached, 0u);
    EXPECT_EQ(first.decoded, 24u);
    EXPECT_TRUE(first.warnings.empty());
    ASSERT_EQ(packs(dir).size(), 1u);
    Read second = read_cached(file, dir);
    ASSERT_TRUE(second.entries.ok()) << second.entries.error().to_string();
    EXPECT_EQ(second.cached, 24u);
    EXPECT_EQ(second.decoded, 0u);
    EXPECT_TRUE(second.warnings.empty());
    expect_same_answers(*second.entries, *want);
    expect_same_answers(*first.entries, *want);
    EXPECT_EQ((*second.entries)[0].kernels, 1);
    EXPECT_EQ((*second.entries)[3].kernels, 0); // a PTX without .entry
    EXPECT_EQ((*second.entries)[1].kernels, 2);
    // Without --toolkit nothing is looked up or written.
    ResultCache cache(tmp / "unused");
    ReadOptions listing;
    listing.cache = &cache;
    ASSERT_TRUE(read_entries(file.string(), listing).ok());
    EXPECT_FALSE(std::filesystem::exists(tmp / "unused"));
}

TEST(BinaryResultCache, AChangedImageIsNeverAnsweredFromTheCache) {
    const auto tmp = forge::test::temp_dir("cache_changed");
    const auto file = tmp / "lib.fatbin", dir = tmp / "cache";
    auto specs = mixed_images();
    write(file, fatbin_bytes(specs));
    ASSERT_TRUE(read_cached(file, dir).entries.ok());

    // Another image in the same place (4 kernels where there was 1): read again, its own answer.
    auto other = specs;
    other[0] = compressed(cubin_with(4), Compression::Zstd);
    write(file, fatbin_bytes(other));
    Read r = read_cached(file, dir);
    ASSERT_TRUE(r.entries.ok()) << r.entries.error().to_string();
    EXPECT_EQ(r.cached, 23u);
    EXPECT_EQ(r.decoded, 1u);
    EXPECT_EQ((*r.entries)[0].kernels, 4);

    // One compressed byte changed, every size kept: the image no longer decodes, and the read
    // says so as a read without the cache does (exit 2 at the entry's offset).
    for (std::size_t at : {std::size_t{4}, specs[2].payload.size() / 2}) {
        auto flipped = other;
        flipped[2].payload[at] ^= 0xff;
        write(file, fatbin_bytes(flipped));
        ReadOptions plain;
        plain.inspect_payloads = true;
        auto uncached = read_entries(file.string(), plain);
        Read cached = read_cached(file, dir);
        SCOPED_TRACE("byte " + std::to_string(at));
        ASSERT_EQ(cached.entries.ok(), uncached.ok());
        if (!uncached.ok()) {
            EXPECT_EQ(cached.entries.error().to_string(), uncached.error().to_string());
        } else {
            expect_same_answers(*cached.entries, *uncached);
        }
    }
}

TEST(BinaryResultCache, ACorruptCacheFileIsNamedNotTrustedAndRebuilt) {
    const auto tmp = forge::test::temp_dir("cache_corrupt");
    const auto file = tmp / "lib.fatbin", dir = tmp / "cache";
    write(file, fatbin_bytes(mixed_images()));
    const Read clean = read_cached(file, dir);
    ASSERT_TRUE(clean.entries.ok());
    const auto pack = packs(dir).at(0);
    const auto good = slurp(pack.string());
    auto corrupt = [&](const std::string& what, std::vector<std::uint8_t> bytes) {
        SCOPED_TRACE(what);
        write(pack, bytes);
        Read r = read_cached(file, dir);
        ASSERT_TRUE(r.entries.ok()) << r.entries.error().to_string();
        EXPECT_EQ(r.cached, 0u) << "nothing answered from a corrupt file";
        expect_same_answers(*r.entries, *clean.entries);
        ASSERT_EQ(r.warnings.size(), 1u);
        EXPECT_NE(r.warnings[0].find(pack.string()), std::string::npos) << r.warnings[0];
        EXPECT_NE(r.warnings[0].find("corrupt"), std::string::npos) << r.warnings[0];
        EXPECT_EQ(slurp(pack.string()), good) << "rebuilt";
        Read again = read_cached(file, dir);
        EXPECT_TRUE(again.warnings.empty());
        EXPECT_EQ(again.cached, 24u);
    };
    corrupt("empty", {});
    corrupt("junk", std::vector<std::uint8_t>(good.size(), 0x41));
    corrupt("truncated", std::vector<std::uint8_t>(good.begin(), good.end() - 64));
    auto flipped = good;
    flipped[good.size() - 20] ^= 0x01; // a record's toolkit or kernels: the checksum tells
    corrupt("one bit of a record", flipped);
    auto header = good;
    header[0x0c] ^= 0x01; // the record count
    corrupt("the count", header);
}

// Issue 36, 6: a FIFO put in the pack's place hung `list --toolkit`; it is read as a pack that is
// not one (named, rebuilt), without blocking. The read runs in a child with an alarm, so the old
// behaviour fails the test instead of hanging it.
TEST(BinaryResultCache, AFifoInThePacksPlaceNeverBlocks) {
    const auto tmp = forge::test::temp_dir("cache_fifo");
    const auto file = tmp / "lib.fatbin", dir = tmp / "cache";
    write(file, fatbin_bytes(mixed_images()));
    ASSERT_TRUE(read_cached(file, dir).entries.ok());
    const auto pack = packs(dir).at(0);
    std::filesystem::remove(pack);
    ASSERT_EQ(::mkfifo(pack.c_str(), 0600), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::alarm(20);
        Read r = read_cached(file, dir);
        ::_exit(r.entries.ok() ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status)) << "the read blocked on the FIFO (status " << status << ")";
    EXPECT_EQ(WEXITSTATUS(status), 0);
    std::filesystem::remove_all(tmp);
}

// Issue 36, 6: a pack edited with its XXH3 sum recomputed was trusted (a stub shown with
// kernels). A pack is believed only when this user owns it and nobody else can write it;
// otherwise it is named, not used and rebuilt as this user's.
TEST(CacheTrust, APackAnotherUserCouldWriteIsNotBelieved) {
    const auto tmp = forge::test::temp_dir("cache_pack_trust");
    const auto file = tmp / "lib.fatbin", dir = tmp / "cache";
    write(file, fatbin_bytes(mixed_images()));
    const Read clean = read_cached(file, dir);
    ASSERT_TRUE(clean.entries.ok());
    const auto pack = packs(dir).at(0);
    auto untrusted = [&](const std::string& what, const std::string& why) {
        SCOPED_TRACE(what);
        Read r = read_cached(file, dir);
        ASSERT_TRUE(r.entries.ok()) << r.entries.error().to_string();
        EXPECT_EQ(r.cached, 0u) << "answered from a pack another user could write";
        expect_same_answers(*r.entries, *clean.entries);
        ASSERT_EQ(r.warnings.size(), 1u);
        EXPECT_NE(r.warnings[0].find(pack.string()), std::string::npos) << r.warnings[0];
        EXPECT_NE(r.warnings[0].find(why), std::string::npos) << r.warnings[0];
        struct stat st {};
        ASSERT_EQ(::lstat(pack.c_str(), &st), 0);
        EXPECT_EQ(st.st_uid, ::geteuid()) << "rebuilt as this user's";
        EXPECT_EQ(st.st_mode & 07777, 0644u);
        Read again = read_cached(file, dir);
        EXPECT_TRUE(again.warnings.empty());
        EXPECT_EQ(again.cached, 24u);
    };
    ::chmod(pack.c_str(), 0666);
    untrusted("writable by others", "other users can write it");
    ::chmod(pack.c_str(), 0664);
    untrusted("writable by its group", "other users can write it");
    if (::geteuid() == 0) {
        ASSERT_EQ(::chown(pack.c_str(), 65534, 65534), 0);
        untrusted("another user's", "belongs to user 65534");
    }
    std::filesystem::remove_all(tmp);
}

TEST(BinaryResultCache, ConcurrentRunsLeaveAWholeFile) {
    const auto tmp = forge::test::temp_dir("cache_concurrent");
    const auto file = tmp / "lib.fatbin", dir = tmp / "cache";
    write(file, fatbin_bytes(mixed_images()));
    std::vector<std::thread> runs;
    std::atomic<int> failed{0};
    for (int i = 0; i < 6; ++i)
        runs.emplace_back([&] {
            Read r = read_cached(file, dir);
            if (!r.entries.ok() || !r.warnings.empty()) ++failed;
        });
    for (auto& t : runs)
        t.join();
    EXPECT_EQ(failed, 0);
    Read after = read_cached(file, dir);
    EXPECT_TRUE(after.warnings.empty());
    EXPECT_EQ(after.cached, 24u);
    for (const auto& p : packs(dir)) // no temporary file left behind
        EXPECT_EQ(p.extension(), ".pack") << p;
}

// A file unchanged since it was hashed (its stamp: size, mtime, ctime, inode) is not hashed
// again; a write changes its ctime, and then every image is hashed and the changed one is read.
// A file changed within kStableSeconds of being read gets no index (a change in the same clock
// tick could keep its stamp): it is hashed every time.
TEST(BinaryResultCache, AnUnchangedFileIsNotHashedAgainAChangedOneIs) {
    const auto tmp = forge::test::temp_dir("cache_stamp");
    const auto file = tmp / "lib.fatbin", dir = tmp / "cache";
    auto specs = mixed_images();
    write(file, fatbin_bytes(specs));
    Read fresh = read_cached(file, dir);
    ASSERT_TRUE(fresh.entries.ok());
    EXPECT_EQ(fresh.hashed, 24u);
    Read racy = read_cached(file, dir); // still within the clock guard: no index was kept
    EXPECT_EQ(racy.hashed, 24u);
    EXPECT_EQ(racy.cached, 24u);
    std::this_thread::sleep_for(std::chrono::milliseconds(kStableSeconds * 1000 + 200));
    Read stable = read_cached(file, dir); // records the index with the stamp
    EXPECT_EQ(stable.hashed, 24u);
    Read unchanged = read_cached(file, dir);
    EXPECT_EQ(unchanged.hashed, 0u);
    EXPECT_EQ(unchanged.cached, 24u);
    EXPECT_EQ(unchanged.decoded, 0u);
    expect_same_answers(*unchanged.entries, *fresh.entries);
    // The first two images swapped: the same size, rewritten in place (the same inode), so only
    // ctime and mtime tell. Trusting the index would answer 1 kernel at the first offset.
    auto swapped = specs;
    std::swap(swapped[0], swapped[1]);
    const auto bytes = fatbin_bytes(swapped);
    ASSERT_EQ(bytes.size(), std::filesystem::file_size(file));
    write(file, bytes);
    Read changed = read_cached(file, dir);
    ASSERT_TRUE(changed.entries.ok()) << changed.entries.error().to_string();
    EXPECT_EQ(changed.hashed, 24u);
    EXPECT_EQ(changed.cached, 24u); // both images are in the cache, under their own keys
    EXPECT_EQ((*changed.entries)[0].kernels, 2);
    EXPECT_EQ((*changed.entries)[1].kernels, 1);
}

// The embedded scan's candidates are kept with the index: an unchanged host file is not searched
// again (on libcublasLt.so.13 the search was nine tenths of a cached run), and what the kept
// offsets find is checked as a search's finds are. A changed file is searched again.
TEST(BinaryResultCache, AnUnchangedFilesEmbeddedScanIsNotRunAgain) {
    const auto tmp = forge::test::temp_dir("cache_scan");
    const auto file = tmp / "lib.so", dir = tmp / "cache";
    const auto registered = fatbin_bytes(mixed_images());
    auto host = [&](int embedded) {
        std::vector<std::uint8_t> rodata(40, 0x11);
        for (int i = 0; i < embedded; ++i) {
            const auto c = fatbin_bytes({{.arch = static_cast<std::uint32_t>(86 + i)}});
            rodata.insert(rodata.end(), c.begin(), c.end());
        }
        return elf_with({{".nv_fatbin", 1, registered}, {".rodata", 1, rodata}});
    };
    auto embedded = [](const Read& r) {
        std::vector<std::string> out;
        for (const auto& e : *r.entries)
            if (e.found == Found::Embedded) out.push_back(e.target.name());
        return out;
    };
    write(file, host(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(kStableSeconds * 1000 + 200));
    const Read first = read_cached(file, dir);
    ASSERT_TRUE(first.entries.ok()) << first.entries.error().to_string();
    EXPECT_EQ(first.scans_reused, 0u);
    EXPECT_EQ(embedded(first), std::vector<std::string>{"sm_86"});
    const auto written = std::filesystem::last_write_time(packs(dir).at(0));
    const Read second = read_cached(file, dir);
    ASSERT_TRUE(second.entries.ok()) << second.entries.error().to_string();
    EXPECT_EQ(std::filesystem::last_write_time(packs(dir).at(0)), written)
        << "a read that confirmed every image rewrote the pack";
    EXPECT_EQ(second.cached, 24u);
    EXPECT_EQ(second.scans_reused, 1u);
    EXPECT_EQ(second.hashed, 0u);
    EXPECT_EQ(embedded(second), std::vector<std::string>{"sm_86"});
    expect_same_answers(*second.entries, *first.entries);
    // Without --toolkit the search runs as always and the cache is not read.
    ReadOptions listing;
    auto plain = read_entries(file.string(), listing);
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(plain->size(), first.entries->size());

    // A second container in .rodata: the file changed, so it is searched and both are found.
    write(file, host(2));
    const Read changed = read_cached(file, dir);
    ASSERT_TRUE(changed.entries.ok()) << changed.entries.error().to_string();
    EXPECT_EQ(changed.scans_reused, 0u);
    EXPECT_EQ(embedded(changed), (std::vector<std::string>{"sm_86", "sm_87"}));

    // Kept offsets out of order: the pack is corrupt, named, not trusted, rebuilt.
    write(file, host(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(kStableSeconds * 1000 + 200));
    ASSERT_TRUE(read_cached(file, dir).entries.ok());
    ASSERT_EQ(read_cached(file, dir).scans_reused, 1u);
    const auto pack = packs(dir).at(0);
    auto bytes = slurp(pack.string());
    ASSERT_GE(bytes.size(), 16u);
    std::vector<std::uint8_t> last(bytes.end() - 8, bytes.end()); // the one offset kept
    bytes.insert(bytes.end(), last.begin(), last.end());          // ... twice
    bytes[0x70] += 1;                                             // and counted
    write(pack, bytes);
    const Read bad = read_cached(file, dir);
    ASSERT_TRUE(bad.entries.ok()) << bad.entries.error().to_string();
    EXPECT_EQ(bad.scans_reused, 0u);
    ASSERT_EQ(bad.warnings.size(), 1u);
    EXPECT_NE(bad.warnings[0].find("corrupt"), std::string::npos) << bad.warnings[0];
    EXPECT_EQ(embedded(bad), std::vector<std::string>{"sm_86"});
}

TEST(BinaryResultCache, KeyCoversEveryCompressedByte) {
    std::vector<std::uint8_t> buffer;
    std::vector<std::uint8_t> bytes(3u << 20, 7); // more than one slice of the hash
    const auto key = [&](const std::vector<std::uint8_t>& b) {
        return image_key(Bytes{b.data(), b.size()}, Compression::Zstd, 100, 2, buffer);
    };
    const ImageKey k = key(bytes);
    for (std::size_t at : {std::size_t{0}, std::size_t{1} << 20, bytes.size() - 1}) {
        auto changed = bytes;
        changed[at] ^= 1;
        EXPECT_NE(key(changed), k) << at;
    }
    EXPECT_EQ(key(bytes), k);
    EXPECT_NE(image_key(Bytes{bytes.data(), bytes.size()}, Compression::Zstd, 101, 2, buffer), k);
    EXPECT_NE(image_key(Bytes{bytes.data(), bytes.size()}, Compression::Lz4, 100, 2, buffer), k);
}

} // namespace
} // namespace forge::binary::test
