#include "frontend/config.h"

#include "core/env.h"
#include "core/file.h"
#include "core/file_stamp.h"
#include "core/glob.h"
#include "core/json.h"
#include "core/paths.h"
#include "core/text.h"
#include "toolkit/locate.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace forge::frontend {

namespace fs = std::filesystem;

namespace {

// FNV-1a 64: stable across builds and runs (std::hash is not promised to be).
std::uint64_t fnv1a(std::string_view s) {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

} // namespace

Result<Mode> parse_mode(std::string_view text, std::string_view origin) {
    if (text == "observe") return Mode::Observe;
    if (text == "inject") return Mode::Inject;
    if (text == "strict") return Mode::Strict;
    Error e{fmt::format("unknown mode '{}' (expected observe, inject or strict)", text)};
    e.key = std::string(origin);
    return e;
}

std::string_view mode_string(Mode m) {
    switch (m) {
    case Mode::Observe:
        return "observe";
    case Mode::Inject:
        return "inject";
    case Mode::Strict:
        return "strict";
    }
    return "inject";
}

FrontendEnv FrontendEnv::from_environ() {
    FrontendEnv e;
    e.arch_list = getenv_str("NVCC_FORGE_ARCH_LIST");
    e.package = getenv_str("NVCC_FORGE_PACKAGE");
    e.torch = getenv_str("NVCC_FORGE_TORCH");
    e.platform = getenv_str("NVCC_FORGE_PLATFORM");
    e.policy_file = getenv_str("NVCC_FORGE_POLICY");
    e.packages_dir = getenv_str("NVCC_FORGE_PACKAGES_DIR");
    e.mode = getenv_str("NVCC_FORGE_MODE");
    e.log = getenv_str("NVCC_FORGE_LOG");
    e.real_nvcc = getenv_str("NVCC_FORGE_REAL_NVCC");
    e.cache_dir = getenv_str("NVCC_FORGE_CACHE_DIR");
    e.depth = getenv_str(toolkit::kDepthEnv);
    e.prepend = getenv_str("NVCC_PREPEND_FLAGS");
    e.append = getenv_str("NVCC_APPEND_FLAGS");
    e.quiet = getenv_str("NVCC_FORGE_QUIET") == "1";
    return e;
}

fs::path cache_dir(const FrontendEnv& env) {
    return cache_root(env.cache_dir);
}

std::string file_stamp(const fs::path& p) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) return p.string() + "|absent";
    std::string stamp = p.string() + "|" + stamp_of(st).text(); // core/file_stamp.h's rule
    // A same-size edit within one tick of the file system's coarse clock keeps every field of
    // the stamp: small files (the policy and package data) also stamp their content. The toolkit's
    // nvcc, large, keeps the cheap form.
    constexpr long long kHashedBytes = 1 << 20;
    if (S_ISREG(st.st_mode) && st.st_size <= kHashedBytes) {
        std::ifstream in(p, std::ios::binary);
        std::ostringstream content;
        content << in.rdbuf();
        stamp += fmt::format("|{:016x}", fnv1a(content.str()));
    }
    return stamp;
}

std::optional<std::string> cache_read(const fs::path& dir, const std::string& key) {
    if (dir.empty()) return std::nullopt;
    fs::path file = dir / fmt::format("{:016x}.json", fnv1a(key));
    // core/file.h: a FIFO or a symbolic link in the entry's place is a miss, never a hang.
    constexpr std::uint64_t kMaxEntryBytes = 16 << 20;
    struct stat st {};
    auto text = read_regular_file(file, kMaxEntryBytes, &st);
    if (!text) return std::nullopt;
    // An entry decides the policy (inject or observe) and the toolkit's targets: believed only
    // when nobody but this user could have written it, else derived again (and rewritten).
    if (const std::string why = untrusted_record(st); !why.empty()) {
        static std::atomic<bool> said{false};
        if (!said.exchange(true))
            std::fprintf(stderr, "nvcc-forge: warning: the cache entry %s is not used: %s\n",
                         escape_control(file.string()).c_str(), why.c_str());
        return std::nullopt;
    }
    const auto eol = text->find('\n');
    if (eol == std::string::npos || std::string_view(*text).substr(0, eol) != key)
        return std::nullopt;
    return text->substr(eol + 1);
}

void cache_write(const fs::path& dir, const std::string& key, const std::string& value) {
    if (dir.empty()) return;
    std::error_code ec;
    fs::create_directories(dir, ec);
    // core/file.h's replace_file: a planted file or link is never written through, and
    // concurrent readers see the old entry or the new one, never a half. An unwritable cache
    // only costs speed.
    (void)replace_file(dir / fmt::format("{:016x}.json", fnv1a(key)), key + '\n' + value);
}

