// For the crypto path tests: run the one task a test created and read what it cost.
#pragma once

#include "arch/simd.h"
#include "engine/simulation.h"
#include "kernel/cpu.h"

#include <cstdint>

namespace kdsim::crypto::testing {

// The task's crypto and SIMD begin/end cycles (task context), and the SIMD unit's brackets and
// fallbacks.
struct TaskCrypto {
    kernel::Cycles crypto = 0, begin_end = 0;
    std::uint64_t brackets = 0, fallbacks = 0;
};

// Boots `cpu`, runs one simulated second (the tests' tasks end long before) and reads TaskCrypto.
inline TaskCrypto run_task(engine::Simulation& sim, kernel::Cpu& cpu, const arch::SimdUnit& unit) {
    cpu.boot();
    sim.run(engine::PS_PER_S);
    cpu.finish();
    const auto& c = cpu.stats().cycles[static_cast<std::size_t>(kernel::CtxKind::TASK)];
    return {c[static_cast<std::size_t>(kernel::Cat::CRYPTO)], c[static_cast<std::size_t>(kernel::Cat::SIMD_BEGIN_END)],
            unit.stats().brackets, unit.stats().fallbacks};
}

} // namespace kdsim::crypto::testing
