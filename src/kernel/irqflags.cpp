#include "kernel/irqflags.h"

namespace kdsim::kernel {

bool IrqRestoreAwaiter::await_ready() noexcept {
    if (!exec_.await_ready()) return false;
    in_place_ = true;
    exec_.cpu.set_irqs_disabled(flags_);
    // The point takes pending interrupts; with none deliverable it would resume at once. The
    // running coroutine's frame is the stack's top.
    return flags_ || !exec_.cpu.deliverable_irqs_at(*exec_.cpu.running_);
}

void IrqRestoreAwaiter::await_suspend(std::coroutine_handle<> h) noexcept {
    if (in_place_) exec_.cpu.suspend_point(h, Point::IRQ_ENABLE);
    else exec_.cpu.suspend_exec_irq_restore(h, exec_.e, flags_);
}

} // namespace kdsim::kernel
