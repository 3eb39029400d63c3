// forge-zip-diff: the zip reader's side of the differential against Python's zipfile
// (bench/fuzz/zip_diff.py). Reads inputs from stdin, each as an 8-byte little-endian length and
// that many bytes, and prints for each one block ending in "end": "refused: <reason>", or one line
// per file member, "<install path as hex of its UTF-8> <size> <sha256>", in central-directory
// order. Members are read as `verify` reads a wheel (binary/zip.h, for_each_zip_member: every
// member wanted, RECORD not checked: RECORD is pip's concern after the zip layer); the install
// path is zipio::install_path() of the name as pip decodes it. Many inputs per process: starting
// one per input would cost more than reading it.
#include "binary/zip.h"
#include "binary/zip_io.h"
#include "core/sha256.h"

#include <cstdint>
#include <cstdio>
#include <fmt/format.h>
#include <string>
#include <vector>

namespace {

using namespace forge;
using namespace forge::binary;

std::string hex(std::string_view s) {
    std::string out;
    out.reserve(s.size() * 2);
    for (const char c : s)
        out += fmt::format("{:02x}", static_cast<unsigned char>(c));
    return out;
}

// The whole result of one input: what verify would judge, or why it refuses.
std::string listing(const std::vector<std::uint8_t>& zip) {
    const Bytes bytes{zip.data(), zip.size(), 0};
    auto archive = zipio::Archive::open_memory(bytes);
    if (!archive) return fmt::format("refused: {}\n", archive.error().message);
    // In central-directory order, one per file member that is not empty (two members may carry
    // the same bytes as a name under different UTF-8 flags: names cannot key them).
    std::vector<std::string> digests;
    ZipOptions options;
    options.max_member_bytes = 4ull << 30; // the reader's defaults (binary/reader.h)
    options.max_total_inflated = 16ull << 30;
    const Where where{"input", std::nullopt};
    const Status walked = for_each_zip_member(
        bytes, where, options, [](const Bytes&) { return true; },
        [&](const std::string&, const Bytes& data) {
            digests.push_back(sha256_hex(data.view()));
            return ok_status();
        });
    if (!walked.ok()) return fmt::format("refused: {}\n", walked.error().message);
    std::string out;
    std::size_t next = 0;
    for (const zipio::Entry& e : archive->entries()) {
        if (e.is_directory()) continue;
        const auto path = zipio::install_path(zipio::decoded_name(e));
        if (!path || (e.size > 0 && next == digests.size()))
            return "refused: the walk and the directory disagree (driver bug)\n";
        const std::string digest = e.size > 0 ? digests[next++] : sha256_hex({});
        out += fmt::format("{} {} {}\n", hex(*path), e.size, digest);
    }
    return out;
}

bool read_exact(std::uint8_t* out, std::size_t n) {
    return std::fread(out, 1, n, stdin) == n;
}

} // namespace

int main() {
    std::vector<std::uint8_t> zip;
    for (;;) {
        std::uint8_t len[8];
        if (!read_exact(len, sizeof len)) break;
        std::uint64_t n = 0;
        for (int i = 7; i >= 0; --i)
            n = (n << 8) | len[i];
        zip.resize(n);
        if (!read_exact(zip.data(), zip.size())) {
            std::fputs("forge-zip-diff: input cut short\n", stderr);
            return 2;
        }
        std::string block = listing(zip);
        block += "end\n";
        std::fwrite(block.data(), 1, block.size(), stdout);
    }
    return std::fflush(stdout) == 0 ? 0 : 1;
}
