// The simulated twin of a configuration: scenarios/validate/<name>.toml, loaded with the scenario
// loader, its machines given the calibrated profile in place of the placeholder the file names,
// run through System, and the figures kdsim validate compares read from the results.
#pragma once

#include "system/config.h"
#include "validate/configs.h"

#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace kdsim::validate {

// Keys of the compared metrics (measured and predicted).
inline constexpr const char* M_THROUGHPUT = "throughput";
inline constexpr const char* M_PAYLOAD = "payload throughput";
inline constexpr const char* M_CYCLES_PER_PACKET = "cycles per packet";
inline constexpr const char* M_LONGEST_BRACKET = "longest bracket";
inline constexpr const char* M_PROBE_P50 = "probe p50";
inline constexpr const char* M_PROBE_P99 = "probe p99";
inline constexpr const char* M_PROBE_MAX = "probe max";

struct Prediction {
    bool ok = false;
    std::string reason;   // !ok: why there is no simulated twin
    std::string scenario; // the file
    std::map<std::string, double> values;
    double simulated_s = 0; // simulated time
    double wall_s = 0;      // how long the simulation took
};

// What in the loaded twin differs from the real configuration, or nullopt when it matches. Hashing:
// machine, kernel policy, chunking, the hashing workload, the probe. Packets: one machine with one
// rx_flood workload of the same algorithm, payload, buffer, flush, cryptd (and queue bound), NAPI
// weight and budget, and a fixed duration.
std::optional<std::string> twin_mismatch(const Config& c, const system::ScenarioConfig& s);

// Gives every machine of `s` the profile `p` (the calibrated one); an error message when that
// cannot be done faithfully (the scenario overrides profile figures, or names an implementation
// the profile lacks).
std::optional<std::string> replace_profile(system::ScenarioConfig& s, const system::Profile& p);

// Loads, checks, re-profiles and runs the twin. Never throws for a missing or broken twin: that
// is reported in Prediction::reason.
Prediction simulate_twin(const Config& c, const std::filesystem::path& scenario_file,
                         const std::filesystem::path& root, const system::Profile& profile);

} // namespace kdsim::validate
