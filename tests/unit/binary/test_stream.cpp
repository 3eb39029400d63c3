// The bounded readers: `--toolkit` streams ZSTD cubins (inspect_zstd_cubin) and must answer
// exactly what decompressing the whole image answers, falling back to that whenever the kept
// bytes cannot decide; listing reads fatbin headers with pread and pages in none of the payload.
#include "support.h"

#include "../seed.h"
#include "binary/cubin.h"
#include "binary/fatbin.h"
#include "binary/mapped_file.h"

#include <random>
#include <sys/resource.h>
#include <unistd.h>
#include <zstd.h>

namespace forge::binary::test {
namespace {

bool mentions(const Error& e, const std::string& text) {
    return e.to_string().find(text) != std::string::npos;
}

std::vector<std::uint8_t> pad8(std::vector<std::uint8_t> v) {
    v.resize((v.size() + 7) & ~std::size_t{7}, 0);
    return v;
}

// A .note.nv.tkinfo note naming the release and the -arch option.
std::vector<std::uint8_t> tkinfo_note(const std::string& release, const std::string& arch) {
    const std::string version =
        "Cuda compilation tools, release " + release + ", V" + release + ".88";
    const std::string options = "-arch " + arch + " -m 64 ";
    Buf desc;
    desc.zeros(0x0c).u32(0).zeros(4).u32(static_cast<std::uint32_t>(version.size() + 1));
    desc.str(version).u8(0).str(options).u8(0);
    desc.b.resize((desc.b.size() + 3) & ~std::size_t{3}, 0);
    Buf note;
    note.u32(12).u32(static_cast<std::uint32_t>(desc.b.size())).u32(2000);
    note.str("NVIDIA Corp").u8(0).bytes(desc.b);
    return note.b;
}

// A cubin laid out as nvcc lays one out: the notes, .nv.compat and the name table first, then
// `gap` bytes of code, then the section table at the end.
// `info` bytes of .nv.info records (NVAL attribute 0x01, one record per 4 bytes).
std::vector<std::uint8_t> layered_cubin(std::size_t gap, std::uint32_t seed, std::size_t info = 4) {
    const std::vector<std::uint8_t> compat{2, 9, 1, 0}; // BVAL attribute 9 = 1: an `a` cubin
    std::vector<std::uint8_t> records;
    for (std::size_t i = 0; i < info / 4; ++i)
        records.insert(records.end(), {1, 1, 0, 0});
    auto elf = elf_with({{".note.nv.tkinfo", 7, tkinfo_note("13.0", "sm_100a")},
                         {".nv.info", 0x70000000, records},
                         {".nv.compat", 0x70000086, compat},
                         {".text.k1", 1, std::vector<std::uint8_t>(64, 0)},
                         {".text.k2", 1, std::vector<std::uint8_t>(64, 0)}},
                        190);
    Buf b{elf};
    b.b[8] = 8;                             // EI_ABIVERSION 8
    b.put32(48, 0x06000002u | (100u << 8)); // e_flags: sm_100
    std::uint64_t shoff = 0;
    std::memcpy(&shoff, &b.b[40], 8);
    std::vector<std::uint8_t> code(gap);
    std::mt19937 rng(seed); // incompressible: the stream spans many input slices
    for (auto& c : code)
        c = static_cast<std::uint8_t>(rng());
    b.b.insert(b.b.begin() + static_cast<std::ptrdiff_t>(shoff), code.begin(), code.end());
    b.put64(40, shoff + gap);
    return b.b;
}

// A checksummed frame, so that a flipped byte inside a stored block is an error too. Level 1
// gives an image of more than 512 KiB a 512 KiB window (then it is streamed); `window_log` set
// large gives a frame whose window is the whole image, as nvcc writes all but its largest cubins
// (then it is decoded in one call).
std::vector<std::uint8_t> zstd(const std::vector<std::uint8_t>& in, int window_log = 0) {
    std::vector<std::uint8_t> z(ZSTD_compressBound(in.size()));
    ZSTD_CCtx* c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    if (window_log != 0) ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, window_log);
    z.resize(ZSTD_compress2(c, z.data(), z.size(), in.data(), in.size()));
    ZSTD_freeCCtx(c);
    return z;
}

EntrySpec zstd_entry(const std::vector<std::uint8_t>& cubin, int window_log = 0) {
    auto z = zstd(cubin, window_log);
    return EntrySpec{.kind = 2,
                     .arch = 100,
                     .flags = 0x108011, // ZSTD, arch-specific
                     .payload = pad8(z),
                     .compressed_size = static_cast<std::uint32_t>(z.size()),
                     .uncompressed_size = cubin.size()};
}

ReadOptions inspecting(ReadStats* stats, std::uint64_t prefix = ReadOptions{}.stream_prefix_bytes) {
    ReadOptions o;
    o.inspect_payloads = true;
    o.stats = stats;
    o.stream_prefix_bytes = prefix;
    return o;
}

void expect_same(const std::vector<Entry>& a, const std::vector<Entry>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        SCOPED_TRACE("entry " + std::to_string(i));
        EXPECT_EQ(a[i].target.name(), b[i].target.name());
        EXPECT_EQ(a[i].kernels, b[i].kernels);
        EXPECT_EQ(a[i].toolkit, b[i].toolkit);
        EXPECT_EQ(a[i].stub, b[i].stub);
        EXPECT_EQ(a[i].cubin_arch_specific, b[i].cubin_arch_specific);
    }
}

