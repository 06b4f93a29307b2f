// Quantities written with a unit in scenario files: durations, byte counts and bit rates. Both are
// converted exactly (decimal arithmetic on integers, never through a double), so "0.75 ms"
// is 750'000'000 ps on every machine.
#include "scenario/load.h"

#include <array>
#include <utility>

namespace kdsim::scenario {

namespace {

using u128 = unsigned __int128;

constexpr u128 MANTISSA_MAX = static_cast<u128>(1'000'000'000'000ULL) * 1'000'000'000'000ULL; // 1e24

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// A decimal number "123", "1.5", "0.75", ".5": its digits as an integer and the count of
// fraction digits (trailing fraction zeros dropped). `rest` receives what follows it.
struct Decimal {
    u128 mantissa = 0;
    unsigned fraction_digits = 0;
};

std::optional<Decimal> parse_decimal(std::string_view s, std::string_view& rest) {
    Decimal d;
    std::size_t i = 0;
    bool any_digit = false;
    auto push = [&](char c) {
        d.mantissa = d.mantissa * 10 + static_cast<unsigned>(c - '0');
        return d.mantissa <= MANTISSA_MAX;
    };
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        if (!push(s[i])) return std::nullopt;
        any_digit = true;
        ++i;
    }
    if (i < s.size() && s[i] == '.') {
        ++i;
        std::size_t start = i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
        std::string_view frac = s.substr(start, i - start);
        while (!frac.empty() && frac.back() == '0') frac.remove_suffix(1);
        if (i > start) any_digit = true;
        for (char c : frac) {
            if (!push(c)) return std::nullopt;
            ++d.fraction_digits;
        }
    }
    if (!any_digit) return std::nullopt;
    rest = s.substr(i);
    return d;
}

// mantissa * scale / 10^fraction_digits, when that is a whole number that fits in 64 bits.
std::optional<std::uint64_t> scale_exact(const Decimal& d, std::uint64_t scale) {
    u128 v = d.mantissa * scale; // mantissa <= 1e24, scale <= 2^40 (TiB) or 1e12: no overflow
    for (unsigned k = 0; k < d.fraction_digits; ++k) {
        if (v % 10 != 0) return std::nullopt;
        v /= 10;
    }
    if (v > static_cast<u128>(UINT64_MAX)) return std::nullopt;
    return static_cast<std::uint64_t>(v);
}

template <std::size_t N>
std::optional<std::uint64_t> parse_with_units(std::string_view text,
                                              const std::array<std::pair<std::string_view, std::uint64_t>, N>& units,
                                              bool unit_required) {
    std::string_view s = trim(text);
    std::string_view rest;
    auto d = parse_decimal(s, rest);
    if (!d) return std::nullopt;
    rest = trim(rest);
    if (rest.empty()) return unit_required ? std::nullopt : scale_exact(*d, 1);
    for (auto& [name, scale] : units)
        if (rest == name) return scale_exact(*d, scale);
    return std::nullopt;
}

} // namespace

std::optional<engine::Tick> parse_duration(std::string_view text) {
    static constexpr std::array<std::pair<std::string_view, std::uint64_t>, 6> UNITS = {{
        {"ps", 1},
        {"ns", engine::PS_PER_NS},
        {"us", engine::PS_PER_US},
        {"\xC2\xB5s", engine::PS_PER_US}, // µs (U+00B5)
        {"ms", engine::PS_PER_MS},
        {"s", engine::PS_PER_S},
    }};
    return parse_with_units(text, UNITS, true);
}

std::optional<std::uint64_t> parse_bytes(std::string_view text) {
    static constexpr std::array<std::pair<std::string_view, std::uint64_t>, 5> UNITS = {{
        {"B", 1},
        {"KiB", 1ULL << 10},
        {"MiB", 1ULL << 20},
        {"GiB", 1ULL << 30},
        {"TiB", 1ULL << 40},
    }};
    return parse_with_units(text, UNITS, false);
}

std::optional<std::uint64_t> parse_rate(std::string_view text) {
    static constexpr std::array<std::pair<std::string_view, std::uint64_t>, 5> UNITS = {{
        {"bit/s", 1},
        {"kbit/s", 1'000},
        {"Mbit/s", 1'000'000},
        {"Gbit/s", 1'000'000'000},
        {"Tbit/s", 1'000'000'000'000},
    }};
    auto r = parse_with_units(text, UNITS, true);
    if (!r || *r < RATE_MIN_BPS || *r > RATE_MAX_BPS) return std::nullopt;
    return r;
}

} // namespace kdsim::scenario
