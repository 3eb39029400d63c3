// The gate as `verify` runs it over files, shared by `verify` and `plan` (which gates what the
// build under it made): the same options, reports, verdict and JSON.
#pragma once

#include "core/result.h"
#include "policy/resolve.h"
#include "verify/judge.h"

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace forge::cli {

struct GateArgs {
    std::vector<std::string> files;
    std::vector<std::string> allow_missing;
    std::vector<std::string> max_toolkit;
    std::vector<std::string> expect_extension;
    bool allow_extra = false;
    bool allow_pure_python = false;
    // Products of `nvcc-forge plan` (core/plan_marker.h) are refused (exit 2): their device code
    // stands in for code never compiled. Only plan's own gate reads them.
    bool plan_products = false;
    // An input that could not be read makes the gate's own verdict a failure (plan: its report
    // is an error then, and the gate's table must not say pass). verify keeps judging what it
    // read and exits 2.
    bool unreadable_fails = false;
    std::string command = "verify"; // names the command in error messages
};

struct GateOutcome {
    nlohmann::json json; // verify --format json
    std::string text;    // verify's table
    std::string github;  // verify --format github: workflow commands, then the verdict line
    std::string junit;   // verify --junit FILE: the JUnit XML report
    verify::Outcome outcome = verify::Outcome::Error; // verify::Judgement::outcome()
    [[nodiscard]] int exit_code() const { return verify::outcome_exit_code(outcome); }
};

// `vm` supplies --gpus; `resolution` the list, the package's waivers and expected extensions.
Result<GateOutcome> run_gate(const boost::program_options::variables_map& vm,
                             const policy::Resolution& resolution, const GateArgs& args);

} // namespace forge::cli
