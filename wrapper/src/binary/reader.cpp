// Dispatch by content: zip -> members, ar -> members, fatbin, cubin, host ELF or PE/COFF ->
// fatbin sections; Mach-O is named as a host format not read.
#include "binary/reader.h"

#include "binary/ar.h"
#include "binary/cubin.h"
#include "binary/elf.h"
#include "binary/fatbin.h"
#include "binary/mapped_file.h"
#include "binary/pe.h"
#include "binary/result_cache.h"
#include "binary/zip.h"
#include "core/plan_marker.h"
#include "core/workers.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <fmt/format.h>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <system_error>
#include <thread>

namespace forge::binary {

std::string_view compression_string(Compression c) {
    switch (c) {
    case Compression::Lz4:
        return "lz4";
    case Compression::Zstd:
        return "zstd";
    case Compression::None:
        break;
    }
    return "none";
}

std::string_view found_string(Found f) {
    switch (f) {
    case Found::Embedded:
        return "embedded";
    case Found::Unsectioned:
        return "unsectioned";
    case Found::Registered:
        break;
    }
    return "registered";
}

namespace {

// Section names that hold fatbins: ELF executable and relocatable fatbins, and the Mach-O style
// name some toolchains use.
constexpr std::string_view kFatbinSections[] = {".nv_fatbin", "__nv_relfatbin", "__nv_fatbin"};

// The same in PE/COFF (docs/fatbin-format.md, "PE/COFF (Windows)"): objects keep the full
// names through the COFF string table; link.exe cuts an image's section names to eight bytes.
constexpr std::string_view kPeFatbinSections[] = {".nv_fatbin", ".nv_fatb", "__nv_relfatbin",
                                                  "__nv_rel"};
// link.exe starts each object's contribution to a section at a 16-byte boundary (the objects'
// IMAGE_SCN_ALIGN_16BYTES): curand64_10.dll has 8 zero bytes between some of its fatbins.
constexpr std::uint64_t kPeFatbinAlign = 16;
constexpr std::string_view kPeRelfatbinSections[] = {"__nv_relfatbin", "__nv_rel"};
constexpr std::string_view kPeControlSections[] = {".nvFatBinSegment", ".nvFatBi"};

template <std::size_t N> bool named(std::string_view name, const std::string_view (&names)[N]) {
    return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

bool has_fatbin_magic(const Bytes& b) {
    return b.has(0, 4) && b.u32(0) == kFatbinMagic;
}

bool interesting(const Bytes& head) {
    return has_elf_magic(head) || has_ar_magic(head) || has_thin_ar_magic(head) ||
           has_fatbin_magic(head) || has_zip_magic(head) || has_pe_magic(head) ||
           has_macho_magic(head) || looks_like_coff_object(head);
}

// Decompressed cubins held at once by the workers of one read: a worker whose image would take
// the total past the limit waits until the others are done, and one larger than the limit runs
// alone, so the workers never multiply what a single entry may hold.
class MemoryBudget {
  public:
    explicit MemoryBudget(std::uint64_t limit) : limit_(limit) {}
    void acquire(std::uint64_t n) {
        std::unique_lock lock(mutex_);
        freed_.wait(lock, [&] { return in_use_ == 0 || n <= limit_ - std::min(limit_, in_use_); });
        in_use_ += n;
    }
    void release(std::uint64_t n) {
        {
            std::lock_guard lock(mutex_);
            in_use_ -= n;
        }
        freed_.notify_all();
    }

  private:
    std::mutex mutex_;
    std::condition_variable freed_;
    std::uint64_t limit_;
    std::uint64_t in_use_ = 0;
};

class MemoryGrant {
  public:
    MemoryGrant(MemoryBudget& budget, std::uint64_t n) : budget_(budget), n_(n) {
        budget_.acquire(n_);
    }
    MemoryGrant(const MemoryGrant&) = delete;
    MemoryGrant& operator=(const MemoryGrant&) = delete;
    ~MemoryGrant() { budget_.release(n_); }

  private:
    MemoryBudget& budget_;
    std::uint64_t n_;
};

// What the payload workers keep resident between cubins and in one (decoders, images): a worker
// keeps what it was granted for the next cubin, so that the pages it decodes into are already
// faulted in, and grows it while the total stays under the limit. A worker that cannot grow gives
// back all it holds and queues; while the first in the queue does not fit, each worker that
// finishes a cubin gives back what it holds (Worker::after_cubin). The queue is served in turn,
// and a grant larger than the limit waits until nobody holds anything: the total never passes the
// limit (or the one larger grant), nobody starves. (Giving back is not free: the next cubin
// faults its pages in again.)
class ResidentBudget {
  public:
    explicit ResidentBudget(std::uint64_t limit) : limit_(limit) {}
    bool try_grow(std::uint64_t n) {
        std::lock_guard lock(mutex_);
        if (next_ != serving_ || !fits(n)) return false;
        in_use_ += n;
        return true;
    }
    void acquire(std::uint64_t n) {
        std::unique_lock lock(mutex_);
        const std::uint64_t ticket = next_++;
        turn_.wait(lock, [&] {
            if (ticket != serving_) return false;
            head_need_ = n;
            return in_use_ == 0 || fits(n);
        });
        ++serving_;
        in_use_ += n;
        lock.unlock();
        turn_.notify_all();
    }
    void release(std::uint64_t n) {
        {
            std::lock_guard lock(mutex_);
            in_use_ -= n;
        }
        turn_.notify_all();
    }
    // What the first in the queue waits for while it does not fit yet (then a worker gives back
    // after its cubin); 0 when nobody waits or it fits. Only as many workers give back as the
    // first one needs, so the others keep their pages faulted in.
    [[nodiscard]] std::uint64_t short_for_queue() {
        std::lock_guard lock(mutex_);
        return next_ != serving_ && in_use_ != 0 && !fits(head_need_)
                   ? std::max<std::uint64_t>(head_need_, 1)
                   : 0;
    }
    [[nodiscard]] std::uint64_t limit() const { return limit_; }

  private:
    [[nodiscard]] bool fits(std::uint64_t n) const {
        return n <= limit_ - std::min(limit_, in_use_);
    }
    std::mutex mutex_;
    std::condition_variable turn_;
    std::uint64_t limit_;
    std::uint64_t in_use_ = 0;
    std::uint64_t next_ = 0;      // tickets handed out
    std::uint64_t serving_ = 0;   // the ticket whose turn it is
    std::uint64_t head_need_ = 0; // what that ticket waits for
};

// One payload worker: its scratch and what the budget granted it.
class Worker {
  public:
    explicit Worker(ResidentBudget& budget) : budget_(budget) {}
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;
    ~Worker() { give_back(); }
    // At least `n` bytes granted before the scratch is used for a cubin that holds that much.
    void hold(std::uint64_t n) {
        if (n <= held_) return;
        if (budget_.try_grow(n - held_)) {
            held_ = n;
            return;
        }
        give_back();
        budget_.acquire(n);
        held_ = n;
    }
    // Gives back what the first in the queue needs, keeping the first MiB of pages (enough for
    // most cubins: the median in libtorch_cuda.so is 0.4 MB) unless that one is large.
    void after_cubin() {
        if (held_ == 0) return;
        const std::uint64_t head = budget_.short_for_queue();
        if (head == 0) return;
        const std::uint64_t kept = scratch_.release(head <= budget_.limit() / 2 ? kRetain : 0);
        if (kept >= held_) return;
        budget_.release(held_ - kept);
        held_ = kept;
    }
    StreamScratch& scratch() { return scratch_; }
    std::vector<std::uint8_t>& key_buffer() { return key_buffer_; }

  private:
    void give_back() {
        if (held_ == 0) return;
        scratch_.release();
        budget_.release(held_);
        held_ = 0;
    }
    static constexpr std::uint64_t kRetain = std::uint64_t{1} << 20;
    ResidentBudget& budget_;
    StreamScratch scratch_;
    std::vector<std::uint8_t> key_buffer_; // ResultCache keys: the compressed bytes, a slice
    std::uint64_t held_ = 0;
};

Error out_of_memory(const Where& where, std::uint64_t offset, std::string_view what) {
    return where.error(offset, fmt::format("out of memory while reading {}", what));
}

// `.entry` as a directive (PTX ISA, "Kernel and Function Directives"), not as part of a longer
// name such as `.entry_point`: preceded by whitespace or the start, followed by whitespace.
int count_ptx_entries(std::string_view ptx) {
    constexpr std::string_view kEntry = ".entry";
    auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    int n = 0;
    for (auto at = ptx.find(kEntry); at != std::string_view::npos;
         at = ptx.find(kEntry, at + kEntry.size())) {
        const auto end = at + kEntry.size();
        if ((at == 0 || blank(ptx[at - 1])) && end < ptx.size() && blank(ptx[end])) ++n;
    }
    return n;
}

class Reader {
  public:
    Reader(std::string file, const ReadOptions& opts)
        : opts_(opts), file_(std::move(file)),
          budget_(opts.max_entries, "the limit for one file (a fatbin read through overlapping "
                                    "headers or sections?)"),
          memory_(opts.max_inflight_bytes), stream_memory_(opts.max_stream_bytes) {}

    Status read(const Bytes& b, const std::optional<std::string>& member, int depth,
                std::optional<std::size_t> into) {
        Where where{file_, member};
        if (depth > opts_.max_nesting)
            return where.error(b.abs(0), fmt::format("containers nested deeper than {} levels",
                                                     opts_.max_nesting));
        if (has_zip_magic(b)) return read_zip(b, where, depth);
        if (has_ar_magic(b) || has_thin_ar_magic(b)) return read_ar(b, where, depth, into);
        if (has_fatbin_magic(b)) return read_standalone_fatbin(b, where, into);
        if (has_elf_magic(b)) return read_elf(b, where, into);
        if (has_pe_magic(b)) return read_pe_image(b, where, into);
        if (has_macho_magic(b))
            return where.error(b.abs(0), "a Mach-O file (a macOS host binary): Mach-O is not a "
                                         "host format this reader reads (ELF and PE/COFF are)");
        if (is_coff_import_member(b)) return ok_status(); // an MSVC .lib's DLL import stub
        if (starts_like_coff_object(b)) return read_coff_object(b, where, into);
        if (b.has(0, 4) && b.u16(pe::kBigSig1) == 0 && b.u16(pe::kBigSig2) == 0xffff)
            return where.error(b.abs(0), "an anonymous COFF object (MSVC /GL link-time code or "
                                         "CLR): not a COFF object this reader can read");
        if (depth == 0)
            return where.error(b.abs(0), "not a recognised binary: no ELF, PE, COFF, ar, zip or "
                                         "fatbin magic");
        return ok_status(); // a wheel's .py files, an archive's odd members
    }

    std::vector<Extension> take() && { return std::move(out_); }

    // The cache's packs of this read, written once the whole read succeeded (a failed read saw
    // only some of a file's images).
    void save_cache() {
        for (auto& [name, pack] : packs_)
            opts_.cache->save(*pack);
    }

  private:
    std::size_t extension_for(const Where& where, std::optional<std::size_t> into) {
        if (into) return *into;
        out_.push_back(Extension{where.file, where.member, {}});
        return out_.size() - 1;
    }

    Status read_zip(const Bytes& b, const Where& where, int depth) {
        ZipOptions zip{opts_.max_member_bytes, opts_.max_total_inflated, &inflated_total_,
                       opts_.spill_member_bytes, opts_.check_record && depth == 0};
        return for_each_zip_member(
            b, where, zip, interesting, [&](const std::string& name, const Bytes& data) -> Status {
                const std::string label = where.member ? *where.member + "/" + name : name;
                return read(data, label, depth + 1, std::nullopt);
            });
    }

    Status read_ar(const Bytes& b, const Where& where, int depth, std::optional<std::size_t> into) {
        auto members = parse_ar(b, where);
        if (!members) return std::move(members).error();
        const std::size_t ext = extension_for(where, into);
        for (const auto& m : *members) {
            const std::string label =
                where.member ? fmt::format("{}({})", *where.member, m.name) : m.name;
            FORGE_TRY_STATUS(read(m.data, label, depth + 1, ext));
        }
        return ok_status();
    }

    Status read_standalone_fatbin(const Bytes& b, const Where& where,
                                  std::optional<std::size_t> into) {
        auto fatbins = parse_fatbins(b, where, budget_);
        if (!fatbins) return std::move(fatbins).error();
        const std::size_t ext = extension_for(where, into);
        return add_fatbins(*fatbins, "fatbin", where, ext, {}, Found::Registered);
    }

    struct ScanSection {
        std::string name;
        Bytes bytes;              // the section's contents (base(): their offset in the file)
        std::uint64_t address{0}; // where bytes[0] is loaded (0 for an object's section)
    };
    struct Range {
        std::uint64_t begin, end; // offsets in the file, as Bytes::abs gives them
    };

    // The fatbin containers in sections other than the registered ones (docs/fatbin-format.md,
    // "Fatbins outside the registered sections"): each byte is searched once, however many
    // section headers name it, and never inside a registered section. The magic search starts
    // when the scan is made and runs on up to `threads` threads of its own while the caller reads
    // the registered fatbins; add_embedded waits for it, and so does destroying the scan (the
    // future of std::async; `candidates` is declared after the regions it reads, so it goes
    // first). Where no thread can be started the search is deferred to add_embedded's wait.
    // With `known` (the candidates' file offsets a --toolkit cache recorded for this unchanged
    // file), nothing is searched: each region gets its candidates from the list.
    struct EmbeddedScan {
        std::vector<ScanSection> secs;
        std::vector<ScanRegion> regions;
        std::vector<std::size_t> owner; // the section of each region
        std::future<std::vector<std::vector<std::uint64_t>>> candidates;
        std::optional<std::vector<std::vector<std::uint64_t>>> known_candidates;

        EmbeddedScan(const Bytes& file, std::vector<ScanSection> sections,
                     std::vector<Range> registered, unsigned threads,
                     const std::optional<std::vector<std::uint64_t>>& known)
            : secs(std::move(sections)) {
            std::stable_sort(
                secs.begin(), secs.end(), [](const ScanSection& a, const ScanSection& b) {
                    return a.bytes.base() != b.bytes.base() ? a.bytes.base() < b.bytes.base()
                                                            : a.bytes.size() > b.bytes.size();
                });
            std::sort(registered.begin(), registered.end(),
                      [](const Range& a, const Range& b) { return a.begin < b.begin; });
            std::uint64_t searched_to = 0; // offsets below this were searched already
            for (std::size_t i = 0; i < secs.size(); ++i) {
                const Bytes& sb = secs[i].bytes;
                const std::uint64_t end = sb.base() + sb.size(); // inside the file
                std::uint64_t lo = std::max(sb.base(), searched_to);
                searched_to = std::max(searched_to, end);
                for (const Range& reg : registered) {
                    if (lo >= end) break;
                    if (reg.end <= lo || reg.begin >= end) continue;
                    if (reg.begin > lo) add_region(file, secs[i], lo, reg.begin, i);
                    lo = std::max(lo, reg.end);
                }
                if (lo < end) add_region(file, secs[i], lo, end, i);
            }
            if (regions.empty()) return;
            if (known) {
                known_candidates = split(*known);
                return;
            }
            auto search = [this, threads] { return find_fatbin_magic(regions, threads); };
            try {
                candidates = std::async(std::launch::async, search);
            } catch (const std::system_error&) { // no thread to spare: searched when waited for
                candidates = std::async(std::launch::deferred, search);
            }
        }

        // The candidates of each region, as file offsets (Bytes::abs), ascending.
        [[nodiscard]] std::vector<std::uint64_t>
        file_offsets(const std::vector<std::vector<std::uint64_t>>& found) const {
            std::vector<std::uint64_t> out;
            for (std::size_t r = 0; r < found.size(); ++r)
                for (const std::uint64_t off : found[r])
                    out.push_back(regions[r].bytes.abs(off));
            return out;
        }
        EmbeddedScan(const EmbeddedScan&) = delete;
        EmbeddedScan& operator=(const EmbeddedScan&) = delete;
        ~EmbeddedScan() = default;

      private:
        // File offsets back to each region's candidate offsets (those a search of it could give:
        // inside it, at its aligned offsets).
        [[nodiscard]] std::vector<std::vector<std::uint64_t>>
        split(const std::vector<std::uint64_t>& offsets) const {
            std::vector<std::vector<std::uint64_t>> out(regions.size());
            for (std::size_t r = 0; r < regions.size(); ++r) {
                const Bytes& rb = regions[r].bytes;
                const auto first = std::lower_bound(offsets.begin(), offsets.end(), rb.abs(0));
                for (auto it = first; it != offsets.end() && *it - rb.abs(0) < rb.size(); ++it) {
                    const std::uint64_t off = *it - rb.abs(0);
                    if (off >= regions[r].aligned_from && (off - regions[r].aligned_from) % 8 == 0)
                        out[r].push_back(off);
                }
            }
            return out;
        }

        void add_region(const Bytes& file, const ScanSection& s, std::uint64_t lo, std::uint64_t hi,
                        std::size_t index) {
            const std::uint64_t address = s.address + (lo - s.bytes.base());
            regions.push_back({file.sub(lo - file.base(), hi - lo), (8 - address % 8) % 8});
            owner.push_back(index);
        }
    };

    Status read_elf(const Bytes& b, const Where& where, std::optional<std::size_t> into) {
        auto elf = parse_elf(b, where);
        if (!elf) return std::move(elf).error();
        if (elf->is_cubin()) return read_standalone_cubin(*elf, where, into);
        const std::size_t ext = extension_for(where, into);
        if (elf->find(kPlanMarkerSection) != nullptr) out_[ext].plan_product = true;
        if (elf->sections.empty()) { // stripped section table: consistent headers only
            auto scanned = scan_fatbins(b, where, budget_, 0, worker_threads());
            if (!scanned) return std::move(scanned).error();
            return add_fatbins(*scanned, "(scan)", where, ext, {}, Found::Unsectioned);
        }
        const bool has_relfatbin = elf->find("__nv_relfatbin") != nullptr;
        const std::set<std::uint64_t> device_link = device_link_fatbins(*elf, where);
        std::vector<const ElfSection*> fatbin_sections;
        for (const auto& s : elf->sections)
            if (std::find(std::begin(kFatbinSections), std::end(kFatbinSections), s.name) !=
                std::end(kFatbinSections))
                fatbin_sections.push_back(&s);
        auto covered = covered_sections(*elf, fatbin_sections, where);
        if (!covered) return std::move(covered).error();
        // In a linked file the wrapper records say which fatbins the program registers.
        const WrapperPointers pointers = wrapper_pointers(*elf, where);
        auto hidden = hidden_fatbins(*elf, fatbin_sections, pointers, where);
        if (!hidden) return std::move(hidden).error();
        // The search for embedded fatbins runs while the registered ones are read; what it finds
        // is added after them, and an error of its sections only after theirs.
        std::optional<EmbeddedScan> scan;
        Status scan_setup = ok_status();
        const std::shared_ptr<ResultCache::Pack> pack = scan_pack(where);
        if (opts_.scan_embedded) {
            auto others = embedded_candidates(*elf, where);
            if (others) {
                std::vector<Range> registered;
                for (const auto* s : fatbin_sections)
                    registered.push_back(
                        {elf->bytes.abs(s->offset), elf->bytes.abs(s->offset + s->size)});
                for (const auto& [name, fb] : *hidden)
                    registered.push_back({fb.offset, fb.offset + fb.size});
                scan.emplace(b, std::move(*others), std::move(registered), worker_threads(),
                             known_magic(pack.get()));
            } else {
                scan_setup = std::move(others).error();
            }
        }
        for (std::size_t i = 0; i < fatbin_sections.size(); ++i) {
            const ElfSection& s = *fatbin_sections[i];
            if ((*covered)[i]) continue; // its bytes were read through another section
            auto data = elf->section_bytes(s, where);
            if (!data) return std::move(data).error();
            // Zero padding up to the section's alignment (the linker's, for each input section).
            auto fatbins = parse_fatbins(*data, where, budget_, s.addralign);
            if (!fatbins) return std::move(fatbins).error();
            if (fatbins->empty())
                return holds_no_fatbin(
                    s.name, s.type == kShtNobits, *data,
                    elf->bytes.abs(elf->shoff + std::uint64_t{s.index} * elf64::kShdrSize), where);
            // Fatbins named by a version-2 wrapper come from nvcc's nvlink step. Without rdc
            // objects in the link they are kernel-less stubs; with them they hold the kernels.
            std::set<std::uint64_t> stubs;
            if (!has_relfatbin)
                for (const auto& fb : *fatbins)
                    if (device_link.count(fb.offset)) stubs.insert(fb.offset);
            FORGE_TRY_STATUS(
                add_fatbins(*fatbins, std::string(s.name), where, ext, stubs,
                            pointers.registers(s) ? Found::Registered : Found::Embedded));
        }
        for (const auto& [name, fb] : *hidden) {
            const std::set<std::uint64_t> stubs = !has_relfatbin && device_link.count(fb.offset)
                                                      ? std::set{fb.offset}
                                                      : std::set<std::uint64_t>{};
            FORGE_TRY_STATUS(add_fatbins({fb}, name, where, ext, stubs, Found::Registered));
        }
        FORGE_TRY_STATUS(std::move(scan_setup));
        return scan ? add_embedded(*scan, where, ext, pack.get()) : ok_status();
    }

    // --toolkit's cache of this file (a member's: never searched again, it has no stamp), when
    // there is one: it keeps where the embedded scan found the magic.
    std::shared_ptr<ResultCache::Pack> scan_pack(const Where& where) {
        if (opts_.cache == nullptr || !opts_.inspect_payloads || !opts_.scan_embedded)
            return nullptr;
        return pack_for(where);
    }
    static std::optional<std::vector<std::uint64_t>> known_magic(ResultCache::Pack* pack) {
        return pack != nullptr ? ResultCache::known_magic(*pack) : std::nullopt;
    }

    // The sections of a host ELF file the embedded scan searches: every allocated one with
    // contents in the file, but the fatbin sections.
    static Result<std::vector<ScanSection>> embedded_candidates(const Elf& elf,
                                                                const Where& where) {
        std::vector<ScanSection> others;
        for (const auto& s : elf.sections) {
            if ((s.flags & kShfAlloc) == 0 || s.type == kShtNull || s.type == kShtNobits ||
                s.size == 0 || named(s.name, kFatbinSections))
                continue;
            auto data = elf.section_bytes(s, where);
            if (!data) return std::move(data).error();
            // Linked files load a section at sh_addr (sh_addr = sh_offset mod the page size);
            // an object's section is placed at an aligned address at link time.
            others.push_back({std::string(s.name), *data, elf.type == kEtRel ? 0 : s.addr});
        }
        return others;
    }

    // A section named as one the toolchain registers fatbins in must hold one: an empty or
    // zeroed one is a file that lies about itself, never "no device code".
    static Error holds_no_fatbin(std::string_view name, bool no_data, const Bytes& data,
                                 std::uint64_t header, const Where& where) {
        return where.error(header,
                           fmt::format("section '{}' is named as a fatbin section but holds no "
                                       "fatbin ({})",
                                       name,
                                       no_data || data.empty()
                                           ? std::string("no file contents")
                                           : fmt::format("0x{:x} zero bytes", data.size())));
    }

    unsigned worker_threads() const {
        return std::clamp(opts_.threads != 0 ? opts_.threads : std::thread::hardware_concurrency(),
                          1u, std::max(opts_.max_threads, 1u));
    }

    // The scan's fatbins, accepted and added after the registered ones. A search's candidates
    // are recorded in `pack` (--toolkit's cache), when there is one.
    Status add_embedded(EmbeddedScan& scan, const Where& where, std::size_t ext,
                        ResultCache::Pack* pack) {
        if (scan.regions.empty()) {
            if (pack != nullptr) ResultCache::put_magic(*pack, {});
            return ok_status();
        }
        std::vector<std::vector<std::uint64_t>> candidates;
        if (scan.known_candidates) {
            candidates = std::move(*scan.known_candidates);
            if (opts_.stats) ++opts_.stats->scans_reused;
        } else {
            candidates = scan.candidates.get();
            if (pack != nullptr) ResultCache::put_magic(*pack, scan.file_offsets(candidates));
        }
        const auto& regions = scan.regions;
        std::vector<Fatbin> fatbins;
        for (std::size_t r = 0; r < regions.size(); ++r) {
            auto found = accept_fatbins(regions[r].bytes, candidates[r], where, budget_);
            if (!found) return std::move(found).error();
            for (auto& fb : *found)
                fatbins.push_back(std::move(fb));
            // One call per section, so that a row's fatbin index counts within its section.
            if (r + 1 < regions.size() && scan.owner[r + 1] == scan.owner[r]) continue;
            if (!fatbins.empty())
                FORGE_TRY_STATUS(add_fatbins(fatbins, scan.secs[scan.owner[r]].name, where, ext, {},
                                             Found::Embedded));
            fatbins.clear();
        }
        return ok_status();
    }

    Status read_pe_image(const Bytes& b, const Where& where, std::optional<std::size_t> into) {
        auto pe = parse_pe(b, where);
        if (!pe) return std::move(pe).error();
        return read_pe_sections(*pe, where, into);
    }

    Status read_coff_object(const Bytes& b, const Where& where, std::optional<std::size_t> into) {
        auto obj = parse_coff_object(b, where);
        if (!obj) return std::move(obj).error();
        return read_pe_sections(*obj, where, into);
    }

    // As read_elf: every fatbin section, with nvlink's stubs marked in images without
    // relocatable fatbins.
    Status read_pe_sections(const Pe& pe, const Where& where, std::optional<std::size_t> into) {
        const std::size_t ext = extension_for(where, into);
        bool has_relfatbin = false;
        for (const auto& s : pe.sections)
            has_relfatbin = has_relfatbin || named(s.name, kPeRelfatbinSections);
        const std::set<std::uint64_t> device_link =
            has_relfatbin ? std::set<std::uint64_t>{} : device_link_fatbins(pe, where);
        // As in read_elf, the embedded scan runs while the registered fatbins are read.
        std::optional<EmbeddedScan> scan;
        Status scan_setup = ok_status();
        const std::shared_ptr<ResultCache::Pack> pack = scan_pack(where);
        if (opts_.scan_embedded) {
            auto others = embedded_candidates(pe, where);
            auto registered = registered_ranges(pe, where);
            if (others && registered)
                scan.emplace(pe.bytes, std::move(*others), std::move(*registered), worker_threads(),
                             known_magic(pack.get()));
            else
                scan_setup =
                    !registered ? std::move(registered).error() : std::move(others).error();
        }
        for (const auto& s : pe.sections) {
            if (!named(s.name, kPeFatbinSections)) continue;
            auto data = pe.section_bytes(s, where);
            if (!data) return std::move(data).error();
            auto fatbins = parse_fatbins(*data, where, budget_, kPeFatbinAlign);
            if (!fatbins) return std::move(fatbins).error();
            if (fatbins->empty())
                return holds_no_fatbin(s.name, !pe_has_data(s), *data,
                                       pe.bytes.abs(s.header_offset), where);
            std::set<std::uint64_t> stubs;
            for (const auto& fb : *fatbins)
                if (device_link.count(fb.offset)) stubs.insert(fb.offset);
            FORGE_TRY_STATUS(add_fatbins(*fatbins, s.name, where, ext, stubs, Found::Registered));
        }
        FORGE_TRY_STATUS(std::move(scan_setup));
        return scan ? add_embedded(*scan, where, ext, pack.get()) : ok_status();
    }

    // The byte ranges of a PE file's fatbin sections (Bytes::abs offsets).
    static Result<std::vector<Range>> registered_ranges(const Pe& pe, const Where& where) {
        std::vector<Range> registered;
        for (const auto& s : pe.sections) {
            if (!named(s.name, kPeFatbinSections)) continue;
            auto data = pe.section_bytes(s, where);
            if (!data) return std::move(data).error();
            registered.push_back({data->base(), data->base() + data->size()});
        }
        return registered;
    }

    // The sections of a PE file the embedded scan searches: every one the loader maps with
    // contents in the file, but the fatbin sections.
    static Result<std::vector<ScanSection>> embedded_candidates(const Pe& pe, const Where& where) {
        std::vector<ScanSection> others;
        for (const auto& s : pe.sections) {
            // Sections the loader or linker discards (.reloc, an object's .debug$S, directives)
            // never reach the program; uninitialised ones have no contents.
            if (named(s.name, kPeFatbinSections) || !pe_has_data(s) ||
                (s.characteristics & kPeScnNotLoaded) != 0)
                continue;
            auto data = pe.section_bytes(s, where);
            if (!data) return std::move(data).error();
            if (!data->empty()) others.push_back({s.name, *data, pe.image ? s.virtual_address : 0});
        }
        return others;
    }

    static bool pe_has_data(const PeSection& s) {
        return (s.characteristics & kPeScnUninitializedData) == 0 && s.raw_offset != 0 &&
               s.raw_size != 0;
    }

    // The PE form of the ELF hint below: in a PE32+ image a wrapper record's data pointer is a
    // virtual address, ImageBase + the RVA of the fatbin. Objects and PE32 images give none.
    static std::set<std::uint64_t> device_link_fatbins(const Pe& pe, const Where& where) {
        std::set<std::uint64_t> out;
        if (!pe.image || pe.optional_magic != kPeOptMagic64) return out;
        namespace wr = wrapper_record;
        for (const auto& seg : pe.sections) {
            if (!named(seg.name, kPeControlSections)) continue;
            auto bytes = pe.section_bytes(seg, where);
            if (!bytes) continue; // only a hint: a bad control section changes no entry
            for (std::uint64_t off = 0; bytes->has(off, wr::kSize); off += wr::kSize) {
                if (bytes->u32(off + wr::kMagic) != kWrapperMagic ||
                    bytes->u32(off + wr::kVersion) != kWrapperVersionLinked)
                    continue;
                const std::uint64_t va = bytes->u64(off + wr::kData);
                if (va < pe.image_base) continue;
                const std::uint64_t rva = va - pe.image_base;
                for (const auto& s : pe.sections)
                    if (rva >= s.virtual_address && rva - s.virtual_address < s.raw_size &&
                        rva - s.virtual_address < s.virtual_size)
                        out.insert(
                            pe.bytes.abs(std::uint64_t{s.raw_offset} + (rva - s.virtual_address)));
            }
        }
        return out;
    }

    // Which of the fatbin sections lie inside another one read before them (in file order), so
    // that each fatbin is read once however many section headers name it. Sections that overlap
    // only partly cannot both be fatbin streams: an error. Sorted by offset, a section overlaps
    // an earlier one only if it starts before the furthest end seen, and then it lies inside the
    // section that reached that end or sticks out of it.
    static Result<std::vector<bool>> covered_sections(const Elf& elf,
                                                      const std::vector<const ElfSection*>& secs,
                                                      const Where& where) {
        std::vector<bool> covered(secs.size(), false);
        std::vector<std::size_t> order;
        for (std::size_t i = 0; i < secs.size(); ++i)
            if (secs[i]->type != kShtNobits && secs[i]->size != 0 &&
                elf.bytes.has(secs[i]->offset, secs[i]->size)) // else section_bytes reports it
                order.push_back(i);
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
            if (secs[a]->offset != secs[b]->offset) return secs[a]->offset < secs[b]->offset;
            return secs[a]->size > secs[b]->size;
        });
        const ElfSection* furthest = nullptr;
        for (std::size_t i : order) {
            const ElfSection& s = *secs[i];
            const std::uint64_t end = s.offset + s.size; // inside the file: no overflow
            const std::uint64_t furthest_end = furthest ? furthest->offset + furthest->size : 0;
            if (furthest && s.offset < furthest_end) {
                if (end <= furthest_end) {
                    covered[i] = true;
                    continue;
                }
                return where.error(
                    elf.bytes.abs(elf.shoff + std::uint64_t{s.index} * elf64::kShdrSize),
                    fmt::format("fatbin sections '{}' (0x{:x}..0x{:x}) and '{}' (0x{:x}..0x{:x}) "
                                "overlap partly",
                                furthest->name, furthest->offset, furthest_end, s.name, s.offset,
                                end));
            }
            furthest = &s;
        }
        return covered;
    }

