// Reading a whole file into memory: the one place that opens, reads and reports a failure.
#pragma once

#include "core/result.h"

#include <filesystem>
#include <string>

namespace forge {

// The file's bytes, or Error{"cannot read file", path} when it cannot be opened or read.
Result<std::string> read_file(const std::filesystem::path& path);

} // namespace forge
