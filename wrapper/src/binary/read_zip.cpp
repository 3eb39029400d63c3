// Wheels and other zip files: each member read as a file of its own, nested one level deeper.
#include "binary/read_context.h"

#include "binary/ar.h"
#include "binary/zip.h"

namespace forge::binary::detail {

namespace {

bool interesting(const Bytes& head) {
    return has_elf_magic(head) || has_ar_magic(head) || has_thin_ar_magic(head) ||
           has_fatbin_magic(head) || has_zip_magic(head) || has_pe_magic(head) ||
           has_macho_magic(head) || looks_like_coff_object(head);
}

} // namespace

Status Reader::read_zip(const Bytes& b, const Where& where, int depth) {
    ZipOptions zip{opts_.max_member_bytes, opts_.max_total_inflated, &inflated_total_,
                   opts_.spill_member_bytes, opts_.check_record && depth == 0};
    return for_each_zip_member(
        b, where, zip, interesting, [&](const std::string& name, const Bytes& data) -> Status {
            const std::string label = where.member ? *where.member + "/" + name : name;
            return read(data, label, depth + 1, std::nullopt);
        });
}

} // namespace forge::binary::detail
