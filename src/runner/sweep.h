// A sweep's points (scenario/sweep.h) loaded and run on threads, each a normal run with a System
// of its own, its outcome kept as plain strings: shared by `kdsim sweep` (which adds the summary,
// the files and MPI) and the Python package's kdsim.sweep().
#pragma once

#include "scenario/sweep.h"
#include "system/config.h"

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kdsim::runner {

// What one point gave: plain strings, so that it travels between MPI ranks and back unchanged
// and the output is byte-identical whichever rank or thread ran it.
struct Outcome {
    std::size_t index = 0;
    std::string status;  // "ok", "findings" (an invariant was violated) or "failed" (did not run)
    std::string message; // why: the findings, or the error
    std::string json;    // the run's results JSON (ok and findings)
    std::vector<std::array<std::string, 3>> metrics; // "workload.metric", value (exact, shortest form), unit
    double simulated_us = 0;
    std::uint64_t events = 0;
    double wall_s = 0; // what the run took (for --db; never printed, so output stays identical)
};

// A point ready to run: its configuration, or why it could not be loaded.
struct Loaded {
    std::unique_ptr<system::ScenarioConfig> cfg;
    std::string error;
};

struct SweepDefinition {
    scenario::SweepSpec spec;
    std::vector<scenario::SweepPoint> points;
};

// The sweep over `axes` (none: the scenario's [sweep] table, read from `base.text` when set),
// combined as a list when `list`, over `seeds` when given; without them and with
// base.seed_override, every point takes that one seed. Throws InputError.
SweepDefinition define_sweep(const std::filesystem::path& scenario, const scenario::LoadOptions& base,
                             std::vector<scenario::SweepAxis> axes, bool list,
                             const std::optional<std::vector<std::uint64_t>>& seeds);

// Loads every point with `base` and the point's values and seed, on `jobs` threads. Returns the
// diagnostics that make the sweep bad input: those of a value that failed in every point that
// has it, else the first point's when no point loads; empty when the sweep can run (a point that
// failed on its own combination is kept in `loaded` with its error).
std::vector<scenario::Diagnostic> load_points(const std::filesystem::path& scenario, const scenario::LoadOptions& base,
                                              const SweepDefinition& d, unsigned jobs, std::vector<Loaded>& loaded);

// Calls fn(0) ... fn(n - 1), each once, on `jobs` threads (this one included).
void parallel_for(std::size_t n, unsigned jobs, const std::function<void(std::size_t)>& fn);

// Runs the points `mine` (indices into `points`) on `jobs` threads and returns their outcomes
// in index order. Every failure is caught and kept in its outcome. `done` (may be empty) is
// called once per point as it finishes, one call at a time.
std::vector<Outcome> run_points(const std::vector<scenario::SweepPoint>& points, std::vector<Loaded>& loaded,
                                const std::vector<std::size_t>& mine, unsigned jobs,
                                const std::function<void(const Outcome&)>& done);

// The metric columns: the ones asked for, or each workload's first metric in the first point
// that ran.
std::vector<std::string> metric_columns(const std::vector<Outcome>& outcomes, const std::vector<std::string>& asked);

} // namespace kdsim::runner
