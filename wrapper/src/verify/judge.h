// The gate's decision over a whole run (verify, plan's --gate): every input judged, or why it
// is not, and the one verdict: the words and exit codes of every gating command (`Outcome`).
// verify_extension judges a module alone; what only the run knows (a module the package names
// host-only, plan's stub products, the expected extensions, inputs that could not be read) is
// decided here, so the commands only read files and render.
#pragma once

#include "core/result.h"
#include "verify/extensions.h"
#include "verify/gate.h"

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace forge::verify {

// What a gating command (verify, plan) concludes and exits with: pass (0); fail, a policy finding
// (1); error, something meant to be judged was not (an input not read, a build that did not
// finish) (2). plan's report adds its own reasons to the gate's outcome, never its own words.
enum class Outcome { Pass, Fail, Error };
std::string_view outcome_word(Outcome o); // "pass" | "fail" | "error"
int outcome_exit_code(Outcome o);

struct JudgeSetup {
    arch::ArchList list; // what the package's build compiles (Resolution::builds_as())
    Options opts;
    std::vector<ExpectedModule> expected;
    // Products of `nvcc-forge plan` (core/plan_marker.h) are judged only when set (plan's own
    // gate); otherwise each is refused: its device code stands in for code never compiled.
    bool plan_products = false;
    // An input that could not be read (or was refused) fails the verdict (plan's gate); without
    // it the verdict is over what was read, and the command exits 2 for the rest.
    bool unreadable_fails = false;
};

struct Judgement {
    std::vector<ExtensionReport> reports;
    ExtensionsReport extensions;
    Verdict verdict;
    // Inputs not judged, in input order: the file as given and the error's text.
    std::vector<std::pair<std::string, std::string>> unreadable;
    // An input not judged makes the run an error whatever the verdict over the rest.
    [[nodiscard]] Outcome outcome() const;
};

// Reads one input (binary::read_extensions with the run's options).
using ReadInput = std::function<Result<std::vector<binary::Extension>>(const std::string& file)>;
// Told of each input that is not judged, as it is met (the command prints it).
using NotJudged = std::function<void(const Error& why)>;

// Reads each file in turn (one file's modules in memory at a time) and judges the run.
Judgement judge(const std::vector<std::string>& files, const JudgeSetup& setup,
                const ReadInput& read, const NotJudged& not_judged);

} // namespace forge::verify