TEST(BinaryStream, StreamedCubinAnswersWhatTheWholeImageAnswers) {
    const auto cubin = layered_cubin(3u << 20, forge::test::test_seed(16));
    const auto fb = fatbin_bytes({zstd_entry(cubin)});
    ReadStats streamed, whole;
    auto s = read_memory(fb, inspecting(&streamed));
    auto w = read_memory(fb, inspecting(&whole, 0)); // streaming off
    ASSERT_TRUE(s.ok()) << s.error().to_string();
    ASSERT_TRUE(w.ok()) << w.error().to_string();
    EXPECT_EQ(streamed.streamed, 1u);
    EXPECT_EQ(streamed.decompressed, 0u);
    EXPECT_EQ(whole.streamed, 0u);
    EXPECT_EQ(whole.decompressed, 1u);
    ASSERT_EQ(s->size(), 1u);
    EXPECT_EQ((*s)[0].kernels, 2);
    EXPECT_EQ((*s)[0].toolkit, "13.0");
    EXPECT_EQ((*s)[0].cubin_arch_specific, true);
    EXPECT_FALSE((*s)[0].stub);
    expect_same(*s, *w);
}

TEST(BinaryStream, FrameWhoseWindowIsTheImageIsDecodedInOneCall) {
    // The streaming decoder would buffer this whole 2 MiB image anyway (its window is the image):
    // decoded in one call into the worker's pages instead, with no second pass however far the
    // parts read lie. The same image with a 128 KiB window is streamed.
    const auto cubin = layered_cubin(2u << 20, forge::test::test_seed(23));
    for (int window_log : {23, 17}) {
        SCOPED_TRACE("window log " + std::to_string(window_log));
        const auto fb = fatbin_bytes({zstd_entry(cubin, window_log)});
        ReadStats stats, whole;
        auto r = read_memory(fb, inspecting(&stats, 64));
        auto w = read_memory(fb, inspecting(&whole, 0));
        ASSERT_TRUE(r.ok()) << r.error().to_string();
        ASSERT_TRUE(w.ok()) << w.error().to_string();
        EXPECT_EQ(stats.streamed, 1u);
        EXPECT_EQ(stats.one_call, window_log == 23 ? 1u : 0u);
        EXPECT_EQ(stats.second_pass, window_log == 23 ? 0u : 1u);
        EXPECT_EQ(stats.decompressed, 0u);
        expect_same(*r, *w);
        EXPECT_EQ((*r)[0].toolkit, "13.0");
        EXPECT_EQ((*r)[0].kernels, 2);
    }
}

