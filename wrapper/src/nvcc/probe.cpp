#include "nvcc/probe.h"

#include <boost/process.hpp>
#include <cctype>
#include <fmt/format.h>
#include <regex>

namespace forge::nvcc {

namespace bp = boost::process;

namespace {

Result<std::string> run_capture(const std::string& exe, const std::string& arg) {
    std::error_code ec;
    bp::ipstream out;
    std::vector<std::string> args;
    if (!arg.empty()) args.push_back(arg);
    bp::child child(bp::exe = exe, bp::args = args, bp::std_out > out, bp::std_err > bp::null,
                    bp::std_in < bp::null, ec);
    if (ec) return Error{fmt::format("cannot run '{} {}': {}", exe, arg, ec.message()), exe};
    std::string text{std::istreambuf_iterator<char>(out), std::istreambuf_iterator<char>()};
    child.wait(ec);
    if (ec) return Error{fmt::format("'{} {}' did not finish: {}", exe, arg, ec.message()), exe};
    if (child.exit_code() != 0)
        return Error{fmt::format("'{} {}' exited with {}", exe, arg, child.exit_code()), exe};
    return text;
}

} // namespace

std::optional<int> parse_device_query(std::string_view text) {
    std::optional<int> lowest;
    int value = 0;
    bool in_number = false;
    for (std::size_t i = 0; i <= text.size(); ++i) {
        const bool digit = i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]));
        if (digit) {
            value = in_number ? value * 10 + (text[i] - '0') : text[i] - '0';
            in_number = true;
            if (value > 10000) return std::nullopt;
        } else if (in_number) {
            if (!lowest || value < *lowest) lowest = value;
            in_number = false;
        } else if (i < text.size() && text[i] != ',' &&
                   !std::isspace(static_cast<unsigned char>(text[i]))) {
            return std::nullopt; // an error message, not a list of CCs
        }
    }
    return lowest;
}

std::optional<int> query_native_sm(const std::string& nvcc_path) {
    auto slash = nvcc_path.find_last_of('/');
    std::string dir = slash == std::string::npos ? "." : nvcc_path.substr(0, slash);
    auto out = run_capture(dir + "/__nvcc_device_query", "");
    if (!out) return std::nullopt;
    return parse_device_query(*out);
}

int default_sm_for(int major) {
    return major >= 13 ? 75 : 52;
}

Result<std::pair<int, int>> parse_release(std::string_view text) {
    static const std::regex re(R"(release (\d+)\.(\d+))");
    std::match_results<std::string_view::const_iterator> m;
    if (!std::regex_search(text.begin(), text.end(), m, re))
        return Error{"no 'release X.Y' in nvcc --version output"};
    return std::pair{std::stoi(m[1].str()), std::stoi(m[2].str())};
}

Result<std::set<arch::Target>> parse_target_list(std::string_view text) {
    std::set<arch::Target> out;
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
            ++i;
        std::size_t start = i;
        while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i])))
            ++i;
        if (start == i) break;
        auto word = text.substr(start, i - start);
        auto t = arch::parse_target(word);
        if (!t) {
            Error e{fmt::format("unexpected '{}' in nvcc --list-gpu-code output", word)};
            e.key = std::string(word);
            return e;
        }
        out.insert(*t);
    }
    if (out.empty()) return Error{"nvcc --list-gpu-code listed no targets"};
    return out;
}

Result<std::set<arch::Target>> parse_help_gpu_codes(std::string_view text) {
    // The --gpu-code entry, up to the next option entry (a line starting with "--").
    auto at = text.find("\n--gpu-code ");
    if (at == std::string_view::npos) return Error{"no --gpu-code entry in nvcc --help output"};
    auto end = text.find("\n--", at + 1);
    auto entry = text.substr(at, end == std::string_view::npos ? text.size() - at : end - at);
    auto allowed = entry.find("Allowed values for this option:");
    if (allowed == std::string_view::npos)
        return Error{"no 'Allowed values' for --gpu-code in nvcc --help output"};
    std::set<arch::Target> out;
    static const std::regex item(R"('((?:sm|compute|lto)_[0-9]+[af]?)')");
    auto list = entry.substr(allowed);
    for (std::regex_iterator<std::string_view::const_iterator> it(list.begin(), list.end(), item),
         stop;
         it != stop; ++it) {
        auto t = arch::parse_target((*it)[1].str());
        if (t) out.insert(*t);
    }
    if (out.empty()) return Error{"empty 'Allowed values' list for --gpu-code in nvcc --help"};
    return out;
}

Result<ToolkitCaps> probe_toolkit(const std::string& nvcc_path) {
    ToolkitCaps caps;
    auto version = run_capture(nvcc_path, "--version");
    if (!version) return std::move(version).error();
    auto rel = parse_release(*version);
    if (!rel) return std::move(rel).error().in_file(nvcc_path);
    caps.major = rel->first;
    caps.minor = rel->second;
    caps.default_sm = default_sm_for(caps.major);

    auto listed = run_capture(nvcc_path, "--list-gpu-code");
    if (!listed) return std::move(listed).error();
    auto plain = parse_target_list(*listed);
    if (!plain) return std::move(plain).error().in_file(nvcc_path);
    // Every real arch nvcc lists has its virtual arch (compute_X): without it, an nvcc whose
    // --help lacks the allowed-values list would have every PTX request clamped away.
    for (const auto& t : *plain) {
        caps.emittable.insert(t);
        if (t.kind == arch::Kind::Sass)
            caps.emittable.insert(arch::Target{arch::Kind::Ptx, t.sm, t.suffix});
    }

    // a/f/lto targets exist only in --help's text; an nvcc without them (11.x) is fine.
    auto help = run_capture(nvcc_path, "--help");
    if (!help) return std::move(help).error();
    if (auto all = parse_help_gpu_codes(*help)) caps.emittable.insert(all->begin(), all->end());
    return caps;
}

} // namespace forge::nvcc
