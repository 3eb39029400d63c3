// SHA-256 (FIPS 180-4), small and dependency-free: the policy hash, cell keys and a wheel's RECORD
// need a stable digest, and no module links a crypto library (the front end must load none).
// Where the CPU has the SHA extensions (x86-64 SHA-NI, checked at run time) the blocks go through
// them: a wheel's RECORD hashes every member, hundreds of MB for a CUDA library.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace forge {

// Incremental: update() any number of times, then digest() once.
class Sha256 {
  public:
    Sha256();
    void update(const void* data, std::size_t size);
    void update(std::string_view s) { update(s.data(), s.size()); }
    [[nodiscard]] std::array<std::uint8_t, 32> digest();

  private:
    std::array<std::uint32_t, 8> state_;
    std::array<std::uint8_t, 64> block_{};
    std::size_t buffered_ = 0;
    std::uint64_t total_ = 0;
};

std::string sha256_hex(std::string_view data); // lowercase hex, 64 characters

// Whether the SHA-NI path is taken on this machine (tests compare both paths).
bool sha256_hardware();
// Forces the portable path (tests); returns the previous setting.
bool sha256_force_portable(bool portable);

} // namespace forge
