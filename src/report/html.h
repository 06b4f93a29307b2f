// The HTML report (`kdsim report`): one self-contained file with, per experiment, sweep or set of
// runs, Vega-Lite figures each beside the table of the numbers it plots (throughput before and
// after, cycle attribution per CPU and context, latency distributions, sweep curves, the
// experiment's own table). vega, vega-lite and vega-embed are compiled into the binary
// (report/web_assets.h) and inlined, so the file opens offline. Like the rest of this layer it
// sees only the plain results; the CLI finds the inputs and the experiment manifests.
// The page is a pure function of its input: the same groups give byte-identical HTML.
#pragma once

#include "results/results.h"

#include <nlohmann/json.hpp>

#include <optional>

#include <string>
#include <utility>
#include <vector>

namespace kdsim::report::html {

// A column of an experiment's table: a results path (or paths joined by " + "), optionally
// divided by `per` (scenarios/<eN>/experiment.toml, [[column]]).
struct Column {
    std::string label;
    std::string metric;
    std::string per;
};

// One run as the report shows it.
struct Run {
    std::string label;  // the scenario file's stem, or the sweep point ("point-03")
    std::string source; // where it was read from: a file, or "FILE#run ID" for a database
    results::RunResults results;
    // false for a run read from a results database, which stores cycles per category summed
    // over contexts: its cycles are then under the one context "all contexts"
    bool contexts_known = true;
};

// A published measurement of a real machine and the run's metric that predicts it (a reality
// case's [[published]], docs/fidelity.md).
struct Published {
    std::string figure; // its name, "ring 16"
    double value = 0;   // in `unit`
    std::string unit;
    std::string source;
    std::string run;    // the label of the run that predicts it
    std::string metric; // results path of the prediction
    double scale = 1;   // metric x scale = a value in `unit`
};

struct Group {
    enum class Kind { EXPERIMENT, SWEEP, RUNS };
    Kind kind = Kind::RUNS;
    std::string id;       // "E5", the sweep's scenario, or "runs"
    std::string title;    // the experiment's title, else empty
    std::string question; // the experiment's question, else empty
    std::vector<Column> columns;                              // the experiment's table (may be empty)
    std::vector<std::pair<std::string, std::string>> compares; // before/after run labels
    std::vector<std::string> sweep_keys;                       // the keys a sweep varied, in order
    std::vector<Published> published;                         // a reality case's measurements
    std::vector<Run> runs;
};

// A figure and the table beside it.
struct Figure {
    std::string title;
    std::string note;       // what the reader should know (e.g. a CDF drawn through percentiles)
    nlohmann::json spec;    // Vega-Lite
    std::string table_html; // <table>…</table>
};

// A column's value in one run: `metric` (paths joined by " + ", summed) divided by `per` when
// given; nothing when a path is missing or the divisor is 0.
std::optional<double> column_value(const results::RunResults& r, const Column& c);

// The figures of one group, in the order the page shows them; a figure whose data the runs do
// not have is left out (a run without rate metrics has no throughput figure).
std::vector<Figure> figures_of(const Group& g);

// The whole page. `notes` are lines shown at the top (inputs skipped, database caveats).
std::string page(const std::vector<Group>& groups, const std::vector<std::string>& notes);

// Escapes &, <, >, " and ' for HTML text and attribute values.
std::string escape(std::string_view text);

} // namespace kdsim::report::html
