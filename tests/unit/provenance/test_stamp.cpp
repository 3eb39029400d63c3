// stamp: the record, RECORD lines, the wheel rewrite (members byte for byte, RECORD, re-stamp),
// the ledger, and bad input.
#include "../files.h"
#include "../temp_dir.h"
#include "core/sha256.h"
#include "provenance/stamp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <minizip/unzip.h>
#include <minizip/zip.h>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;
using namespace forge;
using namespace forge::provenance;

namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
        auto it = vars.find(std::string(name));
        if (it == vars.end()) return std::nullopt;
        return it->second;
    };
}

using forge::test::temp_dir;

// The test's own zip reading and writing goes straight to minizip, not through the code under
// test (binary/zip_io.h).
constexpr int kStore = 0;
constexpr int kDeflate = Z_DEFLATED;

struct Member {
    std::string name;
    std::string data;
    int method = kDeflate;
};

void write_zip(const fs::path& path, const std::vector<Member>& members) {
    zipFile z = zipOpen64(path.c_str(), APPEND_STATUS_CREATE);
    ASSERT_NE(z, nullptr);
    for (const auto& m : members) {
        zip_fileinfo zi{};
        ASSERT_EQ(zipOpenNewFileInZip64(z, m.name.c_str(), &zi, nullptr, 0, nullptr, 0, nullptr,
                                        m.method, m.method == kStore ? 0 : Z_DEFAULT_COMPRESSION,
                                        0),
                  ZIP_OK);
        ASSERT_EQ(zipWriteInFileInZip(z, m.data.data(), static_cast<unsigned>(m.data.size())),
                  ZIP_OK);
        ASSERT_EQ(zipCloseFileInZip(z), ZIP_OK);
    }
    ASSERT_EQ(zipClose(z, nullptr), ZIP_OK);
}

struct RawMember {
    std::string name;
    unsigned long method;
    unsigned long crc;
    std::string compressed; // bytes as stored
};

std::vector<RawMember> read_raw(const fs::path& path) {
    unzFile z = unzOpen64(path.c_str());
    EXPECT_NE(z, nullptr);
    std::vector<RawMember> out;
    if (!z) return out;
    for (int rc = unzGoToFirstFile(z); rc == UNZ_OK; rc = unzGoToNextFile(z)) {
        unz_file_info64 fi{};
        char name[4096] = {};
        EXPECT_EQ(unzGetCurrentFileInfo64(z, &fi, name, sizeof name - 1, nullptr, 0, nullptr, 0),
                  UNZ_OK);
        RawMember m{name, fi.compression_method, fi.crc, std::string(fi.compressed_size, '\0')};
        int method = 0;
        int level = 0;
        EXPECT_EQ(unzOpenCurrentFile2(z, &method, &level, 1), UNZ_OK);
        EXPECT_EQ(
            unzReadCurrentFile(z, m.compressed.data(), static_cast<unsigned>(fi.compressed_size)),
            static_cast<int>(fi.compressed_size));
        unzCloseCurrentFile(z);
        out.push_back(std::move(m));
    }
    unzClose(z);
    return out;
}

std::string read_member_text(const fs::path& path, const std::string& name) {
    unzFile z = unzOpen64(path.c_str());
    EXPECT_NE(z, nullptr);
    if (!z) return {};
    EXPECT_EQ(unzLocateFile(z, name.c_str(), 1), UNZ_OK) << name;
    unz_file_info64 fi{};
    unzGetCurrentFileInfo64(z, &fi, nullptr, 0, nullptr, 0, nullptr, 0);
    std::string data(fi.uncompressed_size, '\0');
    EXPECT_EQ(unzOpenCurrentFile(z), UNZ_OK);
    EXPECT_EQ(unzReadCurrentFile(z, data.data(), static_cast<unsigned>(data.size())),
              static_cast<int>(data.size()));
    EXPECT_EQ(unzCloseCurrentFile(z), UNZ_OK) << "CRC of " << name;
    unzClose(z);
    return data;
}

