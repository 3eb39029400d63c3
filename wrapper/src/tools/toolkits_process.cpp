#include "tools/toolkits_process.h"

#include <boost/process.hpp>
#include <fmt/format.h>

#include <istream>
#include <iterator>

namespace forge::tools {

namespace bp = boost::process;

Result<ProcessOutput> run_process(const std::string& exe, const std::vector<std::string>& args,
                                  const ProcessOptions& opts) {
    try {
        bp::environment env = boost::this_process::environment();
        for (const auto& name : opts.unset_env)
            env.erase(name);
        bp::ipstream out;
        // One pipe for both streams: reading two pipes one after the other can deadlock when the
        // child fills the second while we block on the first.
        std::unique_ptr<bp::child> child;
        if (opts.working_dir.empty())
            child = std::make_unique<bp::child>(bp::exe = exe, bp::args = args, env,
                                                (bp::std_out & bp::std_err) > out,
                                                bp::std_in < bp::null);
        else
            child = std::make_unique<bp::child>(
                bp::exe = exe, bp::args = args, env, bp::start_dir = opts.working_dir,
                (bp::std_out & bp::std_err) > out, bp::std_in < bp::null);
        ProcessOutput result;
        result.output.assign(std::istreambuf_iterator<char>(out), std::istreambuf_iterator<char>());
        child->wait();
        result.exit_code = child->exit_code();
        return result;
    } catch (const std::exception& e) {
        Error err(fmt::format("cannot run: {}", e.what()), exe);
        return err;
    }
}

} // namespace forge::tools
