// Internal to the scenario layer: reading a parsed TOML table while collecting diagnostics.
// Every getter reports what it expected and what it found, at the node's position (or, for a
// missing key, at the header of the table that should hold it), and returns nullopt on error
// so that the caller can go on and find the next error.
#pragma once

#include "engine/time.h"
#include "scenario/load.h"
#include "scenario/sweep.h"

#include <toml++/toml.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kdsim::scenario::detail {

// `parent.child`, quoting `child` when it is not a bare TOML key (`overrides."simd.save"`).
std::string join_key(std::string_view parent, std::string_view child);
// `parent[i]`.
std::string index_key(std::string_view parent, std::size_t i);
// A TOML string literal for `s` (escaped, cut after 60 characters).
std::string quote(std::string_view s);
// "a, b, c".
std::string join_list(std::initializer_list<std::string_view> items);
std::string join_list(const std::vector<std::string>& items);
// What a node is, for "found ...": `nothing`, `integer 3`, `string "two"`, `a table`, ...
std::string describe(const toml::node* n);
// Levenshtein distance (insertions, deletions, substitutions of bytes).
std::size_t edit_distance(std::string_view a, std::string_view b);
// The candidates nearest to `word` (all those at the smallest distance, if it is small enough
// to be a likely typo), in the candidates' order.
std::vector<std::string> nearest(std::string_view word, const std::vector<std::string_view>& candidates);
// "did you mean 'x'? " (or "one of 'x', 'y'? "), or "" when nothing is near.
std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates);

class Reader {
public:
    Reader(std::string file, std::vector<Diagnostic>& out) : file_(std::move(file)), out_(out) {}

    const std::string& file() const { return file_; }
    std::size_t errors() const { return errors_; }

    void error(const toml::source_position& at, std::string key, std::string message);
    // At the node; a node set from elsewhere than this file (a `--set` value, whose source
    // path is its origin) is reported under that origin, without a position.
    void error(const toml::node& at, std::string key, std::string message) {
        error(at.source(), std::move(key), std::move(message));
    }
    void error(const toml::source_region& at, std::string key, std::string message);
    // At the start of the file.
    void error_file(std::string key, std::string message) {
        error(toml::source_position{1, 1}, std::move(key), std::move(message));
    }

    // Reports every key of `tbl` not in `allowed`: "unknown key 'foo' in <where>; expected one of: ...".
    void check_keys(const toml::table& tbl, std::string_view table_key, std::string_view where,
                    std::initializer_list<std::string_view> allowed);
    void check_keys(const toml::table& tbl, std::string_view table_key, std::string_view where,
                    const std::vector<std::string_view>& allowed);

    // Typed access to parent[name] (`key` is its full dotted name). `what` describes the
    // expected value for the message. Missing + required, wrong type, or out of range: an
    // error and nullopt. Missing + optional: nullopt and no error.
    const toml::table* table(const toml::table& parent, std::string_view name, const std::string& key, bool required,
                             std::string_view what);
    const toml::array* array(const toml::table& parent, std::string_view name, const std::string& key, bool required,
                             std::string_view what);
    std::optional<std::string> string(const toml::table& parent, std::string_view name, const std::string& key,
                                      bool required, bool non_empty = true);
    // A name (of a scenario, machine, workload or profile): a non-empty string of at most
    // MAX_NAME_BYTES with no space or control character, and no '/' unless `path`.
    std::optional<std::string> name(const toml::table& parent, std::string_view name, const std::string& key,
                                    bool required, bool path = false);
    std::optional<std::int64_t> integer(const toml::table& parent, std::string_view name, const std::string& key,
                                        bool required, std::int64_t lo, std::int64_t hi);
    std::optional<bool> boolean(const toml::table& parent, std::string_view name, const std::string& key,
                                bool required);
    // A duration string ("20 us"); `positive`: zero is an error.
    std::optional<engine::Tick> duration(const toml::table& parent, std::string_view name, const std::string& key,
                                         bool required, bool positive);
    std::optional<engine::Tick> duration(const toml::node& n, const std::string& key, bool positive);
    // A bit rate such as "1 Gbit/s" (Gbit/s, Mbit/s, kbit/s, bit/s; > 0), in bits per second.
    std::optional<std::uint64_t> rate(const toml::node& n, const std::string& key);
    // A byte count: a non-negative integer or a string such as "4 KiB", at most 1 GiB (the sizes of
    // the model's state) or, with `physical`, 2^52 (a physical address or memory size: 52 bits).
    std::optional<std::uint64_t> bytes(const toml::table& parent, std::string_view name, const std::string& key,
                                       bool required, bool positive, bool physical = false);
    std::optional<std::uint64_t> bytes(const toml::node& n, const std::string& key, bool positive, bool physical = false);
    // One of `names` (a string); returns its index.
    std::optional<std::size_t> choice(const toml::table& parent, std::string_view name, const std::string& key,
                                      bool required, const std::vector<std::string_view>& names);

