// Internal to the scenario layer: one profile figure { value, unit, source } read with its
// checks (present, a finite non-negative number, the expected unit, a non-empty source), and
// whole tables of figures read through the descriptor tables of system/figures.h (used by
// profile.cpp, profile_sections.cpp, profile_override.cpp and memory_profile.cpp).
#pragma once

#include "scenario/toml_reader.h"
#include "system/figures.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kdsim::scenario::detail {

using engine::Unit;
using engine::unit_name; // the unit as a profile writes it ("cycles", "bytes/s")
// What the unit measures, for messages ("number of cycles").
std::string_view quantity(Unit u);
// "a figure { value, unit = "<unit>", source }".
std::string figure_form(Unit u);

// Reads parent[name] as a figure; returns its value when it is complete and valid (finite,
// non-negative, right unit, a source), else reports and gives nullopt.
std::optional<double> read_figure(Reader& r, const toml::table& parent, std::string_view name, const std::string& key,
                                  Unit unit);

// Checks a figure table's `unit` (must be `unit`'s name) and `source` (a non-empty string),
// reporting each defect at key.unit / key.source.
void check_unit_and_source(Reader& r, const toml::table& fig, const std::string& key, Unit unit);

// Checks `d` against the bound of its unit (and a clock against 1 MHz); false after reporting.
bool check_figure_bound(Reader& r, const toml::node& at, const std::string& key, double d, Unit unit);
// An integer figure: rounds, and checks `positive` and the unit's bound at the value's position.
std::optional<std::uint64_t> to_integer_figure(Reader& r, const toml::node& at, const std::string& key, double d,
                                               Unit unit, bool positive);

// [memory] and its tables (memory_profile.cpp): optional; read after [cpu] (the line size) and
// [dma] (whether device writes snoop). Inconsistent figures are reported at the figure.
void read_memory(Reader& r, const toml::table& root, system::Profile& p, const std::filesystem::path& file);

// Reads into `out` every figure of `table` whose section is `section` (all of them when it is
// empty) from the profile table `t` named `key`; an optional figure only when present. False
// when any is missing or invalid (each is reported).
template <class S, std::size_t N>
bool read_figures(Reader& r, const toml::table& t, std::string_view key, const std::array<engine::Figure<S>, N>& table,
                  S& out, std::string_view section = {}) {
    bool ok = true;
    for (const auto& f : table) {
        if (!section.empty() && f.section != section) continue;
        if (f.optional() && !t.contains(f.name)) continue;
        const std::string k = join_key(key, f.name);
        const std::optional<double> d = read_figure(r, t, f.name, k, f.unit);
        if (!d) {
            ok = false;
        } else if (const auto* real = std::get_if<double S::*>(&f.member)) {
            out.**real = *d;
        } else if (auto v = to_integer_figure(r, *t.get(f.name)->as_table()->get("value"), join_key(k, "value"), *d,
                                              f.unit, f.positive)) {
            if (const auto* i = std::get_if<std::uint64_t S::*>(&f.member)) out.**i = *v;
            else out.*std::get<std::optional<std::uint64_t> S::*>(f.member) = *v;
        } else {
            ok = false;
        }
    }
    return ok;
}

// The keys of `table` (those of `section` when it is not empty), in table order.
template <class S, std::size_t N>
std::vector<std::string_view> figure_names(const std::array<engine::Figure<S>, N>& table,
                                           std::string_view section = {}, bool with_optional = true) {
    std::vector<std::string_view> names;
    for (const auto& f : table)
        if ((section.empty() || f.section == section) && (with_optional || !f.optional())) names.push_back(f.name);
    return names;
}

// The optional sections of a profile ([net], [tcp], [udp], [flush], [dma], [cipher], [tunnel],
// [virt], [irqmask]), each read only when present (profile_sections.cpp).
void read_optional_sections(Reader& r, const toml::table& root, system::Profile& p, bool arch_ok);

} // namespace kdsim::scenario::detail
