// Finding the real nvcc behind the wrapper, without ever finding the wrapper itself.
// Files are compared by identity (device + inode of the resolved file), never by name: a PATH
// entry named `nvcc` may be a symlink to this binary, a copy of it under another name is caught by
// the recursion marker instead (see kDepthEnv).
#pragma once

#include "core/result.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace forge::toolkit {

// Set in the environment of every nvcc the wrapper runs. A wrapper that starts with it set — by a
// wrapper still running above it — is already inside a wrapper: it runs the real nvcc untouched;
// at depth >= kMaxDepth it refuses.
inline constexpr const char* kDepthEnv = "NVCC_FORGE_DEPTH";
inline constexpr int kMaxDepth = 2;

// The marker's value, "<depth>:<pid>:<start>": the depth of the wrapper that set it, its pid and
// its start time (field 22 of /proc/<pid>/stat, fixed across exec). Only a wrapper of this very
// call chain can have set a value whose pid is this process or one of its ancestors and whose
// start time matches; a value inherited from elsewhere (a dumped environment, a stale marker of
// a finished build, `1`, `abc`) cannot pass, since that pid is gone, reused or not above us.
// Without /proc (nothing to verify against) a well-formed marker is trusted as before, so that
// the recursion stop still holds.
std::string depth_marker(int depth); // set by this process
// The marker `pid` would have set; nullopt when /proc does not know the pid.
std::optional<std::string> depth_marker_for(int depth, long pid);

struct DepthReading {
    int depth = 0;        // 0: the outermost wrapper of this call chain
    bool ignored = false; // set, but not by a wrapper of this call chain: warn, apply the policy
};
// Reads the marker's value ("" = unset).
DepthReading read_depth_marker(const std::string& value);

// A shim's bin/ (and any directory holding an `nvcc` symlink to the wrapper) may name the real
// nvcc in this file: one line, an absolute path.
inline constexpr const char* kRealNvccMarker = ".nvcc-forge-real";

// The real nvcc a marker in `dir` names, as written; nullopt without a marker.
std::optional<std::filesystem::path> marker_target(const std::filesystem::path& dir);

// What the front end reads of /proc/<pid>/stat: the parent, the start time (field 22, fixed
// across exec) and the command name (comm: the file name, at most 15 bytes). nullopt when /proc
// does not know the pid.
struct ProcessInfo {
    long ppid = 0;
    unsigned long long start = 0;
    std::string comm;
};
std::optional<ProcessInfo> process_info(long pid);

// Where a CUDA root (a shim's too) keeps its nvcc: <root>/bin/nvcc.
inline std::filesystem::path nvcc_in_root(const std::filesystem::path& root) {
    return root / "bin" / "nvcc";
}
// The toolkit root when nothing names one.
inline constexpr const char* kDefaultCudaRoot = "/usr/local/cuda";
// $CUDA_HOME when set and not empty, else kDefaultCudaRoot (`shim` without --cuda-home).
std::filesystem::path default_cuda_root();

struct LocateInput {
    std::string argv0;          // as invoked ("nvcc", "/opt/shim/bin/nvcc")
    std::string real_nvcc_env;  // NVCC_FORGE_REAL_NVCC ("" if unset)
    std::string path_env;       // PATH
    std::string cuda_home_env;  // CUDA_HOME
    std::filesystem::path self; // this binary, resolved (/proc/self/exe)
    std::string default_cuda_bin = nvcc_in_root(kDefaultCudaRoot).string();
};

struct Located {
    // Resolved (symlinks followed): what recursion and identity checks compare; the toolkit probe
    // and its cache key use it.
    std::filesystem::path nvcc;
    std::string how; // "NVCC_FORGE_REAL_NVCC", "PATH", "marker <file>", ...
    // The path as found, as the caller spelled it (the variable's value, the marker's line, the
    // PATH entry's dir/nvcc, the launcher argument): what is exec'd, with it as argv[0]. nvcc
    // derives its toolkit root from argv[0], so a resolved path would change -E/-M/--dryrun
    // output, depfiles and cache keys against calling nvcc directly.
    std::filesystem::path found;
};

// What to exec, with it as argv[0]: `found`, except where nvcc could not find its toolkit by that
// name (a file symlink named nvcc in a directory without nvcc.profile, which the resolved path
// has): then the resolved path, which is what made such a setup work before.
std::filesystem::path exec_path(const Located& located);

// Same file (after symlinks), by device and inode.
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);
// An executable regular file (after symlinks) that is not `self`.
bool usable_nvcc(const std::filesystem::path& candidate, const std::filesystem::path& self);

// The directory the wrapper was started from: dirname(argv0) when it has a slash, else the first
// PATH entry whose `nvcc` is this binary. Empty when unknown.
std::filesystem::path invocation_dir(const LocateInput& in);

// NVCC_FORGE_REAL_NVCC, else the marker beside the invoked symlink, else the next `nvcc` on PATH
// that is not this binary, else $CUDA_HOME/bin/nvcc, else /usr/local/cuda/bin/nvcc. The error
// lists every place looked at and why each was rejected.
Result<Located> locate_real_nvcc(const LocateInput& in);

// Resolves a command name as execvp would (a name with a slash is taken as is), skipping `self`:
// `found` is the name with a slash or the PATH entry's dir/name, `nvcc` its resolved file.
std::optional<Located> find_on_path(const std::string& name, const std::string& path_env,
                                    const std::filesystem::path& self);

// A command name as execvp resolves it on `path_env`: a name with a slash as is, else the first
// PATH entry holding an executable regular file of that name. Skips nothing: for running a build
// command (plan), whose `nvcc` may well be the wrapper.
std::optional<std::filesystem::path> find_command(const std::string& name,
                                                  const std::string& path_env);

// For the tools (`resolve` without --cuda, ...): locate_real_nvcc from this process's environment,
// with the front end's binary (core/paths.h wrapper_exe) as the one never to pick, and no marker
// (the tools are not started as `nvcc`). Returns the path as found. Errors (exit 2) keyed
// NVCC_FORGE_REAL_NVCC when that variable names no usable nvcc, else keyed "nvcc".
// `cuda_option_helps`: the message may suggest --cuda instead (not for `plan`, which compiles
// with the real nvcc whatever --cuda says).
Result<std::filesystem::path> find_real_nvcc(bool cuda_option_helps = true);

} // namespace forge::toolkit
