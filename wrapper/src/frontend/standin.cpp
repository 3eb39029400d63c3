#include "frontend/standin.h"

#include "core/file.h"
#include "core/file_stamp.h"
#include "core/json.h"
#include "core/plan_marker.h"
#include "core/process.h"
#include "core/sha256.h"
#include "nvcc/options.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace forge::frontend {

namespace fs = std::filesystem;

namespace {

std::string_view basename_of(std::string_view p) {
    auto slash = p.rfind('/');
    return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

// "dir/k.cu" -> "k" + ext, as nvcc names an output it was not given.
std::string default_output(std::string_view source, std::string_view ext) {
    std::string_view base = basename_of(source);
    if (auto dot = base.rfind('.'); dot != std::string_view::npos && dot > 0)
        base = base.substr(0, dot);
    return std::string(base) + std::string(ext);
}

std::string with_extension(const std::string& path, std::string_view ext) {
    const auto slash = path.rfind('/');
    const auto dot = path.rfind('.');
    if (dot != std::string::npos && (slash == std::string::npos || dot > slash))
        return path.substr(0, dot) + std::string(ext);
    return path + std::string(ext);
}

bool is_pic(std::string_view piece) {
    return piece == "-fPIC" || piece == "-fpic" || piece == "-fPIE" || piece == "-fpie";
}

// The options (besides targets, -rdc/-dlto and the phase) that change what the stub's output
// is or how it links: a shared library, the host compiler and its word size, the CUDA runtime.
bool shapes_output(std::string_view long_name) {
    return long_name == "--shared" || long_name == "--compiler-bindir" ||
           long_name == "--allow-unsupported-compiler" || long_name == "--machine" ||
           long_name == "--cudart" || long_name == "--cudadevrt";
}

// What the call's own options say about its outputs.
struct OutputOptions {
    std::string odir;
    bool depfile = false; // -MD / -MMD
    std::string depfile_path, dep_target;
    bool lib = false, shared = false;
};

} // namespace

std::string plan_config_json(const PlanConfig& c) {
    nlohmann::json j;
    j["arch_list"] = c.arch_list;
    j["package"] = c.package;
    j["policy_file"] = c.policy_file;
    j["packages_dir"] = c.packages_dir;
    j["mode"] = c.mode;
    j["log"] = c.log;
    j["state_dir"] = c.state_dir.string();
    j["stub_cache"] = c.stub_cache.string();
    return json_text(j, 2) + "\n";
}

Result<PlanConfig> read_plan_config(const fs::path& file) {
    std::ifstream f(file, std::ios::binary);
    if (!f) return Error{"cannot read the plan configuration", file.string()};
    std::stringstream ss;
    ss << f.rdbuf();
    auto j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (j.is_discarded() || !j.is_object())
        return Error{"the plan configuration is not a JSON object", file.string()};
    PlanConfig c;
    try {
        c.arch_list = j.at("arch_list").get<std::string>();
        c.package = j.at("package").get<std::string>();
        c.policy_file = j.at("policy_file").get<std::string>();
        c.packages_dir = j.at("packages_dir").get<std::string>();
        c.mode = j.at("mode").get<std::string>();
        c.log = j.at("log").get<std::string>();
        c.state_dir = j.at("state_dir").get<std::string>();
        c.stub_cache = j.value("stub_cache", std::string());
    } catch (const nlohmann::json::exception& e) {
        return Error{fmt::format("the plan configuration: {}", e.what()), file.string()};
    }
    if (c.log.empty() || c.state_dir.empty())
        return Error{"the plan configuration names no log or state directory", file.string()};
    return c;
}

void apply_plan_config(const PlanConfig& c, FrontendEnv& env) {
    env.arch_list = c.arch_list;
    env.package = c.package;
    if (!c.policy_file.empty()) env.policy_file = c.policy_file;
    if (!c.packages_dir.empty()) env.packages_dir = c.packages_dir;
    if (!c.mode.empty()) env.mode = c.mode;
    env.log = c.log;
}

fs::path stub_source_path(const fs::path& state_dir) {
    return state_dir / "nvcc_forge_plan_stub.cu";
}

std::string stub_source() {
    return fmt::format(
        "// nvcc-forge plan: stands in for a translation unit that was not compiled. Never ship "
        "what it builds.\n"
        "#ifndef NVCC_FORGE_PLAN_ID\n#define NVCC_FORGE_PLAN_ID 1\n#endif\n"
        "__attribute__((used, section(\"{}\"))) static const char nvcc_forge_plan_mark[] =\n"
        "    \"nvcc-forge plan product: stub device code, never to ship\";\n"
        "__attribute__((used)) static __global__ void nvcc_forge_plan_stub(int* p) {{\n"
        "    if (p != nullptr) *p = NVCC_FORGE_PLAN_ID;\n}}\n"
        "__attribute__((weak)) int main() {{ return 0; }}\n",
        kPlanMarkerSection);
}

fs::path stub_include_dir(const fs::path& state_dir) {
    return state_dir / "include";
}

std::string stub_header() {
    return "// nvcc-forge plan: the stub compile's cuda_runtime.h "
           "(wrapper/src/frontend/standin.h).\n"
           "#if defined(__CUDA_ARCH__)\n"
           "#define __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__\n"
           "#include \"crt/host_defines.h\"\n"
           "#undef __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__\n"
           "#else\n"
           "#include_next <cuda_runtime.h>\n"
           "#endif\n";
}

Status write_plan_files(const fs::path& shim_root, const PlanConfig& config) {
    std::error_code ec;
    fs::create_directories(config.state_dir / "stubs", ec);
    if (!ec) fs::create_directories(stub_include_dir(config.state_dir), ec);
    if (ec) return Error{fmt::format("cannot create: {}", ec.message()), config.state_dir.string()};
    FORGE_TRY_STATUS(replace_file(stub_source_path(config.state_dir), stub_source()));
    FORGE_TRY_STATUS(
        replace_file(stub_include_dir(config.state_dir) / "cuda_runtime.h", stub_header()));
    return replace_file(shim_root / "bin" / kPlanConfigFile, plan_config_json(config));
}

bool is_configure_probe(const std::string& source) {
    const std::string_view base = basename_of(source);
    return base.starts_with("CMakeCUDACompiler") ||
           source.find("/CMakeFiles/CMakeScratch/") != std::string::npos ||
           source.find("/CMakeFiles/CMakeTmp/") != std::string::npos;
}

StubPlan plan_stub(const nvcc::Invocation& inv) {
    StubPlan plan;
    OutputOptions oo;
    const auto& args = inv.effective;
    for (std::size_t i = 0; i < args.size(); ++i) {
        // The environment's flags reach the stub compile through the environment itself.
        if (args[i].source == nvcc::Arg::Source::PrependEnv ||
            args[i].source == nvcc::Arg::Source::AppendEnv) {
            const nvcc::TokenMatch env_m = nvcc::match_token(args[i].text);
            if (env_m.spec != nullptr && env_m.spec->long_name == "--threads")
                plan.threads_given = true;
            continue;
        }
        const std::string& text = args[i].text;
        const nvcc::TokenMatch m = nvcc::match_token(text);
        if (m.spec == nullptr) continue; // inputs, unknown options (never with a value)
        std::string value = m.value ? std::string(*m.value) : std::string();
        std::vector<std::string> tokens{text};
        if (m.needs_next && i + 1 < args.size()) {
            value = args[i + 1].text;
            // One spelling per flag (`-gencode=V` for `-gencode V`): one stub for both.
            std::string joined = text;
            joined += '=';
            joined += value;
            tokens = {std::move(joined)};
            ++i;
        }
        const nvcc::OptionSpec& s = *m.spec;
        const std::string_view name = s.long_name;
        if (name == "--output-directory") oo.odir = value;
        if (name == "--generate-dependencies-with-compile" ||
            name == "--generate-nonsystem-dependencies-with-compile")
            oo.depfile = true;
        if (name == "--dependency-output") oo.depfile_path = value;
        if (name == "--dependency-target-name") oo.dep_target = value;
        if (s.phase == nvcc::PhaseFlag::Lib) oo.lib = true;
        if (name == "--shared") oo.shared = true;
        if (name == "--threads") plan.threads_given = true;
        const bool phase = s.role == nvcc::Role::Phase && s.phase != nvcc::PhaseFlag::Preprocess &&
                           s.phase != nvcc::PhaseFlag::Depend &&
                           s.phase != nvcc::PhaseFlag::DependNonSys &&
                           s.phase != nvcc::PhaseFlag::Run;
        if (s.targets || s.role == nvcc::Role::Rdc || s.role == nvcc::Role::Dlto || phase ||
            shapes_output(name)) {
            plan.flags.insert(plan.flags.end(), tokens.begin(), tokens.end());
        } else if (name == "--compiler-options") {
            // Only position independence changes what the object links into.
            std::stringstream pieces(value);
            for (std::string piece; std::getline(pieces, piece, ',');)
                if (is_pic(piece)) {
                    plan.flags.emplace_back("-Xcompiler");
                    plan.flags.push_back(piece);
                }
        }
    }

    auto in_odir = [&](const std::string& name) {
        return oo.odir.empty() ? name : (fs::path(oo.odir) / name).string();
    };
    if (!inv.output.empty()) {
        plan.outputs.push_back(inv.output);
    } else {
        std::string_view ext;
        switch (inv.phase) {
        case nvcc::Phase::Ptx:
            ext = ".ptx";
            break;
        case nvcc::Phase::Cubin:
            ext = ".cubin";
            break;
        case nvcc::Phase::Fatbin:
            ext = ".fatbin";
            break;
        case nvcc::Phase::OtherSingleTarget:
            ext = ".ltoir";
            break;
        case nvcc::Phase::Compile:
        case nvcc::Phase::CompileRdc:
            ext = ".o";
            break;
        case nvcc::Phase::DeviceLink:
        case nvcc::Phase::Link:
            break;
        }
        if (oo.lib)
            plan.outputs.push_back(in_odir("a.a"));
        else if (!ext.empty())
            for (const auto& src : inv.sources)
                plan.outputs.push_back(in_odir(default_output(src, ext)));
        else
            plan.outputs.push_back(
                in_odir(inv.phase == nvcc::Phase::DeviceLink ? "a_dlink.o" : "a.out"));
    }
    if (oo.depfile)
        for (const auto& out : plan.outputs)
            plan.depfiles.push_back(
                {oo.depfile_path.empty() ? with_extension(out, ".d") : oo.depfile_path,
                 oo.dep_target.empty() ? out : oo.dep_target});
    plan.per_output = inv.phase == nvcc::Phase::CompileRdc && !oo.lib;
    return plan;
}

std::string depfile_text(const std::string& target, const std::vector<std::string>& sources) {
    auto escaped = [](const std::string& p) {
        std::string out;
        for (char c : p) {
            if (c == ' ' || c == '#') out += '\\';
            if (c == '$') out += '$';
            out += c;
        }
        return out;
    };
    std::string text = escaped(target) + ":";
    for (const auto& s : sources)
        text += " " + escaped(s);
    return text + "\n";
}

std::vector<std::string> stub_compile_args(const StubPlan& plan, const fs::path& state_dir,
                                           const toolkit::CudaVersion& cuda, bool full_header) {
    std::vector<std::string> args = plan.flags;
    if (!plan.threads_given && cuda >= toolkit::CudaVersion{11, 2}) {
        args.emplace_back("--threads");
        args.emplace_back("0");
    }
    if (!full_header) args.push_back("-I" + stub_include_dir(state_dir).string());
    return args;
}

StubLock::StubLock(const fs::path& file) {
    auto opened = open_file(file, O_RDWR | O_CREAT, FileKind::Regular);
    if (!opened) return;
    fd_ = opened->release();
    int rc = 0;
    do {
        rc = ::flock(fd_, LOCK_EX);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

StubLock::~StubLock() {
    if (fd_ >= 0) ::close(fd_);
}

std::string toolkit_identity(const fs::path& nvcc) {
    const fs::path root = nvcc.parent_path().parent_path();
    std::string id = file_stamp(nvcc);
    // The compile's own programs and the files that say the toolkit's release: an in-place
    // upgrade or a patched component changes at least one of them.
    for (const char* part : {"bin/nvcc.profile", "bin/cudafe++", "bin/ptxas", "bin/fatbinary",
                             "bin/nvlink", "nvvm/bin/cicc", "version.json", "version.txt"})
        id += "\n" + file_stamp(root / part);
    return id;
}

std::string stub_cache_key(const std::string& toolkit, const std::vector<std::string>& flags,
                           const std::string& prepend, const std::string& append,
                           const std::string& unique) {
    std::string key =
        "stub-v3\n" + toolkit + "\n" + sha256_hex(stub_source()) + "\n" + sha256_hex(stub_header());
    for (const auto& f : flags)
        key += "\n" + f;
    key += "\nprepend=" + prepend + "\nappend=" + append + "\nunique=" + unique;
    return sha256_hex(key);
}

namespace {

fs::path kept_path(const fs::path& dir, const std::string& key) {
    return dir / (key + ".out");
}
fs::path sum_path(const fs::path& dir, const std::string& key) {
    return dir / (key + ".sum");
}

std::optional<std::string> read_file_text(const fs::path& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return std::nullopt;
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// "name value" lines of a checksum file.
std::map<std::string, std::string> sum_fields(const std::string& text) {
    std::map<std::string, std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (auto space = line.find(' '); space != std::string::npos)
            out.emplace(line.substr(0, space), line.substr(space + 1));
    return out;
}

Status copy_all(int from, std::uint64_t size, int to) {
    off_t at = 0;
    bool kernel = true;
    char buf[65536];
    while (static_cast<std::uint64_t>(at) < size) {
        const std::size_t want = static_cast<std::size_t>(size - static_cast<std::uint64_t>(at));
        ssize_t n = -1;
        if (kernel) {
            n = ::copy_file_range(from, &at, to, nullptr, want, 0);
            // Not between these two files (another file system, an old kernel): by hand.
            if (n < 0 && errno != EINTR) kernel = false;
            if (n >= 0 || errno == EINTR) {
                if (n == 0) return Error{"the stub ended early"};
                continue;
            }
        }
        n = ::pread(from, buf, std::min(sizeof buf, want), at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return Error{n == 0 ? "the stub ended early" : std::strerror(errno)};
        if (!write_all(to, std::string_view(buf, static_cast<std::size_t>(n))))
            return Error{std::strerror(errno)};
        at += n;
    }
    return ok_status();
}

} // namespace

Result<StubFile> StubFile::open(const fs::path& path) {
    StubFile f;
    f.path_ = path;
    f.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (f.fd_ < 0)
        return Error{fmt::format("cannot read: {}", std::strerror(errno)), path.string()};
    struct stat st {};
    if (::fstat(f.fd_, &st) != 0)
        return Error{fmt::format("cannot read: {}", std::strerror(errno)), path.string()};
    f.size_ = static_cast<std::uint64_t>(st.st_size);
    f.perms_ = static_cast<fs::perms>(st.st_mode & 07777);
    f.identity_ = stamp_of(st).text();
    return f;
}

StubFile::StubFile(StubFile&& other) noexcept
    : fd_(other.fd_), size_(other.size_), perms_(other.perms_),
      identity_(std::move(other.identity_)), path_(std::move(other.path_)) {
    other.fd_ = -1;
}

StubFile::~StubFile() {
    if (fd_ >= 0) ::close(fd_);
}

Result<std::string> StubFile::read_all() const {
    std::string out;
    char buf[65536];
    off_t at = 0;
    while (true) {
        const ssize_t n = ::pread(fd_, buf, sizeof buf, at);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return Error{fmt::format("cannot read: {}", std::strerror(errno)), path_};
        if (n == 0) return out;
        out.append(buf, static_cast<std::size_t>(n));
        at += n;
    }
}

std::string stub_sum(const std::string& key, const std::string& bytes) {
    return fmt::format("nvcc-forge plan stub\nkey {}\nsize {}\nsha256 {}\n", key, bytes.size(),
                       sha256_hex(bytes));
}

KeptStub read_kept_stub(const fs::path& dir, const std::string& key) {
    KeptStub kept;
    const fs::path path = kept_path(dir, key);
    std::error_code ec;
    const bool has_stub = fs::exists(path, ec);
    const bool has_sum = fs::exists(sum_path(dir, key), ec);
    if (!has_stub && !has_sum) return kept;
    auto stub = StubFile::open(path);
    if (!stub) {
        kept.problem = stub.error().to_string();
        return kept;
    }
    auto sum_text = read_file_text(sum_path(dir, key));
    const auto fields = sum_text ? sum_fields(*sum_text) : std::map<std::string, std::string>{};
    auto field = [&](const char* name) {
        auto it = fields.find(name);
        return it == fields.end() ? std::string() : it->second;
    };
    // The file the sum was written for, unchanged: no hash. Anything else is hashed.
    auto content_matches = [&] {
        auto bytes = stub->read_all();
        return bytes && field("sha256") == sha256_hex(*bytes);
    };
    const bool sound = field("key") == key && field("size") == std::to_string(stub->size()) &&
                       (field("file") == stub->identity() || content_matches());
    if (!sum_text)
        kept.problem = fmt::format("{}: kept without its checksum file {}", path.string(),
                                   sum_path(dir, key).filename().string());
    else if (stub->size() == 0)
        kept.problem = fmt::format("{}: empty", path.string());
    else if (!sound)
        kept.problem = fmt::format("{}: does not match its checksum file {} (damaged, or "
                                   "another stub in its place)",
                                   path.string(), sum_path(dir, key).filename().string());
    else
        kept.stub.emplace(std::move(*stub));
    return kept;
}

void drop_kept_stub(const fs::path& dir, const std::string& key) {
    std::error_code ec;
    fs::remove(kept_path(dir, key), ec);
    fs::remove(sum_path(dir, key), ec);
}

Result<StubFile> keep_stub(const fs::path& dir, const std::string& key, const fs::path& compiled) {
    std::error_code ec;
    fs::rename(compiled, kept_path(dir, key), ec);
    if (ec)
        return Error{fmt::format("cannot keep the stub: {}", ec.message()),
                     kept_path(dir, key).string()};
    // Opened in place: its identity after the rename (which changes the change time).
    auto stub = StubFile::open(kept_path(dir, key));
    if (!stub) return stub;
    auto bytes = stub->read_all();
    if (!bytes) return std::move(bytes).error();
    if (bytes->empty()) {
        fs::remove(kept_path(dir, key), ec);
        return Error{"the stub compile wrote an empty file", compiled.string()};
    }
    if (auto kept = replace_file(sum_path(dir, key),
                                 stub_sum(key, *bytes) + "file " + stub->identity() + "\n");
        !kept)
        return Error{fmt::format("cannot keep the stub's checksum: {}", kept.error().message),
                     sum_path(dir, key).string()};
    return stub;
}

Status write_stub_output(const StubFile& stub, const std::string& output) {
    // The stub's mode exactly (the umask would narrow it), as a copy of the file keeps it.
    return replace_file_with(output, static_cast<mode_t>(stub.perms()),
                             [&stub](int fd) { return copy_all(stub.fd(), stub.size(), fd); });
}

std::vector<std::string> link_args(const nvcc::Invocation& inv,
                                   const std::vector<std::string>& args) {
    std::vector<std::string> out = args;
    bool shared = false;
    for (const auto& a : inv.effective) {
        const nvcc::TokenMatch m = nvcc::match_token(a.text);
        if (m.spec != nullptr &&
            (m.spec->long_name == "--shared" || m.spec->phase == nvcc::PhaseFlag::Lib))
            shared = true;
    }
    if (inv.phase == nvcc::Phase::Link && !shared) {
        out.emplace_back("-Xlinker");
        out.emplace_back("--unresolved-symbols=ignore-all");
    }
    return out;
}

} // namespace forge::frontend
