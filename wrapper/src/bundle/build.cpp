#include "bundle/build.h"

#include "arch/gencode.h"
#include "core/file.h"
#include "core/process.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

namespace forge::bundle {

namespace fs = std::filesystem;

std::vector<std::vector<std::string>> bundle_steps(const BundleOptions& opts,
                                                   const std::vector<int>& sms,
                                                   const std::string& object_out,
                                                   const std::string& fatbin_out) {
    std::vector<std::string> gencode;
    for (int sm : sms) {
        gencode.push_back("-gencode");
        gencode.push_back(arch::gencode_value(arch::Target{arch::Kind::Sass, sm}));
    }
    auto with = [](std::vector<std::string> a, const std::vector<std::string>& b) {
        a.insert(a.end(), b.begin(), b.end());
        return a;
    };
    if (!opts.rdc) {
        auto step = with({"-fatbin"}, gencode);
        step = with(step, opts.nvcc_args);
        step = with(step, {"-o", fatbin_out, opts.source});
        return {step};
    }
    auto compile = with({"-rdc=true", "-c"}, gencode);
    compile = with(compile, opts.nvcc_args);
    compile = with(compile, {"-o", object_out, opts.source});
    auto link = with({"-dlink", "-fatbin"}, gencode);
    link = with(link, {"-o", fatbin_out, object_out});
    for (const auto& lib : opts.devlink_libs)
        link.push_back("-l" + lib);
    return {compile, link};
}

namespace {

struct TempDir {
    fs::path path;
    ~TempDir() {
        std::error_code ec;
        if (!path.empty()) fs::remove_all(path, ec);
    }
};

Result<std::vector<std::uint8_t>> read_file_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return Error("nvcc wrote no output", p.string());
    return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in),
                                     std::istreambuf_iterator<char>());
}

std::string quote_argv(const std::string& exe, const std::vector<std::string>& args) {
    std::string s = exe;
    for (const auto& a : args)
        s += " " + (a.find_first_of(" \t\"'") == std::string::npos ? a : "'" + a + "'");
    return s;
}

} // namespace

Result<Bundle> build_bundle(const BundleOptions& opts, const ToolkitPlan& plan,
                            const std::string& symbol, std::string* log) {
    std::error_code ec;
    if (!fs::is_regular_file(opts.source, ec)) return Error("no such source file", opts.source);
    const std::string source = fs::absolute(opts.source, ec).string();

    TempDir tmp;
    auto made = create_unique_dir(fs::temp_directory_path(ec), "nvcc-forge-bundle-");
    if (!made) return made.error();
    tmp.path = *made;

    Bundle bundle;
    bundle.symbol = symbol;
    BundleOptions o = opts;
    o.source = source;
    for (std::size_t i = 0; i < plan.groups.size(); ++i) {
        const auto& group = plan.groups[i];
        // Fixed names inside a private directory: nothing of the temporary path reaches the
        // fatbin, so the header depends only on the inputs.
        const fs::path dir = tmp.path / fmt::format("blob{}", i);
        fs::create_directories(dir, ec);
        const std::string obj = "device.o", fatbin = "device.fatbin";
        for (const auto& args : bundle_steps(o, group.sms, obj, fatbin)) {
            if (log) *log += quote_argv(group.toolkit->nvcc, args) + "\n";
            // NVCC_PREPEND/APPEND_FLAGS would add targets or options the pin does not allow.
            ProcessSpec spec;
            spec.path = group.toolkit->nvcc;
            spec.argv = {group.toolkit->nvcc};
            spec.argv.insert(spec.argv.end(), args.begin(), args.end());
            spec.env = environment_without({"NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"});
            spec.output = ProcessSpec::Output::Merged;
            spec.null_stdin = true;
            spec.working_dir = dir.string();
            auto run = run_process(spec);
            if (!run) return std::move(run).error();
            if (!run->succeeded()) {
                Error e(fmt::format("nvcc (CUDA {}) failed with exit code {}:\n  {}\n{}",
                                    group.toolkit->version.full(), run->status_code(),
                                    quote_argv(group.toolkit->nvcc, args), run->out),
                        opts.source);
                e.exit_code = kExitInput;
                return e;
            }
        }
        auto data = read_file_bytes(dir / fatbin);
        if (!data) return std::move(data).error();
        if (data->empty()) return Error("nvcc wrote an empty fatbin", (dir / fatbin).string());
        bundle.blobs.push_back({group.toolkit->version.full(), group.sms, std::move(data).value()});
    }
    return bundle;
}

} // namespace forge::bundle
