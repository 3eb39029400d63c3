#include "arch/gencode.h"

#include <fmt/format.h>

namespace forge::arch {

std::string gencode_value(const Target& virtual_arch, std::string_view code) {
    return fmt::format("arch={},code={}", virtual_arch.name(), code);
}

std::string gencode_value(const Target& image) {
    return gencode_value(Target{Kind::Ptx, image.sm, image.suffix}, image.name());
}

} // namespace forge::arch
