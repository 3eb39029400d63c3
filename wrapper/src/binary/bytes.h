// Bounds-checked views over untrusted bytes. Every reader in this module goes through Bytes: an
// offset or size read from a file is never trusted, arithmetic on them is overflow-checked, and
// every view remembers where it sits in the buffer the user can inspect (the file, or an inflated
// wheel member), so an error can name the byte offset.
#pragma once

#include "core/result.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace forge::binary {

// a + b without wrapping; nullopt on overflow.
inline std::optional<std::uint64_t> checked_add(std::uint64_t a, std::uint64_t b) {
    std::uint64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
    return r;
}
inline std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) {
    std::uint64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
    return r;
}
inline std::uint64_t align_up8(std::uint64_t v) {
    return v > UINT64_MAX - 7 ? UINT64_MAX : (v + 7) & ~std::uint64_t{7};
}

class Bytes {
  public:
    Bytes() = default;
    Bytes(const std::uint8_t* data, std::uint64_t size, std::uint64_t base = 0)
        : data_(data), size_(size), base_(base) {}

    [[nodiscard]] const std::uint8_t* data() const { return data_; }
    [[nodiscard]] std::uint64_t size() const { return size_; }
    // Offset of data()[0] in the buffer errors are reported against.
    [[nodiscard]] std::uint64_t base() const { return base_; }
    [[nodiscard]] std::uint64_t abs(std::uint64_t off) const { return base_ + off; }
    [[nodiscard]] bool empty() const { return size_ == 0; }

    // True when [off, off+len) lies inside the view (overflow-safe).
    [[nodiscard]] bool has(std::uint64_t off, std::uint64_t len) const {
        return off <= size_ && len <= size_ - off;
    }
    // Sub-view; callers check has() first (an unchecked call yields an empty view, never UB).
    [[nodiscard]] Bytes sub(std::uint64_t off, std::uint64_t len) const {
        if (!has(off, len)) return Bytes{data_, 0, base_ + (off <= size_ ? off : size_)};
        return Bytes{data_ + off, len, base_ + off};
    }
    [[nodiscard]] Bytes from(std::uint64_t off) const {
        return off <= size_ ? sub(off, size_ - off) : Bytes{data_, 0, base_ + size_};
    }

    // Little-endian load; callers check has(off, sizeof(T)) first. Out of range reads give 0.
    template <class T> [[nodiscard]] T le(std::uint64_t off) const {
        if (!has(off, sizeof(T))) return T{0};
        T v{};
        std::memcpy(&v, data_ + off, sizeof(T)); // little-endian hosts only (x86-64, aarch64)
        return v;
    }
    [[nodiscard]] std::uint8_t u8(std::uint64_t off) const { return le<std::uint8_t>(off); }
    [[nodiscard]] std::uint16_t u16(std::uint64_t off) const { return le<std::uint16_t>(off); }
    [[nodiscard]] std::uint32_t u32(std::uint64_t off) const { return le<std::uint32_t>(off); }
    [[nodiscard]] std::uint64_t u64(std::uint64_t off) const { return le<std::uint64_t>(off); }

    [[nodiscard]] std::string_view view(std::uint64_t off, std::uint64_t len) const {
        if (!has(off, len)) return {};
        return {reinterpret_cast<const char*>(data_ + off), static_cast<std::size_t>(len)};
    }
    [[nodiscard]] std::string_view view() const { return view(0, size_); }
    // NUL-terminated string starting at off, which must end inside the view.
    [[nodiscard]] std::optional<std::string_view> cstr(std::uint64_t off) const {
        if (off >= size_) return std::nullopt;
        const void* nul = std::memchr(data_ + off, 0, static_cast<std::size_t>(size_ - off));
        if (!nul) return std::nullopt;
        return std::string_view(reinterpret_cast<const char*>(data_ + off),
                                static_cast<const std::uint8_t*>(nul) - (data_ + off));
    }
    [[nodiscard]] bool starts_with(std::string_view magic) const {
        return size_ >= magic.size() && std::memcmp(data_, magic.data(), magic.size()) == 0;
    }
    [[nodiscard]] bool all_zero(std::uint64_t off, std::uint64_t len) const {
        if (!has(off, len)) return false;
        for (std::uint64_t i = 0; i < len; ++i)
            if (data_[off + i] != 0) return false;
        return true;
    }

  private:
    const std::uint8_t* data_ = nullptr;
    std::uint64_t size_ = 0;
    std::uint64_t base_ = 0;
};

// Where a reader is: the user's file and the member inside it (wheel or archive member), so that
// errors read "libx.so: at byte 0x1f0: 'pkg/_C.so': fatbin entry ...".
struct Where {
    std::string file;
    std::optional<std::string> member;

    [[nodiscard]] Error error(std::uint64_t offset, std::string message) const {
        Error e{std::move(message), file};
        e.offset = offset;
        if (member) e.key = *member;
        return e;
    }
};

} // namespace forge::binary
