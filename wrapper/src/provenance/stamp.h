// Provenance (docs/policy.md): `nvcc-forge stamp` writes what a build asked for into the wheel
// (<package>/_build_info.json, RECORD updated) and into a ledger (JSON lines keyed by wheel
// filename), so an audit can later tell "the wheel never matched its own ask" from "the policy
// moved since". Stamping records; it never judges the wheel (that is verify's job).
#pragma once

#include "binary/wheel_record.h"
#include "core/result.h"
#include "policy/resolve.h"
#include "provenance/modules.h"

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace forge::provenance {

inline constexpr int kBuildInfoSchema = 1;
inline constexpr std::string_view kBuildInfoName = "_build_info.json";

// Reads an environment variable; tests inject their own.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;
EnvLookup process_env();

// The CI run id: the first of GITHUB_RUN_ID (with GITHUB_RUN_ATTEMPT), CI_PIPELINE_ID,
// BUILDKITE_BUILD_ID, CIRCLE_WORKFLOW_ID, BUILD_BUILDID, CODEBUILD_BUILD_ID, TRAVIS_BUILD_ID,
// BUILD_ID that is set and not empty. nullopt when none is.
struct RunId {
    std::string value;
    std::string variable; // which environment variable gave it
};
std::optional<RunId> ci_run_id(const EnvLookup& env);

// The stamp time in seconds since the epoch: SOURCE_DATE_EPOCH when set (reproducible builds;
// an error when it is not a non-negative integer), else now.
Result<std::int64_t> stamp_time(const EnvLookup& env);
std::string iso8601_utc(std::int64_t seconds); // "2026-11-30T15:58:00Z"

// A wheel filename split per the binary distribution format:
// {distribution}-{version}(-{build})?-{python}-{abi}-{platform}.whl
struct WheelName {
    std::string distribution, version, build, python, abi, platform;
};
Result<WheelName> parse_wheel_filename(std::string_view filename);

// The _build_info.json record for a resolution. `package` is the importable package dir the
// stamp goes into; `distribution` the wheel's. Keys: schema, arch_list, tokens, targets,
// list_source, allow_missing (the package's verify waivers), policy_file, policy_sha256,
// build_epoch, cuda, torch, python, platform, package, distribution, nvcc_forge_version, run_id,
// run_id_source, time, inferred (false), modules (the wheel's extension modules with their
// targets, modules.h; null with modules_error when they are unknown: stamp_wheel refuses a wheel
// it cannot read instead, older stamps in a ledger may carry it).
struct StampInputs {
    std::string package;      // importable dir in the wheel ("flash_attn")
    std::string distribution; // from the wheel filename ("flash_attn")
    std::int64_t time = 0;
    std::optional<RunId> run_id;
    std::optional<std::vector<ModuleRecord>> modules;
    std::string modules_error; // why `modules` is unknown
};
nlohmann::json make_build_info(const policy::Resolution& r, const StampInputs& in);

// What a wheel holds that stamping needs.
struct WheelLayout {
    std::string dist_info; // "pkg-1.0.dist-info"
    std::string record;    // "pkg-1.0.dist-info/RECORD"
    std::string package;   // top-level importable dir that holds the extension(s)
};

// RECORD with `member` (re)listed once with its hash and size, before RECORD's own line (whose
// hash and size stay empty). Lines for other members are kept byte for byte.
std::string update_record(std::string_view record_text, std::string_view record_member,
                          std::string_view member, std::string_view member_bytes);
// "sha256=<urlsafe base64 without padding>", as RECORD writes hashes (binary/wheel_record.h).
using binary::record_hash;

struct StampResult {
    std::string wheel;     // path
    std::string member;    // "pkg/_build_info.json"
    bool replaced = false; // a previous stamp was replaced
    nlohmann::json record;
};

// Adds (or replaces) <package>/_build_info.json in the wheel and updates RECORD. The wheel is
// rewritten into a temporary file next to it (binary/zip_io.h copies every other member without
// recompressing it, zip64 where needed), flushed, then renamed over the original. Errors (exit
// 2): not a wheel name, not a zip, a member name pip refuses or repeated, no *.dist-info/RECORD,
// a member RECORD does not list or whose size or hash differ from it, a module the reader cannot
// read (the record would not say what the wheel carries), no package directory, I/O.
Result<StampResult> stamp_wheel(const std::string& wheel_path, const policy::Resolution& r,
                                const EnvLookup& env);

// The layout of the wheel at `path` (reads the central directory only).
Result<WheelLayout> wheel_layout(const std::string& path);

// The stamp inside a wheel, if any: (member name, parsed record). Errors: unreadable zip, a
// _build_info.json that is not a JSON object.
struct StampFound {
    std::string member;
    nlohmann::json record;
};
Result<std::optional<StampFound>> read_stamp(const std::string& wheel_path);

// Appends {"wheel": filename, ...record} as one line with one O_APPEND write, so concurrent
// stampers never interleave lines.
Status append_ledger(const std::string& ledger_path, std::string_view wheel_filename,
                     const nlohmann::json& record);

} // namespace forge::provenance
