// The cubin's own fields, byte by byte, as elf.h names the ELF ones (docs/fatbin-format.md, "The
// cubin"): e_flags, the NVIDIA notes, the .nv.info and .nv.compat attribute records. Offsets are
// within the field's record; cubin.cpp checks each record holds them before it reads one.
#pragma once

#include <cstdint>

namespace forge::binary {

// e_flags. EI_ABIVERSION 8 (every CUDA 13 cubin) keeps the SM in bits 8-15 and a layout id in the
// top byte (0x05: nvlink's kernel-less device-link stub); older ABIs keep the SM in bits 0-7.
namespace cuda_eflags {
inline constexpr std::uint8_t kAbiV8 = 8; // e_ident[EI_ABIVERSION] of the new layout
inline constexpr std::uint32_t kSmShiftV8 = 8;
inline constexpr std::uint32_t kSmMask = 0xff;
inline constexpr std::uint32_t kLayoutShiftV8 = 24;
inline constexpr std::uint32_t kLayoutStub = 0x05;
inline constexpr std::uint32_t kAcceleratorsV8 = 0x8;   // EF_CUDA_ACCELERATORS (never seen set)
inline constexpr std::uint32_t kAcceleratorsV7 = 0x800; // EF_CUDA_ACCELERATORS_V1 (never seen set)
} // namespace cuda_eflags

// Standard ELF note header (Elf64_Nhdr): namesz, descsz, type; name and desc 4-byte aligned.
namespace nhdr {
inline constexpr std::uint64_t kNamesz = 0; // u32 n_namesz
inline constexpr std::uint64_t kDescsz = 4; // u32 n_descsz
inline constexpr std::uint64_t kType = 8;   // u32 n_type
inline constexpr std::uint64_t kSize = 12;  // sizeof(Elf64_Nhdr)
} // namespace nhdr
inline constexpr std::uint32_t kNoteTkinfo = 2000; // n_type of .note.nv.tkinfo
inline constexpr std::uint32_t kNoteCuinfo = 1000; // n_type of .note.nv.cuinfo

// tkinfo descriptor: u32 string offsets into the pool that starts at kPool.
namespace tkinfo {
inline constexpr std::uint64_t kToolVersion = 0x0c; // "Cuda compilation tools, release 13.0, ..."
inline constexpr std::uint64_t kToolOptions = 0x14; // "-arch sm_120 -m 64 "
inline constexpr std::uint64_t kPool = 0x18;
} // namespace tkinfo

// cuinfo descriptor: u16 version, u16 virtual SM, u32 tool version (major*10+minor).
namespace cuinfo {
inline constexpr std::uint64_t kToolVersion = 4;
inline constexpr std::uint64_t kSize = 8;
} // namespace cuinfo

inline constexpr std::uint32_t kShtNvInfo = 0x70000000;   // SHT_LOPROC: .nv.info, .nv.info.<kernel>
inline constexpr std::uint32_t kShtNvCompat = 0x70000086; // SHT_LOPROC + 0x86

// .nv.info / .nv.compat attribute records: u8 format, u8 attribute, then the payload.
namespace nv_attr {
inline constexpr std::uint64_t kFormat = 0;
inline constexpr std::uint64_t kId = 1;
inline constexpr std::uint64_t kPayload = 2;   // NVAL/BVAL/HVAL: 2 bytes; SVAL: u16 size
inline constexpr std::uint64_t kFixedSize = 4; // a whole NVAL/BVAL/HVAL record; SVAL data start
inline constexpr std::uint8_t kNval = 1;       // formats
inline constexpr std::uint8_t kBval = 2;
inline constexpr std::uint8_t kHval = 3;
inline constexpr std::uint8_t kSval = 4;
inline constexpr std::uint8_t kCudaApiVersion = 0x37;     // in .nv.info.<kernel>: SVAL u32
inline constexpr std::uint8_t kCompatArchSpecific = 0x09; // in .nv.compat: BVAL, 1 for `a`
} // namespace nv_attr

} // namespace forge::binary
