#include "bundle/verify.h"

#include "core/version.h"
#include "policy/yaml_util.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace forge::bundle {

namespace {

// Errors name the node's line (none for a synthesised node) and the key path (blobs[1].sms).
Error layout_error(std::string msg, const std::string& file, const YAML::Node& at,
                   std::string key = {}) {
    return policy::yamlx::error_at(file, at, std::move(key), std::move(msg));
}

// "12.8.93" -> "12.8", as written; anything else as it is (it then matches no blob).
std::string release_of(std::string_view version) {
    const auto v = parse_cuda_version(version);
    if (!v || !v->patch) return std::string(version);
    return std::string(version.substr(0, version.rfind('.')));
}

// {-1, -1} for what is not a CUDA version (a number too large for an int included).
std::pair<int, int> major_minor(std::string_view release) {
    const auto v = parse_cuda_version(release);
    if (!v) return {-1, -1};
    return {v->major, v->minor};
}

std::string sm_names(const std::vector<int>& sms) {
    std::string s;
    for (int sm : sms)
        s += fmt::format("{}sm_{}", s.empty() ? "" : " ", sm);
    return s.empty() ? "(none)" : s;
}

} // namespace

bool LayoutBlob::accepts(std::string_view release) const {
    const std::string r = release_of(release);
    if (!or_newer) return r == toolkit;
    auto have = major_minor(r);
    return have.first >= 0 && have >= major_minor(toolkit);
}

Result<BundleLayout> parse_bundle_layout(std::string_view yaml_text, const std::string& file) {
    auto loaded = policy::yamlx::load_text(yaml_text, file);
    if (!loaded) return loaded.error();
    const YAML::Node& root = *loaded;
    if (!root.IsMap() || !root["blobs"])
        return layout_error("expected a map with `blobs:`", file, root, "blobs");
    if (auto keys = policy::yamlx::check_map(file, root, "the bundle layout", {"blobs"}); !keys)
        return keys.error();
    const YAML::Node blobs = root["blobs"];
    if (!blobs.IsSequence() || blobs.size() == 0)
        return layout_error("`blobs:` must be a non-empty list of {toolkit, sms}", file, blobs,
                            "blobs");
    BundleLayout layout;
    layout.file = file;
    for (std::size_t i = 0; i < blobs.size(); ++i) {
        const YAML::Node b = blobs[i];
        const std::string where = fmt::format("blobs[{}]", i);
        if (!b.IsMap())
            return layout_error(where + " must be a map {toolkit, sms}", file, b, where);
        if (auto keys = policy::yamlx::check_map(file, b, where, {"toolkit", "sms"}); !keys)
            return keys.error();
        LayoutBlob lb;
        lb.line = b.Mark().line + 1;
        const YAML::Node tk = b["toolkit"];
        const std::string text = tk && tk.IsScalar() ? tk.Scalar() : std::string();
        const bool or_newer = text.ends_with('+');
        const std::string release = or_newer ? text.substr(0, text.size() - 1) : text;
        if (!tk || !tk.IsScalar() || !parse_cuda_version(release, false))
            return layout_error("toolkit must be a CUDA release \"X.Y\" or \"X.Y+\" (e.g. "
                                "\"12.8\", \"13.0+\")",
                                file, tk ? tk : b, where + ".toolkit");
        lb.toolkit = release;
        lb.or_newer = or_newer;
        const YAML::Node sms = b["sms"];
        if (!sms || !sms.IsSequence() || sms.size() == 0)
            return layout_error("sms must be a non-empty list of SM numbers", file, sms ? sms : b,
                                where + ".sms");
        for (const auto& s : sms) {
            int sm = 0;
            try {
                sm = s.as<int>();
            } catch (const YAML::Exception&) {
                return layout_error(fmt::format("'{}' is not an SM number", s.Scalar()), file, s,
                                    where + ".sms");
            }
            if (sm < 10 || sm > 999)
                return layout_error(fmt::format("{} is not an SM number", sm), file, s,
                                    where + ".sms");
            if (std::find(lb.sms.begin(), lb.sms.end(), sm) != lb.sms.end())
                return layout_error(fmt::format("sm_{} listed twice", sm), file, s, where + ".sms");
            lb.sms.push_back(sm);
        }
        std::sort(lb.sms.begin(), lb.sms.end());
        layout.blobs.push_back(std::move(lb));
    }
    return layout;
}

