// The ledger `stamp` appends to (JSON lines, one per stamped wheel, keyed by the wheel's filename;
// a later line for the same wheel replaces the earlier one), as `audit` reads it. An audit asks it
// two things per wheel: the wheel's own record and the previous wheel of its distribution. Both
// are answered from an index built in one pass over the file, which holds no record: a digest of
// each wheel's name with where its latest line is and a digest of its distribution (40 bytes a
// line), and the wheels whose latest line lists `modules`, by distribution (4 bytes each). A record
// is read back from the file when asked for, so what an audit holds does not grow with the ledger's
// records, and no lookup looks at more than the entries of one name or one distribution
// (docs/policy.md, "The ledger").
#pragma once

#include "core/result.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace forge::provenance {

// One wheel's latest record.
struct LedgerEntry {
    nlohmann::json record; // the line without its "wheel"
    std::string where;     // "ledger.jsonl:12"
    int line = 0;          // 12: later lines were stamped later
    std::string wheel;     // the wheel filename it is keyed by
};

// What the ledger did, for the test that the lookups are an index (and for benchmarks).
struct LedgerStats {
    std::uint64_t passes = 0;       // whole passes over the file: the index's one
    std::uint64_t lines = 0;        // lines those passes read
    std::uint64_t records_read = 0; // records read back for a lookup
    std::uint64_t examined = 0;     // index entries the lookups looked at
};

class Ledger {
  public:
    // One pass over the file. Errors (exit 2): not a regular file, unreadable, a line that is not
    // a JSON object with a non-empty string "wheel" (file and line named).
    static Result<Ledger> load(const std::string& path);

    Ledger(Ledger&&) noexcept;
    Ledger& operator=(Ledger&&) noexcept;
    Ledger(const Ledger&) = delete;
    Ledger& operator=(const Ledger&) = delete;
    ~Ledger();

    [[nodiscard]] size_t size() const { return by_name_.size(); } // wheels
    [[nodiscard]] const std::string& path() const { return path_; }

    // The wheel's latest record; nullopt when the ledger has none. Error: the line cannot be read
    // back as it was indexed (the file was rewritten during the audit).
    [[nodiscard]] Result<std::optional<LedgerEntry>> find(std::string_view wheel) const;

    // The previous wheel of the same distribution as `wheel`: the latest wheel whose latest line
    // is before this wheel's own (any line when it has none) and lists `modules` as an array (a
    // stamp that could not read its modules records null: it is skipped). nullopt when there is
    // none or `wheel` is not a wheel filename.
    [[nodiscard]] Result<std::optional<LedgerEntry>> previous_wheel(std::string_view wheel) const;

    [[nodiscard]] LedgerStats stats() const;

  private:
    using Digest = std::array<std::uint64_t, 2>;
    struct Line { // a wheel's latest line
        Digest name;
        std::uint64_t offset;
        std::uint32_t length;
        std::uint32_t line;
        std::uint64_t distribution; // its digest when the line lists modules, else 0
    };
    struct Counters {
        std::atomic<std::uint64_t> passes{0}, lines{0}, records_read{0}, examined{0};
    };
    class Builder;

    Ledger() = default;
    [[nodiscard]] Result<LedgerEntry> read_line(std::uint64_t offset, std::uint32_t length,
                                                std::uint32_t line) const;
    [[nodiscard]] const Line* find_line(std::string_view wheel) const;

    std::string path_;
    int fd_ = -1;
    // A deque: it grows by blocks, so the pass never holds the index twice, as a vector's
    // doubling would (peak 3x).
    std::deque<Line> by_name_;                // sorted by name
    std::vector<std::uint32_t> with_modules_; // lines of by_name_, sorted by (distribution, line)
    std::unique_ptr<Counters> counters_ = std::make_unique<Counters>();
};

// Ledger::load.
Result<Ledger> load_ledger(const std::string& path);

// The normalized distribution of a wheel filename ("Flash-Attn" -> "flash_attn"); "" when it is
// not a wheel filename.
std::string distribution_key(std::string_view wheel_filename);

} // namespace forge::provenance
