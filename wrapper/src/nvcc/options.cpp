#include "nvcc/options.h"

#include <algorithm>
#include <array>
#include <vector>

namespace forge::nvcc {

namespace {

constexpr OptionSpec flag(std::string_view l, std::string_view s, Role role = Role::None) {
    return OptionSpec{l,     s,     ArgKind::None, false, false,
                      false, false, false,         role,  PhaseFlag::None};
}
constexpr OptionSpec phase(std::string_view l, std::string_view s, PhaseFlag p) {
    return OptionSpec{l, s, ArgKind::None, false, false, false, false, false, Role::Phase, p};
}
constexpr OptionSpec arg(std::string_view l, std::string_view s, Role role = Role::None) {
    return OptionSpec{l,     s,    ArgKind::Required, false, false, false, false,
                      false, role, PhaseFlag::None};
}
constexpr OptionSpec list(std::string_view l, std::string_view s, Role role = Role::None) {
    return OptionSpec{l,     s,    ArgKind::Required, false, true, false, false,
                      false, role, PhaseFlag::None};
}
constexpr OptionSpec attached(OptionSpec o) {
    o.attached = true;
    return o;
}
constexpr OptionSpec opaque(OptionSpec o) {
    o.opaque = true;
    return o;
}
constexpr OptionSpec hidden(OptionSpec o) {
    o.hidden = true;
    return o;
}
constexpr OptionSpec targets(OptionSpec o) {
    o.targets = true;
    return o;
}

// nvcc 13.0.88 `--help` (143 options, in its order), then the hidden options found in the binary
// and verified with `-dryrun` (each consumes the next token: `--cicc-prefix zzz` is no input).
constexpr std::array kOptions = {
    phase("--cuda", "-cuda", PhaseFlag::Cuda),
    phase("--cubin", "-cubin", PhaseFlag::Cubin),
    phase("--fatbin", "-fatbin", PhaseFlag::Fatbin),
    phase("--ptx", "-ptx", PhaseFlag::Ptx),
    phase("--optix-ir", "-optix-ir", PhaseFlag::OptixIr),
    phase("--ltoir", "-ltoir", PhaseFlag::LtoIr),
    phase("--preprocess", "-E", PhaseFlag::Preprocess),
    phase("--generate-dependencies", "-M", PhaseFlag::Depend),
    phase("--generate-nonsystem-dependencies", "-MM", PhaseFlag::DependNonSys),
    flag("--generate-dependencies-with-compile", "-MD"),
    flag("--generate-nonsystem-dependencies-with-compile", "-MMD"),
    arg("--dependency-output", "-MF"),
    flag("--generate-dependency-targets", "-MP"),
    phase("--compile", "-c", PhaseFlag::Compile),
    phase("--device-c", "-dc", PhaseFlag::DeviceC),
    phase("--device-w", "-dw", PhaseFlag::DeviceW),
    phase("--device-link", "-dlink", PhaseFlag::DeviceLink),
    phase("--link", "-link", PhaseFlag::Link),
    phase("--lib", "-lib", PhaseFlag::Lib),
    phase("--run", "-run", PhaseFlag::Run),
    arg("--output-file", "-o", Role::Output),
    list("--pre-include", "-include"),
    flag("--objdir-as-tempdir", "-objtemp"),
    attached(list("--library", "-l")),
    attached(list("--define-macro", "-D")),
    attached(list("--undefine-macro", "-U")),
    attached(list("--include-path", "-I")),
    list("--system-include", "-isystem"),
    attached(list("--library-path", "-L")),
    arg("--output-directory", "-odir"),
    arg("--compiler-bindir", "-ccbin"),
    flag("--allow-unsupported-compiler", "-allow-unsupported-compiler"),
    arg("--archiver-binary", "-arbin"),
    arg("--cudart", "-cudart"),
    arg("--cudadevrt", "-cudadevrt"),
    arg("--libdevice-directory", "-ldir"),
    arg("--target-directory", "-target-dir"),
    flag("--use-local-env", "-use-local-env"),
    flag("--force-cl-env-setup", "-force-cl-env-setup"),
    flag("--profile", "-pg"),
    flag("--debug", "-g"),
    flag("--device-debug", "-G"),
    flag("--generate-line-info", "-lineinfo"),
    list("--optimization-info", "-opt-info"),
    attached(arg("--optimize", "-O")),
    arg("--Ofast-compile", "-Ofc"),
    arg("--dopt", "-dopt"),
    flag("--dlink-time-opt", "-dlto", Role::Dlto),
    flag("--lto", "-lto", Role::Dlto), // "Alias for -dlto."
    flag("--gen-opt-lto", "-gen-opt-lto"),
    arg("--ftemplate-backtrace-limit", "-ftemplate-backtrace-limit"),
    arg("--ftemplate-depth", "-ftemplate-depth"),
    flag("--no-exceptions", "-noeh"),
    flag("--shared", "-shared"),
    arg("--x", "-x", Role::Language),
    arg("--std", "-std"),
    flag("--no-host-device-initializer-list", "-nohdinitlist"),
    flag("--no-host-device-move-forward", "-nohdmoveforward"),
    flag("--expt-relaxed-constexpr", "-expt-relaxed-constexpr"),
    flag("--extended-lambda", "-extended-lambda"),
    flag("--expt-extended-lambda", "-expt-extended-lambda"),
    arg("--machine", "-m"),
    flag("--m64", "-m64"),
    opaque(list("--compiler-options", "-Xcompiler")),
    opaque(list("--linker-options", "-Xlinker")),
    opaque(list("--archive-options", "-Xarchive")),
    opaque(list("--ptxas-options", "-Xptxas")),
    opaque(list("--nvlink-options", "-Xnvlink")),
    arg("--static-global-template-stub", "-static-global-template-stub"),
    arg("--device-entity-has-hidden-visibility", "-device-entity-has-hidden-visibility"),
    flag("--forward-unknown-to-host-compiler", "-forward-unknown-to-host-compiler"),
    flag("--forward-unknown-to-host-linker", "-forward-unknown-to-host-linker"),
    flag("--forward-unknown-opts", "-forward-unknown-opts"),
    flag("--dont-use-profile", "-noprof"),
    flag("--dryrun", "-dryrun", Role::Dryrun),
    flag("--verbose", "-v"),
    attached(arg("--threads", "-t")),
    arg("--split-compile", "-split-compile"),
    arg("--split-compile-extended", "-split-compile-extended"),
    flag("--fdevice-syntax-only", "-fdevice-syntax-only"),
    arg("--fdevice-time-trace", "-fdevice-time-trace"),
    flag("--keep", "-keep"),
    arg("--keep-dir", "-keep-dir"),
    flag("--save-temps", "-save-temps"),
    flag("--clean-targets", "-clean"),
    arg("--time", "-time"),
    list("--run-args", "-run-args"),
    arg("--input-drive-prefix", "-idp"),
    arg("--dependency-drive-prefix", "-ddp"),
    arg("--drive-prefix", "-dp"),
    arg("--dependency-target-name", "-MT"),
    flag("--no-align-double", ""),
    flag("--no-device-link", "-nodlink"),
    targets(arg("--gpu-architecture", "-arch", Role::GpuArch)),
    targets(list("--gpu-code", "-code", Role::GpuCode)),
    targets(list("--generate-code", "-gencode", Role::GenCode)),
    arg("--relocatable-device-code", "-rdc", Role::Rdc),
    list("--entries", "-e"),
    arg("--maxrregcount", "-maxrregcount"),
    flag("--use_fast_math", "-use_fast_math"),
    arg("--ftz", "-ftz"),
    arg("--prec-div", "-prec-div"),
    arg("--prec-sqrt", "-prec-sqrt"),
    arg("--fmad", "-fmad"),
    flag("--extra-device-vectorization", "-extra-device-vectorization"),
    arg("--default-stream", "-default-stream"),
    flag("--disable-warnings", "-w"),
    flag("--keep-device-functions", "-keep-device-functions"),
    flag("--source-in-ptx", "-src-in-ptx"),
    flag("--restrict", "-restrict"),
    flag("--Wreorder", "-Wreorder"),
    flag("--Wdefault-stream-launch", "-Wdefault-stream-launch"),
    flag("--Wmissing-launch-bounds", "-Wmissing-launch-bounds"),
    flag("--Wext-lambda-captures-this", "-Wext-lambda-captures-this"),
    flag("--Wno-deprecated-declarations", "-Wno-deprecated-declarations"),
    flag("--Wno-deprecated-gpu-targets", "-Wno-deprecated-gpu-targets"),
    list("--Werror", "-Werror"),
    flag("--resource-usage", "-res-usage"),
    flag("--extensible-whole-program", "-ewp"),
    flag("--no-compress", "-no-compress"),
    arg("--qpp-config", "-qpp-config"), // help shows no <arg>, but it consumes one
    flag("--compile-as-tools-patch", "-astoolspatch"),
    flag("--list-gpu-code", "-code-ls", Role::ListGpu),
    flag("--list-gpu-arch", "-arch-ls", Role::ListGpu),
    flag("--display-error-number", "-err-no"),
    flag("--no-display-error-number", "-no-err-no"),
    list("--diag-error", "-diag-error"),
    list("--diag-suppress", "-diag-suppress"),
    list("--diag-warn", "-diag-warn"),
    arg("--host-linker-script", "-hls"),
    flag("--augment-host-linker-script", "-aug-hls"),
    flag("--relocatable-link", "-r"),
    arg("--brief-diagnostics", "-brief-diag"),
    arg("--jump-table-density", "-jtd"),
    flag("--relocatable-ptx", "-reloc-ptx"),
    arg("--device-stack-protector", "-device-stack-protector"),
    arg("--compress-mode", "-compress-mode"),
    arg("--frandom-seed", "-frandom-seed"),
    arg("--sanitize", "-sanitize"),
    flag("--jobserver", "-jobserver"),
    flag("--help", "-h", Role::Help),
    flag("--version", "-V", Role::Version),
    list("--options-file", "-optf", Role::OptionsFile),
    // Hidden (not in --help).
    hidden(opaque(list("--cicc-options", "-Xcicc"))),
    hidden(opaque(list("--cudafe-options", "-Xcudafe"))),
    hidden(opaque(list("--fatbin-options", "-Xfatbin"))),
    hidden(opaque(list("--nvasm-options", "-Xnvasm"))),
    hidden(opaque(list("--nvdisasm-options", "-Xnvdisasm"))),
    hidden(arg("--all-prefix", "")),
    hidden(arg("--cicc-prefix", "")),
    hidden(arg("--cudafe-prefix", "")),
    hidden(arg("--ptxas-prefix", "")),
    hidden(arg("--nvlink-prefix", "")),
    hidden(arg("--tool-name", "")),
    hidden(arg("--use-cubin", "")),
    hidden(arg("--device-compilation", "")),
    hidden(arg("--nvvm-version", "")),
    hidden(arg("--cuda-api-version", "")),
    hidden(arg("--export-dir", "")),
    hidden(arg("--extern-mode", "")),
    hidden(arg("--intern-mode", "")),
};

struct Index {
    std::vector<std::pair<std::string_view, const OptionSpec*>> by_spelling; // sorted
};

const Index& index() {
    static const Index idx = [] {
        Index i;
        for (const auto& o : kOptions) {
            if (!o.long_name.empty()) i.by_spelling.emplace_back(o.long_name, &o);
            if (!o.short_name.empty()) i.by_spelling.emplace_back(o.short_name, &o);
        }
        std::sort(i.by_spelling.begin(), i.by_spelling.end(),
                  [](const auto& a, const auto& b) { return a.first < b.first; });
        return i;
    }();
    return idx;
}

} // namespace

std::span<const OptionSpec> option_table() {
    return kOptions;
}

const OptionSpec* find_option(std::string_view spelling) {
    const auto& v = index().by_spelling;
    auto it = std::lower_bound(v.begin(), v.end(), spelling,
                               [](const auto& e, std::string_view s) { return e.first < s; });
    if (it != v.end() && it->first == spelling) return it->second;
    return nullptr;
}

TokenMatch match_token(std::string_view token) {
    TokenMatch m;
    if (token.size() < 2 || token[0] != '-') return m; // an input ("-" is stdin)
    // Exact spellings first: `-lineinfo` is a flag, not `-l ineinfo`; `-Ofc` is not `-O fc`.
    if (const auto* spec = find_option(token)) {
        m.spec = spec;
        m.needs_next = spec->arg == ArgKind::Required;
        return m;
    }
    if (auto eq = token.find('='); eq != std::string_view::npos) {
        const auto* spec = find_option(token.substr(0, eq));
        if (spec && spec->arg == ArgKind::Required) {
            m.spec = spec;
            m.value = token.substr(eq + 1);
            return m;
        }
        // `--flag=x` for an argument-less flag is not that flag (nvcc: Unknown option); fall
        // through so `-DX=1` still reads as -D with "X=1".
    }
    if (token[1] != '-') {
        if (const auto* spec = find_option(token.substr(0, 2)); spec && spec->attached) {
            m.spec = spec;
            m.value = token.substr(2);
            return m;
        }
    }
    return m; // unknown: forwarded to the host compiler, never takes an argument
}

} // namespace forge::nvcc