Result<BundleLayout> load_bundle_layout(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Error("cannot read the layout", path);
    std::ostringstream ss;
    ss << in.rdbuf();
    return parse_bundle_layout(ss.str(), path);
}

BlobReader default_blob_reader() {
    return
        [](const BundleBlob& blob, const std::string& name) -> Result<std::vector<binary::Entry>> {
            binary::ReadOptions opts;
            opts.inspect_payloads = true;
            auto exts =
                binary::read_extensions_from_memory(blob.data.data(), blob.data.size(), name, opts);
            if (!exts) return std::move(exts).error();
            std::vector<binary::Entry> entries;
            for (auto& ext : *exts)
                for (auto& e : ext.entries)
                    entries.push_back(std::move(e));
            return entries;
        };
}

Result<BundleCheck> verify_bundle(const Bundle& bundle, const BundleLayout& layout,
                                  const std::string& header_file, const BlobReader& reader) {
    BundleCheck check;
    if (bundle.blobs.size() != layout.blobs.size())
        check.mismatches.push_back(
            fmt::format("the header has {} blob(s), the layout ({}) expects {}",
                        bundle.blobs.size(), layout.file, layout.blobs.size()));
    const std::size_t n = std::min(bundle.blobs.size(), layout.blobs.size());
    for (std::size_t i = 0; i < n; ++i) {
        const BundleBlob& blob = bundle.blobs[i];
        const LayoutBlob& want = layout.blobs[i];
        const std::string label = fmt::format("blob {} ({}:{})", i, layout.file, want.line);
        auto mismatch = [&](const std::string& msg) {
            check.mismatches.push_back(fmt::format("{}: {}", label, msg));
        };

        // What the header's lookup table claims.
        if (!want.accepts(release_of(blob.toolkit)))
            mismatch(fmt::format("the header's table says CUDA {}, the layout expects {}",
                                 blob.toolkit, want.spelled()));
        std::vector<int> table_sms = blob.sms;
        std::sort(table_sms.begin(), table_sms.end());
        if (table_sms != want.sms)
            mismatch(fmt::format("the header's table lists {}, the layout expects {}",
                                 sm_names(table_sms), sm_names(want.sms)));

        // What the cubins themselves record.
        auto entries = reader(blob, fmt::format("{}[blob {}]", header_file, i));
        if (!entries) return std::move(entries).error();
        std::set<int> sass_sms;
        for (const auto& e : *entries) {
            if (e.target.kind != arch::Kind::Sass) continue;
            const std::string what =
                fmt::format("{} cubin (entry at byte 0x{:x})", e.target.name(), e.entry_offset);
            sass_sms.insert(e.target.sm);
            bool good = true;
            if (std::find(want.sms.begin(), want.sms.end(), e.target.sm) == want.sms.end()) {
                mismatch(fmt::format("{} is not in the layout ({})", what, sm_names(want.sms)));
                good = false;
            }
            if (!e.toolkit) {
                mismatch(fmt::format("{} records no build toolkit; the layout expects CUDA {}",
                                     what, want.spelled()));
                good = false;
            } else if (!want.accepts(*e.toolkit)) {
                mismatch(fmt::format("{} was built by CUDA {}, the layout expects CUDA {}", what,
                                     *e.toolkit, want.spelled()));
                good = false;
            }
            if (good)
                check.passed.push_back(
                    fmt::format("blob {}: {} built by CUDA {}", i, e.target.name(), *e.toolkit));
        }
        for (int sm : want.sms)
            if (!sass_sms.count(sm))
                mismatch(fmt::format("no sm_{} cubin, the layout expects one", sm));
        std::vector<int> found(sass_sms.begin(), sass_sms.end());
        if (found != table_sms)
            mismatch(fmt::format("the header's table lists {} but the blob holds SASS for {}",
                                 sm_names(table_sms), sm_names(found)));
    }
    return check;
}

} // namespace forge::bundle
