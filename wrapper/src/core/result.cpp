#include "core/result.h"

#include <fmt/format.h>

namespace forge {

std::string Error::to_string() const {
    std::string out;
    if (!file.empty()) {
        out += file;
        if (line) out += fmt::format(":{}", *line);
        if (offset) out += fmt::format(": at byte {} (0x{:x})", *offset, *offset);
        out += ": ";
    } else if (offset) {
        out += fmt::format("at byte {} (0x{:x}): ", *offset, *offset);
    }
    if (!key.empty()) out += fmt::format("'{}': ", key);
    out += message;
    return out;
}

} // namespace forge
