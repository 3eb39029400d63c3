// Wheels and other zip files, read without extracting anything to a named file (binary/zip_io.h).
// Zip bombs: a member's declared size is checked against the limits before it is inflated, the
// inflated size must equal the declared one, and the total inflated is capped across a read.
// Memory: a member up to `spill_above` bytes is inflated into memory; a larger one is inflated as
// a stream into an unnamed temporary file that the readers see mapped (SpillFile), so what stays
// resident does not grow with the member (docs/wheels.md).
#pragma once

#include "binary/bytes.h"
#include "core/result.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace forge::binary {

struct ZipOptions {
    std::uint64_t max_member_bytes = 0;
    std::uint64_t max_total_inflated = 0;
    std::uint64_t* inflated_total = nullptr; // running total shared by nested reads
    std::uint64_t spill_above = std::uint64_t{64} << 20;
    // Check every member against the wheel's *.dist-info/RECORD (a zip with none is not checked):
    // each member listed, with its size and its sha256. Every member is then inflated whole once.
    bool check_record = false;
};

// "PK\3\4" (or "PK\5\6", an empty archive).
bool has_zip_magic(const Bytes& b);

// For each member whose first bytes satisfy `wanted`, inflate it fully (within the limits) and
// call `visit(name, bytes)` (valid during the call only; offsets within the member). Members that
// are not wanted are peeked at, never kept. A symbolic link stored under a library's name (.so,
// .so.N, .pyd, .dll) is an error: what pip installs there is a small file holding the link's
// target.
using ZipWanted = std::function<bool(const Bytes& head)>;
using ZipVisit = std::function<Status(const std::string& name, const Bytes& data)>;
Status for_each_zip_member(const Bytes& zip, const Where& where, const ZipOptions& options,
                           const ZipWanted& wanted, const ZipVisit& visit);

} // namespace forge::binary
