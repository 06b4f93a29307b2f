// Internal to kdsim sweep: running points, what a point gives back, the summary, and the MPI
// distribution (cli/sweep_points.cpp, cli/sweep_mpi.cpp; the command: cli/sweep.cpp).
#pragma once

#include "cli/progress.h"
#include "scenario/sweep.h"
#include "system/config.h"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kdsim::cli::sweep {

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

// Calls fn(0) ... fn(n - 1), each once, on `jobs` threads (this one included).
void parallel_for(std::size_t n, unsigned jobs, const std::function<void(std::size_t)>& fn);

// Runs the points `mine` (indices into `points`) on `jobs` threads and returns their outcomes
// in index order. Every failure is caught and kept in its outcome.
std::vector<Outcome> run_points(const std::vector<scenario::SweepPoint>& points, std::vector<Loaded>& loaded,
                                const std::vector<std::size_t>& mine, unsigned jobs, ProgressLine& line);

std::string encode(const std::vector<Outcome>& outcomes);
std::vector<Outcome> decode(const std::string& text); // throws std::runtime_error

// The summary table: one row per point (its values, seed, status, the metric columns); with two
// or more seeds, one row per combination with each metric's mean and 95 % confidence interval
// over the seeds that ran (estimate::confidence_interval); then the verdict line "RESULT: ...",
// then each failed point's message.
std::string summary(const std::string& scenario, const scenario::SweepSpec& spec,
                    const std::vector<scenario::SweepPoint>& points, const std::vector<Outcome>& outcomes,
                    const std::vector<std::string>& metrics);

// The metric columns: the ones asked for, or each workload's first metric in the first point
// that ran.
std::vector<std::string> metric_columns(const std::vector<Outcome>& outcomes, const std::vector<std::string>& asked);

// sweep.json: the definition and every point's values, status, message, results file and metrics.
std::string index_json(const std::string& scenario, const scenario::SweepSpec& spec,
                       const std::vector<scenario::SweepPoint>& points, const std::vector<Outcome>& outcomes,
                       const std::vector<std::string>& files);

// MPI (cli/sweep_mpi.cpp, built when CMake finds MPI).
namespace mpi {
// True when mpirun started this process (Open MPI's or PMIx's environment variables).
bool launched();
struct World {
    int rank = 0;
    int size = 1;
};
// MPI_Init (once) and the world; finalize() ends MPI. Only when launched() and built with MPI.
World init();
void finalize();
// At rank 0: every rank's `mine`, in rank order; elsewhere: empty.
std::vector<std::string> gather(const std::string& mine);
// Rank 0's `value` on every rank.
int broadcast(int value);
} // namespace mpi

} // namespace kdsim::cli::sweep
