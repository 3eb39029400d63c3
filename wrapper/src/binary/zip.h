// Wheels and other zip files, read from memory (binary/zip_io.h): nothing is extracted to disk.
// Zip bombs: a member's declared size is checked against the limits before it is inflated, the
// inflated size must equal the declared one, and the total inflated is capped across a read.
#pragma once

#include "binary/bytes.h"
#include "core/result.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace forge::binary {

struct ZipLimits {
    std::uint64_t max_member_bytes = 0;
    std::uint64_t max_total_inflated = 0;
    std::uint64_t* inflated_total = nullptr; // running total shared by nested reads
};

// "PK\3\4" (or "PK\5\6", an empty archive).
bool has_zip_magic(const Bytes& b);

// For each member whose first bytes satisfy `wanted`, inflate it fully (within the limits) and
// call `visit(name, bytes)`. Members that are not wanted are peeked at, never inflated.
using ZipWanted = std::function<bool(const Bytes& head)>;
using ZipVisit = std::function<Status(const std::string& name, std::vector<std::uint8_t>&& data)>;
Status for_each_zip_member(const Bytes& zip, const Where& where, const ZipLimits& limits,
                           const ZipWanted& wanted, const ZipVisit& visit);

} // namespace forge::binary