TEST(BinaryStream, WorkersQueueForABudgetThatHoldsOneOrTwoCubins) {
    // Eight workers, cubins in one call and streamed, and a budget that lets one or two hold
    // their pages at a time: each worker gives back what it holds for the next in the queue, and
    // every answer is the whole image's.
    std::vector<EntrySpec> specs;
    const std::uint32_t seed = forge::test::test_seed(24);
    for (std::uint32_t i = 0; i < 32; ++i)
        specs.push_back(
            zstd_entry(layered_cubin((i % 2 == 0 ? 300u << 10 : 1100u << 10) + 512 * i, seed + i),
                       i % 2 == 0 ? 23 : 17));
    const auto fb = fatbin_bytes(specs);
    ReadStats stats, whole;
    auto opts = inspecting(&stats);
    opts.threads = 8;
    opts.max_stream_bytes = 4u << 20; // a streamed one holds ~3 MiB, one in one call ~0.7
    auto r = read_memory(fb, opts);
    auto w = read_memory(fb, inspecting(&whole, 0));
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_TRUE(w.ok()) << w.error().to_string();
    EXPECT_EQ(stats.streamed, 32u);
    EXPECT_EQ(stats.one_call, 16u);
    EXPECT_EQ(stats.decompressed, 0u);
    expect_same(*r, *w);
}

TEST(BinaryStream, PartsBeyondThePrefixAreKeptByASecondPass) {
    // elf_with() puts the name table after the sections: with a 64-byte prefix the first pass
    // keeps only the header and the table, and a second pass keeps what the table locates.
    const auto cubin = layered_cubin(1u << 20, forge::test::test_seed(17));
    const auto fb = fatbin_bytes({zstd_entry(cubin)});
    ReadStats small, whole;
    auto r = read_memory(fb, inspecting(&small, 64));
    auto w = read_memory(fb, inspecting(&whole, 0));
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_TRUE(w.ok()) << w.error().to_string();
    EXPECT_EQ(small.streamed, 1u);
    EXPECT_EQ(small.second_pass, 1u);
    EXPECT_EQ(small.decompressed, 0u);
    expect_same(*r, *w);
    EXPECT_EQ((*r)[0].toolkit, "13.0");
    EXPECT_EQ((*r)[0].kernels, 2);
}

TEST(BinaryStream, PartsTooLargeForTheSecondPassAreReadAgainWithRoomOrWhole) {
    // 64 KiB of .nv.info is more than the second pass may keep for a 64-byte prefix (4 x 64):
    // the frame is read again under a plan with room for it, and decompressed whole when that
    // plan is over the budget. A 1 KiB window: the frame is streamed, not decoded in one call.
    const auto cubin = layered_cubin(4096, forge::test::test_seed(21), 65536);
    const EntrySpec entry = zstd_entry(cubin, 10);
    const auto fb = fatbin_bytes({entry});
    const Bytes stream{entry.payload.data(), entry.compressed_size, 0};
    const auto plan = zstd_read_plan(stream, cubin.size(), 64, 1u << 30);
    ASSERT_TRUE(plan);
    EXPECT_FALSE(plan->one_call);
    ReadStats again, whole, normal;
    auto r = read_memory(fb, inspecting(&again, 64));
    auto opts = inspecting(&whole, 64);
    opts.max_stream_bytes = plan->footprint; // the first plan fits, the one with room does not
    auto w = read_memory(fb, opts);
    auto n = read_memory(fb, inspecting(&normal, 0));
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_TRUE(w.ok()) << w.error().to_string();
    ASSERT_TRUE(n.ok()) << n.error().to_string();
    EXPECT_EQ(again.streamed, 1u);
    EXPECT_EQ(again.second_pass, 1u);
    EXPECT_EQ(again.decompressed, 0u);
    EXPECT_EQ(whole.streamed, 0u);
    EXPECT_EQ(whole.decompressed, 1u);
    expect_same(*r, *n);
    expect_same(*w, *n);
    EXPECT_EQ((*r)[0].toolkit, "13.0");
}

TEST(BinaryStream, DecoderOverItsBudgetFallsBackToTheWholeImage) {
    const auto fb = fatbin_bytes({zstd_entry(layered_cubin(1u << 20, forge::test::test_seed(18)))});
    ReadStats stats;
    auto opts = inspecting(&stats);
    opts.max_stream_bytes = 4096; // less than any zstd decoder needs
    auto r = read_memory(fb, opts);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(stats.streamed, 0u);
    EXPECT_EQ(stats.decompressed, 1u);
    EXPECT_EQ((*r)[0].kernels, 2);
}