// A host-only shared object the reader accepts (an ELF header without a section table), with an
// incompressible-ish payload so that deflate and store differ.
std::string so_bytes() {
    std::string s(64, '\0');
    const char ident[] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
    std::copy(std::begin(ident), std::end(ident), s.begin());
    s[16] = 3;  // e_type: ET_DYN
    s[18] = 62; // e_machine: x86-64
    s[20] = 1;  // e_version
    s[52] = 64; // e_ehsize
    unsigned x = 12345;
    for (int i = 0; i < 4940; ++i) {
        x = x * 1103515245u + 12345u;
        s += static_cast<char>(x >> 24);
    }
    return s;
}

// Unpadded urlsafe base64 of the bytes a hex string spells (RECORD's hash encoding).
std::string urlsafe_b64_of_hex(const std::string& hex) {
    std::string bytes;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    std::size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
        const auto n = (static_cast<unsigned>(static_cast<unsigned char>(bytes[i])) << 16) |
                       (static_cast<unsigned>(static_cast<unsigned char>(bytes[i + 1])) << 8) |
                       static_cast<unsigned>(static_cast<unsigned char>(bytes[i + 2]));
        for (int k = 18; k >= 0; k -= 6)
            out.push_back(abc[(n >> k) & 63]);
    }
    if (bytes.size() - i == 2) {
        const auto n = (static_cast<unsigned>(static_cast<unsigned char>(bytes[i])) << 16) |
                       (static_cast<unsigned>(static_cast<unsigned char>(bytes[i + 1])) << 8);
        for (int k = 18; k >= 6; k -= 6)
            out.push_back(abc[(n >> k) & 63]);
    } else if (bytes.size() - i == 1) {
        const auto n = static_cast<unsigned>(static_cast<unsigned char>(bytes[i])) << 16;
        for (int k = 18; k >= 12; k -= 6)
            out.push_back(abc[(n >> k) & 63]);
    }
    return out;
}

const std::string kRecord = "demo/__init__.py,sha256=AAAA,3\n"
                            "demo/_C.so,sha256=BBBB,5004\n"
                            "demo-1.0.dist-info/METADATA,sha256=CCCC,40\n"
                            "demo-1.0.dist-info/RECORD,,\n";

std::string record_line(const std::string& name, const std::string& data) {
    return name + ",sha256=" + urlsafe_b64_of_hex(sha256_hex(data)) + "," +
           std::to_string(data.size()) + "\n";
}

// The members of make_wheel() but RECORD, and the RECORD that lists them (computed here with the
// test's own encoding, not by the code under test).
std::vector<Member> wheel_members() {
    return {{"demo/__init__.py", "x=1", kStore},
            {"demo/_C.so", so_bytes(), kDeflate},
            {"demo/data.bin", std::string(4096, 'z'), kStore},
            {"demo-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"},
            {"demo-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\n"},
            {"demo-1.0.dist-info/top_level.txt", "demo\n"}};
}

std::string wheel_record() {
    std::string r;
    for (const auto& m : wheel_members())
        r += record_line(m.name, m.data);
    return r + "demo-1.0.dist-info/RECORD,,\n";
}

fs::path make_wheel(const fs::path& dir,
                    const std::string& filename = "demo-1.0-cp312-cp312-linux_x86_64.whl",
                    const std::string& record = wheel_record()) {
    auto p = dir / filename;
    auto members = wheel_members();
    members.push_back({"demo-1.0.dist-info/RECORD", record});
    write_zip(p, members);
    return p;
}

policy::Resolution resolution(const std::string& list, std::optional<long> epoch = 7) {
    policy::Resolution r;
    r.list = *arch::ArchList::parse(list);
    r.source = "arch_policy[12.8]";
    r.cuda = "12.8";
    r.torch = "2.9";
    r.platform = "linux_x86_64";
    r.policy_file = "policy/arch_policy.yml";
    r.policy_sha256 = std::string(64, 'a');
    r.build_epoch = epoch;
    return r;
}

} // namespace

