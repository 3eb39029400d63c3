// The value of one nvcc `-gencode` option, "arch=compute_90,code=sm_90": the one place that
// spelling is written. Arch lists (resolve --format gencode), the wrapper's injection and `bundle`
// all emit through it (docs/nvcc-command-line.md). It lives in arch/, not nvcc/, because arch
// lists emit it and arch may not include nvcc.
#pragma once

#include "arch/arch.h"

#include <string>
#include <string_view>

namespace forge::arch {

// `code` is one target name or a bracketed list "[compute_90,lto_90]".
std::string gencode_value(const Target& virtual_arch, std::string_view code);
// The image `image` built from its own virtual arch: sm_90a <- compute_90a, lto_80 <- compute_80.
std::string gencode_value(const Target& image);

} // namespace forge::arch
