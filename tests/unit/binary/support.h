// Shared helpers of the binary reader tests: the nvcc-built fixtures, and byte builders for
// synthetic (hostile) inputs.
#pragma once

#include "binary/reader.h"
#include "core/process.h"

#include "../joined.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace forge::binary::test {

using forge::test::joined;

// Whether the error's message (file, offset and text) contains `text`.
inline bool mentions(const Error& e, const std::string& text) {
    return e.to_string().find(text) != std::string::npos;
}

// The fixtures, built once per build tree (the script is idempotent and locks): the directory,
// or why there is none. `skip` only when the script says nvcc is absent (exit 77); any other
// failure of the script is a failure of every test that needs the fixtures, never a skip.
struct FixtureDir {
    std::optional<std::string> dir;
    bool skip = false;
    std::string why;
};

inline const FixtureDir& fixture_dir() {
    static const FixtureDir fixtures = [] {
        FixtureDir f;
        // FORGE_TEST_BINARY_FIXTURES lets a second build tree (the sanitizer build of the test
        // command) reuse the first one's fixtures instead of running nvcc ~25 times again: the
        // script's stamp (its own hash and the sources') says whether they are current.
        const char* shared = std::getenv("FORGE_TEST_BINARY_FIXTURES");
        const std::string out = shared && *shared
                                    ? std::string(shared)
                                    : joined({FORGE_TEST_BINARY_DIR, "/binary-fixtures"});
        const std::string log = out + ".log";
        std::filesystem::create_directories(out);
        // The one process runner, no shell: a path with a quote in it stays one argument.
        ProcessSpec spec;
        spec.path = "/bin/bash";
        spec.argv = {"bash", joined({FORGE_TEST_SOURCE_DIR, "/fixtures/binary/make_fixtures.sh"}),
                     out};
        spec.output = ProcessSpec::Output::Merged;
        spec.null_stdin = true;
        auto ran = run_process(spec);
        std::ofstream(log, std::ios::binary)
            << (ran.ok() ? ran.value().out : ran.error().to_string());
        const int rc = ran.ok() ? ran.value().status_code() : -1;
        if (rc == 0) {
            f.dir = out;
        } else if (rc == 77) {
            f.skip = true;
            f.why = "nvcc not installed (see " + log + ")";
        } else {
            f.why = "make_fixtures.sh failed (exit " + std::to_string(rc) + "), see " + log;
        }
        return f;
    }();
    return fixtures;
}