TEST(StampRecord, HashIsUrlsafeBase64WithoutPadding) {
    // Known RECORD hashes: the empty file (what pip writes for empty __init__.py files) and "abc".
    EXPECT_EQ(record_hash(""), "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
    EXPECT_EQ(record_hash("abc"), "sha256=ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0");
}

TEST(StampRecord, InsertsBeforeRecordsOwnLine) {
    auto out = update_record(kRecord, "demo-1.0.dist-info/RECORD", "demo/_build_info.json", "{}");
    EXPECT_EQ(out, "demo/__init__.py,sha256=AAAA,3\n"
                   "demo/_C.so,sha256=BBBB,5004\n"
                   "demo-1.0.dist-info/METADATA,sha256=CCCC,40\n"
                   "demo/_build_info.json," +
                       record_hash("{}") +
                       ",2\n"
                       "demo-1.0.dist-info/RECORD,,\n");
}

TEST(StampRecord, ReplacesAPreviousLineOnce) {
    auto once = update_record(kRecord, "demo-1.0.dist-info/RECORD", "demo/_build_info.json", "one");
    auto twice = update_record(once, "demo-1.0.dist-info/RECORD", "demo/_build_info.json", "three");
    EXPECT_EQ(twice.find(record_hash("one")), std::string::npos);
    size_t first = twice.find("demo/_build_info.json,");
    ASSERT_NE(first, std::string::npos);
    EXPECT_EQ(twice.find("demo/_build_info.json,", first + 1), std::string::npos);
    EXPECT_NE(twice.find("demo/_build_info.json," + record_hash("three") + ",5\n"),
              std::string::npos);
}

TEST(StampRecord, QuotedPathsAndCrlfAreKept) {
    std::string rec = "\"demo/a,b.py\",sha256=X,1\r\n\"demo/_build_info.json\",sha256=OLD,9\r\n"
                      "demo-1.0.dist-info/RECORD,,\r\n";
    auto out = update_record(rec, "demo-1.0.dist-info/RECORD", "demo/_build_info.json", "new");
    EXPECT_NE(out.find("\"demo/a,b.py\",sha256=X,1\r\n"), std::string::npos);
    EXPECT_EQ(out.find("OLD"), std::string::npos);
    EXPECT_NE(out.find("demo/_build_info.json," + record_hash("new") +
                       ",3\r\ndemo-1.0.dist-info/RECORD,,\r\n"),
              std::string::npos);
}

TEST(StampRecord, MissingOwnLineIsAdded) {
    auto out = update_record("demo/a.py,sha256=X,1\n", "d-1.dist-info/RECORD",
                             "demo/_build_info.json", "");
    EXPECT_EQ(out, "demo/a.py,sha256=X,1\ndemo/_build_info.json," + record_hash("") +
                       ",0\nd-1.dist-info/RECORD,,\n");
}

TEST(StampRecord, WheelFilenames) {
    auto w = parse_wheel_filename("flash_attn-2.8.3-1build-cp312-cp312-linux_x86_64.whl");
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(w->distribution, "flash_attn");
    EXPECT_EQ(w->build, "1build");
    EXPECT_EQ(w->platform, "linux_x86_64");
    auto plain = parse_wheel_filename("demo-1.0-py3-none-any.whl");
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(plain->build, "");
    EXPECT_EQ(plain->python, "py3");
    EXPECT_FALSE(parse_wheel_filename("demo-1.0.tar.gz").ok());
    EXPECT_FALSE(parse_wheel_filename("demo-1.0-linux.whl").ok());
    EXPECT_FALSE(parse_wheel_filename("demo--1.0-py3-none-any.whl").ok());
}

TEST(StampRecord, RunIdFromCiEnvironment) {
    EXPECT_FALSE(ci_run_id(env_of({})).has_value());
    EXPECT_FALSE(ci_run_id(env_of({{"GITHUB_RUN_ID", ""}})).has_value());
    auto gh = ci_run_id(
        env_of({{"GITHUB_RUN_ID", "42"}, {"GITHUB_RUN_ATTEMPT", "2"}, {"BUILD_ID", "9"}}));
    ASSERT_TRUE(gh);
    EXPECT_EQ(gh->value, "42/2");
    EXPECT_EQ(gh->variable, "GITHUB_RUN_ID");
    auto gl = ci_run_id(env_of({{"CI_PIPELINE_ID", "77"}, {"BUILD_ID", "9"}}));
    ASSERT_TRUE(gl);
    EXPECT_EQ(gl->value, "77");
    auto jenkins = ci_run_id(env_of({{"BUILD_ID", "9"}}));
    ASSERT_TRUE(jenkins);
    EXPECT_EQ(jenkins->variable, "BUILD_ID");
}

TEST(StampRecord, TimeHonoursSourceDateEpoch) {
    auto t = stamp_time(env_of({{"SOURCE_DATE_EPOCH", "1700000000"}}));
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(iso8601_utc(*t), "2023-11-14T22:13:20Z");
    EXPECT_EQ(iso8601_utc(0), "1970-01-01T00:00:00Z");
    for (const char* bad : {"", "-5", "12abc", "1.5"}) {
        auto e = stamp_time(env_of({{"SOURCE_DATE_EPOCH", bad}}));
        ASSERT_FALSE(e.ok()) << bad;
        EXPECT_EQ(e.error().key, "SOURCE_DATE_EPOCH");
    }
    auto now = stamp_time(env_of({}));
    ASSERT_TRUE(now.ok());
    EXPECT_GT(*now, 1700000000);
}

TEST(StampRecord, BuildInfoKeys) {
    StampInputs in{"demo", "demo", 1700000000, RunId{"42", "GITHUB_RUN_ID"}};
    auto j = make_build_info(resolution("8.0 9.0+PTX"), in);
    EXPECT_EQ(j["arch_list"], "8.0 9.0+PTX");
    EXPECT_EQ(j["tokens"], nlohmann::json({"8.0", "9.0+PTX"}));
    auto targets = j["targets"].get<std::vector<std::string>>();
    std::sort(targets.begin(), targets.end());
    EXPECT_EQ(targets, (std::vector<std::string>{"compute_90", "sm_80", "sm_90"}));
    EXPECT_EQ(j["build_epoch"], 7);
    EXPECT_EQ(j["policy_sha256"], std::string(64, 'a'));
    EXPECT_EQ(j["cuda"], "12.8");
    EXPECT_EQ(j["torch"], "2.9");
    EXPECT_EQ(j["package"], "demo");
    EXPECT_EQ(j["run_id"], "42");
    EXPECT_EQ(j["time"], "2023-11-14T22:13:20Z");
    EXPECT_EQ(j["inferred"], false);
    EXPECT_EQ(j["nvcc_forge_version"], FORGE_VERSION);
    EXPECT_EQ(j["allow_missing"], nlohmann::json::array());
    auto waived = resolution("8.0 9.0");
    waived.allow_missing = {*arch::parse_target("sm_90")};
    EXPECT_EQ(make_build_info(waived, in)["allow_missing"], nlohmann::json({"sm_90"}));
    auto none =
        make_build_info(resolution("8.0", std::nullopt), StampInputs{"demo", "demo", 0, {}});
    EXPECT_TRUE(none["run_id"].is_null());
    EXPECT_TRUE(none["build_epoch"].is_null());
}

TEST(StampWheel, KeepsEveryOtherMemberByteForByteAndUpdatesRecord) {
    auto dir = temp_dir("bytes");
    auto wheel = make_wheel(dir);
    auto before = read_raw(wheel);
    auto r = stamp_wheel(wheel.string(), resolution("8.0 9.0+PTX"),
                         env_of({{"SOURCE_DATE_EPOCH", "1700000000"}, {"CI_PIPELINE_ID", "5"}}));
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->member, "demo/_build_info.json");
    EXPECT_FALSE(r->replaced);
    auto after = read_raw(wheel);
    ASSERT_EQ(after.size(), before.size() + 1);
    for (size_t i = 0; i < before.size(); ++i) {
        EXPECT_EQ(after[i].name, before[i].name) << "order changed at " << i;
        if (before[i].name.ends_with("/RECORD")) continue;
        EXPECT_EQ(after[i].method, before[i].method) << before[i].name;
        EXPECT_EQ(after[i].crc, before[i].crc) << before[i].name;
        EXPECT_EQ(after[i].compressed, before[i].compressed) << before[i].name;
    }
    EXPECT_EQ(after.back().name, "demo/_build_info.json");
    // RECORD: every line from before, plus the stamp with its real hash and size.
    std::string info = read_member_text(wheel, "demo/_build_info.json");
    std::string record = read_member_text(wheel, "demo-1.0.dist-info/RECORD");
    ASSERT_EQ(urlsafe_b64_of_hex(sha256_hex("")), "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
    // The expected line is computed here from the stored bytes (sha256, then unpadded urlsafe
    // base64, PEP 376/427), not by the code under test.
    std::string expected;
    for (const auto& m : wheel_members())
        expected += record_line(m.name, m.data);
    EXPECT_EQ(record, expected + record_line("demo/_build_info.json", info) +
                          "demo-1.0.dist-info/RECORD,,\n");
    auto j = nlohmann::json::parse(info);
    EXPECT_EQ(j["arch_list"], "8.0 9.0+PTX");
    EXPECT_EQ(j["run_id"], "5");
    EXPECT_EQ(j["distribution"], "demo");
    // No temporary file is left next to the wheel.
    size_t files = 0;
    for (auto& e : fs::directory_iterator(dir))
        files += e.is_regular_file();
    EXPECT_EQ(files, 1u);
    fs::remove_all(dir);
}

TEST(StampWheel, RestampReplacesWithoutDuplicates) {
    auto dir = temp_dir("restamp");
    auto wheel = make_wheel(dir);
    auto env = env_of({{"SOURCE_DATE_EPOCH", "1700000000"}});
    ASSERT_TRUE(stamp_wheel(wheel.string(), resolution("8.0"), env).ok());
    auto second = stamp_wheel(wheel.string(), resolution("8.0 9.0", 8), env);
    ASSERT_TRUE(second.ok());
    EXPECT_TRUE(second->replaced);
    auto raw = read_raw(wheel);
    EXPECT_EQ(std::count_if(raw.begin(), raw.end(),
                            [](const RawMember& m) { return m.name == "demo/_build_info.json"; }),
              1);
    std::string record = read_member_text(wheel, "demo-1.0.dist-info/RECORD");
    std::string info = read_member_text(wheel, "demo/_build_info.json");
    EXPECT_EQ(nlohmann::json::parse(info)["build_epoch"], 8);
    size_t first = record.find("demo/_build_info.json,");
    EXPECT_EQ(record.find("demo/_build_info.json,", first + 1), std::string::npos) << record;
    EXPECT_NE(record.find(record_hash(info)), std::string::npos);
    auto found = read_stamp(wheel.string());
    ASSERT_TRUE(found.ok());
    ASSERT_TRUE(found->has_value());
    EXPECT_EQ((*found)->record["arch_list"], "8.0 9.0");
    // Same inputs, same bytes: SOURCE_DATE_EPOCH makes stamping reproducible.
    auto copy = dir / "demo-1.0-cp312-cp312-linux_x86_64.whl.copy";
    fs::copy_file(wheel, copy);
    ASSERT_TRUE(stamp_wheel(wheel.string(), resolution("8.0 9.0", 8), env).ok());
    EXPECT_EQ(forge::test::slurp(wheel), forge::test::slurp(copy));
    fs::remove_all(dir);
}

TEST(StampWheel, PackageFromMembersWhenNoTopLevel) {
    auto dir = temp_dir("pkgdir");
    auto wheel = dir / "two-1.0-py3-none-any.whl";
    write_zip(wheel, {{"aaa_docs/readme.txt", "x"},
                      {"two_pkg/ops/_C.cpython-312-x86_64-linux-gnu.so", so_bytes()},
                      {"two-1.0.dist-info/RECORD", "two-1.0.dist-info/RECORD,,\n"}});
    auto layout = wheel_layout(wheel.string());
    ASSERT_TRUE(layout.ok()) << layout.error().to_string();
    EXPECT_EQ(layout->package, "two_pkg"); // the dir with the extension, not the first dir
    EXPECT_EQ(layout->record, "two-1.0.dist-info/RECORD");
    fs::remove_all(dir);
}

TEST(StampWheel, ReadStampPrefersThePackageWithTheExtension) {
    auto dir = temp_dir("readstamp");
    auto wheel = dir / "two-1.0-py3-none-any.whl";
    write_zip(wheel, {{"aaa_vendored/_build_info.json", "{\"arch_list\": \"7.5\"}"},
                      {"two/_C.so", so_bytes()},
                      {"two/_build_info.json", "{\"arch_list\": \"8.0\"}"},
                      {"two-1.0.dist-info/RECORD", ""}});
    auto found = read_stamp(wheel.string());
    ASSERT_TRUE(found.ok());
    ASSERT_TRUE(found->has_value());
    EXPECT_EQ((*found)->member, "two/_build_info.json");
    EXPECT_EQ((*found)->record["arch_list"], "8.0");
    write_zip(wheel, {{"two/_C.so", so_bytes()}, {"two/_build_info.json", "[1, 2"}});
    auto bad = read_stamp(wheel.string());
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().key, "two/_build_info.json");
    write_zip(wheel, {{"two/_C.so", so_bytes()}, {"two/sub/_build_info.json", "{}"}});
    auto none = read_stamp(wheel.string());
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none->has_value());
    fs::remove_all(dir);
}

