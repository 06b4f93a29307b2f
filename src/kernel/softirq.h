// Bottom halves as model code uses them (kernel/softirq.c, include/linux/bottom_half.h).
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"

namespace kdsim::kernel {

// The two are awaitables, not coroutines, for the simulator's speed (as kernel/irqflags.h).

// local_bh_disable: adds SOFTIRQ_DISABLE_OFFSET; softirqs raised meanwhile wait.
// Models: local_bh_disable() (include/linux/bottom_half.h)
inline Cpu::ExecAwaiter local_bh_disable(Cpu& cpu) {
    ++cpu.stats().bh_disable_ops;
    cpu.preempt_count_add(SOFTIRQ_DISABLE_OFFSET);
    return cpu.exec(cpu.costs().local_bh_disable, Cat::BH_MASK);
}
// local_bh_enable: removes it; outside interrupt context, runs pending softirqs in the
// caller's context before returning, then is a preemption point like preempt_enable().
// Must pair with local_bh_disable in the same context.
// Models: __local_bh_enable_ip() (kernel/softirq.c)
inline Cpu::ExecPointAwaiter local_bh_enable(Cpu& cpu) {
    cpu.preempt_count_sub(SOFTIRQ_DISABLE_OFFSET);
    return cpu.exec_point(cpu.costs().local_bh_enable, Cat::BH_MASK, Point::BH_ENABLE);
}
// raise_softirq: local_irq_save; raise_softirq_irqoff; local_irq_restore.
engine::Task<> raise_softirq(Cpu& cpu, unsigned nr);

} // namespace kdsim::kernel
