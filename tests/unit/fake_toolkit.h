// A probed toolkit made up for a test: its version line and the SMs it can emit, no nvcc run.
#pragma once

#include "arch/arch.h"
#include "toolkit/probe.h"

#include <string>
#include <vector>

namespace forge::test {

inline arch::Target sass(int sm, arch::Suffix s = arch::Suffix::None) {
    return {arch::Kind::Sass, sm, s};
}

// `version` is what `nvcc --version` prints; `path` stands for its nvcc.
inline toolkit::Toolkit fake_toolkit(const std::string& version, const std::vector<int>& sms,
                                     const std::string& path) {
    toolkit::Toolkit tk;
    tk.version = toolkit::parse_version_text(version).value();
    tk.nvcc = path;
    for (int sm : sms)
        tk.emittable.insert(sass(sm));
    return tk;
}

} // namespace forge::test
