// libFuzzer target: the ELF / fatbin / cubin / ar readers (the input is the file's bytes), with
// and without payload inspection (decompression, cubin notes).
#include "binary/reader.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    for (bool inspect : {false, true}) {
        forge::binary::ReadOptions opts;
        opts.inspect_payloads = inspect;
        opts.max_member_bytes = 16u << 20; // keep decompression within the fuzzer's RSS limit
        opts.max_total_inflated = 64u << 20;
        auto r = forge::binary::read_extensions_from_memory(data, size, "fuzz.bin", opts);
        if (!r.ok() && !r.error().offset) __builtin_trap(); // every reader error names an offset
    }
    return 0;
}
