// A stand-in for the wrapper binary and a real nvcc beside it: the tree the tests of finding the
// real nvcc (toolkit/test_locate.cpp) and of the shadow CUDA root (frontend/test_shim.cpp) share.
#pragma once

#include "files.h"
#include "temp_dir.h"
#include "toolkit/locate.h"

#include <filesystem>
#include <string>

namespace forge::test {

// A stand-in for the wrapper binary: a file, with `nvcc` symlinks to it.
struct Layout {
    std::filesystem::path root, self, wrapdir, realdir;
    explicit Layout(const std::string& name) {
        root = temp_dir(name);
        self = root / "forge" / "nvcc-forge";
        write_exe(self);
        wrapdir = root / "wrap";
        std::filesystem::create_directories(wrapdir);
        std::filesystem::create_symlink(self, wrapdir / "nvcc");
        realdir = root / "cuda" / "bin";
        write_exe(realdir / "nvcc");
    }
    toolkit::LocateInput input(const std::string& path_env) const {
        toolkit::LocateInput in;
        in.argv0 = "nvcc";
        in.path_env = path_env;
        in.self = self;
        in.default_cuda_bin = "";
        return in;
    }
};

} // namespace forge::test
