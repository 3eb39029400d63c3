// Shared fixtures paths and small helpers for the policy tests.
#pragma once

#include "../joined.h"
#include "policy/package.h"
#include "policy/policy_file.h"
#include "policy/resolve.h"

#include <gtest/gtest.h>
#include <stdexcept>
#include <string>

namespace forge::policy::test {

using forge::test::joined;

inline std::string fixtures() {
    return joined({FORGE_TEST_FIXTURES, "/policy"});
}
inline std::string repo_root() {
    return joined({FORGE_TEST_SOURCE_DIR, "/.."});
}
inline std::string shipped_policy() {
    return joined({repo_root(), "/policy/arch_policy.yml"});
}
inline std::string shipped_gpus() {
    return joined({repo_root(), "/policy/gpus.yml"});
}
inline std::string shipped_packages() {
    return joined({repo_root(), "/packages"});
}

// The error of a package file that must not parse (a failed expectation when it parses).
inline Error override_error(const std::string& yaml) {
    auto r = parse_arch_override(yaml, "pkg.yml");
    EXPECT_FALSE(r.ok()) << yaml;
    return r.ok() ? Error{} : r.error();
}

inline const PolicyData& shipped() {
    static const PolicyData data = [] {
        auto p = load_policy(shipped_policy());
        if (!p) throw std::runtime_error(p.error().to_string());
        return *p;
    }();
    return data;
}

inline const std::vector<arch::Gpu>& gpus() {
    static const std::vector<arch::Gpu> g = [] {
        auto r = load_gpus(shipped_gpus());
        if (!r) throw std::runtime_error(r.error().to_string());
        return *r;
    }();
    return g;
}

// Resolves through the file-loading entry point (packages from `packages_dir`).
inline Result<Resolution>
resolve_with(const std::string& policy_file, const std::string& cuda, const std::string& torch = "",
             const std::string& platform = "linux_x86_64", const std::string& package = "",
             const std::string& python = "",
             const std::string& packages_dir = joined({fixtures(), "/packages"})) {
    ResolveRequest r;
    r.cuda = cuda;
    r.torch = torch;
    r.platform = platform;
    r.package = package;
    r.python = python;
    r.policy_file = policy_file;
    r.packages_dir = packages_dir;
    r.gpus_file = shipped_gpus();
    return resolve(r);
}

// The resolution, or the test stops with the error's text.
inline Resolution must(Result<Resolution> r) {
    if (!r.ok()) throw std::runtime_error(r.error().to_string());
    return std::move(*r);
}

inline std::string mini() {
    return joined({fixtures(), "/mini_policy.yml"});
}

} // namespace forge::policy::test
