// The resolve options shared by every subcommand that needs "the policy" (resolve, coverage,
// verify, lint, stamp, audit, env, cell-key): --arch-list LIST, or --cuda/--torch/--platform/
// --python/--package/--policy/--packages-dir. INTERFACE CONTRACT, implemented by the policy owner.
#pragma once

#include "core/result.h"
#include "policy/resolve.h"

#include <boost/program_options.hpp>

namespace forge::cli {

// Adds --cuda, --torch, --platform, --python, --package, --policy, --packages-dir, --gpus and,
// when `with_arch_list`, --arch-list.
void add_resolve_options(boost::program_options::options_description& desc, bool with_arch_list);

// --arch-list wins (source "--arch-list"); otherwise runs the resolver. Errors carry exit codes
// (2 unusable input, 1 a list that collapses to empty).
Result<policy::Resolution> resolve_from_options(const boost::program_options::variables_map& vm);

} // namespace forge::cli