    // Offsets (in the reported buffer) of the fatbins that version-2 wrappers point at, in a
    // linked file (.so, executable), where the pointer holds the link-time address
    // (docs/fatbin-format.md, "The wrapper records in .nvFatBinSegment"). Objects are
    // skipped on purpose: a version-2 wrapper in a .o comes from `nvcc -dlink`, whose fatbin
    // holds the linked rdc kernels, not a stub.
    static std::set<std::uint64_t> device_link_fatbins(const Elf& elf, const Where& where) {
        std::set<std::uint64_t> out;
        const ElfSection* seg = elf.find(".nvFatBinSegment");
        if (!seg || elf.type == kEtRel) return out;
        auto bytes = elf.section_bytes(*seg, where);
        if (!bytes) return out; // only a hint: a bad control section changes no entry
        namespace wr = wrapper_record;
        for (std::uint64_t off = 0; bytes->has(off, wr::kSize); off += wr::kSize) {
            if (bytes->u32(off + wr::kMagic) != kWrapperMagic ||
                bytes->u32(off + wr::kVersion) != kWrapperVersionLinked)
                continue;
            const std::uint64_t va = bytes->u64(off + wr::kData);
            for (const auto& s : elf.sections)
                if (s.addr != 0 && s.type != kShtNobits && va >= s.addr && va - s.addr < s.size)
                    out.insert(elf.bytes.abs(s.offset + (va - s.addr)));
        }
        return out;
    }

