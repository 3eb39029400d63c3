// Whole-file reads and writes for tests: one home, so that two test files of one test binary
// (compiled as one unity batch in CI) never define the same helper twice.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace forge::test {

// The file's bytes; empty when it cannot be opened (a test then fails on the content it expected).
inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

// Writes `text` to `p` (creating its directory) as an executable file the owner can run.
inline void write_exe(const std::filesystem::path& p,
                      const std::string& text = "#!/bin/sh\nexit 0\n") {
    namespace fs = std::filesystem;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
    fs::permissions(p, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read);
}

} // namespace forge::test
