// Paths for the tests, put together from the build's FORGE_TEST_* directories and parts.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace forge::test {

// The parts one after another, built in place: GCC 12 at -O1 and -O2 reports a false
// -Wstringop-overflow/-overread for the moved temporaries of `std::string(literal) + ...` once
// inlined, in every test that spells a path that way.
inline std::string joined(std::initializer_list<std::string_view> parts) {
    std::size_t size = 0;
    for (auto p : parts)
        size += p.size();
    std::string out;
    out.reserve(size);
    for (auto p : parts)
        out.append(p);
    return out;
}

} // namespace forge::test