    // The addresses the wrapper records of a linked file's .nvFatBinSegment point to (every
    // version: each registers one fatbin with the runtime). `resolved`: one of them lands in a
    // section with an address, so the records can be believed (on aarch64 the linker may leave
    // the pointers to dynamic relocations, 0 in the file: then only the loader's view decides).
    struct WrapperPointers {
        std::vector<std::uint64_t> va;
        bool resolved = false;
        // Whether a fatbin section's contents are registered: pointed into by a record, or,
        // with no record to believe, mapped by the loader (allocated, at an address). Anything
        // else is reported apart, as an embedded fatbin is, and never satisfies the gate.
        [[nodiscard]] bool registers(const ElfSection& s) const {
            if (!linked) return true;
            for (const std::uint64_t v : va)
                if (s.addr != 0 && v >= s.addr && v - s.addr < s.size) return true;
            return !resolved && (s.flags & kShfAlloc) != 0 && s.addr != 0;
        }
        bool linked = false;
    };

    static WrapperPointers wrapper_pointers(const Elf& elf, const Where& where) {
        WrapperPointers out;
        out.linked = elf.type != kEtRel;
        const ElfSection* seg = elf.find(".nvFatBinSegment");
        if (!out.linked || seg == nullptr || seg->type == kShtNobits) return out;
        auto bytes = elf.section_bytes(*seg, where);
        if (!bytes) return out;
        namespace wr = wrapper_record;
        for (std::uint64_t off = 0; bytes->has(off, wr::kSize); off += wr::kSize) {
            if (bytes->u32(off + wr::kMagic) != kWrapperMagic) continue;
            const std::uint64_t v = bytes->u64(off + wr::kData);
            out.va.push_back(v);
            for (const auto& s : elf.sections)
                if (s.addr != 0 && v >= s.addr && v - s.addr < s.size) out.resolved = true;
        }
        return out;
    }

