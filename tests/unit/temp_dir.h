// A fresh scratch directory for one test: under the test build tree (so nothing is left in /tmp),
// named after the test and the process (every GoogleTest case may run as its own process).
#pragma once

#include <filesystem>
#include <string>
#include <unistd.h>

namespace forge::test {

// `FORGE_TEST_BINARY_DIR/tmp/<name>.<pid>`, emptied and created; the canonical path, so a test
// comparing it with what the code resolves (realpath, /proc/self/exe) sees the same spelling.
inline std::filesystem::path temp_dir(const std::string& name) {
    namespace fs = std::filesystem;
    fs::path p =
        fs::path(FORGE_TEST_BINARY_DIR) / "tmp" / (name + "." + std::to_string(::getpid()));
    fs::remove_all(p);
    fs::create_directories(p);
    return fs::canonical(p);
}

} // namespace forge::test
