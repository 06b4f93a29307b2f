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
    case Unit::COUNT: return "count";
    case Unit::FRACTION: return "fraction";
    }
    return "?";
}

namespace {

struct Bound {
    double max;
    std::string_view text; // the bound as the error states it
    std::string_view why;
};

// The largest value of a figure of each unit. No real cost, size or rate comes near these;
// they keep every time a figure turns into below 2^64 ps (a cycle figure of 1e12 cycles at the
// slowest clock, 1 MHz, is 1e18 ps) and every size that is allocated per line below memory.
Bound bound(Unit u) {
    switch (u) {
    case Unit::CYCLES: return {1e12, "1e12", "a cost beyond 1000 s at 1 GHz would not fit the 64-bit picosecond clock"};
    case Unit::BYTES: return {1099511627776.0, "1 TiB (2^40)", "no buffer, cache or save area comes near it"};
    case Unit::HZ: return {1e11, "100 GHz", "no CPU clock comes near it"};
    case Unit::CYCLES_PER_BYTE: return {1e6, "1e6", "no per-byte cost comes near it"};
    case Unit::NS: return {1e12, "1e12 ns (1000 s)", "no latency comes near it"};
    case Unit::BYTES_PER_SECOND: return {1e14, "1e14 bytes/s", "no memory system comes near it"};
    case Unit::WAYS: return {1024, "1024", "no cache has more ways"};
    case Unit::LINES: return {4294967296.0, "2^32", "per-line state is allocated for each line"};
    case Unit::STREAMS: return {1024, "1024", "no prefetcher tracks more streams"};
    case Unit::COUNT: return {1024, "1024", "no link has more lanes, coding bits or DLLPs per frame"};
    case Unit::FRACTION: return {1, "1", "a fraction of a whole"};
    }
    return {0, "0", "unknown unit"};
}

// Clocks below this would turn the largest cycle figure into a time beyond the clock's range.
constexpr double MIN_CLOCK_HZ = 1e6;

} // namespace

bool check_figure_bound(Reader& r, const toml::node& at, const std::string& key, double d, Unit unit) {
    Bound b = bound(unit);
    if (d > b.max) {
        r.error(at, key, fmt::format("expected a {} of at most {} ({}), found {}", quantity(unit), b.text, b.why,
                                     describe(&at)));
        return false;
    }
    if (unit == Unit::HZ && d > 0 && d < MIN_CLOCK_HZ) {
        r.error(at, key, fmt::format("expected a {} of at least 1 MHz (the cycle figures' times must fit the "
                                     "64-bit picosecond clock), found {}",
                                     quantity(unit), describe(&at)));
        return false;
    }
    return true;
}

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
        else if (check_figure_bound(r, *v, vkey, d, unit))
            value = d;
    }

    check_unit_and_source(r, *fig, key, unit);
    if (r.errors() != before) return std::nullopt;
    return value;
}

void check_unit_and_source(Reader& r, const toml::table& fig, const std::string& key, Unit unit) {
    std::string ukey = join_key(key, "unit");
    const toml::node* u = fig.get("unit");
    if (!u) {
        r.missing(fig, ukey, fmt::format("the unit \"{}\"", unit_name(unit)), "every figure states its unit");
    } else if (!u->is_string() || u->as_string()->get() != unit_name(unit)) {
        r.error(*u, ukey, fmt::format("expected the unit \"{}\", found {}", unit_name(unit), describe(u)));
    }

    std::string skey = join_key(key, "source");
    const toml::node* s = fig.get("source");
    constexpr std::string_view SOURCE_FORM = "a non-empty string citing where the figure comes from";
    if (!s) {
        r.missing(fig, skey, SOURCE_FORM, "every figure cites a source");
    } else if (!s->is_string() || s->as_string()->get().find_first_not_of(" \t") == std::string::npos) {
        r.error(*s, skey, fmt::format("expected {}, found {}", SOURCE_FORM, describe(s)));
    }
}

// An integer figure: rounds, and checks `positive` and the upper bound at the value's position.
std::optional<std::uint64_t> to_integer_figure(Reader& r, const toml::node& at, const std::string& key, double d,
                                               Unit unit, bool positive) {
    if (!check_figure_bound(r, at, key, d, unit)) return std::nullopt;
    auto v = static_cast<std::uint64_t>(std::llround(d));
    if (positive && v == 0) {
        r.error(at, key, fmt::format("expected a positive {}, found {}", quantity(unit), describe(&at)));
        return std::nullopt;
    }
    return v;
}

} // namespace kdsim::scenario::detail
