// The mark every product of `nvcc-forge plan` carries: the stand-in's stub kernel defines an
// allocated (so `strip` keeps it), used (so the compiler keeps it) variable in this ELF section,
// and the host linker carries a named section into every object, archive, shared library and
// executable built from the stub. The binary reader looks for it; `verify` refuses a marked file
// (docs/plan.md). One name, here, for both sides.
#pragma once

namespace forge {

inline constexpr const char* kPlanMarkerSection = ".nvcc_forge_plan";

} // namespace forge
