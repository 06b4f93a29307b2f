// Shared by the KVM layer's tests: round [kvm] figures that make hand-derived times easy (with
// kernel::testing::round_costs() for the host and guest kernels), and an event that injects an
// interrupt into a vCPU at a chosen time.
#pragma once

#include "engine/simulation.h"
#include "kvm/kvm.h"

#include <cstdint>

namespace kdsim::kvm::testing {

inline KvmCosts round_kvm() {
    return KvmCosts{.world_switch = 1000, .abort_decode = 400, .vgic_mmio = 150, .ioeventfd = 300,
                    .vcpu_put_load = 1100, .user_exit = 600, .vmm_mmio = 1500, .sgi_trap = 600,
                    .ipi_latency = 200, .vgic_flush = 450, .timer_irq = 400, .wfi_block = 300,
                    .icv_access = 60, .spin_poll = 5, .fpsimd_trap = 250};
}

// The host injects vector 8 into a vCPU when the event fires (kvm_vgic_inject_irq + kick).
struct KickAt final : engine::EventTarget {
    Vcpu& v;
    explicit KickAt(Vcpu& x) : v(x) {}
    void on_event(std::uint64_t) override { v.kick(8); }
};

} // namespace kdsim::kvm::testing
