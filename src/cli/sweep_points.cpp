// kdsim sweep's points run with the progress line (the running itself: runner/sweep.h), their
// outcomes encoded for MPI, the summary and sweep.json.
#include "cli/sweep.h"

#include "estimate/estimate.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kdsim::cli::sweep {

std::vector<Outcome> run_points(const std::vector<scenario::SweepPoint>& points, std::vector<Loaded>& loaded,
                                const std::vector<std::size_t>& mine, unsigned jobs, ProgressLine& line) {
    std::size_t done = 0, failed = 0;
    double simulated_s = 0, events = 0;
    std::vector<Outcome> out = runner::run_points(points, loaded, mine, jobs, [&](const Outcome& o) {
        ++done;
        failed += o.status != "ok";
        simulated_s += o.simulated_us / 1e6;
        events += static_cast<double>(o.events);
        const double wall = line.elapsed();
        line.show(fmt::format("kdsim sweep: {}/{} points done ({} not ok), simulated {:.3f} s, {:.2f} M events/s, "
                              "ETA {}",
                              done, mine.size(), failed, simulated_s, wall > 0 ? events / wall / 1e6 : 0.0,
                              format_wall(wall * static_cast<double>(mine.size() - done) / static_cast<double>(done))),
                  done == mine.size());
    });
    line.done();
    return out;
}