    // The fatbins the wrapper records point to outside every fatbin-named section (a section
    // renamed): read where the records say, under the section's own name. A record that points
    // into a section without file contents is a registered fatbin that cannot be read, never
    // "no device code".
    Result<std::vector<std::pair<std::string, Fatbin>>>
    hidden_fatbins(const Elf& elf, const std::vector<const ElfSection*>& fatbin_sections,
                   const WrapperPointers& pointers, const Where& where) {
        std::vector<std::pair<std::string, Fatbin>> out;
        std::set<std::uint64_t> seen;
        for (const std::uint64_t v : pointers.va) {
            auto inside = [v](const ElfSection& s) {
                return s.addr != 0 && v >= s.addr && v - s.addr < s.size;
            };
            if (std::any_of(fatbin_sections.begin(), fatbin_sections.end(),
                            [&](const ElfSection* s) { return inside(*s); }) ||
                !seen.insert(v).second)
                continue;
            const auto s = std::find_if(elf.sections.begin(), elf.sections.end(), inside);
            if (s == elf.sections.end()) continue;
            const std::uint64_t header =
                elf.bytes.abs(elf.shoff + std::uint64_t{s->index} * elf64::kShdrSize);
            if (s->type == kShtNobits)
                return where.error(header, fmt::format("a wrapper record in .nvFatBinSegment "
                                                       "registers the fatbin at 0x{:x}, in "
                                                       "section '{}', which has no file contents "
                                                       "(SHT_NOBITS): the device code cannot be "
                                                       "read",
                                                       v, s->name));
            auto data = elf.section_bytes(*s, where);
            if (!data) return std::move(data).error();
            auto fb = parse_fatbin_at(*data, v - s->addr, where, budget_);
            if (!fb)
                return where.error(header, fmt::format("a wrapper record in .nvFatBinSegment "
                                                       "registers a fatbin at 0x{:x}, in section "
                                                       "'{}', and none is there: {}",
                                                       v, s->name, fb.error().message));
            out.emplace_back(std::string(s->name), std::move(*fb));
        }
        return out;
    }

