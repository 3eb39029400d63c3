// libFuzzer target: the PE/COFF reader (images, COFF and /bigobj objects) and the MSVC .lib path.
// Each input is read as a file, then as the one member of an MSVC-style archive ("/" linker
// members, a "//" table of NUL-terminated names), so the mutations also reach the COFF object
// reader behind the ar reader. Every error must carry a byte offset.
#include "binary/pe.h"
#include "binary/reader.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace {

void member(std::vector<std::uint8_t>& out, const std::string& name, const std::uint8_t* data,
            std::size_t size) {
    std::string h = name;
    h.resize(16, ' ');
    h += std::string(12, '0') + std::string(12, ' ') + "0       ";
    std::string sz = std::to_string(size);
    sz.resize(10, ' ');
    h += sz + "`\n";
    out.insert(out.end(), h.begin(), h.end());
    out.insert(out.end(), data, data + size);
    if (size % 2 != 0) out.push_back('\n');
}

std::vector<std::uint8_t> msvc_lib(const std::uint8_t* data, std::size_t size) {
    const std::string magic = "!<arch>\n";
    std::vector<std::uint8_t> out(magic.begin(), magic.end());
    const std::uint8_t first[4] = {0, 0, 0, 0};
    const std::uint8_t second[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    member(out, "/", first, sizeof first);
    member(out, "/", second, sizeof second);
    const char names[] = "x64/release/kernel_with_a_long_name.obj";
    member(out, "//", reinterpret_cast<const std::uint8_t*>(names), sizeof names);
    member(out, "/0", data, size);
    return out;
}

void check(const forge::Result<std::vector<forge::binary::Extension>>& r) {
    if (!r.ok() && !r.error().offset) __builtin_trap();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    forge::binary::ReadOptions opts;
    opts.max_member_bytes = 16u << 20;
    opts.max_total_inflated = 64u << 20;
    const forge::binary::Bytes b{data, size, 0};
    const forge::binary::Where where{"fuzz.dll", std::nullopt};
    auto image = forge::binary::parse_pe(b, where);
    if (!image.ok() && !image.error().offset) __builtin_trap();
    auto obj = forge::binary::parse_coff_object(b, where);
    if (!obj.ok() && !obj.error().offset) __builtin_trap();
    for (bool inspect : {false, true}) {
        opts.inspect_payloads = inspect;
        check(forge::binary::read_extensions_from_memory(data, size, "fuzz.dll", opts));
    }
    opts.inspect_payloads = false;
    const auto lib = msvc_lib(data, size);
    check(forge::binary::read_extensions_from_memory(lib.data(), lib.size(), "fuzz.lib", opts));
    return 0;
}
