// Expected extensions (docs/policy.md, `verify.extensions`): the modules a wheel must contain. The
// per-module gate judges only what was built; a build script that silently skips a module leaves
// nothing for it to judge, so the list of what must exist is stated up front and checked here.
#pragma once

#include "verify/gate.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace forge::verify {

struct ExpectedModule {
    std::string glob;        // core/glob.h dialect, relative to the wheel root
    std::string reason;      // "" for --expect-extension
    bool device_code = true; // false: a host-only module is expected
    std::string source;      // "--expect-extension", "packages/x/arch_override.yml:12"
};

struct ModuleResult {
    ExpectedModule expected;
    std::vector<std::string> matched; // "pkg/_x.so" (wheel member) or the file as given
    std::string status;               // "ok" | "missing" | "no-device-code"
};

struct ExtensionsReport {
    std::vector<ModuleResult> modules;
    std::vector<std::string> missing;        // globs no module matched
    std::vector<std::string> no_device_code; // globs matched only by modules without device code
    Check check;                             // "extensions"
    bool pass() const { return check.ok; }
};

// A wheel member is matched against the glob rooted at the wheel root; a file given directly is
// matched unrooted (its path is relative to wherever the build put it).
bool module_matches(const std::string& glob, const std::string& file,
                    const std::optional<std::string>& member);

// True when an entry with `device_code: false` names this module: its gate then accepts a module
// without device code, as allow_pure_python does for a whole package.
bool expected_host_only(const std::vector<ExpectedModule>& expected, const std::string& file,
                        const std::optional<std::string>& member);

// Every expected module against the modules read (one gate report per host ELF).
ExtensionsReport check_extensions(const std::vector<ExpectedModule>& expected,
                                  const std::vector<ExtensionReport>& modules);

// {"missing_extensions": [...], "expected_extensions": [{module, reason, device_code, source,
// matched, status}]}
nlohmann::json extensions_json(const ExtensionsReport& r);
std::string extensions_text(const ExtensionsReport& r);

} // namespace forge::verify
