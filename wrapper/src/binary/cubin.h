// What a cubin (CUDA device ELF) says about itself: SM, kernels, the toolkit that built it, the
// arch-specific `a` flag, and whether it is a kernel-less stub (docs/fatbin-format.md, "The
// cubin").
#pragma once

#include "binary/bytes.h"
#include "binary/elf.h"
#include "binary/reader.h"
#include "core/result.h"

#include <optional>
#include <string>
#include <vector>

namespace forge::binary {

struct CubinInfo {
    int sm = 0;                         // from e_flags (layout by EI_ABIVERSION)
    bool nvlink_stub = false;           // e_flags top byte 0x05 (new ABI): nvlink device-link stub
    int kernels = 0;                    // `.text.*` sections
    std::optional<bool> arch_specific;  // `.nv.compat` attribute 9 (or the old-ABI e_flags bit)
    std::optional<std::string> toolkit; // "13.0": tkinfo release, else cuinfo, else API version
    // The target the last tool was asked for, from the tkinfo options ("-arch sm_100f"): the only
    // place a bare cubin records a family `f` target.
    std::optional<std::string> tool_arch;
    [[nodiscard]] bool stub() const { return nvlink_stub || kernels == 0; }
};

// Header-level facts only (ELF header and section table, no note parsing).
Result<CubinInfo> inspect_cubin_headers(const Bytes& cubin, const Where& where);
// Everything, including the toolkit notes; `cubin` must be the whole (decompressed) image.
Result<CubinInfo> inspect_cubin(const Bytes& cubin, const Where& where);

// Decompresses a fatbin payload; the result must be exactly `uncompressed_size` bytes.
Result<std::vector<std::uint8_t>> decompress_payload(const Bytes& stream, Compression c,
                                                     std::uint64_t uncompressed_size,
                                                     std::uint64_t limit, const Where& where);

} // namespace forge::binary
