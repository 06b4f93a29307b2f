#include "kernel/irqflags.h"

namespace kdsim::kernel {

namespace {

// The exec that could not be done in place, then the mask state and the point.
engine::Task<> restore_after_exec(Cpu& cpu, Cycles c, bool flags) {
    co_await cpu.exec(c, Cat::IRQ_MASK);
    cpu.set_irqs_disabled(flags);
    if (!flags) co_await cpu.point(Point::IRQ_ENABLE);
}

} // namespace

bool IrqRestoreAwaiter::await_ready() noexcept {
    if (!exec_.await_ready()) return false;
    in_place_ = true;
    exec_.cpu.set_irqs_disabled(flags_);
    // The point takes pending interrupts; with none deliverable it would resume at once.
    return flags_ || !exec_.cpu.irqs_deliverable();
}

std::coroutine_handle<> IrqRestoreAwaiter::await_suspend(std::coroutine_handle<> h) noexcept {
    if (in_place_) {
        exec_.cpu.point(Point::IRQ_ENABLE).await_suspend(h);
        return std::noop_coroutine();
    }
    slow_ = restore_after_exec(exec_.cpu, exec_.e.remaining, flags_);
    return std::move(slow_).operator co_await().await_suspend(h);
}

} // namespace kdsim::kernel
