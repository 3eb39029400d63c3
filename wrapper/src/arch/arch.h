// The arch model: GPU targets as nvcc names them (sm_90a, compute_120, lto_80) and arch lists as
// builds write them (TORCH_CUDA_ARCH_LIST "8.0 9.0+PTX", CMake "90-real;100f", nvcc names, torch's
// named arches). Every front end converts to and from these types; nothing else parses arch text.
#pragma once

#include "core/result.h"

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace forge::arch {

// `a` (arch-specific: runs on exactly one CC) and `f` (family: runs on later minors of the major).
enum class Suffix : std::uint8_t { None = 0, Specific = 1, Family = 2 };

// Image kinds in a fatbin: SASS cubin (sm_), PTX (compute_), LTO-IR (lto_).
enum class Kind : std::uint8_t { Sass = 0, Ptx = 1, Lto = 2 };

// SM numbers are major*10+minor: 90 is CC 9.0, 121 is CC 12.1.
constexpr int sm_major(int sm) {
    return sm / 10;
}
constexpr int sm_minor(int sm) {
    return sm % 10;
}
std::string cc_string(int sm); // 121 -> "12.1"
std::string_view suffix_string(Suffix s);
std::string_view kind_string(Kind k); // "sass", "ptx", "lto"

// One image target, named the way nvcc names it.
struct Target {
    Kind kind = Kind::Sass;
    int sm = 0;
    Suffix suffix = Suffix::None;

    [[nodiscard]] std::string name() const; // sm_90a, compute_120, lto_80
    // The same target with the suffix dropped (sm_90a -> sm_90). Whether it stands in for that
    // target is arch::covers()'s question (coverage.h), never answered by the name alone.
    [[nodiscard]] Target folded() const { return Target{kind, sm, Suffix::None}; }
    auto operator<=>(const Target&) const = default;
};

// Parses "sm_90a", "compute_100f", "lto_80". `origin` names where the text came from.
Result<Target> parse_target(std::string_view name, std::string_view origin = {});

// One torch ("9.0a+PTX") or CMake ("90a-real") arch token taken apart, before any check of what
// it names: ArchList::parse adds the checks (a tail of the other form, the suffix's CC range);
// the lint reads build scripts' strings with it as they are written. Null when it is neither.
struct ArchSpelling {
    enum class Tail : std::uint8_t { None, Ptx, Real, Virtual }; // "+PTX", "-real", "-virtual"
    int sm = 0;
    Suffix suffix = Suffix::None;
    Tail tail = Tail::None;
    bool dotted = false; // torch "X.Y"; CMake "NN" otherwise
};
std::optional<ArchSpelling> split_arch_spelling(std::string_view token);

// One SM of an arch list with the images asked for it.
struct ArchEntry {
    int sm = 0;
    Suffix suffix = Suffix::None;
    bool sass = false;
    bool ptx = false;
    bool lto = false;

    // "9.0", "9.0a+PTX"; PTX-only or LTO entries have no torch spelling and use nvcc names.
    [[nodiscard]] std::string token() const;
    [[nodiscard]] bool torch_expressible() const { return sass && !lto; }
    [[nodiscard]] std::vector<Target> targets() const;
    [[nodiscard]] bool same_slot(const ArchEntry& o) const {
        return sm == o.sm && suffix == o.suffix;
    }
};

// A normalised arch list: entries unique per (sm, suffix), sorted by sm then suffix.
class ArchList {
  public:
    ArchList() = default;

    // Accepts spaces, ';' and ',' as separators (mixed too). Tokens: torch "8.0", "9.0a+PTX",
    // "10.0f"; torch names "Ampere", "Hopper", "Blackwell+Tegra"...; nvcc "sm_90a", "compute_90",
    // "lto_90"; CMake "90", "90-real", "90-virtual", "100f-real". `origin` is used in errors
    // ("--arch-list", "policy/arch_policy.yml:12").
    static Result<ArchList> parse(std::string_view text, std::string_view origin = {});
    static ArchList from_targets(const std::vector<Target>& targets);

    void add(const ArchEntry& entry); // merges into an existing slot
    void add(const Target& target);
    bool remove_sass(int sm, Suffix suffix);
    [[nodiscard]] const std::vector<ArchEntry>& entries() const { return entries_; }
    std::vector<ArchEntry>& mutable_entries() { return entries_; }
    [[nodiscard]] bool empty() const { return entries_.empty(); }
    [[nodiscard]] std::vector<Target> targets() const; // sorted, unique

    // Canonical, space separated ("7.5 8.0 9.0+PTX"). Round-trips through parse().
    [[nodiscard]] std::string to_string() const;
    // TORCH_CUDA_ARCH_LIST form; an error if an entry has no torch spelling (PTX-only, LTO).
    [[nodiscard]] Result<std::string> to_torch() const;
    // CMake CUDA_ARCHITECTURES form: "75-real;80-real;90;100f-real;120-virtual".
    [[nodiscard]] std::string to_cmake() const;
    // nvcc flags, one -gencode per image: "-gencode=arch=compute_90,code=sm_90 ...".
    [[nodiscard]] std::vector<std::string> to_gencode() const;

    // The highest entry that is not arch-specific or family-specific; nullptr if none.
    [[nodiscard]] const ArchEntry* highest_portable() const;
    // +PTX on the highest portable (non-a/f) entry (docs/arch-rules.md, "PTX once per major").
    // Returns the entry that received it, or -1 when nothing changed.
    int ensure_ptx_on_highest_base();

    bool operator==(const ArchList& o) const;

  private:
    std::vector<ArchEntry> entries_;
};

// Torch's named arches (torch.utils.cpp_extension), e.g. "Ampere" -> "8.0;8.6+PTX".
// Returns empty when `name` is not a torch arch name.
std::string_view torch_named_arch(std::string_view name);

} // namespace forge::arch
