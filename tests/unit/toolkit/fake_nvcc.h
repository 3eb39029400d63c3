// A stand-in nvcc for the toolkit tests: a shell script that replays captured real output
// (tests/fixtures/toolkit/nvcc-X.Y/{version,help,list-gpu-code}.txt).
#pragma once

#include "../joined.h"
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace forge::toolkit_test {

inline std::string toolkit_fixtures() {
    return forge::test::joined({FORGE_TEST_FIXTURES, "/toolkit"});
}

// `with_help` false: `--help` prints nothing useful, as an nvcc whose help has no target list.
inline std::filesystem::path fake_nvcc(const std::string& version_dir, bool with_help) {
    auto dir =
        std::filesystem::temp_directory_path() / ("forge_fake_nvcc_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto path = dir / "nvcc";
    std::ofstream out(path);
    std::string fx = forge::test::joined({toolkit_fixtures(), "/", version_dir});
    out << "#!/bin/sh\ncase \"$1\" in\n"
        << "  --version) cat '" << fx << "/version.txt' ;;\n"
        << "  --help) " << (with_help ? "cat '" + fx + "/help.txt'" : "echo 'no help here'")
        << " ;;\n"
        << "  --list-gpu-code) cat '" << fx << "/list-gpu-code.txt' ;;\n"
        << "  *) exit 1 ;;\nesac\n";
    out.close();
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path;
}

} // namespace forge::toolkit_test
