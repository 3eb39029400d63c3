// The extension modules of a wheel as a stamp records them (`modules` in _build_info.json): what
// the wheel held when it was stamped, so an audit can tell that a later wheel of the same package
// lost one (a build script that skipped a module exits 0 and leaves nothing for the gate).
#pragma once

#include "binary/reader.h"
#include "core/result.h"

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace forge::provenance {

struct ModuleRecord {
    std::string module;               // the wheel member ("pkg/_C.cpython-311-x86_64-linux-gnu.so")
    std::vector<std::string> targets; // SASS with kernels and PTX, sorted
    bool device_code = false;
};

// One record per host ELF read from the wheel (kernel-less cubins are not targets).
std::vector<ModuleRecord> module_records(const std::vector<binary::Extension>& extensions);
nlohmann::json modules_json(const std::vector<ModuleRecord>& modules);
// A record's `modules`; an empty list when the record has none (stamped before modules were
// recorded). Error: `modules` present but not a list of {module, targets}.
Result<std::vector<ModuleRecord>> modules_from_record(const nlohmann::json& record,
                                                      const std::string& where);

// What identifies a module across wheels of one package: the member without the extension
// suffix setuptools adds per interpreter and platform ("pkg/_C.cpython-311-x86_64-linux-gnu.so"
// and "pkg/_C.cpython-312-aarch64-linux-gnu.so" are both "pkg/_C").
std::string module_key(std::string_view member);

} // namespace forge::provenance
