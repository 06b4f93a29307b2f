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

inline const results::CpuResult& cpu0(const results::RunResults& r) { return r.machines.at(0).cpus.at(0); }

} // namespace kdsim::testing