    Status read_standalone_cubin(const Elf& elf, const Where& where,
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

    Status add_fatbins(const std::vector<Fatbin>& fatbins, const std::string& section,
                       const Where& where, std::size_t ext, const std::set<std::uint64_t>& stubs,
                       Found found) {
        auto& entries = out_[ext].entries;
        std::vector<PayloadTask> tasks;
        for (std::size_t i = 0; i < fatbins.size(); ++i) {
            const Fatbin& fb = fatbins[i];
            for (const auto& x : fb.entries) {
                Entry e;
                e.file = where.file;
                e.member = where.member;
                e.section = section;
                e.fatbin_offset = fb.offset;
                e.entry_offset = x.offset;
                e.fatbin_index = static_cast<std::uint32_t>(i);
                e.fatbin_size = fb.size;
                e.target = x.target;
                e.compression = x.compression;
                e.payload_size = x.padded_size;
                e.uncompressed_size = x.uncompressed_size;
                e.flags = x.flags;
                e.found = found;
                // Embedded entries a caller will not judge keep their headers only.
                const bool describe = found != Found::Embedded || opts_.inspect_embedded;
                if (x.kind == kKindElf && describe)
                    tasks.push_back({entries.size(), &x, stubs.count(fb.offset) > 0});
                if (x.kind == kKindPtx && x.compression == Compression::None && describe) {
                    e.kernels = count_ptx_entries(x.payload.view());
                    release_pages(x.payload.data(), x.payload.size()); // the text was read
                }
                if (x.kind == kKindPtx && x.compression != Compression::None &&
                    opts_.inspect_payloads && describe)
                    tasks.push_back({entries.size(), &x, false});
                entries.push_back(std::move(e));
            }
        }
        return describe_payloads(tasks, where, entries);
    }

    // What a payload worker reads: a cubin, or a compressed PTX with --toolkit.
    struct PayloadTask {
        std::size_t entry;
        const FatbinEntry* fatbin_entry;
        bool device_link_stub;
    };

    // The tasks' entries described: independently, and with payload inspection (decompressing
    // each one) spread over the cores (2,789 ZSTD cubins in libtorch_cuda.so). `entries` is
    // complete, so the workers only write their own Entry. Errors in file order.
    Status describe_payloads(const std::vector<PayloadTask>& tasks, const Where& where,
                             std::vector<Entry>& entries) {
        std::shared_ptr<ResultCache::Pack> pack;
        if (opts_.cache != nullptr && opts_.inspect_payloads && !tasks.empty())
            pack = pack_for(where);
        std::vector<std::optional<Error>> errors(tasks.size());
        // Images the cache answers by their recorded key (the file unchanged since) read no byte:
        // answered here, without a worker or a page to release (a thread each and an madvise(2)
        // per image were most of a cached run's extra time on 16 cores).
        std::vector<std::size_t> open; // the tasks still to read
        for (std::size_t k = 0; k < tasks.size(); ++k)
            if (pack == nullptr ||
                !answered_by_index(*tasks[k].fatbin_entry, entries[tasks[k].entry], *pack))
                open.push_back(k);
        auto describe = [&](std::size_t k, Worker& worker) {
            const PayloadTask& t = tasks[k];
            try {
                auto st = describe_payload(*t.fatbin_entry, where, t.device_link_stub,
                                           entries[t.entry], worker, pack.get());
                if (!st.ok()) errors[k] = std::move(st).error();
            } catch (const std::bad_alloc&) { // a worker must not take the process down
                errors[k] = out_of_memory(where, t.fatbin_entry->offset, "a payload");
            }
            // What describe_cubin read of the payload leaves the resident set; a compressed one
            // it did not open (no --toolkit) was never touched.
            if (opts_.inspect_payloads || t.fatbin_entry->compression == Compression::None)
                release_pages(t.fatbin_entry->payload.data(), t.fatbin_entry->payload.size());
        };
        unsigned threads = 1;
        if (opts_.inspect_payloads && open.size() >= 16) threads = worker_threads();
        if (threads <= 1) {
            Worker worker(stream_memory_);
            for (const std::size_t k : open) {
                describe(k, worker);
                if (errors[k]) return std::move(*errors[k]);
            }
            return ok_status();
        }
        std::atomic<std::size_t> next{0};
        run_workers(threads, [&] {
            Worker worker(stream_memory_);
            for (std::size_t i = next++; i < open.size(); i = next++)
                describe(open[i], worker);
        });
        for (auto& err : errors) // the first error in file order, as the serial walk reports it
            if (err) return std::move(*err);
        return ok_status();
    }

    // One payload task, answered from the cache when it holds the same compressed bytes, else
    // read (and its answer added to the cache).
    Status describe_payload(const FatbinEntry& x, const Where& where, bool device_link_stub,
                            Entry& e, Worker& worker, ResultCache::Pack* pack) {
        std::optional<ImageKey> key;
        if (pack != nullptr && x.compression != Compression::None) {
            key = ResultCache::known_key(*pack, x.offset);
            if (!key) {
                key = hash_key(x, worker);
                if (opts_.stats) ++opts_.stats->hashed;
            }
            if (auto hit = ResultCache::find(*pack, x.offset, *key)) {
                apply_cached(*hit, x, e);
                return ok_status();
            }
        }
        FORGE_TRY_STATUS(x.kind == kKindElf ? describe_cubin(x, where, device_link_stub, e, worker)
                                            : describe_ptx(x, where, e, worker));
        if (key && e.kernels)
            ResultCache::put(*pack, x.offset, *key,
                             ImageResult{*e.kernels, e.stub, e.cubin_arch_specific, e.toolkit});
        return ok_status();
    }

    // The cache's answer for an image whose key was recorded with this file's stamp, when it
    // holds one (the image is unchanged: no byte of it is read); false leaves the task open.
    bool answered_by_index(const FatbinEntry& x, Entry& e, ResultCache::Pack& pack) {
        if (x.compression == Compression::None) return false;
        const std::optional<ImageResult> hit = ResultCache::find_known(pack, x.offset);
        if (!hit) return false;
        apply_cached(*hit, x, e);
        return true;
    }

    void apply_cached(const ImageResult& hit, const FatbinEntry& x, Entry& e) {
        e.kernels = hit.kernels;
        if (x.kind == kKindElf) {
            e.stub = hit.stub;
            e.toolkit = hit.toolkit;
            e.cubin_arch_specific = hit.arch_specific;
        }
        if (opts_.stats) ++opts_.stats->cached;
    }

    // An image's cache key. A stream small enough is hashed from the worker's copy of it, which
    // the decoder then reads without copying it again (held under the budget like the rest of
    // what the worker keeps); a larger one is hashed slice by slice.
    static ImageKey hash_key(const FatbinEntry& x, Worker& worker) {
        const Bytes stream = x.payload.sub(0, x.compressed_size);
        if (stream.size() <= kHashFromCopy) {
            worker.hold(stream.size());
            if (const std::uint8_t* copy = worker.scratch().load_input(stream))
                return image_key_of(copy, stream.size(), x.compression, x.uncompressed_size,
                                    x.kind);
        }
        return image_key(stream, x.compression, x.uncompressed_size, x.kind, worker.key_buffer());
    }
    static constexpr std::uint64_t kHashFromCopy = std::uint64_t{1} << 20;

    std::shared_ptr<ResultCache::Pack> pack_for(const Where& where) {
        std::lock_guard lock(packs_mutex_);
        const std::string name = where.file + '\0' + where.member.value_or("");
        auto& p = packs_[name];
        // A file read whole is known by its stamp; a member's bytes are always hashed.
        if (!p)
            p = opts_.cache->pack(where.file, where.member,
                                  where.member ? std::nullopt : file_stamp_);
        return p;
    }

    // Stub/kernels/toolkit of an ELF entry: from the cubin's headers when it is stored
    // uncompressed (cheap), from the decompressed image when payloads are inspected, else from
    // the device-link wrapper hint.
    Status describe_cubin(const FatbinEntry& x, const Where& where, bool device_link_stub, Entry& e,
                          Worker& worker) {
        e.stub = device_link_stub;
        if (x.compression != Compression::None && !opts_.inspect_payloads) return ok_status();
        if (x.compression == Compression::Zstd && opts_.stream_prefix_bytes > 0) {
            const Bytes stream = x.payload.sub(0, x.compressed_size);
            if (auto plan = zstd_read_plan(stream, x.uncompressed_size, opts_.stream_prefix_bytes,
                                           opts_.max_stream_bytes)) {
                auto inspect = [&](ZstdPlan& p) {
                    worker.hold(p.footprint);
                    return inspect_zstd_cubin(stream, x.uncompressed_size, opts_.max_member_bytes,
                                              opts_.stream_prefix_bytes, p, where, worker.scratch(),
                                              opts_.stats);
                };
                std::optional<CubinInfo> info = inspect(*plan);
                if (!info && plan->wanted != 0) {
                    // The second pass needs more room than planned: the frame again, with room
                    // for it (the grant grows between two reads, never inside one).
                    if (auto again =
                            zstd_read_plan(stream, x.uncompressed_size, opts_.stream_prefix_bytes,
                                           opts_.max_stream_bytes, plan->wanted))
                        info = inspect(*again);
                }
                worker.after_cubin();
                if (info) {
                    if (opts_.stats) ++opts_.stats->streamed;
                    apply(*info, e);
                    return ok_status();
                }
            }
            // Not decided by the bounded pass: the whole image decides (and names any error).
        }
        // Anything else compressed (LZ4 blocks, frames the bounded pass could not decide) is
        // decoded whole; into the worker's reused pages when the budget lets it hold them.
        std::vector<std::uint8_t> image;
        std::optional<MemoryGrant> grant;
        Bytes cubin = x.payload;
        if (x.compression != Compression::None) {
            const Bytes stream = x.payload.sub(0, x.compressed_size);
            std::optional<Bytes> scratch;
            if (const std::uint64_t need = decode_footprint(stream, x.uncompressed_size);
                need <= stream_memory_.limit()) {
                worker.hold(need);
                scratch =
                    decode_to_scratch(stream, x.compression, x.uncompressed_size,
                                      opts_.max_member_bytes, where, worker.scratch(), x.offset);
            }
            if (opts_.stats) ++opts_.stats->decompressed;
            if (scratch) {
                if (opts_.stats) ++opts_.stats->scratch;
                cubin = *scratch;
            } else {
                grant.emplace(memory_, x.uncompressed_size);
                auto decompressed = decompress_payload(stream, x.compression, x.uncompressed_size,
                                                       opts_.max_member_bytes, where);
                if (!decompressed) return std::move(decompressed).error();
                image = std::move(*decompressed);
                // Offsets inside a decompressed image cannot be shown in the file: the entry's.
                cubin = Bytes{image.data(), image.size(), x.offset};
            }
        }
        auto info = opts_.inspect_payloads ? inspect_cubin(cubin, where)
                                           : inspect_cubin_headers(cubin, where);
        if (x.compression != Compression::None) worker.after_cubin();
        if (!info) {
            Error err = std::move(info).error();
            err.message = fmt::format("in the {}cubin of the fatbin entry at 0x{:x}: {}",
                                      x.compression != Compression::None ? "decompressed " : "",
                                      x.offset, err.message);
            if (x.compression != Compression::None) err.offset = x.offset;
            return err;
        }
        apply(*info, e);
        return ok_status();
    }

    // Kernels of a compressed PTX entry (--toolkit): its `.entry` directives (a TU without
    // kernels still emits PTX, `.version`/`.target` only, which JITs nothing), decoded into the
    // worker's reused pages, else whole (which names any error).
    Status describe_ptx(const FatbinEntry& x, const Where& where, Entry& e, Worker& worker) {
        const Bytes stream = x.payload.sub(0, x.compressed_size);
        std::optional<Bytes> scratch;
        if (const std::uint64_t need = decode_footprint(stream, x.uncompressed_size);
            need <= stream_memory_.limit()) {
            worker.hold(need);
            scratch = decode_to_scratch(stream, x.compression, x.uncompressed_size,
                                        opts_.max_member_bytes, where, worker.scratch(), x.offset);
        }
        if (opts_.stats) ++opts_.stats->ptx;
        if (scratch) {
            e.kernels = count_ptx_entries(scratch->view());
            worker.after_cubin();
            return ok_status();
        }
        worker.after_cubin();
        MemoryGrant grant(memory_, x.uncompressed_size);
        auto text = decompress_payload(stream, x.compression, x.uncompressed_size,
                                       opts_.max_member_bytes, where);
        if (!text) {
            Error err = std::move(text).error();
            err.message = fmt::format("in the decompressed PTX of the fatbin entry at 0x{:x}: {}",
                                      x.offset, err.message);
            err.offset = x.offset;
            return err;
        }
        e.kernels = count_ptx_entries(
            std::string_view(reinterpret_cast<const char*>(text->data()), text->size()));
        return ok_status();
    }

    static void apply(const CubinInfo& info, Entry& e) {
        e.stub = info.stub();
        e.kernels = info.kernels;
        e.toolkit = info.toolkit;
        e.cubin_arch_specific = info.arch_specific;
    }

    const ReadOptions& opts_;
    std::string file_;
    std::uint64_t inflated_total_ = 0;
    EntryBudget budget_;
    MemoryBudget memory_;
    ResidentBudget stream_memory_;
    std::vector<Extension> out_;
    std::mutex packs_mutex_;
    std::map<std::string, std::shared_ptr<ResultCache::Pack>> packs_; // by file + member

  public:
    // The file's stamp, taken before it was read (read_extensions of a path).
    std::optional<std::pair<FileStamp, bool>> file_stamp_;
};

std::vector<Entry> flatten(std::vector<Extension>&& exts) {
    if (exts.size() == 1) return std::move(exts.front().entries); // a plain file: no copy
    std::vector<Entry> out;
    std::size_t n = 0;
    for (const auto& x : exts)
        n += x.entries.size();
    out.reserve(n);
    for (auto& x : exts)
        for (auto& e : x.entries)
            out.push_back(std::move(e));
    return out;
}

} // namespace

std::optional<bool> stub_known(const Entry& e) {
    if (e.target.kind != arch::Kind::Sass) return false;
    if (!e.stub && !e.kernels && e.compression != Compression::None) return std::nullopt;
    return e.stub;
}

namespace {

Result<std::vector<Extension>> read_bytes(const std::uint8_t* data, std::uint64_t size,
                                          const std::string& name, const ReadOptions& opts,
                                          const std::optional<std::pair<FileStamp, bool>>& stamp) {
    // Said as it is: "no ELF, PE, COFF, ar, zip or fatbin magic" would send the user looking
    // for a format.
    if (size == 0) return Where{name, std::nullopt}.error(0, "an empty file (0 bytes)");
    try {
        Reader reader(name, opts);
        reader.file_stamp_ = stamp;
        FORGE_TRY_STATUS(reader.read(Bytes{data, size, 0}, std::nullopt, 0, std::nullopt));
        reader.save_cache();
        return std::move(reader).take();
    } catch (const std::bad_alloc&) {
        // The allocations that follow a file's word are checked where they happen; this is the
        // backstop for what the bookkeeping itself may need on a nearly full address space.
        return out_of_memory(Where{name, std::nullopt}, 0, "the file");
    }
}

} // namespace

Result<std::vector<Extension>> read_extensions_from_memory(const std::uint8_t* data,
                                                           std::uint64_t size,
                                                           const std::string& name,
                                                           const ReadOptions& opts) {
    return read_bytes(data, size, name, opts, std::nullopt);
}

Result<std::vector<Extension>> read_extensions(const std::string& path, const ReadOptions& opts) {
    auto file = MappedFile::open(path);
    if (!file) return std::move(file).error();
    // Stat'ed (the descriptor read, not the name again) before it is read: a change after this
    // changes the stamp (result_cache.h).
    std::optional<std::pair<FileStamp, bool>> stamp;
    if (opts.cache != nullptr && opts.inspect_payloads) stamp = file_stamp(file->opened());
    const Bytes b = file->bytes();
    return read_bytes(b.data(), b.size(), path, opts, stamp);
}

Result<std::vector<Entry>> read_entries(const std::string& path, const ReadOptions& opts) {
    auto exts = read_extensions(path, opts);
    if (!exts) return std::move(exts).error();
    return flatten(std::move(exts).value());
}

} // namespace forge::binary
