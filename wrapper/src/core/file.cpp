#include "core/file.h"

#include <fstream>
#include <sstream>

namespace forge {

Result<std::string> read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Error{"cannot read file", path.string()};
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) return Error{"cannot read file", path.string()};
    return ss.str();
}

} // namespace forge