TEST(StampWheel, BadInputIsAnErrorAndLeavesTheFileAlone) {
    auto dir = temp_dir("bad");
    auto env = env_of({{"SOURCE_DATE_EPOCH", "1700000000"}});
    // Not a zip.
    auto junk = dir / "junk-1.0-py3-none-any.whl";
    std::ofstream(junk) << "this is not a zip archive";
    auto e = stamp_wheel(junk.string(), resolution("8.0"), env);
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.error().exit_code, kExitInput);
    EXPECT_EQ(e.error().file, junk.string());
    // A zip without RECORD.
    auto norecord = dir / "norec-1.0-py3-none-any.whl";
    write_zip(norecord, {{"norec/__init__.py", ""}});
    auto n = stamp_wheel(norecord.string(), resolution("8.0"), env);
    ASSERT_FALSE(n.ok());
    EXPECT_NE(n.error().message.find("RECORD"), std::string::npos);
    // Not a wheel filename.
    auto named = dir / "demo.zip";
    write_zip(named, {{"demo/a.py", ""}, {"demo-1.dist-info/RECORD", ""}});
    EXPECT_FALSE(stamp_wheel(named.string(), resolution("8.0"), env).ok());
    // Only top-level members: nowhere to put the stamp.
    auto flat = dir / "flat-1.0-py3-none-any.whl";
    write_zip(flat, {{"flat.so", so_bytes()}, {"flat-1.0.dist-info/RECORD", ""}});
    EXPECT_FALSE(stamp_wheel(flat.string(), resolution("8.0"), env).ok());
    // Truncated zip: central directory cut off.
    auto good = make_wheel(dir, "trunc-1.0-py3-none-any.whl");
    fs::resize_file(good, fs::file_size(good) - 30);
    auto before = fs::file_size(good);
    EXPECT_FALSE(stamp_wheel(good.string(), resolution("8.0"), env).ok());
    EXPECT_EQ(fs::file_size(good), before);
    size_t temps = 0;
    for (auto& f : fs::directory_iterator(dir))
        temps += f.path().filename().string().find(".stamp-") != std::string::npos;
    EXPECT_EQ(temps, 0u);
    fs::remove_all(dir);
}

