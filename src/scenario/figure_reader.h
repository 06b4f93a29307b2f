// Internal to the scenario layer: one profile figure { value, unit, source } read with its
// checks (present, a finite non-negative number, the expected unit, a non-empty source).
#pragma once

#include "scenario/toml_reader.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kdsim::scenario::detail {

enum class Unit { CYCLES, BYTES, HZ, CYCLES_PER_BYTE, NS, BYTES_PER_SECOND, WAYS, LINES, STREAMS };

// The unit as a profile writes it ("cycles", "bytes/s").
std::string_view unit_name(Unit u);
// What the unit measures, for messages ("number of cycles").
std::string_view quantity(Unit u);
// "a figure { value, unit = "<unit>", source }".
std::string figure_form(Unit u);

// Reads parent[name] as a figure; returns its value when it is complete and valid (finite,
// non-negative, right unit, a source), else reports and gives nullopt.
std::optional<double> read_figure(Reader& r, const toml::table& parent, std::string_view name, const std::string& key,
                                  Unit unit);

// An integer figure: rounds, and checks `positive` and the upper bound (1e18) at the value's position.
std::optional<std::uint64_t> to_integer_figure(Reader& r, const toml::node& at, const std::string& key, double d,
                                               Unit unit, bool positive);

// [memory] and its tables (memory_profile.cpp): optional; read after [cpu] (the line size) and
// [dma] (whether device writes snoop). Inconsistent figures are reported at the figure.
void read_memory(Reader& r, const toml::table& root, system::Profile& p);

} // namespace kdsim::scenario::detail
