// The entries of the fatbins found, and their payloads described (cubin headers, kernels,
// toolkit), over the payload workers and --toolkit's ResultCache.
#include "binary/read_context.h"

#include "binary/mapped_file.h"
#include "core/workers.h"

#include <atomic>
#include <fmt/format.h>
#include <new>

namespace forge::binary::detail {

namespace {

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

} // namespace

Status Reader::add_fatbins(const std::vector<Fatbin>& fatbins, const std::string& section,
                           const Where& where, std::size_t ext,
                           const std::set<std::uint64_t>& stubs, Found found) {
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

// The tasks' entries described: independently, and with payload inspection (decompressing
// each one) spread over the cores (2,789 ZSTD cubins in libtorch_cuda.so). `entries` is
// complete, so the workers only write their own Entry. Errors in file order.
Status Reader::describe_payloads(const std::vector<PayloadTask>& tasks, const Where& where,
                                 std::vector<Entry>& entries) {
    std::shared_ptr<ResultCache::Pack> pack;
    if (opts_.cache != nullptr && opts_.inspect_payloads && !tasks.empty()) pack = pack_for(where);
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
            auto st = describe_payload(*t.fatbin_entry, where, t.device_link_stub, entries[t.entry],
                                       worker, pack.get());
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
Status Reader::describe_payload(const FatbinEntry& x, const Where& where, bool device_link_stub,
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
bool Reader::answered_by_index(const FatbinEntry& x, Entry& e, ResultCache::Pack& pack) {
    if (x.compression == Compression::None) return false;
    const std::optional<ImageResult> hit = ResultCache::find_known(pack, x.offset);
    if (!hit) return false;
    apply_cached(*hit, x, e);
    return true;
}

void Reader::apply_cached(const ImageResult& hit, const FatbinEntry& x, Entry& e) {
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
ImageKey Reader::hash_key(const FatbinEntry& x, Worker& worker) {
    const Bytes stream = x.payload.sub(0, x.compressed_size);
    if (stream.size() <= kHashFromCopy) {
        worker.hold(stream.size());
        if (const std::uint8_t* copy = worker.scratch().load_input(stream))
            return image_key_of(copy, stream.size(), x.compression, x.uncompressed_size, x.kind);
    }
    return image_key(stream, x.compression, x.uncompressed_size, x.kind, worker.key_buffer());
}

std::shared_ptr<ResultCache::Pack> Reader::pack_for(const Where& where) {
    std::lock_guard lock(packs_mutex_);
    const std::string name = where.file + '\0' + where.member.value_or("");
    auto& p = packs_[name];
    // A file read whole is known by its stamp; a member's bytes are always hashed.
    if (!p)
        p = opts_.cache->pack(where.file, where.member, where.member ? std::nullopt : file_stamp_);
    return p;
}

// Stub/kernels/toolkit of an ELF entry: from the cubin's headers when it is stored
// uncompressed (cheap), from the decompressed image when payloads are inspected, else from
// the device-link wrapper hint.
Status Reader::describe_cubin(const FatbinEntry& x, const Where& where, bool device_link_stub,
                              Entry& e, Worker& worker) {
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
            scratch = decode_to_scratch(stream, x.compression, x.uncompressed_size,
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
    auto info =
        opts_.inspect_payloads ? inspect_cubin(cubin, where) : inspect_cubin_headers(cubin, where);
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
Status Reader::describe_ptx(const FatbinEntry& x, const Where& where, Entry& e, Worker& worker) {
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

void Reader::apply(const CubinInfo& info, Entry& e) {
    e.stub = info.stub();
    e.kernels = info.kernels;
    e.toolkit = info.toolkit;
    e.cubin_arch_specific = info.arch_specific;
}

} // namespace forge::binary::detail
