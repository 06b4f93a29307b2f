// Consistency of a machine's configuration with its profile, which the scenario loader reports
// at the offending key and System requires, and of a task's first CPU with its affinity. Each
// returns what is missing or wrong, or nullopt.
#pragma once

#include "system/config.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kdsim::system {

// hash_cold_after: the cold_start figure of every hash implementation a workload may run (its
// own, or the best the CPU has, and the generic fallback), e.g. "hash.sha256.avx2.cold_start".
std::optional<std::string> missing_cold_start(const MachineConfig& mc);

// The SPE-unavailable path (policy ppc-spe-no-enable, or a PowerPC profile that gives one of its
// figures) needs both simd.unavailable_trap and simd.kernel_use_warning.
std::optional<std::string> missing_spe_figures(const MachineConfig& mc);

// A task that starts on CPU `cpu` (read at `cpu_key`) and may run only on the CPUs of its
// `affinity` (read at `affinity_key`; empty: on any) starts on one of them: else the message,
// `who` naming the task ("the task", "the vhost worker", "a vCPU thread"). Its caller reports it
// at `cpu_key` where the scenario sets that key, else at `affinity_key`.
std::optional<std::string> starts_outside_affinity(std::string_view who, std::string_view affinity_key,
                                                   const std::vector<int>& affinity, std::string_view cpu_key,
                                                   int cpu);

} // namespace kdsim::system
