// nvcc 13.0's options as data: one table with every spelling the wrapper must recognise, whether
// it takes an argument and how, and what the model does with it. The parser never special-cases a
// spelling outside this table. Facts: docs/nvcc-command-line.md, "Option syntax".
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace forge::nvcc {

// What the command-line model does with an option (everything else is just skipped correctly).
enum class Role : std::uint8_t {
    None,
    Output,      // -o
    OptionsFile, // -optf / --options-file (expanded in place)
    Language,    // -x
    GpuArch,     // -arch (single value, last wins)
    GpuCode,     // -code (list, accumulates; needs a virtual -arch)
    GenCode,     // -gencode (list, accumulates)
    Rdc,         // -rdc=true|false
    Dlto,        // -dlto
    Dryrun,      // -dryrun
    Version,     // --version / -V
    Help,        // --help / -h
    ListGpu,     // --list-gpu-arch / --list-gpu-code
    Phase,       // sets the compilation phase (see OptionSpec::phase)
};

// The compilation phase an option selects (nvcc's "compilation trajectory" options).
enum class PhaseFlag : std::uint8_t {
    None,
    Cuda,         // -cuda
    Cubin,        // -cubin
    Fatbin,       // -fatbin
    Ptx,          // -ptx
    OptixIr,      // -optix-ir
    LtoIr,        // -ltoir
    Preprocess,   // -E
    Depend,       // -M
    DependNonSys, // -MM
    Compile,      // -c
    DeviceC,      // -dc
    DeviceW,      // -dw
    DeviceLink,   // -dlink
    Link,         // -link
    Lib,          // -lib
    Run,          // -run
};

enum class ArgKind : std::uint8_t {
    None,     // a flag; `--flag=x` is not this option
    Required, // `-opt=value` or `-opt value`
};

struct OptionSpec {
    std::string_view long_name;  // "--gpu-architecture"; "" when the option has no long form
    std::string_view short_name; // "-arch"; "" when the option has no short form
    ArgKind arg = ArgKind::None;
    bool attached = false; // also `-Ivalue` (only -I -D -U -L -l -O -t)
    bool list = false;     // value is a comma list and the option accumulates when repeated
    bool targets = false;  // selects GPU targets
    bool opaque = false;   // value is handed to another tool and never interpreted (-Xptxas ...)
    bool hidden = false;   // not in `nvcc --help`, but accepted by nvcc 13.0
    Role role = Role::None;
    PhaseFlag phase = PhaseFlag::None;
};

// The whole table, in a stable order (grouped as in `nvcc --help`).
std::span<const OptionSpec> option_table();

// Exact lookup of one spelling ("-arch", "--gpu-architecture"); nullptr if unknown.
const OptionSpec* find_option(std::string_view spelling);

// How one argv token is read.
struct TokenMatch {
    const OptionSpec* spec = nullptr;      // nullptr: not a known option
    std::optional<std::string_view> value; // the value inside the token (`=value` or attached)
    bool needs_next = false;               // the value is the next token
};

// Reads one token the way nvcc 13.0 does: exact spelling, `-opt=value`, or an attached value for
// the single-letter options that allow it. Tokens that do not start with '-' (inputs) and unknown
// options give spec == nullptr (nvcc forwards unknown options and they never take an argument).
TokenMatch match_token(std::string_view token);

} // namespace forge::nvcc
