// The scan for fatbin containers outside the registered sections (docs/fatbin-format.md,
// "Fatbins outside the registered sections"), run beside the reading of the registered ones.
#include "binary/read_context.h"

#include "core/workers.h"

#include <atomic>
#include <exception>
#include <functional>
#include <thread>

namespace forge::binary::detail {

EmbeddedScan::EmbeddedScan(const Bytes& file, std::vector<ScanSection> sections,
                           std::vector<Range> registered, unsigned threads,
                           const std::optional<std::vector<std::uint64_t>>& known)
    : secs(std::move(sections)), threads(threads) {
    std::stable_sort(secs.begin(), secs.end(), [](const ScanSection& a, const ScanSection& b) {
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
        candidates = split(*known);
        reused = true;
    }
}

std::vector<std::uint64_t>
EmbeddedScan::file_offsets(const std::vector<std::vector<std::uint64_t>>& found) const {
    std::vector<std::uint64_t> out;
    for (std::size_t r = 0; r < found.size(); ++r)
        for (const std::uint64_t off : found[r])
            out.push_back(regions[r].bytes.abs(off));
    return out;
}

// File offsets back to each region's candidate offsets (those a search of it could give:
// inside it, at its aligned offsets).
std::vector<std::vector<std::uint64_t>>
EmbeddedScan::split(const std::vector<std::uint64_t>& offsets) const {
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

void EmbeddedScan::add_region(const Bytes& file, const ScanSection& s, std::uint64_t lo,
                              std::uint64_t hi, std::size_t index) {
    const std::uint64_t address = s.address + (lo - s.bytes.base());
    regions.push_back({file.sub(lo - file.base(), hi - lo), (8 - address % 8) % 8});
    owner.push_back(index);
}

// `read` (the registered fatbins) and the scan's search as two items of one run_workers: each
// thread takes the next item, so a thread the system refuses costs the overlap, never the
// search. What either throws is thrown again here, the read's first, as a serial walk would meet
// it; the read's error comes before anything of the search's.
Status Reader::beside_search(std::optional<EmbeddedScan>& scan,
                             const std::function<Status()>& read) {
    if (!scan || !scan->needs_search()) return read();
    Status status = ok_status();
    std::exception_ptr thrown[2];
    std::atomic<int> next{0};
    run_workers(2, [&] {
        for (int k = next++; k < 2; k = next++) {
            try {
                if (k == 0)
                    status = read();
                else
                    scan->search();
            } catch (...) { // a worker must not take the process down: thrown where it was
                thrown[k] = std::current_exception();
            }
        }
    });
    if (thrown[0]) std::rethrow_exception(thrown[0]);
    if (!status.ok() || !thrown[1]) return status;
    std::rethrow_exception(thrown[1]);
}

// --toolkit's cache of this file (a member's: never searched again, it has no stamp), when
// there is one: it keeps where the embedded scan found the magic.
std::shared_ptr<ResultCache::Pack> Reader::scan_pack(const Where& where) {
    if (opts_.cache == nullptr || !opts_.inspect_payloads || !opts_.scan_embedded) return nullptr;
    return pack_for(where);
}

std::optional<std::vector<std::uint64_t>> Reader::known_magic(ResultCache::Pack* pack) {
    return pack != nullptr ? ResultCache::known_magic(*pack) : std::nullopt;
}

unsigned Reader::worker_threads() const {
    return std::clamp(opts_.threads != 0 ? opts_.threads : std::thread::hardware_concurrency(), 1u,
                      std::max(opts_.max_threads, 1u));
}

// The scan's fatbins, accepted and added after the registered ones. A search's candidates
// are recorded in `pack` (--toolkit's cache), when there is one.
Status Reader::add_embedded(EmbeddedScan& scan, const Where& where, std::size_t ext,
                            ResultCache::Pack* pack) {
    if (scan.regions.empty()) {
        if (pack != nullptr) ResultCache::put_magic(*pack, {});
        return ok_status();
    }
    if (scan.needs_search()) scan.search(); // nothing was read beside it
    const std::vector<std::vector<std::uint64_t>> candidates = std::move(*scan.candidates);
    if (scan.reused) {
        if (opts_.stats) ++opts_.stats->scans_reused;
    } else {
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

} // namespace forge::binary::detail
