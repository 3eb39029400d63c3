#include "core/result.h"

#include "core/text.h"

#include <fmt/format.h>

namespace forge {

std::string Error::to_string() const {
    std::string out;
    if (!file.empty()) {
        out += escape_control(file);
        if (line) out += fmt::format(":{}", *line);
        if (offset) out += fmt::format(": at byte {} (0x{:x})", *offset, *offset);
        out += ": ";
    } else if (offset) {
        out += fmt::format("at byte {} (0x{:x}): ", *offset, *offset);
    }
    if (!key.empty()) out += fmt::format("'{}': ", escape_control(key));
    out += escape_control(message, /*keep_newlines=*/true);
    return out;
}

} // namespace forge
