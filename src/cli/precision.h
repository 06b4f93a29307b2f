// kdsim run --precision P: runs a scenario in steps of 1 ms of simulated time, observing each
// workload rate metric over every step (workloads::Workload::progress), until the steady-state
// confidence interval of every one of them (95 %, batch means after an MSER-5 warm-up:
// estimate/estimate.h) is within P of its mean, or the scenario ends.
#pragma once

#include "results/results.h"
#include "system/system.h"

#include <optional>
#include <string>

namespace kdsim::cli {

// The observation step: one rate sample per metric per step.
inline constexpr engine::Tick PRECISION_STEP = engine::PS_PER_MS; // 1 ms
inline constexpr double PRECISION_CONFIDENCE = 0.95;

// "1%", "0.5 %" or "0.01" as a fraction (0.01), or why not: accepted from 0.01 % to 50 %.
std::optional<double> parse_precision(const std::string& text, std::string& why);

struct PrecisionRun {
    results::RunResults results; // with steady_state filled
    bool reached = false;        // every interval within the target before the end
};

// Runs `sys` (constructed, not started) as described above and finishes it.
PrecisionRun run_to_precision(system::System& sys, double target);

// The intervals, one line each, and where the run stopped.
std::string steady_state_text(const PrecisionRun& p, double target);

} // namespace kdsim::cli
