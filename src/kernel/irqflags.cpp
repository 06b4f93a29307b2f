#include "kernel/irqflags.h"

namespace kdsim::kernel {

// The exec done: the new mask, then whether the point would resume at once.
inline bool IrqRestoreAwaiter::restored_in_place() noexcept {
    in_place_ = true;
    exec_.cpu.set_irqs_disabled(flags_);
    // The point takes pending interrupts; with none deliverable it would resume at once. The
    // running coroutine's frame is the stack's top.
    return flags_ || exec_.cpu.pending_irqs_ == 0 || !exec_.cpu.deliverable_irqs_at(*exec_.cpu.running_);
}

// The exec as ExecAwaiter::await_ready takes it, then the new mask.
bool IrqRestoreAwaiter::await_ready() noexcept { return exec_.await_ready() && restored_in_place(); }

void IrqRestoreAwaiter::await_suspend(std::coroutine_handle<> h) noexcept {
    if (in_place_) exec_.cpu.suspend_point(h, Point::IRQ_ENABLE);
    else exec_.cpu.suspend_exec_irq_restore(h, exec_.pending(), flags_, exec_.cpu.refused_due_);
}

} // namespace kdsim::kernel
