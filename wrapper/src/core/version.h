// The one parser of a CUDA version written as "X.Y" or "X.Y.Z" (nvcc's --version, a cubin's tool
// note, policy and bundle files, --max-toolkit). It lives in core, not beside toolkit's
// CudaVersion, because binary/ reads the version of a cubin's note and may not include toolkit/.
#pragma once

#include "core/result.h"

#include <cstddef>
#include <optional>
#include <string_view>

namespace forge {

struct DottedVersion {
    int major = 0, minor = 0;
    std::optional<int> patch; // "X.Y.Z" only
};

// The whole of `text` is "X.Y" or "X.Y.Z" (or "X.Y" only with allow_patch false): ASCII digits,
// each part small enough for an int. Otherwise an Error naming the text (key = the text): a part
// too long ("99999999999.0") is refused here, never thrown from a conversion.
Result<DottedVersion> parse_cuda_version(std::string_view text, bool allow_patch = true);

// The "X.Y" or "X.Y.Z" that `text` starts with, and how many characters it takes; nullopt when
// text does not start with one (digits, a dot, digits) or a part does not fit an int.
struct LeadingVersion {
    DottedVersion version;
    std::size_t length = 0;
};
std::optional<LeadingVersion> leading_cuda_version(std::string_view text);

} // namespace forge
