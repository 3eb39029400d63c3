// SHA-256 (FIPS 180-4), small and dependency-free: the policy hash and cell keys need a stable
// digest, and no module links a crypto library.
#pragma once

#include <string>
#include <string_view>

namespace forge::policy {

std::string sha256_hex(std::string_view data); // lowercase hex, 64 characters

} // namespace forge::policy