TEST(BinaryStream, ManyCubinsOverThePoolEachStreamedOnce) {
    std::vector<EntrySpec> specs;
    const std::uint32_t seed = forge::test::test_seed(19);
    for (std::uint32_t i = 0; i < 40; ++i)
        specs.push_back(zstd_entry(layered_cubin(8192 + 512 * i, seed + i)));
    const auto fb = fatbin_bytes(specs);
    ReadStats stats, whole;
    auto r = read_memory(fb, inspecting(&stats));
    auto w = read_memory(fb, inspecting(&whole, 0));
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_TRUE(w.ok()) << w.error().to_string();
    EXPECT_EQ(stats.streamed, 40u);
    expect_same(*r, *w);
}

TEST(BinaryStream, HostileStreamsFailWithTheEntryOffsetLikeTheWholeImage) {
    const auto cubin = layered_cubin(2u << 20, forge::test::test_seed(20));
    const EntrySpec good = zstd_entry(cubin);
    const std::uint64_t payload_at = 16 + 0x40; // fatbin header + entry header
    auto must_fail = [](const std::vector<std::uint8_t>& bytes, const ReadOptions& o) {
        auto r = read_memory(bytes, o);
        EXPECT_FALSE(r.ok());
        return r.ok() ? Error{"unexpectedly read"} : r.error();
    };
    for (std::uint64_t prefix : {ReadOptions{}.stream_prefix_bytes, std::uint64_t{0}}) {
        SCOPED_TRACE("prefix " + std::to_string(prefix));
        ReadStats stats;
        const auto opts = inspecting(&stats, prefix);
        // Truncated: the stream ends inside the frame.
        EntrySpec cut = good;
        cut.compressed_size = good.compressed_size / 2;
        Error e = must_fail(fatbin_bytes({cut}), opts);
        EXPECT_EQ(e.offset, payload_at) << e.to_string();
        EXPECT_TRUE(mentions(e, "corrupt zstd payload")) << e.to_string();
        // Corrupt in the middle, past the first input slice.
        EntrySpec flipped = good;
        for (std::size_t i = 1200000; i < 1200064; ++i)
            flipped.payload[i] ^= 0x5a;
        e = must_fail(fatbin_bytes({flipped}), opts);
        EXPECT_EQ(e.offset, payload_at) << e.to_string();
        // Bytes after the frame that are not a frame.
        EntrySpec trailing = good;
        trailing.payload.resize(good.payload.size() + 8, 0x41);
        trailing.compressed_size = static_cast<std::uint32_t>(good.payload.size() + 8);
        e = must_fail(fatbin_bytes({trailing}), opts);
        EXPECT_EQ(e.offset, payload_at) << e.to_string();
        // The entry header says more than the frame holds, or less.
        EntrySpec more = good;
        more.uncompressed_size = cubin.size() + 4096;
        EXPECT_TRUE(mentions(must_fail(fatbin_bytes({more}), opts), "header says"));
        EntrySpec less = good;
        less.uncompressed_size = cubin.size() - 4096;
        EXPECT_TRUE(mentions(must_fail(fatbin_bytes({less}), opts), "header says"));
        // The same for an image small enough to be decoded in one call.
        EntrySpec small = zstd_entry(layered_cubin(4096, forge::test::test_seed(22)));
        small.compressed_size /= 2;
        e = must_fail(fatbin_bytes({small}), opts);
        EXPECT_EQ(e.offset, payload_at) << e.to_string();
        EXPECT_TRUE(mentions(e, "corrupt zstd payload")) << e.to_string();
        // The same for a large frame whose window is the image (decoded in one call).
        EntrySpec one_call = zstd_entry(cubin, 23);
        one_call.compressed_size = one_call.compressed_size / 2;
        e = must_fail(fatbin_bytes({one_call}), opts);
        EXPECT_EQ(e.offset, payload_at) << e.to_string();
        EXPECT_TRUE(mentions(e, "corrupt zstd payload")) << e.to_string();
        one_call = zstd_entry(cubin, 23);
        for (std::size_t i = 1200000; i < 1200064; ++i)
            one_call.payload[i] ^= 0x5a;
        e = must_fail(fatbin_bytes({one_call}), opts);
        EXPECT_EQ(e.offset, payload_at) << e.to_string();
        // A frame whose image is not a cubin.
        std::vector<std::uint8_t> junk(300000, 0x41);
        EXPECT_TRUE(
            mentions(must_fail(fatbin_bytes({zstd_entry(junk)}), opts), "decompressed cubin"));
        EXPECT_EQ(stats.streamed, 0u);
    }
}

