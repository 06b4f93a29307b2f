// A scenario as typed data: machines with their profile, kernel policies and workloads.
// Built by the scenario layer from TOML (which it alone parses) and consumed by System,
// which assembles the model. Everything here is already validated.
#pragma once

#include "arch/simd.h"
#include "crypto/hash_costs.h"
#include "crypto/shash.h"
#include "engine/time.h"
#include "kernel/costs.h"
#include "kernel/cpu.h"
#include "workloads/config.h"

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace kdsim::system {

using engine::Tick;

// A loaded architecture profile (data/profiles/<family>/<part>.toml).
struct Profile {
    std::string name;
    std::string path;
    std::string description;
    arch::Arch arch = arch::Arch::X86_64;
    std::string simd_unit; // "x86-fpu", "arm32-neon", "arm64-fpsimd"
    std::uint64_t clock_hz = 0;
    std::uint64_t cache_line = 0;
    kernel::KernelCosts kernel;
    arch::SimdCosts simd;
    crypto::HashCostTable hash;
};

enum class Mode : std::uint8_t { TIMING, FUNCTIONAL };

using workloads::CyclictestWorkload;
using workloads::HashListWorkload;
using workloads::ModuleLoadWorkload;
using workloads::SimdUserWorkload;
using workloads::SoftirqLoadWorkload;
using workloads::TcryptWorkload;

using Workload = std::variant<ModuleLoadWorkload, HashListWorkload, SimdUserWorkload, CyclictestWorkload,
                              SoftirqLoadWorkload, TcryptWorkload>;

struct MachineConfig {
    std::string name;
    Profile profile;
    std::vector<std::string> overrides; // "section.key: new (profile: old)"
    int cpus = 1;
    kernel::KernelConfig kernel;
    arch::SimdPolicy simd_policy = arch::SimdPolicy::X86_PREEMPT;
    crypto::Chunking chunking;
    // Hash code and tables count as evicted from the caches when an implementation has not run
    // on a CPU for this long (0: every call is cold); absent: always warm.
    std::optional<Tick> hash_cold_after;
    std::vector<Workload> workloads;
};

struct ScenarioConfig {
    std::string name;
    std::string path;
    std::string description;
    std::uint64_t seed = 1;
    Mode mode = Mode::TIMING;
    Tick max_duration = 60 * engine::PS_PER_S; // the run stops here at the latest
    std::optional<Tick> duration;              // run exactly this long (else: until finite workloads end)
    std::vector<MachineConfig> machines;
};

} // namespace kdsim::system
