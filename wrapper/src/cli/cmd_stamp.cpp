// nvcc-forge stamp WHEEL (--arch-list LIST | resolve options) [--ledger FILE]
// Writes <package>/_build_info.json into the wheel (RECORD updated) and appends the same record
// to the ledger. It records what the build asked for; it does not judge the wheel.
// Exit 0 stamped, 2 unusable input (not a wheel, unreadable, bad options).
#include "cli/command.h"
#include "cli/policy_options.h"
#include "core/json.h"
#include "core/text.h"
#include "policy/policy_file.h"
#include "provenance/stamp.h"

#include <filesystem>
#include <fmt/format.h>
#include <sstream>

namespace forge::cli {
namespace {

constexpr std::string_view kStampUsage =
    "nvcc-forge stamp WHEEL (--arch-list LIST | resolve options) [--ledger FILE] [--format "
    "text|json]";

int run_stamp(int argc, char** argv) {
    namespace po = boost::program_options;
    po::options_description desc("stamp options");
    std::vector<std::string> wheels;
    std::string format = "text";
    desc.add_options()("help,h", "show this help")("wheel", po::value(&wheels), "the wheel")(
        "ledger", po::value<std::string>(), "append the record to this JSON-lines ledger")(
        "format", po::value(&format), "text | json (the record)");
    add_resolve_options(desc, /*with_arch_list=*/true);
    po::positional_options_description pos;
    pos.add("wheel", -1);
    po::variables_map vm;
    if (!store_command_line(argc, argv, desc, &pos, vm, "stamp", kStampUsage)) return kExitInput;
    if (vm.count("help")) {
        fmt::print("usage: {}\n\n", kStampUsage);
        std::ostringstream os;
        os << desc;
        fmt::print("{}\nexit codes: 0 stamped, 2 unusable input or usage\n", os.str());
        return kExitOk;
    }
    if (wheels.size() != 1)
        return report_error("stamp",
                            Error(fmt::format("give exactly one WHEEL ({} given)\nusage: {}",
                                              wheels.size(), kStampUsage)));
    if (format != "text" && format != "json")
        return report_error("stamp",
                            Error(fmt::format("--format must be text or json, not '{}'", format)));
    const std::string& wheel = wheels.front();
    if (!std::filesystem::is_regular_file(wheel))
        return report_error("stamp", Error(fmt::format("{}: no such wheel", wheel)));
    auto res = resolve_from_options(vm);
    if (!res) return report_error("stamp", res.error());
    // --arch-list skips the resolver, but an explicit --policy still names the policy the build
    // ran under: record its hash and epoch so an audit can tell a stale epoch.
    if (vm.count("arch-list") && vm.count("policy")) {
        auto policy = policy::load_policy(policy_file_from_options(vm));
        if (!policy) return report_error("stamp", policy.error());
        res->policy_file = policy_file_from_options(vm).string();
        res->policy_sha256 = policy->sha256;
        res->build_epoch = policy->build_epoch;
    }
    auto stamped = provenance::stamp_wheel(wheel, *res, provenance::process_env());
    if (!stamped) return report_error("stamp", stamped.error());
    if (vm.count("ledger")) {
        auto appended = provenance::append_ledger(vm["ledger"].as<std::string>(),
                                                  std::filesystem::path(wheel).filename().string(),
                                                  stamped->record);
        if (!appended) return report_error("stamp", appended.error());
    }
    if (format == "json") {
        fmt::print("{}\n", json_text(stamped->record, 2));
    } else {
        fmt::print("{} {}: {} (arch list {}, epoch {})\n",
                   stamped->replaced ? "restamped" : "stamped", escape_control(wheel),
                   escape_control(stamped->member), stamped->record["arch_list"].get<std::string>(),
                   json_text(stamped->record["build_epoch"]));
    }
    return kExitOk;
}

} // namespace
} // namespace forge::cli

FORGE_COMMAND("stamp", "record the build's arch list in the wheel (_build_info.json) and a ledger",
              forge::cli::run_stamp,
              "nvcc-forge stamp dist/pkg-1.0-cp312-cp312-linux_x86_64.whl --cuda 12.8 --torch 2.9 "
              "--ledger ledger.jsonl");
