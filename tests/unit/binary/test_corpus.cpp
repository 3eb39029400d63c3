// Replays every file of the fuzz corpus (bench/fuzz/corpus/*) through the readers, with and
// without payload inspection: errors are fine, crashes (under ASan in CI) and hangs are not.
#include "support.h"

#include <chrono>

namespace forge::binary::test {
namespace {

TEST(BinaryCorpus, EveryCorpusFileReadsOrFailsCleanly) {
    const std::filesystem::path corpus =
        std::filesystem::path(FORGE_TEST_SOURCE_DIR) / ".." / "bench" / "fuzz" / "corpus";
    ASSERT_TRUE(std::filesystem::is_directory(corpus)) << corpus;
    int files = 0, errors = 0;
    for (const auto& d : std::filesystem::recursive_directory_iterator(corpus)) {
        if (!d.is_regular_file()) continue;
        ++files;
        const auto bytes = slurp(d.path().string());
        for (bool inspect : {false, true}) {
            ReadOptions opts;
            opts.inspect_payloads = inspect;
            opts.max_member_bytes = 64 << 20;
            opts.max_total_inflated = 256 << 20;
            const auto start = std::chrono::steady_clock::now();
            auto r =
                read_extensions_from_memory(bytes.data(), bytes.size(), d.path().filename(), opts);
            const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::steady_clock::now() - start)
                                .count();
            EXPECT_LT(ms, 5000) << d.path() << " took too long (a loop?)";
            if (!r.ok()) {
                ++errors;
                EXPECT_FALSE(r.error().message.empty());
                EXPECT_TRUE(r.error().offset) << d.path() << ": " << r.error().to_string();
                EXPECT_EQ(r.error().file, d.path().filename().string());
            }
        }
    }
    EXPECT_GT(files, 10) << "corpus is nearly empty";
    EXPECT_GT(errors, 0) << "the corpus should hold hostile files";
}

} // namespace
} // namespace forge::binary::test
