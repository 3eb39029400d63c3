// Shared builders of the provenance tests: crafted entries and extensions.
#pragma once

#include "binary/reader.h"

#include <string>
#include <utility>
#include <vector>

namespace forge::provenance::test {

// One entry of `target` ("sm_80", "compute_90") with `kernels` kernels; an sm_ entry with none is
// a device-link stub.
inline binary::Entry entry(const std::string& target, int kernels = 1) {
    binary::Entry e;
    e.file = "x.whl";
    e.target = *arch::parse_target(target);
    e.kernels = kernels;
    e.stub = target.starts_with("sm_") && kernels == 0;
    return e;
}

} // namespace forge::provenance::test
