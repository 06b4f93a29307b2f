// What `kdsim sweep` varies: axes of values over scenario keys (or profile figures, through
// `machine[N].overrides.<figure>`), combined as a grid (every combination) or a list (the i-th
// value of every axis together), each point repeated over a list of seeds. Given on the command
// line (`--set KEY=V1,V2`, `--seeds 1..5`, `--list`) or in the scenario's [sweep] table:
//
//   [sweep]
//   combine = "grid"                     # or "list"
//   seeds = "1..5"                       # or [1, 2, 7]; optional (the scenario's seed)
//   [sweep.set]
//   "machine[0].nic.rx_buffer" = ["1536 B", "9 KiB"]
//   "link[0].rate" = ["1 Gbit/s", "2.5 Gbit/s"]
//
// Every point is loaded through the normal loader with its values applied to the parsed file
// (LoadOptions::assignments), so every check of a single run applies. Format: docs/sweep.md.
#pragma once

#include "scenario/load.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kdsim::scenario {

// The most points one sweep may have (values combined, times seeds).
inline constexpr std::size_t MAX_SWEEP_POINTS = 100'000;

struct SweepAxis {
    std::string key;
    std::vector<Assignment> values; // each with the key, its value and where it was given
};

struct SweepSpec {
    std::vector<SweepAxis> axes;
    bool list = false;                // false: grid
    std::vector<std::uint64_t> seeds; // empty: the scenario's own seed, once
};

struct SweepPoint {
    std::vector<Assignment> set;        // one value per axis, in axis order
    std::optional<std::uint64_t> seed;  // when the sweep has seeds
};

// "KEY=V1,V2,..." (one --set argument) -> an axis whose values name the argument as their
// origin. Throws InputError naming the argument: no '=', an empty key, no value, an empty value.
SweepAxis parse_set_argument(std::string_view arg);

// "3", "1..5" (inclusive), "1,2,7" -> the seeds; nullopt and `why` for anything else (a seed is
// 0 to 2^63-1, a range runs upward, at most MAX_SWEEP_POINTS seeds).
std::optional<std::vector<std::uint64_t>> parse_seeds(std::string_view text, std::string& why);

// The [sweep] table of a scenario file (of `text`, named `file`, when given); nullopt when the
// file has none. Throws InputError (file:line:col) for a bad table or a file that does not parse.
std::optional<SweepSpec> read_sweep(const std::filesystem::path& file, const std::optional<std::string>& text = std::nullopt);

// The points in order: a grid varies the last axis fastest; a list takes row i of every axis
// (all axes must have the same length); the seeds vary fastest of all. Throws InputError (under
// `origin`) for an empty sweep, a list whose axes differ in length, two axes on one key, or more
// than MAX_SWEEP_POINTS points.
std::vector<SweepPoint> expand_sweep(const SweepSpec& spec, const std::string& origin);

} // namespace kdsim::scenario
