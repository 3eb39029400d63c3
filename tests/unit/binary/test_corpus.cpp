// Replays every file of the fuzz corpus (bench/fuzz/corpus/*) through the readers, with and
// without payload inspection, against what must happen to each: the valid files read cleanly
// with a stated entry count, every hostile file fails with an error that names the file and a
// byte offset. A corpus file without a row here fails the test (say what it must do).
#include "support.h"

#include <map>

namespace forge::binary::test {
namespace {

// entries: the entry count when the file reads cleanly; offset: the byte offset the error
// names. Without inspection only headers are read; `inspected_error` marks files whose
// payloads (decompressed entries, cubins) are what is hostile.
struct Expect {
    std::optional<int> entries;          // headers only; nullopt: an error
    std::optional<std::uint64_t> offset; // of that error
    bool inspected_error = false;        // with payload inspection: an error (else same as above)
};

Expect ok(int n) {
    return {n, std::nullopt, false};
}
Expect error_at(std::uint64_t offset) {
    return {std::nullopt, offset, false};
}
Expect payload_error(int n) {
    return {n, std::nullopt, true};
}

const std::map<std::string, Expect>& expectations() {
    static const std::map<std::string, Expect> m = {
        // valid inputs, synthetic and nvcc-built
        {"ok-ar.a", ok(2)},
        {"ok-cubin-90a.cubin", ok(1)},
        {"ok-fatbin.fatbin", ok(2)},
        {"ok-host.o", ok(4)},
        {"ok-embedded.o", ok(4)}, // 2 registered, 2 embedded in .rodata, none in .data
        {"ok-wheel.whl", ok(2)},
        {"ar-bsd-longname.a", ok(2)},
        {"elf-no-sections-scan.so", ok(2)},
        {"fatbin-zero-tail.fatbin", ok(2)},
        {"zip-stored-ar.whl", ok(2)},
        {"nvcc-arch90a.o", ok(3)},
        {"nvcc-cm_all_speed.o", ok(3)},
        {"nvcc-cm_size.o", ok(3)},
        {"nvcc-k2.fatbin", ok(2)},
        {"nvcc-k2_90a.cubin", ok(1)},
        {"nvcc-nokernels.o", ok(2)},
        // hostile containers and headers
        {"ar-bsd-longname-lie.a", error_at(8)},
        {"ar-longname-out-of-range.a", error_at(8)},
        {"ar-nested-deep.a", error_at(340)},
        {"ar-size-garbage.a", error_at(56)},
        {"ar-size-lie.a", error_at(56)},
        {"ar-thin.a", error_at(0)},
        {"ar-truncated.a", error_at(8)},
        {"elf-big-endian.so", error_at(4)},
        {"elf-cubin-garbage-flags.cubin", error_at(48)},
        {"elf-section-past-end.so", error_at(680)},
        {"elf-shoff-past-end.so", error_at(40)},
        {"elf-shstrndx-bad.so", error_at(62)},
        {"elf-truncated.so", error_at(40)},
        {"elf32.so", error_at(4)},
        {"entry-both-af.fatbin", error_at(56)},
        {"entry-both-lz4-zstd.fatbin", error_at(56)},
        {"entry-elf-not-a-cubin.fatbin", error_at(80)},
        {"entry-hsize-huge.fatbin", error_at(24)},
        {"entry-padded-overflow.fatbin", error_at(24)},
        {"entry-truncated-header.fatbin", error_at(8)},
        {"entry-unknown-kind.fatbin", error_at(16)},
        {"fat-hsize-zero.fatbin", error_at(6)},
        {"fat-size-overflow.fatbin", error_at(8)},
        {"fat-size-past-end.fatbin", error_at(8)},
        {"fatbin-garbage-after.fatbin", error_at(528)},
        {"fatbin-in-elf-garbage.o", error_at(592)},
        {"zip-bomb-declared-huge.whl", error_at(4)}, // 8 MB of zeros after an ELF magic
        {"zip-declared-small.whl", error_at(251)},   // the member's central header
        {"zip-nested-deep.whl", error_at(0)},
        {"zip-truncated.whl", error_at(0)},
        // hostile payloads: the headers are fine, the compressed bytes are not
        {"entry-lz4-garbage.fatbin", payload_error(1)},
        {"entry-lz4-short.fatbin", payload_error(1)},
        {"entry-zstd-lie.fatbin", payload_error(1)},
    };
    return m;
}

TEST(BinaryCorpus, EveryCorpusFileDoesWhatItsRowSays) {
    const std::filesystem::path corpus =
        std::filesystem::path(FORGE_TEST_SOURCE_DIR) / ".." / "bench" / "fuzz" / "corpus";
    replay_corpus(
        corpus, expectations(), "test_corpus.cpp",
        [](const std::string& name, const Expect& want, const std::vector<std::uint8_t>& bytes) {
            for (bool inspect : {false, true}) {
                SCOPED_TRACE(name + (inspect ? " (payloads inspected)" : " (headers)"));
                ReadOptions opts;
                opts.inspect_payloads = inspect;
                auto r = corpus_read(bytes, name, opts);
                const bool want_error = !want.entries || (inspect && want.inspected_error);
                if (!want_error) {
                    ASSERT_TRUE(r.ok()) << r.error().to_string();
                    EXPECT_EQ(entry_count(*r), static_cast<std::size_t>(*want.entries));
                    continue;
                }
                ASSERT_FALSE(r.ok()) << "read cleanly, but the file is hostile";
                EXPECT_FALSE(r.error().message.empty());
                EXPECT_EQ(r.error().file, name);
                ASSERT_TRUE(r.error().offset) << r.error().to_string();
                if (want.offset && !inspect)
                    EXPECT_EQ(*r.error().offset, *want.offset) << r.error().to_string();
            }
        });
}

} // namespace
} // namespace forge::binary::test
