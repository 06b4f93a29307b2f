// Reading one profile figure { value, unit, source } (shared by the profile sections).
#include "scenario/figure_reader.h"

#include <fmt/format.h>

#include <cmath>

namespace kdsim::scenario::detail {

std::string_view quantity(Unit u) {
    switch (u) {
    case Unit::CYCLES: return "number of cycles";
    case Unit::BYTES: return "number of bytes";
    case Unit::HZ: return "frequency in Hz";
    case Unit::CYCLES_PER_BYTE: return "number of cycles per byte";
    case Unit::NS: return "time in ns";
    case Unit::BYTES_PER_SECOND: return "bandwidth in bytes/s";
    case Unit::WAYS: return "number of ways";
    case Unit::LINES: return "number of lines";
    case Unit::STREAMS: return "number of streams";
    }
    return "?";
}

namespace {

// Integer figures above this are rejected: no cost or size comes near it, and it keeps
// llround and later cycle arithmetic far from overflow.
constexpr double INTEGER_FIGURE_MAX = 1e18;

} // namespace

std::string figure_form(Unit u) { return fmt::format("a figure {{ value, unit = \"{}\", source }}", unit_name(u)); }

// Reads parent[name] as a figure; returns its value when it is complete and valid (finite,
// non-negative, right unit, a source).
std::optional<double> read_figure(Reader& r, const toml::table& parent, std::string_view name, const std::string& key,
                                  Unit unit) {
    const toml::node* n = parent.get(name);
    if (!n) {
        r.missing(parent, key, figure_form(unit), "missing figures are never zero");
        return std::nullopt;
    }
    const toml::table* fig = n->as_table();
    if (!fig) {
        std::string hint;
        if (n->is_number())
            hint = fmt::format(" (write {{ value = {}, unit = \"{}\", source = \"...\" }})",
                               n->value<double>().value_or(0), unit_name(unit));
        r.error(*n, key, fmt::format("expected {}, found {}{}", figure_form(unit), describe(n), hint));
        return std::nullopt;
    }
    std::size_t before = r.errors();
    r.check_keys(*fig, key, fmt::format("figure {}", key), {"value", "unit", "source"});

    std::optional<double> value;
    std::string vkey = join_key(key, "value");
    const toml::node* v = fig->get("value");
    if (!v) {
        r.missing(*fig, vkey, fmt::format("a {}", quantity(unit)), "missing figures are never zero");
    } else if (!v->is_number()) {
        r.error(*v, vkey, fmt::format("expected a {}, found {}", quantity(unit), describe(v)));
    } else {
        double d = v->value<double>().value_or(0);
        if (!std::isfinite(d))
            r.error(*v, vkey, fmt::format("expected a finite {}, found {}", quantity(unit), describe(v)));
        else if (d < 0)
            r.error(*v, vkey, fmt::format("expected a non-negative {}, found {}", quantity(unit), describe(v)));
        else
            value = d;
    }

    std::string ukey = join_key(key, "unit");
    const toml::node* u = fig->get("unit");
    if (!u) {
        r.missing(*fig, ukey, fmt::format("the unit \"{}\"", unit_name(unit)), "every figure states its unit");
    } else if (!u->is_string() || u->as_string()->get() != unit_name(unit)) {
        r.error(*u, ukey, fmt::format("expected the unit \"{}\", found {}", unit_name(unit), describe(u)));
    }

    std::string skey = join_key(key, "source");
    const toml::node* s = fig->get("source");
    constexpr std::string_view SOURCE_FORM = "a non-empty string citing where the figure comes from";
    if (!s) {
        r.missing(*fig, skey, SOURCE_FORM, "every figure cites a source");
    } else if (!s->is_string() || s->as_string()->get().find_first_not_of(" \t") == std::string::npos) {
        r.error(*s, skey, fmt::format("expected {}, found {}", SOURCE_FORM, describe(s)));
    }

    if (r.errors() != before) return std::nullopt;
    return value;
}

// An integer figure: rounds, and checks `positive` and the upper bound at the value's position.
std::optional<std::uint64_t> to_integer_figure(Reader& r, const toml::node& at, const std::string& key, double d,
                                               Unit unit, bool positive) {
    if (d > INTEGER_FIGURE_MAX) {
        r.error(at, key, fmt::format("expected a {} of at most 1e18, found {}", quantity(unit), describe(&at)));
        return std::nullopt;
    }
    auto v = static_cast<std::uint64_t>(std::llround(d));
    if (positive && v == 0) {
        r.error(at, key, fmt::format("expected a positive {}, found {}", quantity(unit), describe(&at)));
        return std::nullopt;
    }
    return v;
}

} // namespace kdsim::scenario::detail
