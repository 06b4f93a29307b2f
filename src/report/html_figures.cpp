// The report's figures: from a group's runs, each figure's data rows, its Vega-Lite spec and the
// table of the same rows (report/html.h).
#include "report/format.h"
#include "report/html.h"
#include "results/lookup.h"

#include <algorithm>
#include <map>
#include <set>

namespace kdsim::report::html {

using nlohmann::json;

namespace {

constexpr int WIDTH = 460;
constexpr int ROW_HEIGHT = 16;

bool ends_with(std::string_view s, std::string_view tail) {
    return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// A rate: Mbit/s, MB/s, 1/s, Mpps.
bool is_rate(std::string_view unit) { return ends_with(unit, "/s") || ends_with(unit, "pps"); }

json number(double v) { return detail::round_significant(v); }

std::string cell(double v) { return escape(detail::display(v)); }

// A table: `head` cells, then rows of already-escaped cells; numeric columns are right-aligned by
// the page's style (class "n" from column `first_number` on).
std::string table(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows,
                  std::size_t first_number) {
    std::string t = "<table><thead><tr>";
    for (std::size_t i = 0; i < head.size(); ++i)
        t += std::string(i >= first_number ? "<th class=n>" : "<th>") + escape(head[i]) + "</th>";
    t += "</tr></thead><tbody>";
    for (const auto& row : rows) {
        t += "<tr>";
        for (std::size_t i = 0; i < row.size(); ++i) t += std::string(i >= first_number ? "<td class=n>" : "<td>") + row[i] + "</td>";
        t += "</tr>";
    }
    return t + "</tbody></table>";
}

json base_spec(const json& rows) {
    return json{{"$schema", "https://vega.github.io/schema/vega-lite/v6.json"},
                {"data", {{"values", rows}}},
                {"config", {{"font", "sans-serif"}, {"axis", {{"labelLimit", 260}}}}}};
}

// One panel per value of `field`, its name above it; in `order` when given, else sorted.
json row_facet(const std::string& field, const json& order = nullptr) {
    json row = {{"field", field}, {"type", "nominal"}, {"title", nullptr},
                {"header", {{"labelAngle", 0}, {"labelAlign", "left"}, {"labelAnchor", "start"}, {"labelOrient", "top"}}}};
    if (!order.is_null()) row["sort"] = order;
    return {{"row", row}};
}

const results::WorkloadResult* workload(const results::RunResults& r, const std::string& name) {
    for (const auto& w : r.workloads)
        if (w.name == name) return &w;
    return nullptr;
}

// Throughput of every rate metric, per run; with before/after pairs, per pair.
std::optional<Figure> throughput(const Group& g) {
    struct Rate { std::string metric, unit; };
    std::vector<Rate> rates; // workload.key, in first-seen order
    for (const auto& run : g.runs)
        for (const auto& w : run.results.workloads)
            for (const auto& m : w.metrics) {
                const std::string name = w.name + "." + m.key;
                if (is_rate(m.unit) && std::none_of(rates.begin(), rates.end(), [&](const Rate& x) { return x.metric == name; }))
                    rates.push_back({name, m.unit});
            }
    if (rates.empty()) return std::nullopt;
    auto value = [&](const Run& run, const Rate& rate) { return results::resolve(run.results, "workload." + rate.metric); };
    auto find = [&](const std::string& label) -> const Run* {
        for (const auto& run : g.runs)
            if (run.label == label) return &run;
        return nullptr;
    };
    json rows = json::array();
    std::vector<std::vector<std::string>> cells;
    Figure f;
    std::vector<std::pair<const Run*, const Run*>> pairs;
    for (const auto& [before, after] : g.compares)
        if (find(before) && find(after)) pairs.emplace_back(find(before), find(after));
    if (!pairs.empty()) {
        f.title = "Throughput before and after";
        for (const auto& rate : rates)
            for (const auto& [b, a] : pairs) {
                const std::optional<double> vb = value(*b, rate), va = value(*a, rate);
                if (!vb && !va) continue;
                const std::string pair = b->label + " \u2192 " + a->label;
                const std::string metric = rate.metric + " (" + rate.unit + ")";
                if (vb) rows.push_back({{"pair", pair}, {"role", "before"}, {"metric", metric}, {"value", number(*vb)}});
                if (va) rows.push_back({{"pair", pair}, {"role", "after"}, {"metric", metric}, {"value", number(*va)}});
                cells.push_back({escape(b->label), escape(a->label), escape(metric), vb ? cell(*vb) : "-", va ? cell(*va) : "-",
                                 vb && va && *vb != 0 ? escape(detail::ratio_text(*vb, *va)) : "-"});
            }
        f.table_html = table({"before", "after", "metric", "before", "after", "after/before"}, cells, 3);
        f.spec = base_spec(rows);
        f.spec["facet"] = row_facet("metric");
        f.spec["resolve"] = {{"scale", {{"x", "independent"}}}};
        f.spec["spec"] = {{"width", WIDTH}, {"height", {{"step", ROW_HEIGHT}}}, {"mark", {{"type", "bar"}, {"tooltip", true}}},
                          {"encoding", {{"y", {{"field", "pair"}, {"type", "nominal"}, {"title", nullptr}, {"sort", nullptr}}},
                                        {"yOffset", {{"field", "role"}, {"sort", {"before", "after"}}}},
                                        {"x", {{"field", "value"}, {"type", "quantitative"}, {"title", nullptr}}},
                                        {"color", {{"field", "role"}, {"type", "nominal"}, {"sort", {"before", "after"}}, {"title", nullptr}}}}}};
        return f;
    }
    f.title = "Throughput";
    for (const auto& rate : rates)
        for (const auto& run : g.runs)
            if (std::optional<double> v = value(run, rate)) {
                const std::string metric = rate.metric + " (" + rate.unit + ")";
                rows.push_back({{"run", run.label}, {"metric", metric}, {"value", number(*v)}});
                cells.push_back({escape(run.label), escape(metric), cell(*v)});
            }
    f.table_html = table({"run", "metric", "value"}, cells, 2);
    f.spec = base_spec(rows);
    f.spec["facet"] = row_facet("metric");
    f.spec["resolve"] = {{"scale", {{"x", "independent"}}}};
    f.spec["spec"] = {{"width", WIDTH}, {"height", {{"step", ROW_HEIGHT}}}, {"mark", {{"type", "bar"}, {"tooltip", true}}},
                      {"encoding", {{"y", {{"field", "run"}, {"type", "nominal"}, {"title", nullptr}, {"sort", nullptr}}},
                                    {"x", {{"field", "value"}, {"type", "quantitative"}, {"title", nullptr}}}}}};
    return f;
}

// Cycles per run, machine, CPU and context, stacked by cost category.
std::optional<Figure> cycles(const Group& g) {
    json rows = json::array();
    json bars = json::array(); // the y domain, in order
    std::vector<std::vector<std::string>> cells;
    bool merged = false;
    for (const auto& run : g.runs) {
        merged = merged || !run.contexts_known;
        for (const auto& m : run.results.machines)
            for (const auto& c : m.cpus)
                for (const auto& [context, cats] : c.cycles) {
                    std::uint64_t total = 0;
                    for (const auto& [cat, n] : cats) total += n;
                    if (total == 0) continue;
                    const std::string bar = run.label + " \u00b7 " + m.name + "/cpu" + std::to_string(c.id) + " \u00b7 " + context;
                    bars.push_back(bar);
                    std::vector<std::pair<std::uint64_t, std::string>> largest;
                    for (const auto& [cat, n] : cats) {
                        rows.push_back({{"bar", bar}, {"category", cat}, {"cycles", n},
                                        {"share", number(100.0 * static_cast<double>(n) / static_cast<double>(total))}});
                        largest.emplace_back(n, cat);
                    }
                    std::sort(largest.begin(), largest.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
                    std::string top;
                    for (std::size_t i = 0; i < std::min<std::size_t>(3, largest.size()); ++i)
                        top += (i ? ", " : "") + largest[i].second + " " + detail::percent(static_cast<double>(largest[i].first), static_cast<double>(total));
                    cells.push_back({escape(run.label), escape(m.name + "/cpu" + std::to_string(c.id)), escape(context), escape(top),
                                     escape(detail::grouped(total))});
                }
    }
    if (rows.empty()) return std::nullopt;
    Figure f;
    f.title = "Cycle attribution per CPU and context";
    if (merged) f.note = "Runs read from a results database carry cycles per category summed over contexts: their bars are \"all contexts\".";
    f.table_html = table({"run", "CPU", "context", "largest categories", "cycles"}, cells, 4);
    f.spec = base_spec(rows);
    f.spec["width"] = WIDTH;
    f.spec["height"] = {{"step", ROW_HEIGHT}};
    f.spec["mark"] = {{"type", "bar"}, {"tooltip", true}};
    f.spec["encoding"] = {{"y", {{"field", "bar"}, {"type", "nominal"}, {"title", nullptr}, {"sort", bars}}},
                          {"x", {{"field", "cycles"}, {"type", "quantitative"}, {"aggregate", "sum"}, {"title", "cycles"}}},
                          {"color", {{"field", "category"}, {"type", "nominal"}, {"scale", {{"scheme", "category20"}}}}},
                          {"order", {{"field", "category"}}}};
    return f;
}

// The fraction below a percentile key: "min" 0, "p50" 0.5, "p999" 0.999, "max" 1.
std::optional<double> quantile(std::string_view q) {
    if (q == "min") return 0.0;
    if (q == "max") return 1.0;
    if (q.size() < 2 || q[0] != 'p' || !std::all_of(q.begin() + 1, q.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) return std::nullopt;
    return std::stod("0." + std::string(q.substr(1)));
}

// Latency distributions from the percentile metrics `<base>_<min|pNN|max>_us` of each workload.
std::optional<Figure> latency(const Group& g) {
    json rows = json::array();
    std::vector<std::vector<std::string>> cells;
    std::set<std::string> quantiles_seen;
    for (const auto& run : g.runs)
        for (const auto& w : run.results.workloads) {
            std::map<std::string, std::map<double, std::pair<std::string, double>>> series; // base -> fraction -> (percentile, µs)
            for (const auto& m : w.metrics) {
                if (m.unit != "us" || !ends_with(m.key, "_us")) continue;
                const std::string stem = m.key.substr(0, m.key.size() - 3);
                const std::size_t cut = stem.rfind('_');
                if (cut == std::string::npos) continue;
                if (std::optional<double> q = quantile(std::string_view(stem).substr(cut + 1))) {
                    series[stem.substr(0, cut)][*q] = {stem.substr(cut + 1), m.value};
                    quantiles_seen.insert(stem.substr(cut + 1));
                }
            }
            for (const auto& [base, points] : series) {
                if (points.size() < 3) continue;
                const std::string name = w.name + "." + base;
                std::vector<std::string> row{escape(run.label), escape(name)};
                std::string values;
                for (const auto& [q, point] : points) {
                    rows.push_back({{"run", run.label}, {"series", name}, {"fraction", number(q)}, {"latency_us", number(point.second)}});
                    values += (values.empty() ? "" : " \u00b7 ") + point.first + " " + detail::human(point.second);
                }
                row.push_back(escape(values));
                cells.push_back(row);
            }
        }
    if (rows.empty()) return std::nullopt;
    Figure f;
    f.title = "Latency distributions (CDF)";
    std::string qs;
    for (const auto& q : quantiles_seen) qs += (qs.empty() ? "" : ", ") + q;
    f.note = "Drawn through the percentiles the results carry (" + qs +
             "); the samples themselves are not in the results, so the curve between two points is a straight line, not data.";
    f.table_html = table({"run", "series", "percentiles (\u00b5s)"}, cells, 3);
    f.spec = base_spec(rows);
    bool positive = true;
    for (const auto& row : rows) positive = positive && row["latency_us"].get<double>() > 0;
    f.spec["facet"] = row_facet("series");
    f.spec["resolve"] = {{"scale", {{"x", "independent"}}}};
    f.spec["spec"] = {{"width", WIDTH}, {"height", 200}, {"mark", {{"type", "line"}, {"point", true}, {"tooltip", true}}},
                      {"encoding", {{"x", {{"field", "latency_us"}, {"type", "quantitative"}, {"title", "\u00b5s"}, {"scale", {{"type", positive ? "log" : "symlog"}}}}},
                                    {"y", {{"field", "fraction"}, {"type", "quantitative"}, {"title", "fraction at or below"}}},
                                    {"color", {{"field", "run"}, {"type", "nominal"}, {"sort", nullptr}, {"scale", {{"scheme", "category20"}}}}},
                                    {"order", {{"field", "fraction"}}}}}};
    return f;
}

// A reality case: each published figure beside kdsim's prediction of it.
std::optional<Figure> published(const Group& g) {
    json rows = json::array();
    json order = json::array();
    std::vector<std::vector<std::string>> cells;
    for (const auto& p : g.published) {
        std::optional<double> predicted;
        for (const auto& run : g.runs)
            if (run.label == p.run && !predicted)
                if (std::optional<double> v = results::resolve_sum(run.results, p.metric)) predicted = *v * p.scale;
        const std::string figure = p.figure + " (" + p.unit + ")";
        order.push_back(figure);
        rows.push_back({{"figure", figure}, {"source", "published"}, {"value", number(p.value)}});
        if (predicted) rows.push_back({{"figure", figure}, {"source", "kdsim"}, {"value", number(*predicted)}});
        cells.push_back({escape(p.figure), escape(p.unit), cell(p.value), predicted ? cell(*predicted) : "-",
                         predicted && p.value != 0 ? escape(detail::human((*predicted - p.value) / p.value * 100, 3)) + " %" : "-"});
    }
    if (rows.empty()) return std::nullopt;
    Figure f;
    f.title = "Published measurements and kdsim's predictions";
    f.note = "Error = (predicted - published) / published; the sources are in the case's README and docs/fidelity.md.";
    f.table_html = table({"figure", "unit", "published", "kdsim", "error"}, cells, 2);
    f.spec = base_spec(rows);
    f.spec["facet"] = row_facet("figure", order);
    f.spec["resolve"] = {{"scale", {{"x", "independent"}}}};
    f.spec["spec"] = {{"width", WIDTH}, {"height", {{"step", ROW_HEIGHT}}}, {"mark", {{"type", "bar"}, {"tooltip", true}}},
                      {"encoding", {{"y", {{"field", "source"}, {"type", "nominal"}, {"title", nullptr}, {"sort", {"published", "kdsim"}}}},
                                    {"x", {{"field", "value"}, {"type", "quantitative"}, {"title", nullptr}}},
                                    {"color", {{"field", "source"}, {"type", "nominal"}, {"sort", {"published", "kdsim"}}, {"title", nullptr}}}}}};
    return f;
}

std::string point_value(const results::RunResults& r, const std::string& key) {
    for (const auto& v : r.sweep_point)
        if (v.key == key) return v.value;
    return "";
}

// A sweep: each chosen workload metric against the first swept key; the other keys' values
// colour the lines; each seed is a point, the line joins their means.
std::optional<Figure> sweep(const Group& g) {
    if (g.kind != Group::Kind::SWEEP || g.sweep_keys.empty() || g.runs.empty()) return std::nullopt;
    std::vector<std::string> metrics; // workload.key
    for (const auto& w : g.runs.front().results.workloads) {
        std::size_t before = metrics.size();
        for (const auto& m : w.metrics)
            if ((is_rate(m.unit) || m.unit == "us") && metrics.size() - before < 3) metrics.push_back(w.name + "." + m.key);
        if (metrics.size() == before && !w.metrics.empty()) metrics.push_back(w.name + "." + w.metrics.front().key);
    }
    const std::string& x = g.sweep_keys.front();
    json rows = json::array();
    json x_order = json::array();
    std::vector<std::vector<std::string>> cells;
    for (const auto& run : g.runs) {
        const std::string xv = point_value(run.results, x);
        if (std::find(x_order.begin(), x_order.end(), json(xv)) == x_order.end()) x_order.push_back(xv);
        std::string rest;
        for (std::size_t k = 1; k < g.sweep_keys.size(); ++k)
            rest += (k > 1 ? ", " : "") + g.sweep_keys[k] + "=" + point_value(run.results, g.sweep_keys[k]);
        for (const auto& metric : metrics) {
            const std::optional<double> v = results::resolve(run.results, "workload." + metric);
            if (!v) continue;
            std::string unit;
            const std::size_t dot = metric.find('.');
            if (const auto* w = workload(run.results, metric.substr(0, dot)))
                for (const auto& m : w->metrics)
                    if (m.key == metric.substr(dot + 1)) unit = m.unit;
            const std::string label = metric + " (" + unit + ")";
            rows.push_back({{"x", xv}, {"lines", rest.empty() ? "all" : rest}, {"metric", label}, {"seed", run.results.seed}, {"value", number(*v)}});
            cells.push_back({escape(run.label), escape(xv), escape(rest), escape(std::to_string(run.results.seed)), escape(label), cell(*v)});
        }
    }
    if (rows.empty()) return std::nullopt;
    Figure f;
    f.title = "Sweep: metrics against " + x;
    if (g.sweep_keys.size() > 1) f.note = "One line per combination of the other swept keys.";
    f.table_html = table({"point", x, "other keys", "seed", "metric", "value"}, cells, 5);
    f.spec = base_spec(rows);
    f.spec["facet"] = row_facet("metric");
    f.spec["resolve"] = {{"scale", {{"y", "independent"}}}};
    const json xenc = {{"field", "x"}, {"type", "ordinal"}, {"title", x}, {"sort", x_order}, {"axis", {{"labelAngle", 0}}}};
    f.spec["spec"] = {{"width", WIDTH}, {"height", 160},
                      {"layer", {{{"mark", {{"type", "line"}}},
                                  {"encoding", {{"x", xenc}, {"y", {{"field", "value"}, {"aggregate", "mean"}, {"type", "quantitative"}, {"title", nullptr}}},
                                                {"color", {{"field", "lines"}, {"type", "nominal"}, {"title", nullptr}}}}}},
                                 {{"mark", {{"type", "point"}, {"tooltip", true}}},
                                  {"encoding", {{"x", xenc}, {"y", {{"field", "value"}, {"type", "quantitative"}}},
                                                {"color", {{"field", "lines"}, {"type", "nominal"}}}}}}}}};
    return f;
}

} // namespace

std::optional<double> column_value(const results::RunResults& r, const Column& c) {
    return results::resolve_ratio(r, c.metric, c.per);
}

std::vector<Figure> figures_of(const Group& g) {
    std::vector<Figure> out;
    for (auto make : {published, throughput, cycles, latency, sweep})
        if (std::optional<Figure> f = make(g)) out.push_back(std::move(*f));
    return out;
}

} // namespace kdsim::report::html
