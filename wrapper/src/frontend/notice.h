// Notes a build log shows once per build, not once per nvcc call: "no policy, nothing is
// checked", "the environment's list is not this build's". A build is its driver process: the
// nearest ancestor that is not a shell, `env`, `cmake -E`, a compiler cache or a compiler (ninja,
// make — the outermost of a recursive make —, pip, a Python setup.py), or the process a daemon
// (the sccache server, whose parent is init) was started as. A note is said by the first call
// that creates its stamp file, `<cache dir>/notes/<kind>-<pid>-<start time>`.
#pragma once

#include "frontend/config.h"
#include "toolkit/locate.h"

#include <optional>
#include <string>
#include <string_view>

namespace forge::frontend {

// The build's driver process (its comm names it: "ninja", "make"); nullopt when /proc cannot tell.
std::optional<toolkit::ProcessInfo> build_driver();

// The build's driver as "<pid>-<start time>"; "" when /proc cannot tell.
std::string build_key();

// Has a call of this build said the note `kind`? (false when it cannot be known)
bool said_in_this_build(const FrontendEnv& env, std::string_view kind);

// Writes `text` to stderr unless a call of this build said the note `kind` already. Without a
// usable cache directory or /proc, says it every time (a note said twice beats a silent build).
void say_once_per_build(const FrontendEnv& env, std::string_view kind, const std::string& text);

} // namespace forge::frontend