TEST(BinaryStream, RealZstdCubinsStreamAndMatchTheWholeImage) {
    FORGE_NEED_FIXTURES(dir);
    std::uint64_t streamed = 0;
    for (const char* name : {"cm_size.o", "cm_all.o", "size.so", "dlink.o"}) {
        SCOPED_TRACE(name);
        ReadStats stats, whole;
        auto s = read_entries(dir + "/" + name, inspecting(&stats));
        auto w = read_entries(dir + "/" + name, inspecting(&whole, 0));
        ASSERT_TRUE(s.ok()) << s.error().to_string();
        ASSERT_TRUE(w.ok()) << w.error().to_string();
        expect_same(*s, *w);
        for (const auto& e : *s)
            if (e.target.kind == arch::Kind::Sass && e.compression == Compression::Zstd)
                EXPECT_TRUE(e.toolkit) << e.target.name();
        EXPECT_EQ(whole.streamed, 0u);
        streamed += stats.streamed;
    }
    EXPECT_GT(streamed, 0u) << "nvcc's ZSTD cubins keep what --toolkit reads in the prefix";
}

// Listing reads the fatbin headers with pread: walking 400 entries, each at its own 64 KiB
// stretch of a mapped file, faults in none of their pages (before, every header was a fault
// that mapped its 64 KiB neighbourhood).
TEST(BinaryStream, ListingFaultsInNoPayloadPage) {
    std::vector<EntrySpec> specs(400, EntrySpec{.kind = 2,
                                                .arch = 90,
                                                .flags = 0x8011,
                                                .payload = std::vector<std::uint8_t>(65536, 0x33),
                                                .compressed_size = 65536,
                                                .uncompressed_size = 65536});
    const auto fb = fatbin_bytes(specs);
    const auto path = std::filesystem::temp_directory_path() /
                      ("forge-stream-" + std::to_string(::getpid()) + ".fatbin");
    {
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char*>(fb.data()),
                   static_cast<std::streamsize>(fb.size()));
    }
    auto file = MappedFile::open(path.string());
    ASSERT_TRUE(file.ok()) << file.error().to_string();
    const Where where{path.string(), std::nullopt};
    std::vector<Fatbin> warm; // the vector's own pages, faulted in before counting
    warm.reserve(1);
    rusage before{}, after{};
    ::getrusage(RUSAGE_SELF, &before);
    auto fatbins = parse_fatbins(file->bytes(), where);
    ::getrusage(RUSAGE_SELF, &after);
    std::filesystem::remove(path);
    ASSERT_TRUE(fatbins.ok()) << fatbins.error().to_string();
    ASSERT_EQ(fatbins->size(), 1u);
    EXPECT_EQ((*fatbins)[0].entries.size(), 400u);
    // The entries' own heap (400 x ~120 bytes) takes a few dozen faults (more under a
    // sanitizer's allocator); touching the 400 headers would add 400.
    EXPECT_LT(after.ru_minflt - before.ru_minflt, 200) << "page faults while walking headers";
}

TEST(BinaryStream, CopyBytesReadsMappedAndPlainMemoryAlike) {
    std::vector<std::uint8_t> content(3 * 4096 + 77);
    for (std::size_t i = 0; i < content.size(); ++i)
        content[i] = static_cast<std::uint8_t>(i * 13 + 5);
    const auto path =
        std::filesystem::temp_directory_path() / ("forge-copy-" + std::to_string(::getpid()));
    {
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char*>(content.data()),
                   static_cast<std::streamsize>(content.size()));
    }
    auto file = MappedFile::open(path.string());
    ASSERT_TRUE(file.ok());
    std::vector<std::uint8_t> got(5000);
    copy_bytes(file->bytes().data() + 4000, got.size(), got.data()); // across pages
    EXPECT_TRUE(std::equal(got.begin(), got.end(), content.begin() + 4000));
    copy_bytes(content.data() + 10, 100, got.data()); // not a mapping: a plain copy
    EXPECT_TRUE(std::equal(got.begin(), got.begin() + 100, content.begin() + 10));
    std::filesystem::remove(path);
}

} // namespace
} // namespace forge::binary::test
