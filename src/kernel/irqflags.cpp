#include "kernel/irqflags.h"

namespace kdsim::kernel {

// The exec done: the new mask, then whether the point would resume at once.
inline bool IrqRestoreAwaiter::restored_in_place() noexcept {
    in_place_ = true;
    exec_.cpu.set_irqs_disabled(flags_);
    // The point takes pending interrupts; with none deliverable it would resume at once. The
    // running coroutine's frame is the stack's top.
    return flags_ || !exec_.cpu.deliverable_irqs_at(*exec_.cpu.running_);
}

// The exec as ExecAwaiter::await_ready takes it, with exec_in_place's rare calls out of line
// (ready_asked), so that the common path saves no registers.
bool IrqRestoreAwaiter::await_ready() noexcept {
    Cpu& cpu = exec_.cpu;
    if (exec_.e.remaining != 0) {
        if (!cpu.defer_exec_) return false;
        switch (cpu.exec_in_place_plain(exec_.e, exec_.due)) {
        case Cpu::InPlace::REFUSED: return false;
        case Cpu::InPlace::ASK: [[unlikely]] return ready_asked();
        case Cpu::InPlace::DONE: break;
        }
    }
    return restored_in_place();
}

// await_ready when exec_in_place_plain asked: exec_in_place with its calls.
[[gnu::noinline, gnu::cold]] bool IrqRestoreAwaiter::ready_asked() noexcept {
    if (!exec_.cpu.exec_in_place(exec_.e, exec_.due)) return false;
    return restored_in_place();
}

void IrqRestoreAwaiter::await_suspend(std::coroutine_handle<> h) noexcept {
    if (in_place_) exec_.cpu.suspend_point(h, Point::IRQ_ENABLE);
    else exec_.cpu.suspend_exec_irq_restore(h, exec_.e, flags_);
}

} // namespace kdsim::kernel
