// A wheel's RECORD (the binary distribution format: *.dist-info/RECORD, one CSV row
// "path,hash,size" per file, hash as "sha256=<urlsafe base64 without padding>"): parsing it, the
// hash as RECORD writes it, and one row's CSV field. The wheel reader checks every member against
// it (zip.h, ZipOptions::check_record); `stamp` writes its own row with it.
#pragma once

#include "core/result.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace forge::binary {

struct RecordRow {
    std::string path;
    std::string hash;                  // "sha256=..." as written; "" when the row has none
    std::optional<std::uint64_t> size; // nullopt when the row has none
    int line = 0;                      // 1-based, where the row starts
};

// Every row of RECORD's text (CSV as Python's csv module writes it: quoted fields, "" for a quote,
// \n or \r\n). Blank lines are skipped. Errors (with the line): a row that is not three fields, a
// size that is not a decimal number.
Result<std::vector<RecordRow>> parse_record(std::string_view text);

// The fields of one CSV row (the text of one line, without its end).
std::vector<std::string> record_fields(std::string_view line);
// One field as a RECORD row writes it: quoted when it holds a comma, a quote or a line break.
std::string record_csv_field(std::string_view s);

// "sha256=<urlsafe base64 without padding>" of a digest, or of bytes.
std::string record_hash(const std::array<std::uint8_t, 32>& sha256);
std::string record_hash(std::string_view bytes);

// Whether `name` is the RECORD of a .dist-info directory at the wheel's top
// ("x-1.0.dist-info/RECORD").
bool is_record_member(std::string_view name);

} // namespace forge::binary
