// Finding figures in a run's results by name: shared by the experiment tables of the CLI and
// the tests that check experiment claims.
#pragma once

#include "results/results.h"

#include <optional>
#include <string_view>

namespace kdsim::results {

// The metric `key` of workload `workload` (any machine), if present.
inline std::optional<double> find_metric(const RunResults& r, std::string_view workload, std::string_view key) {
    for (const auto& w : r.workloads)
        if (w.name == workload)
            for (const auto& m : w.metrics)
                if (m.key == key) return m.value;
    return std::nullopt;
}

} // namespace kdsim::results
