#include "system/machine_checks.h"

#include "crypto/shash.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace kdsim::system {

std::optional<std::string> missing_cold_start(const MachineConfig& mc) {
    if (!mc.hash_cold_after) return std::nullopt;
    for (const WorkloadConfig& w : mc.workloads) {
        const auto use = w.hash();
        if (!use) continue;
        const crypto::HashImpl impl = use->impl ? *use->impl : crypto::best_hash_impl(mc.profile.hash, use->alg);
        for (crypto::HashImpl i : {impl, crypto::HashImpl::GENERIC}) {
            const auto& c = mc.profile.hash.get(use->alg, i);
            if (c && !c->cold_start)
                return "hash." + std::string(crypto::to_string(use->alg)) + "." + std::string(crypto::to_string(i)) +
                       ".cold_start";
        }
    }
    return std::nullopt;
}

std::optional<std::string> missing_spe_figures(const MachineConfig& mc) {
    const arch::SimdCosts& s = mc.profile.simd;
    const bool needed = mc.simd_policy == arch::SimdPolicy::PPC_SPE_NO_ENABLE ||
                        (mc.profile.arch == arch::Arch::PPC32_E500 && (s.unavailable_trap || s.kernel_use_warning));
    if (!needed || (s.unavailable_trap && s.kernel_use_warning)) return std::nullopt;
    return s.unavailable_trap ? "simd.kernel_use_warning" : "simd.unavailable_trap";
}

std::optional<std::string> starts_outside_affinity(std::string_view who, std::string_view affinity_key,
                                                   const std::vector<int>& affinity, std::string_view cpu_key,
                                                   int cpu) {
    if (affinity.empty() || std::find(affinity.begin(), affinity.end(), cpu) != affinity.end()) return std::nullopt;
    return fmt::format("{} starts on a CPU of its {}: expected {} to be one of {}, found {}", who, affinity_key,
                       cpu_key, fmt::join(affinity, ", "), cpu);
}

} // namespace kdsim::system
