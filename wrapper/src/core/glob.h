// The one path-glob dialect of nvcc-forge: lint_ignore entries (lint/ignore.h) and a package's
// `wrapper.arch_specific_sources` (frontend/config.h) are both written in it.
//
// Paths use '/' separators. In a glob:
//   *       any run of characters inside one path component (never '/')
//   ?       one character other than '/'
//   **      any run of characters, '/' included: "third_party/**", "csrc/**/*.cu" (`**/` also
//           matches no directory at all, so that glob matches "csrc/a.cu")
//   [set]   one character (never '/') in the set: "[abc]", ranges "[0-9]", negated "[!0-9]" or
//           "[^0-9]"; a ']' first in the set is literal; a '[' with no closing ']' is literal
//   \c      the character c itself ("\*", "\[")
//   other   itself
// Which part of a path a glob is matched against:
//   - a glob without '/' matches any one component: a file or a directory name at any depth
//     ("*.cuh" matches "deep/dir/k.cuh", "third_party" matches "third_party/x/a.h"), as in
//     .gitignore;
//   - a glob with '/' matches the whole path; when it has no wildcard at all it also covers
//     everything under that directory ("third_party/flash" matches "third_party/flash/a.cu").
// glob_match_unrooted is for a path whose root is not known (a source as written on an nvcc
// command line, relative to some build directory): a glob with '/' may then match the path from
// any component on ("hopper/*.cu" matches "../src/hopper/gemm.cu" and "/abs/hopper/gemm.cu").
#pragma once

#include <string_view>

namespace forge {

// `path` is relative to the root the globs are written against (lint: SRC_DIR).
bool glob_match(std::string_view glob, std::string_view path);

// `path` is relative to an unknown directory, or absolute.
bool glob_match_unrooted(std::string_view glob, std::string_view path);

// Whether `glob` (or one component of it) has a wildcard or an escape; without one it names a
// single path.
bool glob_has_wildcard(std::string_view glob);

} // namespace forge
