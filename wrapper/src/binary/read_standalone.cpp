// Standalone .fatbin and .cubin files: the fatbin stream or the bare cubin is the whole file.
#include "binary/read_context.h"

#include <fmt/format.h>

namespace forge::binary::detail {

Status Reader::read_standalone_fatbin(const Bytes& b, const Where& where,
                                      std::optional<std::size_t> into) {
    auto fatbins = parse_fatbins(b, where, budget_);
    if (!fatbins) return std::move(fatbins).error();
    const std::size_t ext = extension_for(where, into);
    return add_fatbins(*fatbins, "fatbin", where, ext, {}, Found::Registered);
}

Status Reader::read_standalone_cubin(const Elf& elf, const Where& where,
                                     std::optional<std::size_t> into) {
    // A bare cubin is small and uncompressed: its notes are read even when listing, because
    // the tkinfo options are the only record of a family `f` target.
    auto info = inspect_cubin(elf.bytes, where);
    if (!info) return std::move(info).error();
    if (info->sm < 10)
        return where.error(elf.bytes.abs(elf64::kEFlags),
                           fmt::format("cannot read an SM from the cubin's "
                                       "e_flags 0x{:08x}",
                                       elf.flags));
    if (budget_.left == 0) return budget_.exhausted(elf.bytes.abs(0), where);
    --budget_.left;
    Entry e;
    e.file = where.file;
    e.member = where.member;
    e.section = "cubin";
    e.fatbin_offset = elf.bytes.abs(0);
    e.entry_offset = elf.bytes.abs(0);
    // A bare cubin records `a` in .nv.compat; `f` only in the tkinfo options of the tool.
    arch::Suffix suffix = arch::Suffix::None;
    if (info->arch_specific.value_or(false))
        suffix = arch::Suffix::Specific;
    else if (info->tool_arch && info->tool_arch->ends_with('f') &&
             *info->tool_arch == fmt::format("sm_{}f", info->sm))
        suffix = arch::Suffix::Family;
    e.target = arch::Target{arch::Kind::Sass, info->sm, suffix};
    e.payload_size = elf.bytes.size();
    e.stub = info->stub();
    e.kernels = info->kernels;
    if (opts_.inspect_payloads) e.toolkit = info->toolkit;
    e.cubin_arch_specific = info->arch_specific;
    out_[extension_for(where, into)].entries.push_back(std::move(e));
    return ok_status();
}

} // namespace forge::binary::detail
