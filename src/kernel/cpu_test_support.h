// Shared by the kernel model's tests: round cost figures that make hand-derived times easy, and
// an event that raises an interrupt on a CPU at a chosen time.
#pragma once

#include "kernel/cpu.h"

namespace kdsim::kernel::testing {

inline KernelCosts round_costs() {
    return KernelCosts{.context_switch = 2000, .wakeup = 600, .wakeup_activate = 400, .tick = 500, .cond_resched = 10,
                       .irq_entry = 300, .irq_exit = 200, .timer_handler = 400, .softirq_round = 100,
                       .guest_timer_delivery = std::nullopt, .device_irq_delivery = std::nullopt,
                       .local_irq_disable = 3, .local_irq_enable = 4, .local_irq_save = 12,
                       .local_irq_restore = 5, .local_bh_disable = 4, .local_bh_enable = 14};
}

// Raises `vector` on `cpu` when its event fires.
struct IrqAt final : engine::EventTarget {
    Cpu& cpu;
    unsigned vector;
    IrqAt(Cpu& c, unsigned v) : cpu(c), vector(v) {}
    void on_event(std::uint64_t) override { cpu.raise_irq(vector); }
};

} // namespace kdsim::kernel::testing
