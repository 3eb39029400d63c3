// The table the gate judges with, the shipped policy/gpus.yml: what the front end's compare and
// decide() are tested with.
#pragma once

#include "../joined.h"
#include "policy/policy_file.h"

#include <vector>

namespace forge::test {

inline const std::vector<arch::Gpu>& shipped_gpus() {
    static const std::vector<arch::Gpu> table =
        *policy::load_gpus(joined({FORGE_TEST_SOURCE_DIR, "/../policy/gpus.yml"}));
    return table;
}

} // namespace forge::test