// RECORD is checked before anything is written: a wheel whose RECORD does not match its members
// is refused (the RECORD stamp writes keeps every other row), naming the member.
TEST(StampWheel, RefusesAWheelWhoseRecordLies) {
    auto dir = temp_dir("record_lies");
    auto env = env_of({{"SOURCE_DATE_EPOCH", "1700000000"}});
    const std::string good = wheel_record();
    const std::string so_row = record_line("demo/_C.so", so_bytes());
    std::string wrong_hash = good;
    wrong_hash.replace(wrong_hash.find(so_row), so_row.size(),
                       "demo/_C.so,sha256=" + urlsafe_b64_of_hex(sha256_hex("other")) + "," +
                           std::to_string(so_bytes().size()) + "\n");
    std::string unlisted = good;
    unlisted.erase(unlisted.find("demo/data.bin,"),
                   record_line("demo/data.bin", std::string(4096, 'z')).size());
    for (const auto& [record, member] : {std::pair{wrong_hash, std::string("demo/_C.so")},
                                         std::pair{unlisted, std::string("demo/data.bin")}}) {
        auto wheel = make_wheel(dir, "demo-1.0-cp312-cp312-linux_x86_64.whl", record);
        const auto before = fs::file_size(wheel);
        auto r = stamp_wheel(wheel.string(), resolution("8.0"), env);
        ASSERT_FALSE(r.ok()) << member;
        EXPECT_EQ(r.error().exit_code, kExitInput);
        EXPECT_EQ(r.error().key, member) << r.error().to_string();
        EXPECT_EQ(fs::file_size(wheel), before);
    }
    fs::remove_all(dir);
}

