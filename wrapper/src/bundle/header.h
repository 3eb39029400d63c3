// The C header `nvcc-forge bundle` writes: one byte array per toolkit's fatbin plus a lookup
// table (toolkit version, SMs, pointer, size). Deterministic: no timestamps, no paths, so the same
// fatbins always give the same bytes. parse_bundle_header() reads exactly this format back, and
// tolerates any re-wrapping of whitespace (clang-format on a committed header).
#pragma once

#include "core/result.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace forge::bundle {

struct BundleBlob {
    std::string toolkit;            // full version of the toolkit that built it: "12.8.93"
    std::vector<int> sms;           // ascending
    std::vector<std::uint8_t> data; // the fatbin
};

struct Bundle {
    std::string symbol;            // C identifier prefixing every name in the header
    std::vector<BundleBlob> blobs; // in lookup order
};

bool is_c_identifier(std::string_view s);

// Errors: a symbol that is not a C identifier, a bundle without blobs, an empty blob.
Result<std::string> render_bundle_header(const Bundle& bundle);

// Errors carry the file and line: a token the format does not allow, a table entry naming an
// array that is not defined, sizes or SM counts that disagree, an array no entry uses.
Result<Bundle> parse_bundle_header(std::string_view text, const std::string& file);

} // namespace forge::bundle
