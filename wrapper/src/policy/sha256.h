// The policy's digest is the core one (core/sha256.h); the name stays for its callers.
#pragma once

#include "core/sha256.h"

namespace forge::policy {

using forge::sha256_hex;

} // namespace forge::policy
