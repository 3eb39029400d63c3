#include "frontend/shim.h"

#include "core/file.h"
#include "core/file_stamp.h"
#include "core/sha256.h"
#include "frontend/settings.h"
#include "toolkit/locate.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

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

// A point in 2000-2030 drawn from the identity: a real time (tools that compare it with "now"
// see nothing odd), different for every identity.
timespec identity_mtime(const std::string& identity) {
    const std::string hex = sha256_hex(identity).substr(0, 15);
    const unsigned long long h = std::stoull(hex, nullptr, 16);
    constexpr long long kY2000 = 946684800, kSpan = 30LL * 365 * 24 * 3600;
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(kY2000 + static_cast<long long>(h % kSpan));
    ts.tv_nsec = static_cast<long>((h / kSpan) % 1000000000ULL);
    return ts;
}

// What the bound copy is to a cache: its settings and the nvcc-forge it is a copy of, by the
// wrapper's size and mtime from core/file_stamp.h's stamp. Not its device, inode or ctime, which a
// copy that keeps the mtime (`cp -p`, another mount of one image) changes while the wrapper is the
// same: the copy's mtime, drawn from this, is what ccache's compiler_check=mtime keys on.
Result<std::string> bound_identity(const fs::path& wrapper,
                                   const std::vector<std::string>& settings) {
    struct stat st {};
    if (::stat(wrapper.c_str(), &st) != 0)
        return Error{"cannot stat the wrapper", wrapper.string()};
    const FileStamp stamp = stamp_of(st);
    // Seconds and nanoseconds as stat(2) gives them (floored: a time before 1970 too).
    constexpr std::int64_t kNs = 1000000000;
    const std::int64_t sec = stamp.mtime_ns / kNs - (stamp.mtime_ns % kNs < 0 ? 1 : 0);
    return fmt::format("{}|{}|{}.{}", shim_trailer(settings), stamp.size, sec,
                       stamp.mtime_ns - sec * kNs);
}

Status copy_with_trailer(const fs::path& wrapper, const fs::path& nvcc,
                         const std::vector<std::string>& settings) {
    auto bytes = read_file(wrapper);
    if (!bytes) return Error{"cannot read the wrapper", wrapper.string()};
    for (const auto& a : settings)
        FORGE_TRY_STATUS(check_setting_value(a, "the shim's settings"));
    auto identity = bound_identity(wrapper, settings);
    if (!identity) return identity.error();
    const timespec mtime = identity_mtime(*identity);
    return replace_file(nvcc, *bytes + shim_trailer(settings), 0755, &mtime);
}

// bin/.nvcc-forge-policy: the settings as text, rewritten only when they change. Build systems
// compare times, not identities: this file, not the copy's (drawn, often older) mtime, is what a
// build's objects depend on to be rebuilt after a rebinding (ForgeArch's OBJECT_DEPENDS).
Status write_policy_file(const fs::path& file, const std::vector<std::string>& settings) {
    std::string text;
    for (const auto& s : settings)
        text += s + "\n";
    std::error_code ec;
    if (settings.empty()) {
        fs::remove(file, ec);
        return ok_status();
    }
    std::ifstream in(file, std::ios::binary);
    std::ostringstream old;
    old << in.rdbuf();
    if (in && old.str() == text) return ok_status();
    return replace_file(file, text);
}

} // namespace

Status bind_shim(const fs::path& dir, const fs::path& wrapper,
                 const std::vector<std::string>& settings) {
    const fs::path nvcc = toolkit::nvcc_in_root(dir);
    FORGE_TRY_STATUS(settings.empty() ? symlink_to(wrapper, nvcc)
                                      : copy_with_trailer(wrapper, nvcc, settings));
    return write_policy_file(dir / "bin" / kShimPolicyFile, settings);
}

bool is_shim(const fs::path& dir) {
    std::error_code ec;
    return fs::is_regular_file(dir / "bin" / toolkit::kRealNvccMarker, ec);
}

Status make_shim(const ShimPlan& plan) {
    std::error_code ec;
    fs::path real_root = fs::canonical(plan.cuda_home, ec);
    if (ec) return Error{fmt::format("not a directory: {}", ec.message()), plan.cuda_home.string()};
    fs::path real_nvcc = toolkit::nvcc_in_root(real_root);
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
    FORGE_TRY_STATUS(bind_shim(out, plan.wrapper, plan.settings));
    return replace_file(out / "bin" / toolkit::kRealNvccMarker, real_nvcc.string() + "\n");
}

Result<fs::path> bind_policy_shim(const fs::path& root_in, const fs::path& wrapper,
                                  const std::vector<std::string>& settings) {
    fs::path root = root_in.lexically_normal();
    if (!root.has_filename()) root = root.parent_path(); // "DIR/"
    if (root.parent_path().filename() == kBoundShimsDir &&
        is_shim(root.parent_path().parent_path()))
        root = root.parent_path().parent_path();
    const auto real = toolkit::marker_target(root / "bin");
    if (!real || real->empty())
        return Error{"the shim's marker names no real nvcc", (root / "bin").string()};
    auto identity = bound_identity(wrapper, settings);
    if (!identity) return identity.error();
    const fs::path shims = root / kBoundShimsDir;
    const fs::path dest = shims / sha256_hex(*identity + "|" + real->string()).substr(0, 16);
    if (is_shim(dest)) return dest;
    std::error_code ec;
    fs::create_directories(shims, ec);
    if (ec) return Error{fmt::format("cannot create: {}", ec.message()), shims.string()};
    // A fresh directory of a random name (not .tmp-<name>-<pid>, which another process could
    // have made first): the shim is built in it, then renamed into place.
    auto made = create_unique_dir(shims, fmt::format(".tmp-{}-", dest.filename().string()), 0755);
    if (!made) return made.error();
    const fs::path& tmp = *made;
    ShimPlan plan{real->parent_path().parent_path(), tmp, wrapper, settings};
    if (auto st = make_shim(plan); !st) {
        fs::remove_all(tmp, ec);
        return st.error();
    }
    // Another binder of the same policy may have won: its shim is this one.
    fs::rename(tmp, dest, ec);
    if (ec) {
        std::error_code ignored;
        fs::remove_all(tmp, ignored);
        if (!is_shim(dest))
            return Error{fmt::format("cannot move the bound shim into place: {}", ec.message()),
                         dest.string()};
    }
    return dest;
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
