// Which toolkit builds which SM (policy/sm_toolkit.yml): a cubin loads only on a driver at least
// as new as the toolkit that built it, so each SM is pinned to the oldest toolkit that covers it.
#pragma once

#include "core/result.h"
#include "toolkit/discover.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace forge::bundle {

// "==12.8" (that release exactly, any patch) or ">=13.0" (the oldest release at or above).
struct VersionSpec {
    enum class Op { Exact, AtLeast } op = Op::Exact;
    int major = 0, minor = 0;
    [[nodiscard]] std::string to_string() const; // "==12.8"
    [[nodiscard]] bool matches(const toolkit::CudaVersion& v) const;
};

Result<VersionSpec> parse_version_spec(std::string_view text);

struct SmToolkitPolicy {
    std::string file;                 // where it was read from, for messages
    std::map<int, VersionSpec> specs; // SM -> spec
    std::map<int, int> lines;         // SM -> 1-based line in `file`
};

// A YAML map `90: "==12.8"`. Errors carry file:line (a bad SM key, a bad spec, a duplicate).
Result<SmToolkitPolicy> parse_sm_toolkit(std::string_view yaml_text, const std::string& file);
Result<SmToolkitPolicy> load_sm_toolkit(const std::string& path);

// One SM resolved to the toolkit that builds it.
struct SmAssignment {
    int sm = 0;
    VersionSpec spec;
    const toolkit::Toolkit* toolkit = nullptr;
};

struct ToolkitPlan {
    std::vector<SmAssignment> assignments; // in the order of the SMs asked for
    // One group per toolkit, ordered by toolkit version (oldest first): the blobs of the bundle.
    struct Group {
        const toolkit::Toolkit* toolkit = nullptr;
        std::vector<int> sms; // ascending
    };
    std::vector<Group> groups;
};

// Resolves every SM before anything is compiled. An SM with no spec in the policy, or no
// discovered toolkit that satisfies its spec and lists sm_X, makes the whole plan fail: one
// Error (exit 2) listing every missing SM and every discovered toolkit. Among toolkits that
// satisfy a spec the oldest release wins (ties: the newest patch, then the path).
Result<ToolkitPlan> plan_toolkits(const std::vector<int>& sms, const SmToolkitPolicy& policy,
                                  const std::vector<toolkit::Toolkit>& discovered);

} // namespace forge::bundle
