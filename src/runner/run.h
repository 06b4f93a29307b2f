// Running scenarios, shared by the kdsim binary and the Python package: one run, and the value
// of an experiment table's column in a run (scenarios/<eN>/experiment.toml).
#pragma once

#include "results/results.h"
#include "scenario/experiment.h"
#include "scenario/load.h"

#include <filesystem>
#include <optional>
#include <string>

namespace kdsim::runner {

// Loads `file` (or `options.text`, named `file`) and runs it. scenario::InputError (bad input)
// and system::ConfigError (a model that cannot be assembled) propagate.
results::RunResults run_scenario(const std::filesystem::path& file, const scenario::LoadOptions& options);

// A column's value in one run: its metric, divided by its `per` figure when it has one (nothing
// when either is missing or the divisor is 0).
std::optional<double> column_value(const results::RunResults& r, const scenario::ExperimentColumn& c);

} // namespace kdsim::runner
