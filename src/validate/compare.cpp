#include "validate/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace kdsim::validate {

double error_pct(double measured, double predicted) {
    if (measured == 0) {
        if (predicted == 0) return 0;
        return predicted > 0 ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
    }
    return (predicted - measured) / std::fabs(measured) * 100.0;
}

void set_predictions(Row& r, std::optional<double> profile, const std::vector<double>& others) {
    r.predicted_profile = profile;
    r.predictions = others;
    std::vector<double> all = others;
    if (profile) all.push_back(*profile);
    if (all.empty()) {
        r.predicted = r.predicted_low = r.predicted_high = std::nullopt;
        return;
    }
    const auto [lo, hi] = std::minmax_element(all.begin(), all.end());
    r.predicted_low = *lo;
    r.predicted_high = *hi;
    r.predicted = (*lo + *hi) / 2;
}

std::optional<double> row_error(const Row& r) {
    if (!r.measured || !r.predicted) return std::nullopt;
    return error_pct(*r.measured, *r.predicted);
}

std::optional<double> range_pct(const Row& r) {
    if (!r.predicted) return std::nullopt;
    if (!r.predicted_low || !r.predicted_high || *r.predicted_high == *r.predicted_low) return 0.0;
    if (*r.predicted == 0) return std::numeric_limits<double>::infinity();
    return (*r.predicted_high - *r.predicted_low) / std::fabs(*r.predicted) * 100.0;
}

std::optional<bool> within_goal(const Row& r) {
    auto e = row_error(r);
    if (!e || !r.goal_pct) return std::nullopt;
    return std::fabs(*e) <= *r.goal_pct && *range_pct(r) <= *r.goal_pct;
}

bool too_wide(const Row& r) {
    auto e = row_error(r);
    return e && r.goal_pct && std::fabs(*e) <= *r.goal_pct && !(*range_pct(r) <= *r.goal_pct);
}

Verdict evaluate(const std::vector<Row>& rows, std::optional<double> max_error) {
    Verdict v;
    for (const Row& r : rows) {
        auto e = row_error(r);
        if (!e) continue;
        ++v.compared;
        if (auto g = within_goal(r)) {
            ++v.with_goal;
            if (*g) ++v.goal_met;
            if (too_wide(r)) ++v.too_wide;
        }
        if (max_error && !(std::fabs(*e) <= *max_error))
            v.over.push_back(fmt::format("{} {}: {:+.1f}% (threshold {:g}%)", r.config, r.metric, *e, *max_error));
    }
    return v;
}

std::string format_value(double v) {
    if (!std::isfinite(v)) return v > 0 ? "inf" : v < 0 ? "-inf" : "nan";
    double a = std::fabs(v);
    if (a >= 1000) return fmt::format("{:.0f}", v);
    if (a >= 100) return fmt::format("{:.1f}", v);
    if (a >= 10) return fmt::format("{:.2f}", v);
    return fmt::format("{:.3f}", v);
}

