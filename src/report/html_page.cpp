// The report page: one section per group with its experiment table and its figures (each beside
// its table), the figures' Vega-Lite specs as one JSON block, and vega, vega-lite and vega-embed
// inlined. The page's script renders every figure as SVG with vega-embed (whose action menu
// exports PNG and SVG) and records what it drew in window.kdsimReport, which the browser test
// (tests/report) and the figure export (tools/report_figures.sh) read.
#include "report/format.h"
#include "report/html.h"
#include "report/web_assets.h"

#include <cctype>

namespace kdsim::report::html {

using nlohmann::json;

namespace {

constexpr std::string_view STYLE = R"(
body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1500px}
h1{margin-bottom:.2em}h2{border-bottom:2px solid #4c78a8;padding-bottom:.2em;margin-top:2em}
h3{margin:.8em 0 .3em}.q{font-style:italic}.note{color:#555;font-size:.9em;margin:.2em 0}
.fig{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start;margin-bottom:1.5em}
.plot{min-width:560px}.tbl{max-height:520px;overflow:auto;flex:1;min-width:320px}
table{border-collapse:collapse;font-size:.85em}th,td{border-bottom:1px solid #ddd;padding:.15em .5em;text-align:left}
th{background:#f3f3f3;position:sticky;top:0}.n{text-align:right;font-variant-numeric:tabular-nums}
nav ul{columns:3;font-size:.9em}details{font-size:.85em;color:#555}
)";

// The page's script: renders every figure, then sets window.kdsimReport =
// {declared, rendered: [ids], errors: [messages], done: true}.
constexpr std::string_view SCRIPT = R"(
(function () {
  const figures = JSON.parse(document.getElementById('kdsim-figures').textContent);
  const report = {declared: figures.length, rendered: [], errors: [], views: {}, done: false};
  window.kdsimReport = report;
  Promise.all(figures.map(function (f) {
    return vegaEmbed('#' + f.id, f.spec, {renderer: 'svg', downloadFileName: f.file,
                                          actions: {export: true, source: false, compiled: false, editor: false}})
      .then(function (r) { report.views[f.id] = r.view; report.rendered.push(f.id); })
      .catch(function (e) { report.errors.push(f.id + ': ' + e); console.error(f.id, e); });
  })).then(function () { report.done = true; document.body.setAttribute('data-rendered', String(report.rendered.length)); });
})();
)";

// JavaScript safe inside <script>: "</script" (any case) cannot end the element early.
std::string script_safe(std::string_view js) {
    std::string out;
    out.reserve(js.size());
    for (std::size_t i = 0; i < js.size(); ++i) {
        out += js[i];
        if (js[i] == '<' && i + 7 < js.size() && js[i + 1] == '/') {
            std::string word(js.substr(i + 2, 6));
            for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            if (word == "script") out += '\\';
        }
    }
    return out;
}

// JSON safe inside <script>: every '<' (only ever inside a string) written as \u003c.
std::string json_safe(const json& j) {
    std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace), out;
    out.reserve(text.size());
    for (char c : text) out += c == '<' ? std::string("\\u003c") : std::string(1, c);
    return out;
}

// "E5 Throughput before and after" -> "e5-throughput-before-and-after".
std::string slug(std::string_view text) {
    std::string s;
    for (char c : text) {
        if (std::isalnum(static_cast<unsigned char>(c))) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        else if (!s.empty() && s.back() != '-') s += '-';
    }
    while (!s.empty() && s.back() == '-') s.pop_back();
    return s.empty() ? "figure" : s;
}

std::string columns_table(const Group& g) {
    std::string t = "<table><thead><tr><th>run</th>";
    for (const auto& c : g.columns) t += "<th class=n>" + escape(c.label) + "</th>";
    t += "</tr></thead><tbody>";
    for (const auto& run : g.runs) {
        t += "<tr><td>" + escape(run.label) + "</td>";
        for (const auto& c : g.columns) {
            std::optional<double> v = column_value(run.results, c);
            t += "<td class=n>" + (v ? escape(detail::display(*v, 4)) : std::string("-")) + "</td>";
        }
        t += "</tr>";
    }
    return t + "</tbody></table>";
}

std::string heading(const Group& g) {
    switch (g.kind) {
    case Group::Kind::EXPERIMENT: return g.id + (g.title.empty() ? "" : " \u2014 " + g.title);
    case Group::Kind::SWEEP: return "Sweep of " + g.id;
    case Group::Kind::RUNS: break;
    }
    return "Runs" + (g.id.empty() || g.id == "runs" ? "" : ": " + g.id);
}

} // namespace

std::string escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
        }
    }
    return out;
}