    // "found nothing" at the parent's header.
    void missing(const toml::table& parent, const std::string& key, std::string_view what, std::string_view note = {});

private:
    std::string file_;
    std::vector<Diagnostic>& out_;
    std::size_t errors_ = 0;
};

// Bounds on what an input file may be (input_file.cpp).
inline constexpr std::uintmax_t MAX_INPUT_BYTES = 16u << 20;
inline constexpr std::size_t MAX_KEY_PARTS = 64; // parts of a dotted key or table header
inline constexpr std::size_t MAX_NAME_BYTES = 128;
// The longest time (run, period, interval, delay) a scenario may give.
inline constexpr engine::Tick MAX_DURATION = 3600 * engine::PS_PER_S;
// The largest size (window, buffer, request, frame) a scenario may give.
inline constexpr std::uint64_t MAX_SIZE_BYTES = 1ull << 30;

// The text of a regular file of at most MAX_INPUT_BYTES; anything else is reported through `r`.
std::optional<std::string> read_input_text(const std::filesystem::path& path, Reader& r);
// Where `text` first has a dotted key or table header of more than `max_parts` parts, outside
// strings and comments; nullopt when it has none.
std::optional<toml::source_position> find_deep_key(std::string_view text, std::size_t max_parts);
// Parses `text` read from r.file(); a key too deep or a syntax error is reported through `r`.
std::optional<toml::table> parse_toml_text(const std::string& text, Reader& r);
// parse_toml_text, and a file with no keys is an error too.
std::optional<toml::table> parse_input_text(const std::string& text, Reader& r);
// Reads and parses a TOML file. A read error, a syntax error or a file with no keys is
// reported through `r` and gives nullopt.
std::optional<toml::table> parse_file(const std::filesystem::path& path, Reader& r);

// Orders diagnostics by file (`first_file` first, then in order of appearance), line, column.
void sort_diagnostics(std::vector<Diagnostic>& d, const std::string& first_file);

// Path used in messages: relative to the working directory when the file lies below it.
std::string display_path(const std::filesystem::path& p);

// The repository root: the first directory at or above `start` that holds data/profiles.
std::optional<std::filesystem::path> root_at_or_above(const std::filesystem::path& start);
// A profile name that stays below data/profiles: no "..", no leading '/', no backslash.
bool profile_name_stays_below(std::string_view name);

// ---- profiles (profile.cpp) ----

// Loads and validates a profile; nullopt after reporting its errors into `out`.
// `display` names the file in diagnostics and in Profile::path.
std::optional<system::Profile> read_profile(const std::filesystem::path& file, const std::string& display,
                                            std::vector<Diagnostic>& out);

// Replaces the profile figure named by the dotted `figure` key (as in a profile file, e.g.
// "simd.save", "hash.sha256.avx2.cycles_per_byte") with `value`, in the figure's unit. Returns
// "simd.save: 300 cycles (profile: 250 cycles)", or reports at `value`/`key` and gives nullopt.
std::optional<std::string> apply_override(system::Profile& profile, std::string_view figure, const toml::node& value,
                                          const std::string& key, Reader& r);
// A [memory] figure that apply_override replaced ("memory.l2.size"), with where its value is.
struct MemoryOverride {
    std::string figure;
    const toml::node* value;
    std::string key;
};
// After a machine's overrides: checks its [memory] tables together again (mem::check_config) and
// reports an inconsistency at the override of the figure it names (else the last one).
void check_overridden_memory(system::Profile& profile, const std::vector<MemoryOverride>& overridden, Reader& r);

// ---- values set on the tree before it is read (assign.cpp, sweep.cpp) ----

// A TOML basic string holding `s`.
std::string toml_string(std::string_view s);
// Sets each assignment's key in `root` (scenario/load.h Assignment); errors go to `r` under the
// assignment's origin.
void apply_assignments(toml::table& root, const std::vector<Assignment>& assignments, Reader& r);
// Reads and checks the scenario's [sweep] table (scenario/sweep.h), nullopt when it has none
// or it has errors (reported through `r`).
std::optional<SweepSpec> read_sweep_table(const toml::table& root, Reader& r);

// Names of the implementations of `alg` the profile has, in enum order.
std::vector<std::string> impls_of(const system::Profile& profile, crypto::HashAlg alg);

} // namespace kdsim::scenario::detail
