// `nvcc-forge verify-bundle`: a bundle header against a layout written by hand. The layout is
// never derived from policy/sm_toolkit.yml, so a regression in the pinning is caught instead of
// being baked into a new header.
#pragma once

#include "binary/reader.h"
#include "bundle/header.h"
#include "core/result.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace forge::bundle {

struct LayoutBlob {
    std::string toolkit;   // "12.8": the release every cubin of the blob must report
    bool or_newer = false; // written "13.0+" (docs/arch-rules.md, "Cubins from several toolkits"):
                           // that release or later
    // The layout's spelling again ("12.8", "13.0+"), for messages.
    [[nodiscard]] std::string spelled() const { return or_newer ? toolkit + "+" : toolkit; }
    [[nodiscard]] bool accepts(std::string_view release) const;
    std::vector<int> sms; // the SASS the blob must hold, exactly
    int line = 0;
};

struct BundleLayout {
    std::string file;
    std::vector<LayoutBlob> blobs; // in header order
};

// `blobs:` a list of `{toolkit: "12.8", sms: [90, 100, 120]}` ("13.0+": 13.0 or later). Errors
// carry file:line and key.
Result<BundleLayout> parse_bundle_layout(std::string_view yaml_text, const std::string& file);
Result<BundleLayout> load_bundle_layout(const std::string& path);

// Reads the entries of one blob. The default uses binary::read_extensions_from_memory with
// payload inspection (the cubin's own record of its SM and toolkit).
using BlobReader = std::function<Result<std::vector<binary::Entry>>(const BundleBlob& blob,
                                                                    const std::string& name)>;
BlobReader default_blob_reader();

struct BundleCheck {
    std::vector<std::string> mismatches; // each a full sentence naming the blob
    std::vector<std::string> passed;     // what was checked and held, for the text report
};

// Checks, blob by blob: the count of blobs; the toolkit in the header's table and the SMs baked
// in it against the layout; every embedded SASS cubin's SM and build toolkit against the layout;
// every layout SM present as SASS. An unreadable blob is an Error (exit 2); mismatches are not.
Result<BundleCheck> verify_bundle(const Bundle& bundle, const BundleLayout& layout,
                                  const std::string& header_file,
                                  const BlobReader& reader = default_blob_reader());

} // namespace forge::bundle
