// libFuzzer target: the zip/wheel reader (binary/zip_io over memory, size limits, nested members,
// member names, RECORD, large members spilled to a temporary file).
// Inputs that are not zips are made into one: the bytes become a stored member, so the fuzzer
// also explores what lies inside wheels.
#include "binary/reader.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>
#include <zlib.h>

namespace {

void put16(std::vector<std::uint8_t>& v, std::uint16_t x) {
    v.insert(v.end(), {std::uint8_t(x), std::uint8_t(x >> 8)});
}
void put32(std::vector<std::uint8_t>& v, std::uint32_t x) {
    put16(v, static_cast<std::uint16_t>(x));
    put16(v, static_cast<std::uint16_t>(x >> 16));
}

// The fields a zip's local header and its central directory entry share, from "version needed"
// on: a stored member, no extra field, time and date 0.
void put_common_fields(std::vector<std::uint8_t>& z, std::uint32_t crc, std::uint32_t size,
                       std::uint16_t name_len) {
    put16(z, 20); // version needed to extract: 2.0
    put16(z, 0);  // flags
    put16(z, 0);  // method: stored
    put16(z, 0);  // time
    put16(z, 0);  // date
    put32(z, crc);
    put32(z, size); // compressed
    put32(z, size); // uncompressed
    put16(z, name_len);
    put16(z, 0); // extra field length
}

// A one-member stored zip around `data`, with a correct CRC so that the reader hands it over.
std::vector<std::uint8_t> wrap(const std::uint8_t* data, std::size_t size) {
    const char name[] = "pkg/_C.so";
    const std::uint16_t n = sizeof(name) - 1;
    std::vector<std::uint8_t> z;
    const auto crc = static_cast<std::uint32_t>(::crc32(0L, data, static_cast<uInt>(size)));
    const auto size32 = static_cast<std::uint32_t>(size);
    put32(z, 0x04034b50); // local file header
    put_common_fields(z, crc, size32, n);
    z.insert(z.end(), name, name + n);
    z.insert(z.end(), data, data + size);
    const auto cd = static_cast<std::uint32_t>(z.size());
    put32(z, 0x02014b50); // central directory entry
    put16(z, 20);         // version made by
    put_common_fields(z, crc, size32, n);
    put16(z, 0); // comment length
    put16(z, 0); // disk number
    put16(z, 0); // internal attributes
    put32(z, 0); // external attributes
    put32(z, 0); // local header's offset
    z.insert(z.end(), name, name + n);
    const auto cd_size = static_cast<std::uint32_t>(z.size()) - cd;
    put32(z, 0x06054b50);
    put16(z, 0);
    put16(z, 0);
    put16(z, 1);
    put16(z, 1);
    put32(z, cd_size);
    put32(z, cd);
    put16(z, 0);
    return z;
}

void read(const std::uint8_t* data, std::size_t size) {
    forge::binary::ReadOptions opts;
    opts.max_member_bytes = 16u << 20;
    opts.max_total_inflated = 64u << 20;
    // As `list` reads (members above 1 MiB through the spill file), then as `verify` does
    // (RECORD checked, payloads inspected).
    opts.spill_member_bytes = 1u << 20;
    for (bool verify : {false, true}) {
        opts.check_record = verify;
        opts.inspect_payloads = verify;
        auto r = forge::binary::read_extensions_from_memory(data, size, "fuzz.whl", opts);
        if (!r.ok() && !r.error().offset) __builtin_trap();
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size >= 4 && std::memcmp(data, "PK", 2) == 0) {
        read(data, size);
    } else {
        auto z = wrap(data, size);
        read(z.data(), z.size());
    }
    return 0;
}
