// Version spellings as users and tools write them, folded to the keys the policy tables use.
#pragma once

#include "core/result.h"

#include <string>
#include <string_view>

namespace forge::policy {

// "12.8", "12.8.1", "12.8.93", "cu128", "13" -> "12.8" / "13.0". Error (key = the text) otherwise.
Result<std::string> normalize_cuda(std::string_view text);
// "2.9", "2.9.1", "2.9.1+cu128", "2.10.0a0+git..." -> "2.9" / "2.10".
Result<std::string> normalize_torch(std::string_view text);
// "3.12", "3.12.4", "cp312" -> "3.12".
Result<std::string> normalize_python(std::string_view text);
// linux_x86_64 | linux_aarch64 | win_amd64 (also accepts manylinux_*_x86_64/aarch64 tags).
Result<std::string> normalize_platform(std::string_view text);

// The platform this binary was built for, the default wherever a platform is not given:
// linux_aarch64 on an aarch64 build host, win_amd64 on Windows, else linux_x86_64.
std::string_view host_platform();

// Numeric order of "major.minor" versions ("12.10" after "12.9"); text order for anything else.
bool version_less(std::string_view a, std::string_view b);

} // namespace forge::policy
