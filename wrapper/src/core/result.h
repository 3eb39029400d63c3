// Errors are values: every fallible function returns Result<T>; the CLI edge turns an Error into a
// message and an exit code. An Error carries the context a user needs to find the problem: the
// file, and a line, a byte offset or a key inside it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace forge {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitPolicy =
    1;                               // a policy finding (verify mismatch, collapsed list, lint hit)
inline constexpr int kExitInput = 2; // unusable input or usage

struct Error {
    Error() = default;
    explicit Error(std::string msg) : message(std::move(msg)) {}
    Error(std::string msg, std::string in_file)
        : message(std::move(msg)), file(std::move(in_file)) {}

    std::string message;
    std::string file;                    // the file the error is about, "" if none
    std::optional<int> line;             // 1-based line in `file`
    std::optional<std::uint64_t> offset; // byte offset in `file` (binary readers)
    std::string key;                     // YAML key, token, option or member name
    int exit_code = kExitInput;

    // "file:line: key: message" / "file: at byte 0x1f0: message" / "message"
    [[nodiscard]] std::string to_string() const;

    Error& in_file(std::string f) & {
        if (file.empty()) file = std::move(f);
        return *this;
    }
    Error&& in_file(std::string f) && {
        if (file.empty()) file = std::move(f);
        return std::move(*this);
    }
};

inline Error make_error(std::string message) {
    return Error{std::move(message)};
}

template <class T> class [[nodiscard]] Result {
  public:
    Result(T value) : v_(std::move(value)) {}     // NOLINT(google-explicit-constructor)
    Result(Error error) : v_(std::move(error)) {} // NOLINT(google-explicit-constructor)

    [[nodiscard]] bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & { return std::get<0>(v_); }
    const T& value() const& { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    Error& error() & { return std::get<1>(v_); }
    const Error& error() const& { return std::get<1>(v_); }
    Error&& error() && { return std::get<1>(std::move(v_)); }

  private:
    std::variant<T, Error> v_;
};

struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() {
    return Ok{};
}

} // namespace forge

// Propagate an error from an expression returning Result<...>.
#define FORGE_TRY_STATUS(expr)                                                                     \
    do {                                                                                           \
        auto forge_try_r_ = (expr);                                                                \
        if (!forge_try_r_.ok()) return std::move(forge_try_r_).error();                            \
    } while (0)
