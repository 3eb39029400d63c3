// SHA-256: FIPS 180-4's examples, and the SHA-NI path equal to the portable one on every length
// and every way of feeding the bytes (where this CPU has SHA-NI; else both runs are portable).
#include "core/sha256.h"

#include "../seed.h"

#include <gtest/gtest.h>
#include <random>

namespace forge {
namespace {

struct PortableOnly {
    explicit PortableOnly(bool on) : before(sha256_force_portable(on)) {}
    PortableOnly(const PortableOnly&) = delete;
    PortableOnly& operator=(const PortableOnly&) = delete;
    ~PortableOnly() { sha256_force_portable(before); }
    bool before;
};

std::array<std::uint8_t, 32> digest_in_pieces(const std::string& s, std::size_t piece) {
    Sha256 h;
    for (std::size_t at = 0; at < s.size(); at += piece)
        h.update(s.data() + at, std::min(piece, s.size() - at));
    return h.digest();
}

TEST(Sha256, KnownDigestsOnBothPaths) {
    for (bool portable : {false, true}) {
        PortableOnly mode(portable);
        EXPECT_EQ(sha256_hex(""),
                  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        EXPECT_EQ(sha256_hex("abc"),
                  "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
                  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
        EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
                  "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    }
}

TEST(Sha256, HardwareAndPortableAgreeOnEveryLengthAndSplit) {
    std::mt19937 rng(test::test_seed(20261202));
    for (std::size_t len = 0; len < 300; ++len) {
        std::string s(len, '\0');
        for (auto& c : s)
            c = static_cast<char>(rng());
        std::array<std::uint8_t, 32> portable{};
        {
            PortableOnly mode(true);
            portable = digest_in_pieces(s, std::max<std::size_t>(len, 1));
        }
        for (std::size_t piece : {1u, 7u, 63u, 64u, 65u, 1000u})
            EXPECT_EQ(digest_in_pieces(s, piece), portable)
                << "length " << len << " in pieces of " << piece;
    }
}

} // namespace
} // namespace forge
