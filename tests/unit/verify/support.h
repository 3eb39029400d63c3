// Shared builders of the verify tests: crafted fatbin entries.
#pragma once

#include "binary/reader.h"

#include <string_view>

namespace forge::verify::test {

// One entry of `name` ("sm_80", "compute_90") in ext.so's .nv_fatbin. kernels: cubins count
// .text.* sections, PTX its .entry directives (PTX without one is no device code, as a
// kernel-less cubin); `stub`: a device-link stub.
inline binary::Entry entry(std::string_view name, int kernels = 1, bool stub = false) {
    binary::Entry e;
    e.file = "ext.so";
    e.section = ".nv_fatbin";
    e.target = *arch::parse_target(name);
    e.kernels = kernels;
    e.stub = stub;
    return e;
}

} // namespace forge::verify::test
