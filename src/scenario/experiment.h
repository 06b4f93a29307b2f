// A reference experiment's manifest (scenarios/<eN>/experiment.toml): the question it
// answers, its scenarios in order, the columns of its result table, the before/after pairs to
// compare, and what every run must show (no findings, or a clobber finding for the unsafe set).
#pragma once

#include "scenario/load.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kdsim::scenario {

struct ExperimentColumn {
    std::string label;
    // results paths joined by " + " (results::resolve): a statistic ("boot/cpu0/simd/brackets";
    // a `*` component sums the matches, "@iperf3" is the machine of workload iperf3), a CPU
    // figure ("boot/cpu0/busy_us"), "workload.cyclictest.latency_max_us" or "run.clobbers"
    std::string metric;
    std::string per; // optional: a second path the value is divided by ("per packet")
};

// A second table with one row per scenario and per name found under `prefix` in its
// statistics ("boot/cpu0/simd/alg": one row per algorithm driver); a column's `metric` is the
// key under <prefix>/<name>/.
struct ExperimentBreakdown {
    std::string label;  // the name column's heading, e.g. "driver"
    std::string prefix;
    std::vector<ExperimentColumn> columns;
};

struct ExperimentPair {
    std::string before; // scenario file names, relative to the manifest's folder
    std::string after;
};

// A published measurement of a real machine (a reality case, scenarios/reality/<case>/): the
// figure as its source gives it, and the predicted metric it is held against. The case's
// README.md gives the same figure on a line "- **<figure>**: <value> <unit> ..." (tested).
struct PublishedFigure {
    std::string figure;   // its name, unique in the manifest, e.g. "ring 16"
    double value = 0;     // in `unit`
    std::string unit;     // e.g. "Mbit/s", "Mpps"
    std::string source;   // where it was published
    std::string quote;    // the source's own words
    std::string scenario; // the scenario file (relative to the manifest) that predicts it
    std::string metric;   // the results path of the prediction
    double scale = 1;     // predicted metric x scale = a value in `unit`
    // A figure read off a curve (e.g. "linear to ~400 Mbit/s, then losses"): instead of one
    // `scenario`, the runs of `sweep` (scenario files of the manifest), reduced by "max": the
    // largest `metric` among those runs whose `where_zero` metrics (if given) are all 0.
    std::vector<std::string> sweep;
    std::vector<std::string> where_zero;
};

// The ratio of two published figures (clock scaling, TSO, ring size), held against the ratio
// of their predictions.
struct PublishedRatio {
    std::string label;
    std::string numerator;   // figure names of this manifest
    std::string denominator;
};

struct Experiment {
    std::string id;
    std::string title;
    std::string question;
    // "ok": no run may fail; "clobber": every run must fail with a clobber report; "stale": every
    // run must fail with a stale DMA read.
    std::string expect = "ok";
    std::filesystem::path dir;
    std::vector<std::filesystem::path> scenarios;
    std::vector<ExperimentColumn> columns;
    std::optional<ExperimentBreakdown> breakdown;
    std::vector<ExperimentPair> compares;
    std::vector<PublishedFigure> published;
    std::vector<PublishedRatio> ratios;
};

// Throws InputError naming file, line and key for anything malformed, including scenario
// files that do not exist.
Experiment load_experiment(const std::filesystem::path& manifest);

} // namespace kdsim::scenario
