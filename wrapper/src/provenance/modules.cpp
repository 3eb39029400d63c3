#include "provenance/modules.h"

#include <set>

namespace forge::provenance {

std::vector<ModuleRecord> module_records(const std::vector<binary::Extension>& extensions) {
    std::vector<ModuleRecord> out;
    for (const auto& ext : extensions) {
        std::set<std::string> targets;
        for (const auto& e : ext.entries) {
            if (e.target.kind == arch::Kind::Lto) continue;
            if (e.target.kind == arch::Kind::Sass && (e.stub || (e.kernels && *e.kernels == 0)))
                continue;
            targets.insert(e.target.name());
        }
        ModuleRecord m;
        m.module = ext.member ? *ext.member : ext.file;
        m.targets.assign(targets.begin(), targets.end());
        m.device_code = !m.targets.empty();
        out.push_back(std::move(m));
    }
    return out;
}

nlohmann::json modules_json(const std::vector<ModuleRecord>& modules) {
    auto out = nlohmann::json::array();
    for (const auto& m : modules)
        out.push_back(
            {{"module", m.module}, {"targets", m.targets}, {"device_code", m.device_code}});
    return out;
}

Result<std::vector<ModuleRecord>> modules_from_record(const nlohmann::json& record,
                                                      const std::string& where) {
    std::vector<ModuleRecord> out;
    if (!record.is_object()) return out;
    auto it = record.find("modules");
    if (it == record.end() || it->is_null()) return out;
    Error bad{"modules is not a list of {module, targets}", where};
    bad.key = "modules";
    if (!it->is_array()) return bad;
    for (const auto& m : *it) {
        if (!m.is_object() || !m.contains("module") || !m["module"].is_string()) return bad;
        ModuleRecord r;
        r.module = m["module"].get<std::string>();
        if (auto t = m.find("targets"); t != m.end()) {
            if (!t->is_array()) return bad;
            for (const auto& name : *t) {
                if (!name.is_string()) return bad;
                r.targets.push_back(name.get<std::string>());
            }
        }
        r.device_code = !r.targets.empty();
        out.push_back(std::move(r));
    }
    return out;
}

std::string module_key(std::string_view member) {
    const auto slash = member.rfind('/');
    const auto base_start = slash == std::string_view::npos ? 0 : slash + 1;
    const auto dot = member.find('.', base_start);
    return std::string(member.substr(0, dot));
}

} // namespace forge::provenance