std::string format_table(const std::vector<Row>& rows) {
    std::vector<std::vector<std::string>> t;
    t.push_back({"configuration", "metric", "measured", "spread", "predicted", "range", "error %", "goal"});
    std::string last;
    std::vector<std::string> row_notes;
    row_notes.push_back("");
    for (const Row& r : rows) {
        std::vector<std::string> line;
        line.push_back(r.config == last ? "" : r.config);
        line.push_back(r.metric + " (" + r.unit + ")");
        line.push_back(r.measured ? format_value(*r.measured) : "-");
        line.push_back(r.measured && r.repeats > 1 ? fmt::format("{:.1f}%", r.spread * 100) : "-");
        line.push_back(r.predicted ? format_value(*r.predicted) : "-");
        std::string range = "-";
        if (r.predicted && r.predicted_low && r.predicted_high && *r.predicted_high > *r.predicted_low) {
            const double w = *range_pct(r);
            range = format_value(*r.predicted_low) + ".." + format_value(*r.predicted_high) + " " +
                    (std::isfinite(w) ? fmt::format("{:.1f}%", w) : std::string("inf"));
        }
        line.push_back(range);
        auto e = row_error(r);
        line.push_back(e ? (std::isfinite(*e) ? fmt::format("{:+.1f}", *e) : format_value(*e)) : "-");
        std::string goal = "-";
        if (auto g = within_goal(r))
            goal = fmt::format("±{:g}% {}", *r.goal_pct, *g ? "ok" : too_wide(r) ? "WIDE" : "MISS");
        else if (r.goal_pct && !r.predicted) goal = fmt::format("±{:g}%", *r.goal_pct);
        line.push_back(goal);
        t.push_back(std::move(line));
        row_notes.push_back("");
        last = r.config;
    }
    // A configuration's note (no simulated twin, ...) once, under its last row.
    for (std::size_t i = 0; i < rows.size(); ++i)
        if (!rows[i].note.empty() && (i + 1 == rows.size() || rows[i + 1].config != rows[i].config))
            row_notes[i + 1] = rows[i].note;
    // "±" is two bytes in UTF-8 but one column: pad by characters, not bytes.
    auto cols = [](const std::string& s) {
        std::size_t n = 0;
        for (unsigned char c : s) n += (c & 0xc0) != 0x80;
        return n;
    };
    std::vector<std::size_t> w(t[0].size(), 0);
    for (const auto& line : t)
        for (std::size_t i = 0; i < line.size(); ++i) w[i] = std::max(w[i], cols(line[i]));
    std::string out;
    for (std::size_t k = 0; k < t.size(); ++k) {
        const auto& line = t[k];
        std::string s;
        for (std::size_t i = 0; i < line.size(); ++i) {
            const bool right = i >= 2 && i <= 6;
            std::string pad(w[i] - cols(line[i]), ' ');
            s += right ? pad + line[i] : line[i] + (i + 1 < line.size() ? pad : "");
            if (i + 1 < line.size()) s += "  ";
        }
        while (!s.empty() && s.back() == ' ') s.pop_back();
        out += s + "\n";
        if (k == 0) out += std::string(cols(s), '-') + "\n";
        if (!row_notes[k].empty()) out += std::string(w[0] + 2, ' ') + "(" + row_notes[k] + ")\n";
    }
    return out;
}

nlohmann::json rows_json(const std::vector<Row>& rows) {
    nlohmann::json a = nlohmann::json::array();
    auto num = [](std::optional<double> v) -> nlohmann::json {
        if (!v || !std::isfinite(*v)) return nullptr;
        return *v;
    };
    for (const Row& r : rows) {
        nlohmann::json j;
        j["configuration"] = r.config;
        j["metric"] = r.metric;
        j["unit"] = r.unit;
        j["measured"] = num(r.measured);
        j["measured_spread"] = r.spread;
        j["repeats"] = r.repeats;
        j["predicted"] = num(r.predicted);
        j["predicted_low"] = num(r.predicted_low);
        j["predicted_high"] = num(r.predicted_high);
        j["predicted_range_pct"] = num(range_pct(r));
        j["predicted_profile"] = num(r.predicted_profile);
        j["predicted_profile_error_pct"] =
            r.measured && r.predicted_profile ? num(error_pct(*r.measured, *r.predicted_profile)) : nlohmann::json(nullptr);
        nlohmann::json each = nlohmann::json::array();
        for (double p : r.predictions) each.push_back(num(p));
        j["predictions"] = each;
        j["error_pct"] = num(row_error(r));
        j["goal_pct"] = num(r.goal_pct);
        auto g = within_goal(r);
        j["within_goal"] = g ? nlohmann::json(*g) : nlohmann::json(nullptr);
        const auto w = range_pct(r);
        j["range_within_goal"] = w && r.goal_pct ? nlohmann::json(*w <= *r.goal_pct) : nlohmann::json(nullptr);
        if (!r.note.empty()) j["note"] = r.note;
        a.push_back(std::move(j));
    }
    return a;
}

std::vector<std::pair<std::size_t, int>> round_robin(const std::vector<int>& repeats) {
    std::vector<std::pair<std::size_t, int>> order;
    const int rounds = repeats.empty() ? 0 : *std::max_element(repeats.begin(), repeats.end());
    for (int rep = 0; rep < rounds; ++rep)
        for (std::size_t i = 0; i < repeats.size(); ++i)
            if (rep < repeats[i]) order.emplace_back(i, rep);
    return order;
}

} // namespace kdsim::validate