std::string caps_to_json(const toolkit::ToolkitCaps& caps) {
    nlohmann::json j;
    j["major"] = caps.version.major;
    j["minor"] = caps.version.minor;
    std::vector<std::string> names;
    for (const auto& t : caps.emittable)
        names.push_back(t.name());
    j["emittable"] = names;
    j["default_sm"] = caps.default_sm;
    j["native_sm"] = caps.native_sm ? nlohmann::json(*caps.native_sm) : nlohmann::json(nullptr);
    return json_text(j);
}

Result<toolkit::ToolkitCaps> caps_from_json(const std::string& text) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return make_error("toolkit cache: not a JSON object");
    toolkit::ToolkitCaps caps;
    try {
        caps.version.major = j.at("major").get<int>();
        caps.version.minor = j.at("minor").get<int>();
        caps.default_sm = j.at("default_sm").get<int>();
        if (!j.at("native_sm").is_null()) caps.native_sm = j.at("native_sm").get<int>();
        for (const auto& n : j.at("emittable")) {
            auto t = arch::parse_target(n.get<std::string>(), "toolkit cache");
            if (!t) return std::move(t).error();
            caps.emittable.insert(*t);
        }
    } catch (const nlohmann::json::exception& e) {
        return make_error(fmt::format("toolkit cache: {}", e.what()));
    }
    return caps;
}

const std::string* matching_source_glob(const std::string& source,
                                        const std::vector<std::string>& globs) {
    // A source is written relative to the build's directory, not to the package root the globs
    // are written against: "hopper/*.cu" must match "../hopper/x.cu" too.
    auto it = std::find_if(globs.begin(), globs.end(),
                           [&](const std::string& g) { return glob_match_unrooted(g, source); });
    return it == globs.end() ? nullptr : &*it;
}

TuClass classify_tu(const nvcc::Invocation& inv, const policy::WrapperSettings* package) {
    TuClass c;
    c.opted_in = package != nullptr && package->inject_arch_specific.value_or(false);
    const std::string* glob = nullptr;
    for (std::size_t i = 0; package != nullptr && glob == nullptr && i < inv.sources.size(); ++i)
        glob = matching_source_glob(inv.sources[i], package->arch_specific_sources);
    const bool plain = std::any_of(inv.requested.begin(), inv.requested.end(),
                                   [](const auto& t) { return t.suffix == arch::Suffix::None; });
    if (inv.arch_specific) {
        c.rule = ArchRule::AOnly;
    } else if (glob != nullptr) {
        c.rule = ArchRule::PackageSources;
        c.glob = *glob;
    } else {
        c.rule = plain || !inv.has_f_target ? ArchRule::PlainTarget : ArchRule::FamilyTarget;
    }
    return c;
}

std::string_view arch_rule_string(ArchRule rule) {
    switch (rule) {
    case ArchRule::PlainTarget:
        return "plain-target";
    case ArchRule::FamilyTarget:
        return "family-target";
    case ArchRule::AOnly:
        return "a-only";
    case ArchRule::PackageSources:
        return "arch_specific_sources";
    }
    return "plain-target";
}

std::string arch_rule_text(const TuClass& tu, const nvcc::Invocation& inv) {
    auto first = [&](auto pred) {
        auto it = std::find_if(inv.requested.begin(), inv.requested.end(), pred);
        return it == inv.requested.end() ? std::string() : it->name();
    };
    const std::string suffixed =
        first([](const auto& t) { return t.suffix != arch::Suffix::None; });
    const char* opted_in =
        tu.opted_in ? " (the package opts in: wrapper.inject_arch_specific)" : "";
    switch (tu.rule) {
    case ArchRule::AOnly:
        return fmt::format("arch-specific TU: every target is `a`{}", opted_in);
    case ArchRule::PackageSources:
        return fmt::format("arch-specific TU: wrapper.arch_specific_sources names it ({}){}",
                           tu.glob, opted_in);
    case ArchRule::FamilyTarget:
        return fmt::format("generic TU: {} is a family (f) target",
                           first([](const auto& t) { return t.suffix == arch::Suffix::Family; }));
    case ArchRule::PlainTarget:
        break;
    }
    if (suffixed.empty()) return "";
    return fmt::format("generic TU: plain {} beside {}",
                       first([](const auto& t) { return t.suffix == arch::Suffix::None; }),
                       suffixed);
}

} // namespace forge::frontend
