// release_pages() drops mapped pages from the resident set; it must never change what is read,
// and must leave memory that is not a live MappedFile alone (MADV_DONTNEED on heap memory would
// zero it).
#include "binary/mapped_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <vector>

using namespace forge::binary;

TEST(ReleasePages, MappedDataReadsTheSameAfterRelease) {
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<char> content(page * 8 + 123);
    for (std::size_t i = 0; i < content.size(); ++i)
        content[i] = static_cast<char>(i * 7 + 3);
    auto path =
        std::filesystem::temp_directory_path() / ("forge-release-" + std::to_string(::getpid()));
    {
        std::ofstream(path, std::ios::binary)
            .write(content.data(), static_cast<std::streamsize>(content.size()));
    }
    auto f = MappedFile::open(path.string());
    ASSERT_TRUE(f.ok());
    const auto b = f->bytes();
    ASSERT_EQ(b.size(), content.size());
    release_pages(b.data() + 1, b.size() - 2); // unaligned ends: only whole pages inside go
    for (std::size_t i = 0; i < content.size(); ++i)
        ASSERT_EQ(static_cast<char>(b.data()[i]), content[i]) << "byte " << i;
    std::filesystem::remove(path);
}

TEST(ReleasePages, HeapMemoryIsLeftAlone) {
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<std::uint8_t> heap(page * 16, 0xAB);
    release_pages(heap.data(), heap.size());
    for (std::size_t i = 0; i < heap.size(); ++i)
        ASSERT_EQ(heap[i], 0xAB) << "byte " << i;
}