std::string encode(const std::vector<Outcome>& outcomes) {
    nlohmann::json a = nlohmann::json::array();
    for (const Outcome& o : outcomes)
        a.push_back({{"index", o.index}, {"status", o.status}, {"message", o.message}, {"json", o.json},
                     {"metrics", o.metrics}, {"simulated_us", o.simulated_us}, {"events", o.events},
                     {"wall_s", o.wall_s}});
    return a.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<Outcome> decode(const std::string& text) {
    std::vector<Outcome> out;
    for (const auto& j : nlohmann::json::parse(text)) {
        Outcome o;
        o.index = j.at("index").get<std::size_t>();
        o.status = j.at("status").get<std::string>();
        o.message = j.at("message").get<std::string>();
        o.json = j.at("json").get<std::string>();
        o.metrics = j.at("metrics").get<std::vector<std::array<std::string, 3>>>();
        o.simulated_us = j.at("simulated_us").get<double>();
        o.events = j.at("events").get<std::uint64_t>();
        o.wall_s = j.at("wall_s").get<double>();
        out.push_back(std::move(o));
    }
    return out;
}

namespace {

const std::array<std::string, 3>* find_metric(const Outcome& o, const std::string& name) {
    for (const auto& m : o.metrics)
        if (m[0] == name) return &m;
    return nullptr;
}

double number(const std::string& text) { return std::strtod(text.c_str(), nullptr); }
std::string shown(double v) { return fmt::format("{:.6g}", v); }

// Lays out rows as columns two spaces apart, the `left` ones left-aligned.
std::string layout(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& left) {
    std::vector<std::size_t> width(rows[0].size(), 0);
    for (const auto& r : rows)
        for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
    std::string text;
    for (const auto& r : rows) {
        std::string line;
        for (std::size_t c = 0; c < r.size(); ++c)
            line += (c ? "  " : "") + (left[c] ? fmt::format("{:<{}}", r[c], width[c]) : fmt::format("{:>{}}", r[c], width[c]));
        while (!line.empty() && line.back() == ' ') line.pop_back();
        text += line + "\n";
    }
    return text;
}

// One row per combination: each metric's mean +- the half-width of its 95 % Student-t interval
// over the seeds whose run gave it ("-" with fewer than two).
std::string replications(const scenario::SweepSpec& spec, const std::vector<scenario::SweepPoint>& points,
                         const std::vector<Outcome>& outcomes, const std::vector<std::string>& metrics,
                         const std::vector<std::string>& metric_heads) {
    const std::size_t seeds = spec.seeds.size();
    std::vector<std::string> head{"combination"};
    for (const auto& a : spec.axes) head.push_back(a.key);
    head.push_back("runs");
    head.insert(head.end(), metric_heads.begin(), metric_heads.end());
    std::vector<std::vector<std::string>> rows{head};
    std::vector<const Outcome*> by_index(points.size(), nullptr);
    for (const Outcome& o : outcomes) by_index[o.index] = &o;
    for (std::size_t first = 0; first < points.size(); first += seeds) {
        std::vector<std::string> row{std::to_string(first / seeds)};
        for (const auto& a : points[first].set) row.push_back(a.value);
        std::size_t ran = 0;
        for (std::size_t s = 0; s < seeds; ++s) ran += by_index[first + s] && by_index[first + s]->status != "failed";
        row.push_back(std::to_string(ran));
        for (const std::string& m : metrics) {
            std::vector<double> xs;
            for (std::size_t s = 0; s < seeds; ++s)
                if (const Outcome* o = by_index[first + s]; o && o->status != "failed")
                    if (const auto* f = find_metric(*o, m)) xs.push_back(number((*f)[1]));
            if (xs.size() < 2) {
                row.push_back("-");
                continue;
            }
            const estimate::Interval ci = estimate::confidence_interval(xs, 0.95);
            row.push_back(fmt::format("{} ± {}", shown(ci.mean), shown(ci.half_width)));
        }
        rows.push_back(std::move(row));
    }
    std::vector<bool> left(head.size(), false);
    for (std::size_t c = 1; c <= spec.axes.size(); ++c) left[c] = true;
    return fmt::format("\nOver the seeds: mean ± half-width of its 95 % confidence interval (Student t, one run per seed)\n\n{}",
                       layout(rows, left));
}

std::string seeds_text(const std::vector<std::uint64_t>& seeds) {
    if (seeds.empty()) return "the scenario's";
    std::string s;
    for (std::size_t i = 0; i < seeds.size() && i < 8; ++i) s += (i ? "," : "") + std::to_string(seeds[i]);
    return seeds.size() > 8 ? fmt::format("{},... ({} seeds)", s, seeds.size()) : s;
}

} // namespace

std::string summary(const std::string& scenario, const scenario::SweepSpec& spec,
                    const std::vector<scenario::SweepPoint>& points, const std::vector<Outcome>& outcomes,
                    const std::vector<std::string>& metrics) {
    std::vector<std::string> shape;
    for (const auto& a : spec.axes) shape.push_back(std::to_string(a.values.size()));
    std::string text = fmt::format("Sweep of {}: {} point(s), {} of {} value(s), seeds {}\n\n", scenario, points.size(),
                                   spec.list ? "a list" : "a grid", fmt::join(shape, spec.list ? " = " : " x "),
                                   seeds_text(spec.seeds));
    std::vector<std::string> head{"point"};
    for (const auto& a : spec.axes) head.push_back(a.key);
    if (!spec.seeds.empty()) head.push_back("seed");
    head.push_back("status");
    for (const std::string& m : metrics) {
        std::string unit;
        for (const Outcome& o : outcomes)
            if (const auto* f = find_metric(o, m)) {
                unit = (*f)[2];
                break;
            }
        head.push_back(unit.empty() ? m : fmt::format("{} ({})", m, unit));
    }
    std::vector<std::vector<std::string>> rows{head};
    std::size_t ok = 0, findings = 0, failed = 0;
    for (const Outcome& o : outcomes) {
        const scenario::SweepPoint& p = points[o.index];
        std::vector<std::string> row{std::to_string(o.index)};
        for (const auto& a : p.set) row.push_back(a.value);
        if (p.seed) row.push_back(std::to_string(*p.seed));
        row.push_back(o.status);
        for (const std::string& m : metrics) {
            const auto* f = find_metric(o, m);
            row.push_back(f ? shown(number((*f)[1])) : "-");
        }
        rows.push_back(std::move(row));
        (o.status == "ok" ? ok : o.status == "findings" ? findings : failed)++;
    }
    std::vector<bool> left(head.size(), false); // the values and the status read as text
    for (std::size_t c = 1; c <= spec.axes.size(); ++c) left[c] = true;
    left[spec.axes.size() + (spec.seeds.empty() ? 1 : 2)] = true;
    text += layout(rows, left);
    if (spec.seeds.size() >= 2)
        text += replications(spec, points, outcomes, metrics,
                             std::vector<std::string>(head.end() - static_cast<std::ptrdiff_t>(metrics.size()), head.end()));
    text += fmt::format("\nRESULT: {} of {} point(s) ok", ok, outcomes.size());
    if (findings) text += fmt::format(", {} with violated invariants", findings);
    if (failed) text += fmt::format(", {} failed", failed);
    text += "\n";
    for (const Outcome& o : outcomes)
        if (o.status != "ok") text += fmt::format("  point {} ({}): {}\n", o.index, o.status, o.message);
    return text;
}

std::string index_json(const std::string& scenario, const scenario::SweepSpec& spec,
                       const std::vector<scenario::SweepPoint>& points, const std::vector<Outcome>& outcomes,
                       const std::vector<std::string>& files) {
    nlohmann::json keys = nlohmann::json::array(), ps = nlohmann::json::array();
    for (const auto& a : spec.axes) keys.push_back(a.key);
    for (const Outcome& o : outcomes) {
        const scenario::SweepPoint& p = points[o.index];
        nlohmann::json set = nlohmann::json::array(), metrics = nlohmann::json::array();
        for (const auto& a : p.set) set.push_back({{"key", a.key}, {"value", a.value}});
        for (const auto& m : o.metrics) metrics.push_back({{"name", m[0]}, {"value", number(m[1])}, {"unit", m[2]}});
        nlohmann::json j = {{"index", o.index}, {"set", set}, {"status", o.status}, {"message", o.message},
                            {"results", files[o.index]}, {"metrics", metrics}};
        j["seed"] = p.seed ? nlohmann::json(*p.seed) : nlohmann::json();
        ps.push_back(std::move(j));
    }
    nlohmann::json top = {{"format", "kdsim-sweep"}, {"format_version", 1}, {"scenario", scenario},
                          {"combine", spec.list ? "list" : "grid"}, {"keys", keys}, {"seeds", spec.seeds},
                          {"points", ps}};
    return top.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

} // namespace kdsim::cli::sweep
