#include "frontend/shim.h"

#include "toolkit/locate.h"

#include <fmt/format.h>
#include <fstream>

namespace forge::frontend {

namespace fs = std::filesystem;

namespace {

Status symlink_to(const fs::path& target, const fs::path& link) {
    std::error_code ec;
    fs::remove(link, ec);
    fs::create_symlink(target, link, ec);
    if (ec)
        return Error{fmt::format("cannot create symlink -> {}: {}", target.string(), ec.message()),
                     link.string()};
    return ok_status();
}

} // namespace

bool is_shim(const fs::path& dir) {
    std::error_code ec;
    return fs::is_regular_file(dir / "bin" / toolkit::kRealNvccMarker, ec);
}

Status make_shim(const ShimPlan& plan) {
    std::error_code ec;
    fs::path real_root = fs::canonical(plan.cuda_home, ec);
    if (ec) return Error{fmt::format("not a directory: {}", ec.message()), plan.cuda_home.string()};
    fs::path real_nvcc = real_root / "bin" / "nvcc";
    if (!toolkit::usable_nvcc(real_nvcc, plan.wrapper))
        return Error{"no usable bin/nvcc in the CUDA root (missing, not executable, or the "
                     "wrapper itself)",
                     plan.cuda_home.string()};
    real_nvcc = fs::canonical(real_nvcc, ec);
    fs::path out = fs::absolute(plan.out, ec);
    if (fs::exists(out, ec)) {
        if (!fs::is_directory(out, ec)) return Error{"exists and is not a directory", out.string()};
        if (!fs::is_empty(out, ec) && !is_shim(out))
            return Error{"exists, is not empty and is not an nvcc-forge shim; refusing to touch it",
                         out.string()};
        if (fs::equivalent(out, real_root, ec)) return Error{"is the real CUDA root", out.string()};
    }
    fs::create_directories(out / "bin", ec);
    if (ec) return Error{fmt::format("cannot create: {}", ec.message()), (out / "bin").string()};

    // Refresh: drop what a previous shim made (links only, and our marker), keep nothing stale.
    for (const auto& dir : {out, out / "bin"}) {
        for (const auto& e : fs::directory_iterator(dir, ec)) {
            if (e.is_symlink(ec)) fs::remove(e.path(), ec);
        }
    }
    for (const auto& e : fs::directory_iterator(real_root, ec)) {
        const fs::path name = e.path().filename();
        if (name == "bin") continue;
        FORGE_TRY_STATUS(symlink_to(real_root / name, out / name));
    }
    for (const auto& e : fs::directory_iterator(real_root / "bin", ec)) {
        const fs::path name = e.path().filename();
        if (name == "nvcc" || name == toolkit::kRealNvccMarker) continue;
        FORGE_TRY_STATUS(symlink_to(real_root / "bin" / name, out / "bin" / name));
    }
    FORGE_TRY_STATUS(symlink_to(plan.wrapper, out / "bin" / "nvcc"));
    const fs::path marker = out / "bin" / toolkit::kRealNvccMarker;
    const fs::path tmp = marker.string() + ".tmp";
    {
        std::ofstream f(tmp, std::ios::trunc);
        f << real_nvcc.string() << '\n';
        if (!f.flush()) return Error{"cannot write", tmp.string()};
    }
    fs::rename(tmp, marker, ec);
    if (ec) return Error{fmt::format("cannot write: {}", ec.message()), marker.string()};
    return ok_status();
}

std::string shell_quote(std::string_view s) {
    std::string out = "'";
    for (char c : s) {
        if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    out += "'";
    return out;
}

} // namespace forge::frontend
