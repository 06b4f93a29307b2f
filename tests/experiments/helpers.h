// Running shipped scenarios and reading their results, for the experiment tests.
#pragma once

#include "results/lookup.h"
#include "scenario/load.h"
#include "system/system.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>

namespace kdsim::testing {

inline const std::filesystem::path ROOT = KDSIM_SOURCE_DIR;

// Loads <root>/<rel> (with an optional seed override) and runs it.
inline results::RunResults run_scenario(const std::string& rel, std::optional<std::uint64_t> seed = std::nullopt) {
    scenario::LoadOptions lo;
    lo.seed_override = seed;
    system::ScenarioConfig cfg = scenario::load_scenario(ROOT / rel, lo);
    system::System sys(cfg);
    return sys.run();
}

// A workload metric that must exist.
inline double metric(const results::RunResults& r, const std::string& wl, const std::string& key) {
    auto v = results::find_metric(r, wl, key);
    if (!v) ADD_FAILURE() << "no metric " << wl << "." << key;
    return v.value_or(-1);
}

// A statistic or CPU figure by path (results::resolve: `*` sums, "@<workload>" is its machine)
// that must exist.
inline double stat(const results::RunResults& r, const std::string& path) {
    auto v = results::resolve(r, path);
    if (!v) ADD_FAILURE() << "no statistic " << path;
    return v.value_or(-1);
}

// The machine of a two-machine run that workload `wl` does not run on (iperf3's sender).
inline std::string peer_of(const results::RunResults& r, const std::string& wl) {
    std::string own;
    for (const auto& w : r.workloads)
        if (w.name == wl) own = w.machine;
    for (const auto& m : r.machines)
        if (m.name != own) return m.name;
    ADD_FAILURE() << "no peer of " << wl;
    return "";
}

inline const results::CpuResult& cpu0(const results::RunResults& r) { return r.machines.at(0).cpus.at(0); }

} // namespace kdsim::testing
