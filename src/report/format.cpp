#include "report/format.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace kdsim::report::detail {

double round_significant(double v) {
    if (!std::isfinite(v)) return v;
    if (v == 0) return 0.0;
    char buf[64];
    auto res = fmt::format_to_n(buf, sizeof buf, "{:.{}g}", v, SIGNIFICANT_DIGITS);
    double out = 0;
    std::from_chars(buf, res.out, out);
    return out;
}

std::string plain_number(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    // The shortest text that reads back as the rounded value.
    return fmt::format("{}", round_significant(v));
}

std::string grouped(std::uint64_t v) {
    std::string digits = std::to_string(v);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string grouped_fixed(double v, int decimals) {
    if (!std::isfinite(v)) return fmt::format("{}", v);
    std::string text = fmt::format("{:.{}f}", std::fabs(v), decimals);
    auto dot = text.find('.');
    std::string int_part = text.substr(0, dot);
    std::string out = v < 0 && text.find_first_not_of("0.") != std::string::npos ? "-" : "";
    for (std::size_t i = 0; i < int_part.size(); ++i) {
        if (i > 0 && (int_part.size() - i) % 3 == 0) out += ',';
        out += int_part[i];
    }
    if (dot != std::string::npos) out += text.substr(dot);
    return out;
}

std::string human(double v, int significant) {
    if (!std::isfinite(v)) return fmt::format("{}", v);
    if (v == 0) return "0";
    double mag = std::fabs(v);
    if (mag < 1e15 && v == std::floor(v)) return fmt::format("{:.0f}", v);
    if (mag < 1e-4 || mag >= 1e15) return fmt::format("{:.{}g}", v, significant > 4 ? 4 : significant);
    int decimals = significant - 1 - static_cast<int>(std::floor(std::log10(mag)));
    decimals = decimals < 0 ? 0 : decimals;
    std::string text = fmt::format("{:.{}f}", v, decimals);
    if (text.find('.') != std::string::npos) {
        while (text.back() == '0') text.pop_back();
        if (text.back() == '.') text.pop_back();
    }
    return text;
}

std::string display(double v, int significant) {
    if (std::isfinite(v) && v >= 0 && v < 1e15 && v == std::floor(v)) return grouped(static_cast<std::uint64_t>(v));
    std::string text = human(v, significant);
    if (text.find_first_of("eni") != std::string::npos) return text; // exponent, nan, inf
    // Group the digits before the decimal point: "4321.25" -> "4,321.25".
    std::size_t begin = text[0] == '-' ? 1 : 0;
    std::size_t end = std::min(text.find('.'), text.size());
    std::string out = text.substr(0, begin);
    for (std::size_t i = begin; i < end; ++i) {
        if (i > begin && (end - i) % 3 == 0) out += ',';
        out += text[i];
    }
    return out + text.substr(end);
}

std::string signed_difference(std::uint64_t from, std::uint64_t to) {
    if (to == from) return "0";
    return to > from ? "+" + grouped(to - from) : "-" + grouped(from - to);
}

std::string ratio_text(double a, double b) {
    if (a == 0) return b == 0 ? "-" : "n/a";
    double r = b / a;
    double mag = std::fabs(r);
    if (mag >= 100) return fmt::format("{:.0f}", r);
    if (mag >= 10) return fmt::format("{:.1f}", r);
    if (mag >= 0.01 || r == 0) return fmt::format("{:.2f}", r);
    return fmt::format("{:.2g}", r);
}

std::string percent(double part, double whole) {
    if (whole == 0) return "-";
    return fmt::format("{:.1f}%", 100.0 * part / whole);
}

std::string frequency(std::uint64_t hz) {
    if (hz >= 1'000'000'000) return human(static_cast<double>(hz) / 1e9) + " GHz";
    if (hz >= 1'000'000) return human(static_cast<double>(hz) / 1e6) + " MHz";
    if (hz >= 1'000) return human(static_cast<double>(hz) / 1e3) + " kHz";
    return fmt::format("{} Hz", hz);
}

double cycles_to_us(std::uint64_t cycles, std::uint64_t clock_hz) {
    if (clock_hz == 0) return 0;
    return static_cast<double>(cycles) * 1e6 / static_cast<double>(clock_hz);
}

namespace {
// 2^k bytes as "1", "512", "4K", "16M", ...
std::string power_of_two_size(std::size_t k, bool lower_case) {
    static constexpr const char* UPPER[] = {"", "K", "M", "G", "T", "P", "E", "Z"};
    static constexpr const char* LOWER[] = {"", "k", "m", "g", "t", "p", "e", "z"};
    std::size_t unit = k / 10;
    if (unit > 7) return fmt::format("2^{}", k);
    return fmt::format("{}{}", 1u << (k % 10), lower_case ? LOWER[unit] : UPPER[unit]);
}
} // namespace

std::string bucket_label(std::size_t k) {
    if (k == 0) return "0-2";
    return power_of_two_size(k, false) + "-" + power_of_two_size(k + 1, false);
}

std::string bucket_key(std::size_t k) {
    if (k == 0) return "0_2";
    return power_of_two_size(k, true) + "_" + power_of_two_size(k + 1, true);
}

std::vector<std::string> wrap(const std::vector<std::string>& items, std::string_view first,
                              std::string_view indent, std::size_t width) {
    std::vector<std::string> lines;
    std::string line(first);
    bool empty = true;
    for (const auto& item : items) {
        if (!empty && columns(line) + 2 + columns(item) > width) {
            lines.push_back(line);
            line = indent;
            empty = true;
        }
        if (!empty) line += "  ";
        line += item;
        empty = false;
    }
    if (!empty || lines.empty()) lines.push_back(line);
    return lines;
}

std::size_t columns(std::string_view utf8) {
    std::size_t n = 0;
    for (unsigned char c : utf8)
        if ((c & 0xC0) != 0x80) ++n;
    return n;
}

std::string pad_right(std::string_view s, std::size_t width) {
    std::string out(s);
    for (std::size_t n = columns(s); n < width; ++n) out += ' ';
    return out;
}

std::string pad_left(std::string_view s, std::size_t width) {
    std::string out;
    for (std::size_t n = columns(s); n < width; ++n) out += ' ';
    out += s;
    return out;
}

} // namespace kdsim::report::detail
