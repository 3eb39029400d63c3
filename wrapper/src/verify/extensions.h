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
    // "ok" | "missing" | "no-device-code" | "unreadable" (not matched, and a file of the run
    // could not be read: whether it was built is not known)
    std::string status;
    std::string why; // unreadable: the reader's error (the one naming a matching member if any)
};

// A file of the run the reader refused, and the member its error names ("" for none).
struct UnreadFile {
    std::string file;
    std::string member;
    std::string message; // the error as printed
};

struct ExtensionsReport {
    std::vector<ModuleResult> modules;
    std::vector<std::string> missing;        // globs no module matched
    std::vector<std::string> no_device_code; // globs matched only by modules without device code
    std::vector<std::string> unreadable;     // globs not matched while a file could not be read
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

// Every expected module against the modules read (one gate report per host ELF). A module not
// found while `unread` names a file the reader refused is "unreadable", never "missing": a
// symbolic link stored under the module's name, say, is not a module that was never built.
ExtensionsReport check_extensions(const std::vector<ExpectedModule>& expected,
                                  const std::vector<ExtensionReport>& modules,
                                  const std::vector<UnreadFile>& unread = {});

// {"missing_extensions": [...], "expected_extensions": [{module, reason, device_code, source,
// matched, status}]}
nlohmann::json extensions_json(const ExtensionsReport& r);
std::string extensions_text(const ExtensionsReport& r);

} // namespace forge::verify
