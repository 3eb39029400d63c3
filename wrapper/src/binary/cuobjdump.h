// The optional cuobjdump backend: runs NVIDIA's cuobjdump (no shell) and turns its listing into
// the same Entry rows, and the model of cuobjdump's rules used to cross-check the native reader.
#pragma once

#include "binary/reader.h"
#include "core/result.h"

#include <optional>
#include <string>
#include <vector>

namespace forge::binary {

// Finds cuobjdump: `explicit_path` (--cuobjdump), env NVCC_FORGE_CUOBJDUMP, PATH, then a
// pip-installed nvidia-cuda-cuobjdump wheel (nvidia/cuda_cuobjdump/bin or nvidia/cu*/bin) in
// the site-packages directories near the python interpreters on PATH, PYTHONPATH, VIRTUAL_ENV
// and CONDA_PREFIX. Error when none is found.
Result<std::string>
locate_cuobjdump(const std::optional<std::string>& explicit_path = std::nullopt);

// Parses `cuobjdump --list-elf --list-ptx` output ("ELF file    1: x.1.sm_80.cubin", "PTX file
// 1: x.1.sm_90a.ptx", "member /p/libx.a:k.o:"). `section` is set to cuobjdump's own image name.
Result<std::vector<Entry>> parse_cuobjdump_listing(const std::string& output,
                                                   const std::string& file);

// Runs `cuobjdump --list-elf --list-ptx [-all] FILE` and parses it.
Result<std::vector<Entry>> read_entries_cuobjdump(const std::string& cuobjdump,
                                                  const std::string& path, bool all_fatbins);

// What cuobjdump would list for these native entries: per ELF (file or archive member), only the
// executable fatbin (.nv_fatbin) when it has one, unless `all_fatbins`; no LTO-IR, nothing
// embedded outside the registered sections (Found::Embedded); cubins named
// without their family `f` (sm_100f -> sm_100); PTX keeps its suffix.
std::vector<arch::Target> cuobjdump_view(const std::vector<Entry>& native, bool all_fatbins);

// Every difference between the native view and cuobjdump's listing, as multisets of targets
// ("sm_80: native 3, cuobjdump 2"); empty when they agree.
std::vector<std::string> compare_with_cuobjdump(const std::vector<Entry>& native,
                                                const std::vector<Entry>& cuobjdump,
                                                bool all_fatbins);

} // namespace forge::binary