// A module the reader refuses is not stamped with `modules: null`: the stamp would say nothing of
// what the wheel carries. Members pip refuses are refused by name.
TEST(StampWheel, RefusesWheelsItCannotRead) {
    auto dir = temp_dir("unreadable_module");
    auto env = env_of({{"SOURCE_DATE_EPOCH", "1700000000"}});
    for (const auto& [fixture, member, says] :
         {std::tuple{"declared-4gb.whl", "demo/_C.so", "4000000000"},
          std::tuple{"path-dotdot.whl", "../../evil.so", "'..' climbs above"},
          std::tuple{"dup-member.whl", "demo/_C.so", "a second member"},
          std::tuple{"symlink-module.whl", "demo/_C.so", "symbolic link"}}) {
        const auto wheel = dir / "demo-1.0-cp312-cp312-linux_x86_64.whl";
        fs::copy_file(fs::path(FORGE_TEST_FIXTURES) / "wheels" / "hostile" / fixture, wheel,
                      fs::copy_options::overwrite_existing);
        auto r = stamp_wheel(wheel.string(), resolution("8.0"), env);
        ASSERT_FALSE(r.ok()) << fixture;
        EXPECT_EQ(r.error().exit_code, kExitInput);
        EXPECT_EQ(r.error().key, member) << r.error().to_string();
        EXPECT_NE(r.error().to_string().find(says), std::string::npos) << r.error().to_string();
    }
    fs::remove_all(dir);
}

