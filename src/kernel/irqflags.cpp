#include "kernel/irqflags.h"

namespace kdsim::kernel {

// Models: local_irq_disable() (include/linux/irqflags.h)
engine::Task<> local_irq_disable(Cpu& cpu) {
    cpu.count_irqflag_op(0);
    cpu.set_irqs_disabled(true);
    co_await cpu.exec(cpu.costs().local_irq_disable, Cat::IRQ_MASK);
}

// Models: local_irq_enable() (include/linux/irqflags.h)
engine::Task<> local_irq_enable(Cpu& cpu) {
    cpu.count_irqflag_op(1);
    co_await cpu.exec(cpu.costs().local_irq_enable, Cat::IRQ_MASK);
    cpu.set_irqs_disabled(false);
    co_await cpu.point(Point::IRQ_ENABLE);
}

// Models: local_irq_save() (include/linux/irqflags.h)
engine::Task<bool> local_irq_save(Cpu& cpu) {
    cpu.count_irqflag_op(2);
    bool flags = cpu.irqs_disabled();
    cpu.set_irqs_disabled(true);
    co_await cpu.exec(cpu.costs().local_irq_save, Cat::IRQ_MASK);
    co_return flags;
}

// Models: local_irq_restore() (include/linux/irqflags.h)
engine::Task<> local_irq_restore(Cpu& cpu, bool flags) {
    cpu.count_irqflag_op(3);
    co_await cpu.exec(cpu.costs().local_irq_restore, Cat::IRQ_MASK);
    cpu.set_irqs_disabled(flags);
    if (!flags) co_await cpu.point(Point::IRQ_ENABLE);
}

} // namespace kdsim::kernel
