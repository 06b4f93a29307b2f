// The reality table of `kdsim experiments`: for a case with [[published]] figures (a real
// machine's measurement, scenarios/reality/), the published figure, kdsim's prediction and the
// error; for its [[ratio]]s, the published and the predicted ratio and their error.
#pragma once

#include "results/results.h"
#include "scenario/experiment.h"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kdsim::cli {

// Resolves a manifest metric path against one run's results.
using MetricLookup = std::function<std::optional<double>(const results::RunResults&, const std::string&)>;

// Relative error in percent of `predicted` against `published` (> 0).
double error_percent(double predicted, double published);

// One line per published figure:
//   "  <figure>: published <v> <unit>, predicted <p> <unit>, error <+e.e> %"
// then one per ratio:
//   "  <label>: published ratio <r>, predicted ratio <q>, error <+e.e> %"
// A prediction whose metric or run is missing prints "predicted -, error -".
std::string reality_table(const scenario::Experiment& x,
                          const std::vector<std::pair<std::string, results::RunResults>>& runs,
                          const MetricLookup& lookup);

} // namespace kdsim::cli
