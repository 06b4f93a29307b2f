// The IRQ-masking primitives as model code calls them (include/linux/irqflags.h). Each one
// charges its cost from the profile to Cat::IRQ_MASK and is counted, so what a masking
// implementation costs falls out of how often the modelled paths mask, not out of a constant.
// Unmasking is a point where pending interrupts are taken at once.
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"

namespace kdsim::kernel {

// local_irq_disable: must be paired with local_irq_enable in the same context.
engine::Task<> local_irq_disable(Cpu& cpu);
// local_irq_enable: takes pending interrupts before the caller continues.
engine::Task<> local_irq_enable(Cpu& cpu);
// local_irq_save: returns the previous mask state for local_irq_restore.
engine::Task<bool> local_irq_save(Cpu& cpu);
engine::Task<> local_irq_restore(Cpu& cpu, bool flags);

} // namespace kdsim::kernel
