// Consistency of a machine's configuration with its profile, which the scenario loader reports
// at the offending key and System requires. Each returns what is missing, or nullopt.
#pragma once

#include "system/config.h"

#include <optional>
#include <string>

namespace kdsim::system {

// hash_cold_after: the cold_start figure of every hash implementation a workload may run (its
// own, or the best the CPU has, and the generic fallback), e.g. "hash.sha256.avx2.cold_start".
std::optional<std::string> missing_cold_start(const MachineConfig& mc);

// The SPE-unavailable path (policy ppc-spe-no-enable, or a PowerPC profile that gives one of its
// figures) needs both simd.unavailable_trap and simd.kernel_use_warning.
std::optional<std::string> missing_spe_figures(const MachineConfig& mc);

} // namespace kdsim::system
