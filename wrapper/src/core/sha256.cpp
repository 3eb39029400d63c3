#include "core/sha256.h"

#include <atomic>
#include <cstring>
#include <fmt/format.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace forge {

namespace {

alignas(16) constexpr std::array<std::uint32_t, 64> kRound = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr std::array<std::uint32_t, 8> kInitial = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

constexpr std::uint32_t rotr(std::uint32_t x, int n) {
    return (x >> n) | (x << (32 - n));
}

void compress_portable(std::array<std::uint32_t, 8>& h, const std::uint8_t* block) {
    std::array<std::uint32_t, 64> w{};
    for (std::size_t i = 0; i < 16; ++i)
        w[i] = (std::uint32_t(block[4 * i]) << 24) | (std::uint32_t(block[4 * i + 1]) << 16) |
               (std::uint32_t(block[4 * i + 2]) << 8) | std::uint32_t(block[4 * i + 3]);
    for (std::size_t i = 16; i < 64; ++i) {
        std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    auto [a, b, c, d, e, f, g, hh] = h;
    for (std::size_t i = 0; i < 64; ++i) {
        std::uint32_t s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
        std::uint32_t ch = (e & f) ^ (~e & g);
        std::uint32_t t1 = hh + s1 + ch + kRound[i] + w[i];
        std::uint32_t s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
        std::uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        std::uint32_t t2 = s0 + maj;
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

#if defined(__x86_64__)
// The SHA extensions' round and schedule instructions (Intel, "New Instructions Supporting the
// Secure Hash Algorithm on Intel Architecture Processors", 2013): two rounds per sha256rnds2 on
// the state held as ABEF/CDGH, four message words per sha256msg1/msg2 step.
__attribute__((target("sha,sse4.1,ssse3"))) void
compress_shani(std::array<std::uint32_t, 8>& h, const std::uint8_t* data, std::size_t blocks) {
    const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i dcba = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&h[0]));
    __m128i hgfe = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&h[4]));
    const __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
    const __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
    __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
    for (; blocks > 0; --blocks, data += 64) {
        const __m128i abef_before = abef;
        const __m128i cdgh_before = cdgh;
        __m128i w[4] = {}; // NOLINT(*-avoid-c-arrays): std::array drops the vector attribute
        for (std::size_t i = 0; i < 16; ++i) {
            __m128i& m = w[i % 4];
            if (i < 4) {
                m = _mm_shuffle_epi8(
                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 16 * i)), byte_swap);
            } else {
                // W[4i..4i+3] from the four words groups before: sigma0 (msg1), the words 7
                // back, sigma1 (msg2).
                __m128i x = _mm_sha256msg1_epu32(m, w[(i + 1) % 4]);
                x = _mm_add_epi32(x, _mm_alignr_epi8(w[(i + 3) % 4], w[(i + 2) % 4], 4));
                m = _mm_sha256msg2_epu32(x, w[(i + 3) % 4]);
            }
            __m128i k =
                _mm_add_epi32(m, _mm_load_si128(reinterpret_cast<const __m128i*>(&kRound[4 * i])));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, k);
            k = _mm_shuffle_epi32(k, 0x0E);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, k);
        }
        abef = _mm_add_epi32(abef, abef_before);
        cdgh = _mm_add_epi32(cdgh, cdgh_before);
    }
    const __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    dcba = _mm_blend_epi16(feba, dchg, 0xF0);
    hgfe = _mm_alignr_epi8(dchg, feba, 8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(&h[0]), dcba);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(&h[4]), hgfe);
}

bool cpu_has_sha() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
    const bool sha = (b & (1u << 29)) != 0;
    if (__get_cpuid(1, &a, &b, &c, &d) == 0) return false;
    const bool sse41 = (c & (1u << 19)) != 0;
    const bool ssse3 = (c & (1u << 9)) != 0;
    return sha && sse41 && ssse3;
}
#else
bool cpu_has_sha() {
    return false;
}
#endif

std::atomic<bool>& portable_forced() {
    static std::atomic<bool> forced{false};
    return forced;
}

void compress_blocks(std::array<std::uint32_t, 8>& h, const std::uint8_t* data,
                     std::size_t blocks) {
#if defined(__x86_64__)
    static const bool hardware = cpu_has_sha();
    if (hardware && !portable_forced().load(std::memory_order_relaxed)) {
        compress_shani(h, data, blocks);
        return;
    }
#endif
    for (std::size_t i = 0; i < blocks; ++i)
        compress_portable(h, data + 64 * i);
}

} // namespace

bool sha256_hardware() {
    return cpu_has_sha() && !portable_forced().load();
}

bool sha256_force_portable(bool portable) {
    return portable_forced().exchange(portable);
}

Sha256::Sha256() : state_(kInitial) {}

void Sha256::update(const void* data, std::size_t size) {
    const auto* p = static_cast<const std::uint8_t*>(data);
    total_ += size;
    if (buffered_ > 0) {
        const std::size_t take = std::min(size, block_.size() - buffered_);
        std::memcpy(block_.data() + buffered_, p, take);
        buffered_ += take;
        p += take;
        size -= take;
        if (buffered_ < block_.size()) return;
        compress_blocks(state_, block_.data(), 1);
        buffered_ = 0;
    }
    const std::size_t blocks = size / 64;
    if (blocks > 0) compress_blocks(state_, p, blocks);
    p += 64 * blocks;
    size -= 64 * blocks;
    if (size > 0) std::memcpy(block_.data(), p, size);
    buffered_ = size;
}

std::array<std::uint8_t, 32> Sha256::digest() {
    // Padding: 0x80, zeros, then the message length in bits (big endian) in the last 8 bytes.
    const std::uint64_t bits = total_ * 8;
    std::array<std::uint8_t, 128> tail{};
    std::memcpy(tail.data(), block_.data(), buffered_);
    tail[buffered_] = 0x80;
    const std::size_t tail_len = buffered_ + 1 + 8 <= 64 ? 64 : 128;
    for (int i = 0; i < 8; ++i)
        tail[tail_len - 1 - static_cast<std::size_t>(i)] =
            static_cast<std::uint8_t>(bits >> (8 * i));
    compress_blocks(state_, tail.data(), tail_len / 64);
    std::array<std::uint8_t, 32> out{};
    for (std::size_t i = 0; i < 8; ++i)
        for (std::size_t k = 0; k < 4; ++k)
            out[4 * i + k] = static_cast<std::uint8_t>(state_[i] >> (24 - 8 * k));
    return out;
}

std::string sha256_hex(std::string_view data) {
    Sha256 h;
    h.update(data);
    std::string out;
    out.reserve(64);
    for (auto byte : h.digest())
        out += fmt::format("{:02x}", byte);
    return out;
}

} // namespace forge
