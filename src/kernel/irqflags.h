// The IRQ-masking primitives as model code calls them (include/linux/irqflags.h). Each one
// charges its cost from the profile to Cat::IRQ_MASK and is counted, so what a masking
// implementation costs falls out of how often the modelled paths mask, not out of a constant.
// Unmasking is a point where pending interrupts are taken at once.
//
// They are awaitables rather than coroutines: they run on every lock and queue operation of the
// modelled paths, and a coroutine's frame and dispatch cost the simulator more than their bodies
// (docs/performance.md, issue 17). `co_await local_irq_save(cpu)` behaves as the coroutine did.
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"

#include <coroutine>

namespace kdsim::kernel {

// local_irq_save's awaitable: the exec of its cost; yields the previous mask state.
struct [[nodiscard]] IrqSaveAwaiter {
    Cpu::ExecAwaiter exec;
    bool flags;
    bool await_ready() noexcept { return exec.await_ready(); }
    void await_suspend(std::coroutine_handle<> h) noexcept { exec.await_suspend(h); }
    bool await_resume() const noexcept { return flags; }
};

// local_irq_enable's and local_irq_restore's awaitable: the exec of the cost, then the new mask
// state, then a point where pending interrupts are taken. Done in place when the exec is
// (Cpu::ExecAwaiter); else the caller suspends for the exec followed by Point::IRQ_RESTORE, which
// sets the mask when the exec has ended (no coroutine of its own).
class [[nodiscard]] IrqRestoreAwaiter {
public:
    IrqRestoreAwaiter(Cpu& cpu, Cycles c, bool flags) : exec_(cpu.exec(c, Cat::IRQ_MASK)), flags_(flags) {}
    bool await_ready() noexcept;
    void await_suspend(std::coroutine_handle<> h) noexcept;
    void await_resume() const noexcept {}

private:
    bool restored_in_place() noexcept;

    Cpu::ExecAwaiter exec_;
    bool flags_;
    bool in_place_ = false;
};

// local_irq_disable: must be paired with local_irq_enable in the same context.
// Models: local_irq_disable() (include/linux/irqflags.h)
inline Cpu::ExecAwaiter local_irq_disable(Cpu& cpu) {
    cpu.count_irqflag_op(0);
    cpu.set_irqs_disabled(true);
    return cpu.exec(cpu.costs().local_irq_disable, Cat::IRQ_MASK);
}
// local_irq_enable: takes pending interrupts before the caller continues.
// Models: local_irq_enable() (include/linux/irqflags.h)
inline IrqRestoreAwaiter local_irq_enable(Cpu& cpu) {
    cpu.count_irqflag_op(1);
    return {cpu, cpu.costs().local_irq_enable, false};
}
// Models: local_irq_save() (include/linux/irqflags.h)
// Returns the previous mask state for local_irq_restore.
inline IrqSaveAwaiter local_irq_save(Cpu& cpu) {
    cpu.count_irqflag_op(2);
    const bool flags = cpu.irqs_disabled();
    cpu.set_irqs_disabled(true);
    return {cpu.exec(cpu.costs().local_irq_save, Cat::IRQ_MASK), flags};
}
// Models: local_irq_restore() (include/linux/irqflags.h)
inline IrqRestoreAwaiter local_irq_restore(Cpu& cpu, bool flags) {
    cpu.count_irqflag_op(3);
    return {cpu, cpu.costs().local_irq_restore, flags};
}

} // namespace kdsim::kernel
