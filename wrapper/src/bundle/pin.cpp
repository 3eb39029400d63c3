#include "bundle/pin.h"

#include "core/text.h"
#include "core/version.h"
#include "policy/yaml_util.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

namespace forge::bundle {

std::string VersionSpec::to_string() const {
    return fmt::format("{}{}.{}", op == Op::Exact ? "==" : ">=", major, minor);
}

bool VersionSpec::matches(const toolkit::CudaVersion& v) const {
    if (op == Op::Exact) return v.major == major && v.minor == minor;
    return std::tie(v.major, v.minor) >= std::tie(major, minor);
}

Result<VersionSpec> parse_version_spec(std::string_view text) {
    static const std::regex re(R"(\s*(==|>=)\s*([0-9.]+)\s*)");
    std::match_results<std::string_view::const_iterator> m;
    const auto version = std::regex_match(text.begin(), text.end(), m, re)
                             ? parse_cuda_version(m[2].str(), false)
                             : Result<DottedVersion>(Error{"no ==/>= X.Y"});
    if (!version) {
        Error e(fmt::format("bad toolkit spec '{}': expected \"==X.Y\" or \">=X.Y\"",
                            shown_value(text)));
        e.key = std::string(text);
        return e;
    }
    VersionSpec spec;
    spec.op = m[1].str() == "==" ? VersionSpec::Op::Exact : VersionSpec::Op::AtLeast;
    spec.major = version->major;
    spec.minor = version->minor;
    return spec;
}

namespace {

Error at_line(std::string msg, const std::string& file, int line, std::string key = {}) {
    Error e(std::move(msg), file);
    e.line = line;
    e.key = std::move(key);
    return e;
}

std::optional<int> parse_sm_key(const std::string& s) {
    static const std::regex re(R"((?:sm_)?(\d{2,3}))");
    std::smatch m;
    if (!std::regex_match(s, m, re)) return std::nullopt;
    return std::stoi(m[1].str());
}

} // namespace

Result<SmToolkitPolicy> parse_sm_toolkit(std::string_view yaml_text, const std::string& file) {
    auto loaded = policy::yamlx::load_text(yaml_text, file);
    if (!loaded) {
        Error e = loaded.error();
        e.message += " (quote specs: \">=13.0\")"; // an unquoted >=13.0 is YAML syntax
        return e;
    }
    const YAML::Node& root = *loaded;
    if (!root.IsMap() || root.size() == 0)
        return at_line("expected a map of SM to toolkit spec, e.g. 90: \"==12.8\"", file,
                       root.IsDefined() && !root.IsNull() ? root.Mark().line + 1 : 1);
    SmToolkitPolicy policy;
    policy.file = file;
    for (const auto& kv : root) {
        const int line = kv.first.Mark().line + 1;
        if (!kv.first.IsScalar()) return at_line("an SM key must be a number like 90", file, line);
        const std::string key = kv.first.Scalar();
        auto sm = parse_sm_key(key);
        if (!sm)
            return at_line(fmt::format("'{}' is not an SM number (90, 100, 120)", key), file, line,
                           key);
        if (policy.specs.count(*sm))
            return at_line(
                fmt::format("SM {} is given twice (first on line {})", *sm, policy.lines[*sm]),
                file, line, key);
        if (!kv.second.IsScalar())
            return at_line(fmt::format("SM {}: the spec must be a string like \"==12.8\"", *sm),
                           file, kv.second.Mark().line + 1, key);
        auto spec = parse_version_spec(kv.second.Scalar());
        if (!spec) return at_line(spec.error().message, file, kv.second.Mark().line + 1, key);
        policy.specs[*sm] = *spec;
        policy.lines[*sm] = line;
    }
    return policy;
}

Result<SmToolkitPolicy> load_sm_toolkit(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Error("cannot read the SM toolkit policy", path);
    std::ostringstream ss;
    ss << in.rdbuf();
    return parse_sm_toolkit(ss.str(), path);
}

Result<ToolkitPlan> plan_toolkits(const std::vector<int>& sms, const SmToolkitPolicy& policy,
                                  const std::vector<toolkit::Toolkit>& discovered) {
    ToolkitPlan plan;
    std::vector<std::string> missing;
    for (int sm : sms) {
        auto it = policy.specs.find(sm);
        if (it == policy.specs.end()) {
            missing.push_back(fmt::format("sm_{}: no toolkit spec in {}", sm, policy.file));
            continue;
        }
        const VersionSpec& spec = it->second;
        const toolkit::Toolkit* best = nullptr;
        std::vector<std::string> near_misses; // right release, but cannot emit sm_X
        for (const auto& tk : discovered) {
            if (!spec.matches(tk.version)) continue;
            if (!tk.can_emit_sass(sm)) {
                near_misses.push_back(
                    fmt::format("{} ({}) cannot emit sm_{}", tk.version.full(), tk.nvcc, sm));
                continue;
            }
            // The oldest suitable toolkit (per-SM builds use the oldest release that can emit
            // the SM, for the widest driver compatibility), down to the patch.
            auto rank = [](const toolkit::Toolkit& t) {
                return std::make_tuple(t.version.major, t.version.minor, t.version.patch);
            };
            if (!best || rank(tk) < rank(*best) ||
                (rank(tk) == rank(*best) && tk.nvcc < best->nvcc))
                best = &tk;
        }
        if (!best) {
            std::string why = fmt::format("sm_{}: needs CUDA {} ({}:{})", sm, spec.to_string(),
                                          policy.file, policy.lines.at(sm));
            for (const auto& n : near_misses)
                why += "; " + n;
            missing.push_back(why);
            continue;
        }
        plan.assignments.push_back({sm, spec, best});
    }
    if (!missing.empty()) {
        std::string msg =
            "cannot build every SM with its pinned toolkit; nothing was compiled\nmissing:\n";
        for (const auto& m : missing)
            msg += "  " + m + "\n";
        msg += "discovered toolkits:\n";
        if (discovered.empty()) msg += "  (none)\n";
        for (const auto& tk : discovered)
            msg += fmt::format("  {}  {}\n", tk.version.full(), tk.nvcc);
        msg += "point NVCC_FORGE_NVCC_CANDIDATES at more toolkits (nvcc binaries or CUDA roots, "
               "':'-separated)";
        Error e(msg);
        e.exit_code = kExitInput;
        return e;
    }
    for (const auto& a : plan.assignments) {
        auto g =
            std::find_if(plan.groups.begin(), plan.groups.end(),
                         [&](const ToolkitPlan::Group& grp) { return grp.toolkit == a.toolkit; });
        if (g == plan.groups.end()) {
            plan.groups.push_back({a.toolkit, {}});
            g = plan.groups.end() - 1;
        }
        if (std::find(g->sms.begin(), g->sms.end(), a.sm) == g->sms.end()) g->sms.push_back(a.sm);
    }
    for (auto& g : plan.groups)
        std::sort(g.sms.begin(), g.sms.end());
    std::sort(plan.groups.begin(), plan.groups.end(), [](const auto& a, const auto& b) {
        return std::tie(a.toolkit->version, a.toolkit->nvcc) <
               std::tie(b.toolkit->version, b.toolkit->nvcc);
    });
    return plan;
}

} // namespace forge::bundle
