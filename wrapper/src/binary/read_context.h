// The Reader's parts its files share: reader.cpp dispatches by content to one file per container
// format (read_elf.cpp, read_pe.cpp, read_ar.cpp, read_zip.cpp, read_standalone.cpp), which share
// the embedded scan (read_embedded.cpp) and the payload workers (read_payload.cpp). Internal to
// binary/: reader.h is the contract.
#pragma once

#include "binary/cubin.h"
#include "binary/elf.h"
#include "binary/fatbin.h"
#include "binary/pe.h"
#include "binary/reader.h"
#include "binary/result_cache.h"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace forge::binary::detail {

// Whether `name` is one of `names` (the section names of a format).
template <std::size_t N> bool named(std::string_view name, const std::string_view (&names)[N]) {
    return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

inline bool has_fatbin_magic(const Bytes& b) {
    return b.has(0, 4) && b.u32(0) == kFatbinMagic;
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

Error out_of_memory(const Where& where, std::uint64_t offset, std::string_view what);

struct ScanSection {
    std::string name;
    Bytes bytes;              // the section's contents (base(): their offset in the file)
    std::uint64_t address{0}; // where bytes[0] is loaded (0 for an object's section)
};

struct Range {
    std::uint64_t begin, end; // offsets in the file, as Bytes::abs gives them
};

// The fatbin containers in sections other than the registered ones (docs/fatbin-format.md,
// "Fatbins outside the registered sections"): each byte is searched once, however many section
// headers name it, and never inside a registered section. The magic search runs beside the
// reading of the registered fatbins (Reader::beside_search); add_embedded takes what it found.
// With `known` (the candidates' file offsets a --toolkit cache recorded for this unchanged file),
// nothing is searched: each region gets its candidates from the list.
struct EmbeddedScan {
    std::vector<ScanSection> secs;
    std::vector<ScanRegion> regions;
    std::vector<std::size_t> owner; // the section of each region
    // The magic candidates of each region (offsets within it): set by search(), or from `known`.
    std::optional<std::vector<std::vector<std::uint64_t>>> candidates;
    bool reused = false; // the candidates came from `known`
    unsigned threads;

    EmbeddedScan(const Bytes& file, std::vector<ScanSection> sections,
                 std::vector<Range> registered, unsigned threads,
                 const std::optional<std::vector<std::uint64_t>>& known);
    EmbeddedScan(const EmbeddedScan&) = delete;
    EmbeddedScan& operator=(const EmbeddedScan&) = delete;
    ~EmbeddedScan() = default;

    [[nodiscard]] bool needs_search() const { return !candidates && !regions.empty(); }
    void search() { candidates = find_fatbin_magic(regions, threads); }
    // The candidates of each region, as file offsets (Bytes::abs), ascending.
    [[nodiscard]] std::vector<std::uint64_t>
    file_offsets(const std::vector<std::vector<std::uint64_t>>& found) const;

  private:
    [[nodiscard]] std::vector<std::vector<std::uint64_t>>
    split(const std::vector<std::uint64_t>& offsets) const;
    void add_region(const Bytes& file, const ScanSection& s, std::uint64_t lo, std::uint64_t hi,
                    std::size_t index);
};

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

// What a payload worker reads: a cubin, or a compressed PTX with --toolkit.
struct PayloadTask {
    std::size_t entry;
    const FatbinEntry* fatbin_entry;
    bool device_link_stub;
};

class Reader {
  public:
    Reader(std::string file, const ReadOptions& opts)
        : opts_(opts), file_(std::move(file)),
          budget_(opts.max_entries, "the limit for one file (a fatbin read through overlapping "
                                    "headers or sections?)"),
          memory_(opts.max_inflight_bytes), stream_memory_(opts.max_stream_bytes) {}

    Status read(const Bytes& b, const std::optional<std::string>& member, int depth,
                std::optional<std::size_t> into);
    std::vector<Extension> take() && { return std::move(out_); }
    // The cache's packs of this read, written once the whole read succeeded (a failed read saw
    // only some of a file's images).
    void save_cache();

  private:
    std::size_t extension_for(const Where& where, std::optional<std::size_t> into);

    // read_zip.cpp
    Status read_zip(const Bytes& b, const Where& where, int depth);

    // read_ar.cpp
    Status read_ar(const Bytes& b, const Where& where, int depth, std::optional<std::size_t> into);

    // read_standalone.cpp
    Status read_standalone_fatbin(const Bytes& b, const Where& where,
                                  std::optional<std::size_t> into);
    Status read_standalone_cubin(const Elf& elf, const Where& where,
                                 std::optional<std::size_t> into);

    // read_elf.cpp
    Status read_elf(const Bytes& b, const Where& where, std::optional<std::size_t> into);
    static Result<std::vector<ScanSection>> embedded_candidates(const Elf& elf, const Where& where);
    static Error holds_no_fatbin(std::string_view name, bool no_data, const Bytes& data,
                                 std::uint64_t header, const Where& where);
    static Result<std::vector<bool>> covered_sections(const Elf& elf,
                                                      const std::vector<const ElfSection*>& secs,
                                                      const Where& where);
    static std::set<std::uint64_t> device_link_fatbins(const Elf& elf, const Where& where);
    static WrapperPointers wrapper_pointers(const Elf& elf, const Where& where);
    Result<std::vector<std::pair<std::string, Fatbin>>>
    hidden_fatbins(const Elf& elf, const std::vector<const ElfSection*>& fatbin_sections,
                   const WrapperPointers& pointers, const Where& where);

    // read_pe.cpp
    Status read_pe_image(const Bytes& b, const Where& where, std::optional<std::size_t> into);
    Status read_coff_object(const Bytes& b, const Where& where, std::optional<std::size_t> into);
    Status read_pe_sections(const Pe& pe, const Where& where, std::optional<std::size_t> into);
    static Result<std::vector<Range>> registered_ranges(const Pe& pe, const Where& where);
    static Result<std::vector<ScanSection>> embedded_candidates(const Pe& pe, const Where& where);
    static bool pe_has_data(const PeSection& s);
    static std::set<std::uint64_t> device_link_fatbins(const Pe& pe, const Where& where);

    // read_embedded.cpp
    Status beside_search(std::optional<EmbeddedScan>& scan, const std::function<Status()>& read);
    std::shared_ptr<ResultCache::Pack> scan_pack(const Where& where);
    static std::optional<std::vector<std::uint64_t>> known_magic(ResultCache::Pack* pack);
    unsigned worker_threads() const;
    Status add_embedded(EmbeddedScan& scan, const Where& where, std::size_t ext,
                        ResultCache::Pack* pack);

    // read_payload.cpp
    Status add_fatbins(const std::vector<Fatbin>& fatbins, const std::string& section,
                       const Where& where, std::size_t ext, const std::set<std::uint64_t>& stubs,
                       Found found);
    Status describe_payloads(const std::vector<PayloadTask>& tasks, const Where& where,
                             std::vector<Entry>& entries);
    Status describe_payload(const FatbinEntry& x, const Where& where, bool device_link_stub,
                            Entry& e, Worker& worker, ResultCache::Pack* pack);
    bool answered_by_index(const FatbinEntry& x, Entry& e, ResultCache::Pack& pack);
    void apply_cached(const ImageResult& hit, const FatbinEntry& x, Entry& e);
    static ImageKey hash_key(const FatbinEntry& x, Worker& worker);
    std::shared_ptr<ResultCache::Pack> pack_for(const Where& where);
    Status describe_cubin(const FatbinEntry& x, const Where& where, bool device_link_stub, Entry& e,
                          Worker& worker);
    Status describe_ptx(const FatbinEntry& x, const Where& where, Entry& e, Worker& worker);
    static void apply(const CubinInfo& info, Entry& e);

    static constexpr std::uint64_t kHashFromCopy = std::uint64_t{1} << 20;
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

} // namespace forge::binary::detail
