// Scenario and profile files (TOML) -> validated typed structs (system/config.h).
//
// This layer is the only code that parses TOML. Every input error is collected, not only the
// first, and reported in compiler grammar with file, line, column, the full dotted key, and
// what was expected vs found:
//   data/profiles/x86/foo.toml:12:1: error: sched.wakeup: expected a figure { value, unit =
//   "cycles", source }, found nothing (missing figures are never zero)
// A loader either returns a fully valid struct or throws InputError holding all diagnostics;
// nothing is half-built. The formats are documented in docs/scenario-format.md.
#pragma once

#include "engine/time.h"
#include "system/config.h"

#include <cstdint>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kdsim::scenario {

// One error in an input file. line/column are 1-based; 0 when the error concerns the file as
// a whole (it cannot be read). key is the full dotted key (`machine[0].workload[1].cpu`), empty
// for TOML syntax errors.
struct Diagnostic {
    std::string file;
    int line = 0;
    int column = 0;
    std::string key;
    std::string message;

    // "FILE:LINE:COL: error: KEY: MESSAGE" (position and key left out when absent).
    std::string str() const;
};

// Bad input: every diagnostic found in the file(s), in file order then line order.
class InputError : public std::exception {
public:
    explicit InputError(std::vector<Diagnostic> d);
    std::vector<Diagnostic> diagnostics;
    // All diagnostics, one per line.
    const char* what() const noexcept override;

private:
    mutable std::string what_;
};

// One value set on a scenario key before the loader reads the file (`kdsim sweep --set`, a
// [sweep] table): `key` is a dotted path through the file's tables, with [[array]] elements by
// index or by name (`machine[0].nic.rx_buffer`, `machine.board.nic.rx_buffer`,
// `link[0].rate`, `machine[0].overrides.simd.save`); `value` is a TOML value
// (`1536`, `"9 KiB"`, `true`), or else taken as a string (`9KiB`). Errors in it are reported
// under `origin` (e.g. `--set machine[0].nic.rx_buffer=9KiB`), not at a file position.
struct Assignment {
    std::string key;
    std::string value;
    std::string origin;
};

struct LoadOptions {
    // Repository root holding data/profiles and data/workloads; empty: the first directory at
    // or above the scenario file's directory that contains data/profiles.
    std::filesystem::path root = {};
    // Command-line overrides, applied before anything random (the sample draw) is derived.
    std::optional<std::uint64_t> seed_override = std::nullopt;
    std::optional<system::Mode> mode_override = std::nullopt;
    // Applied in order to the parsed file, before anything is read from it, so every check of
    // the loader applies to the values they set.
    std::vector<Assignment> assignments = {};
    // The scenario's TOML text, read instead of the file (the Python package's Scenario.from_text):
    // the file is then only the name diagnostics give it and where the root is searched from.
    std::optional<std::string> text = std::nullopt;
};

// Loads an architecture profile (data/profiles/<family>/<part>.toml). Throws InputError.
system::Profile load_profile(const std::filesystem::path& file);

// Loads a scenario and the profiles and workload files it names. Throws InputError.
system::ScenarioConfig load_scenario(const std::filesystem::path& file, const LoadOptions& options = {});

// If `file` lies below a data/profiles directory, the profile name its path implies
// ("x86/intel-icelake-server"), which a profile there must give as its name.
std::optional<std::string> profile_name_from_path(const std::filesystem::path& file);

enum class FileKind { PROFILE, SCENARIO };
// A file with a [profile] table is a profile, one with a [scenario] table a scenario.
// Throws InputError for anything else (including syntax errors and empty files).
FileKind detect_kind(const std::filesystem::path& file);

// "20 us", "1.5 ms", "2 s", "500 ns", "100 ps" (units ps, ns, us, µs, ms, s; the space is
// optional) -> picoseconds, exactly. nullopt for negative numbers, unknown units, a result
// that is not a whole number of picoseconds, or one that does not fit in a Tick.
std::optional<engine::Tick> parse_duration(std::string_view text);

// "4096", "1500 B", "4 KiB", "1.5 KiB", "1 MiB", "2 GiB" -> bytes, exactly. nullopt for
// negative numbers, unknown units (decimal kB/MB are not accepted), fractional bytes and
// overflow.
std::optional<std::uint64_t> parse_bytes(std::string_view text);

// "1 Gbit/s", "2.5 Gbit/s", "100 Mbit/s", "64 kbit/s", "9600 bit/s", "1 Tbit/s" -> bits per
// second, exactly, the whole text (no hex, exponent, sign or trailing words). nullopt for a
// fraction of a bit/s, and outside RATE_MIN_BPS..RATE_MAX_BPS: from 1 bit/s (a slower link
// would serialise a frame for longer than a run can last) to 10 Tbit/s (the shortest frame still
// takes >= 67 ps on the wire, so no serialisation time rounds to zero).
inline constexpr std::uint64_t RATE_MIN_BPS = 1;
inline constexpr std::uint64_t RATE_MAX_BPS = 10'000'000'000'000;
std::optional<std::uint64_t> parse_rate(std::string_view text);

} // namespace kdsim::scenario
