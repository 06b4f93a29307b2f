// Internal to kdsim sweep: running points, what a point gives back, the summary, and the MPI
// distribution (cli/sweep_points.cpp, cli/sweep_mpi.cpp; the command: cli/sweep.cpp).
#pragma once

#include "cli/progress.h"
#include "runner/sweep.h"
#include "scenario/sweep.h"
#include "system/config.h"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kdsim::cli::sweep {

using runner::Loaded;
using runner::Outcome;
using runner::parallel_for;

// runner::run_points with the progress line: points done, simulated time, events/s, ETA.
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

using runner::metric_columns;

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
