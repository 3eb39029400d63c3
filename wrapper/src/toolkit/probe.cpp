#include "toolkit/probe.h"

#include "core/process.h"
#include "core/text.h"
#include "core/version.h"

#include <cctype>
#include <fmt/format.h>
#include <regex>

namespace forge::toolkit {

namespace {

// nvcc answers on stdout; its stderr (a driver warning) is not part of the answer.
Result<std::string> ask(const std::string& exe, const std::string& arg) {
    ProcessSpec spec;
    spec.path = exe;
    spec.argv = {exe};
    if (!arg.empty()) spec.argv.push_back(arg);
    spec.output = ProcessSpec::Output::StdoutOnly;
    spec.null_stdin = true;
    auto run = run_process(spec);
    if (!run)
        return Error{fmt::format("cannot run '{} {}': {}", exe, arg, run.error().message), exe};
    if (!run->succeeded())
        return Error{fmt::format("'{} {}' exited with {}", exe, arg, run->status_code()), exe};
    return std::move(run->out);
}

} // namespace

std::string CudaVersion::release() const {
    return fmt::format("{}.{}", major, minor);
}

std::string CudaVersion::full() const {
    return patch < 0 ? release() : fmt::format("{}.{}.{}", major, minor, patch);
}

Result<CudaVersion> parse_nvcc_version(std::string_view version_output) {
    static const std::regex re(R"(release\s+([0-9.]+)(?:\s*,\s*V([0-9.]+))?)");
    std::match_results<std::string_view::const_iterator> m;
    if (!std::regex_search(version_output.begin(), version_output.end(), m, re))
        return Error{"not an nvcc --version output (no 'release X.Y, VX.Y.Z')"};
    const std::string rel_text = m[1].str();
    const auto rel = leading_cuda_version(rel_text);
    if (!rel)
        return Error{fmt::format("nvcc --version names release '{}', not a CUDA version X.Y",
                                 shown_value(rel_text))};
    // "release 13.0, V13.0.88": the V-string carries the patch; the release alone is the fallback.
    const auto v =
        m[2].matched ? parse_cuda_version(m[2].str()) : Result<DottedVersion>(Error{"no V-string"});
    if (!v || !v->patch) return CudaVersion{rel->version.major, rel->version.minor};
    const CudaVersion full{v->major, v->minor, *v->patch};
    if (full.major != rel->version.major || full.minor != rel->version.minor)
        return Error{fmt::format("nvcc --version disagrees with itself: release {}.{} but V{}",
                                 rel->version.major, rel->version.minor, full.full())};
    return full;
}

Result<CudaVersion> parse_version_text(std::string_view text) {
    auto v = parse_cuda_version(text);
    if (!v) return std::move(v).error();
    return CudaVersion{v->major, v->minor, v->patch.value_or(0)};
}

int default_sm_for(int major) {
    return major >= 13 ? 75 : 52;
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
    // The --gpu-code entry, up to the next option entry (a line starting with "--"). Its list is
    // the same as --gpu-architecture's in every nvcc checked (docs/nvcc-command-line.md).
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
    caps.nvcc = nvcc_path;
    auto version = ask(nvcc_path, "--version");
    if (!version) return std::move(version).error();
    // A copy of the wrapper named nvcc answers too; it is not a toolkit.
    if (version->find("nvcc-forge") != std::string::npos)
        return Error{"this is nvcc-forge, not a CUDA toolkit", nvcc_path};
    auto v = parse_nvcc_version(*version);
    if (!v) return std::move(v).error().in_file(nvcc_path);
    caps.version = *v;
    caps.default_sm = default_sm_for(caps.version.major);

    auto listed = ask(nvcc_path, "--list-gpu-code");
    if (!listed) return std::move(listed).error();
    auto plain = parse_target_list(*listed);
    if (!plain) return std::move(plain).error().in_file(nvcc_path);
    for (const auto& t : *plain) {
        caps.emittable.insert(t);
        if (t.kind == arch::Kind::Sass)
            caps.emittable.insert(arch::Target{arch::Kind::Ptx, t.sm, t.suffix});
    }

    if (auto help = ask(nvcc_path, "--help"))
        if (auto all = parse_help_gpu_codes(*help)) caps.emittable.insert(all->begin(), all->end());
    return caps;
}

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
    auto out = ask(dir + "/__nvcc_device_query", "");
    if (!out) return std::nullopt;
    return parse_device_query(*out);
}

std::optional<std::string> parse_dryrun_here(std::string_view dryrun_output) {
    static const std::regex here_re(R"((?:^|\n)#\$ _HERE_=([^\n]+))");
    std::match_results<std::string_view::const_iterator> m;
    if (!std::regex_search(dryrun_output.begin(), dryrun_output.end(), m, here_re))
        return std::nullopt;
    return m[1].str();
}

std::optional<std::string> query_nvcc_home(const std::string& nvcc_path) {
    ProcessSpec spec;
    spec.path = nvcc_path;
    spec.argv = {nvcc_path};
    for (const char* arg : {"-dryrun", "-x", "cu", "-E", "/dev/null"})
        spec.argv.emplace_back(arg);
    spec.output = ProcessSpec::Output::Merged;
    spec.null_stdin = true;
    spec.working_dir = std::string(1, '/'); // not the literal: a false -Wrestrict in GCC 12
    auto run = run_process(spec);
    if (!run) return std::nullopt;
    return parse_dryrun_here(run->out);
}

} // namespace forge::toolkit
