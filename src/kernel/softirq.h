// Bottom halves as model code uses them (kernel/softirq.c, include/linux/bottom_half.h).
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"

namespace kdsim::kernel {

// local_bh_disable: adds SOFTIRQ_DISABLE_OFFSET; softirqs raised meanwhile wait.
engine::Task<> local_bh_disable(Cpu& cpu);
// local_bh_enable: removes it; outside interrupt context, runs pending softirqs in the
// caller's context before returning, then is a preemption point like preempt_enable().
// Must pair with local_bh_disable in the same context.
engine::Task<> local_bh_enable(Cpu& cpu);
// raise_softirq: local_irq_save; raise_softirq_irqoff; local_irq_restore.
engine::Task<> raise_softirq(Cpu& cpu, unsigned nr);

} // namespace kdsim::kernel