TEST(StampLedger, OneLinePerStampEvenFromManyThreads) {
    auto dir = temp_dir("ledger");
    auto ledger = (dir / "ledger.jsonl").string();
    nlohmann::json record = {{"arch_list", "8.0"}, {"pad", std::string(9000, 'p')}};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 25; ++i)
                ASSERT_TRUE(
                    append_ledger(
                        ledger, "w" + std::to_string(t) + "-" + std::to_string(i) + ".whl", record)
                        .ok());
        });
    for (auto& th : threads)
        th.join();
    std::ifstream in(ledger);
    std::string line;
    int lines = 0;
    while (std::getline(in, line)) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        ASSERT_FALSE(j.is_discarded()) << "interleaved line " << lines;
        EXPECT_TRUE(j["wheel"].is_string());
        EXPECT_EQ(j["pad"].get<std::string>().size(), 9000u);
        ++lines;
    }
    EXPECT_EQ(lines, 200);
    auto bad = append_ledger((dir / "no/such/dir/ledger").string(), "w.whl", record);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().file.find("no/such/dir"), std::string::npos);
    fs::remove_all(dir);
}

TEST(StampLedger, ALinkInTheLedgersPlaceIsRefusedNotFollowed) {
    auto dir = temp_dir("ledger_link");
    const auto target = dir / "someone-elses";
    { std::ofstream(target) << "theirs\n"; }
    const auto ledger = dir / "ledger.jsonl";
    fs::create_symlink(target, ledger);
    auto r = append_ledger(ledger.string(), "w.whl", nlohmann::json{{"arch_list", "8.0"}});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().file, ledger.string());
    EXPECT_NE(r.error().message.find("a symbolic link"), std::string::npos)
        << r.error().to_string();
    std::ifstream in(target);
    std::stringstream kept;
    kept << in.rdbuf();
    EXPECT_EQ(kept.str(), "theirs\n");
    fs::remove_all(dir);
}