#define FORGE_NEED_FIXTURES(var)                                                                   \
    const auto& var##_fx = ::forge::binary::test::fixture_dir();                                   \
    if (var##_fx.skip) GTEST_SKIP() << var##_fx.why;                                               \
    if (!var##_fx.dir) FAIL() << var##_fx.why;                                                     \
    const std::string var = *var##_fx.dir

// "13.0" from `nvcc --version` of the toolkit that built the fixtures.
inline std::string nvcc_release() {
    const char* nvcc = std::getenv("NVCC");
    std::string cmd = std::string(nvcc ? nvcc : "/usr/local/cuda/bin/nvcc") + " --version";
    std::string text;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
        char buf[256];
        while (std::fgets(buf, sizeof buf, p))
            text += buf;
        ::pclose(p);
    }
    auto pos = text.find("release ");
    if (pos == std::string::npos) return "?";
    auto end = text.find(',', pos);
    return text.substr(pos + 8, end - pos - 8);
}

inline std::vector<std::uint8_t> slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Replays a corpus directory: every regular file against its row in `rows`; a file without a row
// and a row without a file fail the test (`table` names where the rows are). `replay(name, row,
// bytes)` checks one file.
template <class Row, class Replay>
void replay_corpus(const std::filesystem::path& dir, const std::map<std::string, Row>& rows,
                   const std::string& table, Replay replay) {
    ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
    std::set<std::string> seen;
    for (const auto& d : std::filesystem::directory_iterator(dir)) {
        if (!d.is_regular_file()) continue;
        const std::string name = d.path().filename().string();
        seen.insert(name);
        auto row = rows.find(name);
        if (row == rows.end()) {
            ADD_FAILURE() << name << ": no row in " << table << ": state what it must do";
            continue;
        }
        replay(name, row->second, slurp(d.path().string()));
    }
    for (const auto& [name, _] : rows)
        EXPECT_TRUE(seen.count(name)) << name << " is gone from the corpus";
}

// A corpus read: small limits, and a read that takes seconds fails (a loop, not a slow read).
inline Result<std::vector<Extension>> corpus_read(const std::vector<std::uint8_t>& bytes,
                                                  const std::string& name, ReadOptions opts) {
    opts.max_member_bytes = 64 << 20;
    opts.max_total_inflated = 256 << 20;
    const auto start = std::chrono::steady_clock::now();
    auto r = read_extensions_from_memory(bytes.data(), bytes.size(), name, opts);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    EXPECT_LT(ms, 5000) << "took too long (a loop?)";
    return r;
}

inline std::size_t entry_count(const std::vector<Extension>& exts) {
    std::size_t n = 0;
    for (const auto& x : exts)
        n += x.entries.size();
    return n;
}

inline Result<std::vector<Entry>> read_memory(const std::vector<std::uint8_t>& bytes,
                                              const ReadOptions& opts = {}) {
    auto exts = read_extensions_from_memory(bytes.data(), bytes.size(), "mem.bin", opts);
    if (!exts) return std::move(exts).error();
    std::vector<Entry> out;
    for (auto& x : *exts)
        for (auto& e : x.entries)
            out.push_back(e);
    return out;
}

// Hostile input read from memory: an Error with the file, a byte offset and exit 2, never a
// pass.
inline Error must_fail(const std::vector<std::uint8_t>& bytes, const ReadOptions& opts = {}) {
    auto r = read_memory(bytes, opts);
    EXPECT_FALSE(r.ok()) << "accepted hostile input";
    if (r.ok()) return Error{};
    EXPECT_EQ(r.error().file, "mem.bin");
    EXPECT_TRUE(r.error().offset) << r.error().to_string();
    EXPECT_EQ(r.error().exit_code, kExitInput);
    return r.error();
}

// Little-endian byte builder.
struct Buf {
    std::vector<std::uint8_t> b;
    Buf& u8(std::uint8_t v) {
        b.push_back(v);
        return *this;
    }
    Buf& u16(std::uint16_t v) { return raw(&v, 2); }
    Buf& u32(std::uint32_t v) { return raw(&v, 4); }
    Buf& u64(std::uint64_t v) { return raw(&v, 8); }
    Buf& zeros(std::size_t n) {
        b.insert(b.end(), n, 0);
        return *this;
    }
    Buf& str(const std::string& s) {
        b.insert(b.end(), s.begin(), s.end());
        return *this;
    }
    Buf& raw(const void* p, std::size_t n) {
        auto* c = static_cast<const std::uint8_t*>(p);
        b.insert(b.end(), c, c + n);
        return *this;
    }
    Buf& bytes(const std::vector<std::uint8_t>& v) {
        b.insert(b.end(), v.begin(), v.end());
        return *this;
    }
    void put32(std::size_t off, std::uint32_t v) { std::memcpy(&b[off], &v, 4); }
    void put64(std::size_t off, std::uint64_t v) { std::memcpy(&b[off], &v, 8); }
    void put16(std::size_t off, std::uint16_t v) { std::memcpy(&b[off], &v, 2); }
};

// The 64 bytes of an ELF64 little-endian header (e_ident to e_shstrndx): no program headers,
// 64-byte section headers at `shoff`.
struct Elf64HeaderSpec {
    std::uint16_t type = 1; // ET_REL; 3 is ET_DYN
    std::uint16_t machine = 62;
    std::uint64_t shoff = 0;
    std::uint16_t shnum = 0;
    std::uint16_t shstrndx = 0;
};
inline void elf64_header(Buf& f, const Elf64HeaderSpec& h) {
    f.str("\x7f"
          "ELF")
        .u8(2) // ELFCLASS64
        .u8(1) // ELFDATA2LSB
        .u8(1) // EV_CURRENT
        .u8(0)
        .zeros(8);
    f.u16(h.type).u16(h.machine).u32(1).u64(0).u64(0).u64(h.shoff);
    f.u32(0).u16(64).u16(0).u16(0).u16(64).u16(h.shnum).u16(h.shstrndx);
}

// One section of elf_with's file.
struct SectionSpec {
    std::string name;
    std::uint32_t type = 1; // SHT_PROGBITS
    std::vector<std::uint8_t> data;
    std::uint64_t flags = 2; // SHF_ALLOC
    std::uint64_t addr = 0;  // where a linked file's loader maps it
};

// A minimal ELF64 LE file with the given sections (plus the null section and .shstrtab).
inline std::vector<std::uint8_t> elf_with(const std::vector<SectionSpec>& sections,
                                          std::uint16_t machine = 62, std::uint16_t type = 1) {
    std::string shstr(1, '\0');
    std::vector<std::uint32_t> name_offs;
    for (const auto& s : sections) {
        name_offs.push_back(static_cast<std::uint32_t>(shstr.size()));
        shstr += s.name + '\0';
    }
    const auto shstr_name = static_cast<std::uint32_t>(shstr.size());
    shstr += std::string(".shstrtab") + '\0';
    std::vector<std::uint64_t> offs;
    std::uint64_t off = 64;
    for (const auto& s : sections) {
        offs.push_back(off);
        off += (s.data.size() + 7) & ~std::size_t{7};
    }
    const std::uint64_t str_off = off, sh_off = (str_off + shstr.size() + 7) & ~7ull;
    const auto shnum = static_cast<std::uint16_t>(sections.size() + 2);
    Buf f;
    elf64_header(f, {.type = type,
                     .machine = machine,
                     .shoff = sh_off,
                     .shnum = shnum,
                     .shstrndx = static_cast<std::uint16_t>(shnum - 1)});
    for (const auto& s : sections) {
        f.bytes(s.data);
        f.zeros(((s.data.size() + 7) & ~std::size_t{7}) - s.data.size());
    }
    f.str(shstr);
    f.zeros(sh_off - f.b.size());
    f.zeros(64); // null section
    for (std::size_t i = 0; i < sections.size(); ++i)
        f.u32(name_offs[i])
            .u32(sections[i].type)
            .u64(sections[i].flags)
            .u64(sections[i].addr)
            .u64(offs[i])
            .u64(sections[i].data.size())
            .u32(0)
            .u32(0)
            .u64(8)
            .u64(0);
    f.u32(shstr_name)
        .u32(3)
        .u64(0)
        .u64(0)
        .u64(str_off)
        .u64(shstr.size())
        .u32(0)
        .u32(0)
        .u64(1)
        .u64(0);
    return f.b;
}

// A minimal ELF64 LE host object whose only named section is `name` holding `data`.
inline std::vector<std::uint8_t> host_elf(const std::string& name,
                                          const std::vector<std::uint8_t>& data,
                                          std::uint16_t machine = 62) {
    return elf_with({{name, 1, data}}, machine);
}

// A tiny cubin: one `.text.k` section, new-ABI e_flags (SM in bits 8-15).
inline std::vector<std::uint8_t> tiny_cubin(int sm, std::uint32_t top = 0x06) {
    auto elf = host_elf(".text.k", std::vector<std::uint8_t>(16, 0), 190);
    Buf b{elf};
    b.b[8] = 8; // EI_ABIVERSION
    b.put32(48, (top << 24) | 0x02u | (static_cast<std::uint32_t>(sm) << 8));
    return b.b;
}

struct EntrySpec {
    std::uint16_t kind = 2;
    std::uint32_t arch = 80;
    std::uint64_t flags = 0x11;
    std::vector<std::uint8_t> payload = tiny_cubin(80);
    std::uint32_t compressed_size = 0;
    std::uint64_t uncompressed_size = 0;
};

inline std::vector<std::uint8_t> entry_bytes(const EntrySpec& s) {
    Buf e;
    e.u16(s.kind).u16(0x0101).u32(0x40).u64(s.payload.size()).u32(s.compressed_size).u32(0);
    e.u16(0).u16(8).u32(s.arch).u32(0).u32(0).u64(s.flags).u64(0).u64(s.uncompressed_size);
    e.bytes(s.payload);
    return e.b;
}

inline std::vector<std::uint8_t> fatbin_bytes(const std::vector<EntrySpec>& entries) {
    std::vector<std::uint8_t> body;
    for (const auto& s : entries) {
        auto e = entry_bytes(s);
        body.insert(body.end(), e.begin(), e.end());
    }
    Buf f;
    f.u32(0xBA55ED50).u16(1).u16(0x10).u64(body.size()).bytes(body);
    return f.b;
}

} // namespace forge::binary::test
