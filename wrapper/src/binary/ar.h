// `ar` archives (static libraries): GNU (`//` long-name table, `/N` references, `name/`) and
// BSD (`#1/N` names stored in front of the data) variants; symbol tables are skipped.
#pragma once

#include "binary/bytes.h"
#include "core/result.h"

#include <string>
#include <vector>

namespace forge::binary {

struct ArMember {
    std::string name;
    std::uint64_t header_offset = 0; // in the reported buffer
    Bytes data;
};

bool has_ar_magic(const Bytes& b); // "!<arch>\n" (thin archives "!<thin>\n" are rejected)
bool has_thin_ar_magic(const Bytes& b);

Result<std::vector<ArMember>> parse_ar(const Bytes& b, const Where& where);

} // namespace forge::binary