std::string page(const std::vector<Group>& groups, const std::vector<std::string>& notes) {
    json declared = json::array();
    std::string body, nav;
    std::size_t runs = 0;
    for (std::size_t gi = 0; gi < groups.size(); ++gi) {
        const Group& g = groups[gi];
        runs += g.runs.size();
        const std::string anchor = "g" + std::to_string(gi + 1);
        nav += "<li><a href=\"#" + anchor + "\">" + escape(heading(g)) + "</a></li>";
        body += "<section id=\"" + anchor + "\"><h2>" + escape(heading(g)) + "</h2>";
        if (!g.question.empty()) body += "<p class=q>" + escape(g.question) + "</p>";
        body += "<details><summary>" + std::to_string(g.runs.size()) + " run(s)</summary><ul>";
        for (const auto& run : g.runs)
            body += "<li>" + escape(run.label) + ": " + escape(run.results.scenario) + ", seed " + std::to_string(run.results.seed) + ", " +
                    escape(run.results.mode) + (run.results.failed ? ", FAILED" : "") + " (" + escape(run.source) + ")</li>";
        body += "</ul></details>";
        if (!g.columns.empty()) body += "<h3>" + escape(g.id) + " table</h3><div class=tbl>" + columns_table(g) + "</div>";
        for (Figure& f : figures_of(g)) {
            const std::string id = "fig" + std::to_string(declared.size() + 1);
            declared.push_back({{"id", id}, {"title", g.id + ": " + f.title}, {"file", id + "-" + slug(g.id + " " + f.title)}, {"spec", std::move(f.spec)}});
            body += "<h3>" + escape(f.title) + "</h3>";
            if (!f.note.empty()) body += "<p class=note>" + escape(f.note) + "</p>";
            body += "<div class=fig><div class=plot id=\"" + id + "\"></div><div class=tbl>" + f.table_html + "</div></div>";
        }
        body += "</section>";
    }
    std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>kdsim report</title><style>";
    html += STYLE;
    html += "</style>\n<script>" + script_safe(web::vega_js()) + "</script>\n<script>" + script_safe(web::vega_lite_js()) + "</script>\n<script>" +
            script_safe(web::vega_embed_js()) + "</script>\n</head><body><h1>kdsim report</h1><p>";
    html += std::to_string(groups.size()) + " section(s), " + std::to_string(runs) + " run(s), " + std::to_string(declared.size()) +
            " figure(s). Each figure's menu (\u2026) saves it as SVG or PNG.</p>";
    if (!notes.empty()) {
        html += "<ul class=note>";
        for (const auto& n : notes) html += "<li>" + escape(n) + "</li>";
        html += "</ul>";
    }
    html += "<nav><ul>" + nav + "</ul></nav>\n" + body;
    html += "\n<p class=note>Made by kdsim report with " + escape(web::versions()) + ".</p>\n<script type=\"application/json\" id=\"kdsim-figures\">" +
            json_safe(declared) + "</script>\n<script>";
    html += SCRIPT;
    html += "</script>\n</body></html>\n";
    return html;
}

} // namespace kdsim::report::html
