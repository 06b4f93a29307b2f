// The cycle costs the generic kernel model charges, loaded from an architecture profile
// (data/profiles/<family>/<part>.toml, sections [sched], [irq], [irqflags], [bh]). The model
// never holds a cost constant of its own; every figure here has a unit and a source in its file.
#pragma once

#include "engine/time.h"

#include <cstdint>
#include <optional>

namespace kdsim::kernel {

using engine::Cycles;

struct KernelCosts {
    // [sched]
    Cycles context_switch = 0; // __schedule + switch_to, no FPU work
    Cycles wakeup = 0;          // try_to_wake_up up to ttwu_queue: pi_lock, state test, select_task_rq
    Cycles wakeup_activate = 0; // ttwu_do_activate: rq lock, update_rq_clock, enqueue, check_preempt_curr
    Cycles tick = 0;           // scheduler_tick in the timer interrupt
    Cycles cond_resched = 0;   // a cond_resched() call that does not reschedule
    Cycles load_balance = 0;   // one load_balance() of a 2-8 CPU domain, with the pull when it moves one
    // A whole try_to_wake_up on one CPU, the activation included (no wake_list).
    Cycles wakeup_whole() const { return wakeup + wakeup_activate; }
    // [irq]
    Cycles irq_entry = 0;
    Cycles irq_exit = 0;
    Cycles timer_handler = 0; // hrtimer_interrupt: expire one timer
    Cycles softirq_round = 0; // __do_softirq overhead per restart round
    // A guest's timer interrupt: the host hrtimer's expiry exits the vCPU, KVM injects the
    // interrupt and re-enters it; the vCPU runs none of the guest's code meanwhile. Given only for
    // a machine that runs as a guest (absent: bare metal, nothing is charged).
    std::optional<std::uint64_t> guest_timer_delivery;
    // A device interrupt's flight, in ns: from the device raising it (an MSI memory write crossing
    // PCIe to the GIC ITS or the x86 LAPIC, or a wired line through the GIC distributor) until
    // the CPU can take it. A delay, not CPU work (the CPU's side is irq_entry). Absent: none.
    std::optional<std::uint64_t> device_irq_delivery;
    // [irqflags]
    Cycles local_irq_disable = 0;
    Cycles local_irq_enable = 0;
    Cycles local_irq_save = 0;
    Cycles local_irq_restore = 0;
    // [bh]
    Cycles local_bh_disable = 0;
    Cycles local_bh_enable = 0;
    // The interrupt-masking implementation's extra work on every exception entry and return
    // (0 for the architecture's plain masking; [irqmask.<impl>] of a profile otherwise).
    Cycles irq_entry_extra = 0;
    Cycles exception_return_extra = 0;
    // Lazy (soft) masking only: taking an interrupt that arrives while soft-masked (record it,
    // hard-disable, return) and replaying it at unmask.
    Cycles soft_mask_hit = 0;
    Cycles soft_mask_replay = 0;
};

// One interrupt-masking implementation's costs ([irqmask.<impl>] of a profile), applied over
// KernelCosts by the machine that selects it.
struct IrqMaskCosts {
    Cycles local_irq_disable = 0, local_irq_enable = 0, local_irq_save = 0, local_irq_restore = 0;
    Cycles irq_entry_extra = 0, exception_return_extra = 0;
};

// The workqueue's own work per item ([tunnel] queue_work and process_one_work of a profile).
struct WorkqueueCosts {
    Cycles queue_work = 0;       // queue_work_on: pool lock, insert (the wake-up is charged apart)
    Cycles process_one_work = 0; // the worker's per-item overhead
};

} // namespace kdsim::kernel
