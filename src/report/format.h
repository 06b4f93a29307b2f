// Number and text formatting shared by the report's writers. Locale-independent throughout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kdsim::report::detail {

// Significant digits kept in JSON and CSV. Twelve digits keep picosecond resolution for runs of
// up to a second of simulated time while dropping the last bits in which two machines' floating
// point may differ.
inline constexpr int SIGNIFICANT_DIGITS = 12;

// `v` rounded to SIGNIFICANT_DIGITS; -0 becomes 0; NaN and infinities pass through.
double round_significant(double v);
// `v` with SIGNIFICANT_DIGITS, shortest form ("941.2", "1e-07"), for CSV.
std::string plain_number(double v);

// 1234567 -> "1,234,567".
std::string grouped(std::uint64_t v);
// 1234567.5 with 3 decimals -> "1,234,567.500".
std::string grouped_fixed(double v, int decimals);
// A human-readable value: integers exactly, others with `significant` digits and no trailing
// zeros ("941.2", "0.000123", "1.5e-07").
std::string human(double v, int significant = 6);
// For tables: a non-negative integral value with thousands separators, anything else as human().
std::string display(double v, int significant = 6);
// A signed difference of two counters with thousands separators: "+1,234", "-56", "0".
std::string signed_difference(std::uint64_t from, std::uint64_t to);
// B/A as text: "0.25", "1.00", "12.3", "-" when both are zero, "n/a" when only A is.
std::string ratio_text(double a, double b);
// part/whole as "12.3%", or "-" when whole is zero.
std::string percent(double part, double whole);
// 1.5e9 -> "1.5 GHz", 667e6 -> "667 MHz".
std::string frequency(std::uint64_t hz);
// cycles / clock as microseconds; 0 when the clock is unknown.
double cycles_to_us(std::uint64_t cycles, std::uint64_t clock_hz);

// Label of bucket k of a log2 byte histogram ([2^k, 2^(k+1)) bytes): "4K-8K"; bucket 0 is "0-2"
// because it also holds empty brackets.
std::string bucket_label(std::size_t k);
// Snake-case form of the same for keys: "4k_8k", "0_2".
std::string bucket_key(std::size_t k);

// Joins `items` with two spaces into lines of at most `width` columns, each starting with
// `indent` (and the first with `first` instead, if given).
std::vector<std::string> wrap(const std::vector<std::string>& items, std::string_view first,
                              std::string_view indent, std::size_t width);

// Number of terminal columns of UTF-8 text (one per code point).
std::size_t columns(std::string_view utf8);
// `s` padded with spaces on the right (or left) to `width` columns.
std::string pad_right(std::string_view s, std::size_t width);
std::string pad_left(std::string_view s, std::size_t width);

} // namespace kdsim::report::detail
