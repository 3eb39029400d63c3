// The bundle tests' shared sample: a bundle of two blobs, as the header and verify tests use it.
#pragma once

#include "bundle/header.h"

#include <cstdint>

namespace forge::bundle::test {

inline Bundle sample_bundle() {
    Bundle b;
    b.symbol = "cond_kernel";
    BundleBlob first{"12.8.93", {90, 100, 120}, {}};
    for (int i = 0; i < 37; ++i)
        first.data.push_back(static_cast<std::uint8_t>(i * 7 + 0x50));
    BundleBlob second{"13.0.88", {110}, {0xff, 0x00, 0x10}};
    b.blobs = {first, second};
    return b;
}

} // namespace forge::bundle::test
