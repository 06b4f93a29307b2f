// Per-CPU high-resolution timers (kernel/time/hrtimer.c): armed timers are kept sorted by
// their hard expiry; the earliest has one engine event. A timer armed with a range (timer slack,
// hrtimer_start_range_ns) may expire at any timer interrupt between its soft and hard expiry, so
// sleeps with slack coalesce with the tick and other timers instead of each costing an interrupt. At expiry the local timer interrupt is raised,
// so a timer is late exactly when the CPU has interrupts masked, as on real hardware; the
// callbacks run in hardirq context (hrtimer_interrupt), which also hosts the scheduler tick. In a
// guest each timer interrupt first costs its delivery through the hypervisor (a profile figure).
#include "kernel/cpu.h"

#include <algorithm>

namespace kdsim::kernel {

// Models: hrtimer_start_range_ns() (kernel/time/hrtimer.c)
std::uint32_t Cpu::hrtimer_start_range(Tick soft, Tick slack, TimerFn fn, void* ctx) {
    HrTimer t{soft + slack, soft, fn, ctx, next_timer_id_++, true};
    auto it = std::upper_bound(timers_.begin(), timers_.end(), t, [](const HrTimer& a, const HrTimer& b) {
        return a.expiry < b.expiry || (a.expiry == b.expiry && a.id < b.id);
    });
    timers_.insert(it, t);
    arm_next_timer_event();
    return t.id;
}

// Models: hrtimer_cancel() (kernel/time/hrtimer.c)
void Cpu::hrtimer_cancel(std::uint32_t handle) {
    auto it = std::find_if(timers_.begin(), timers_.end(), [&](const HrTimer& t) { return t.id == handle; });
    if (it != timers_.end()) timers_.erase(it);
}

void Cpu::arm_next_timer_event() {
    if (timers_.empty()) return;
    Tick first = timers_.front().expiry;
    if (first < timer_event_at_) {
        timer_event_at_ = first;
        sim_.schedule_at(first, this, EV_TIMER);
    }
}

// Walks the queue in hard-expiry order and stops at the first timer whose soft expiry is still
// ahead, as the kernel does ("if (basenow < hrtimer_get_softexpires_tv64(timer)) break;").
// Models: __hrtimer_run_queues() (kernel/time/hrtimer.c)
void Cpu::expire_timers() {
    std::size_t n = 0;
    while (n < timers_.size() && timers_[n].soft <= now()) ++n;
    if (n == 0) return;
    expired_.insert(expired_.end(), timers_.begin(), timers_.begin() + static_cast<std::ptrdiff_t>(n));
    timers_.erase(timers_.begin(), timers_.begin() + static_cast<std::ptrdiff_t>(n));
    raise_irq(timer_vector_);
}

// hrtimer_interrupt: run every expired timer's callback.
// Models: hrtimer_interrupt() (kernel/time/hrtimer.c)
engine::Task<> Cpu::tick_handler(Cpu& cpu, void*) {
    // in a guest, the interrupt reached it through the hypervisor (exit, injection, re-entry)
    if (const auto& g = cpu.costs_.guest_timer_delivery; g && *g > 0) co_await cpu.exec(*g, Cat::VIRT);
    std::size_t i = 0;
    while (i < cpu.expired_.size()) {
        HrTimer t = cpu.expired_[i++];
        Cycles extra = t.fn(cpu, t.ctx, t.soft);
        co_await cpu.exec(cpu.costs_.timer_handler + extra, Cat::TIMER, Text::TIMER_INTERRUPT);
    }
    cpu.expired_.clear();
}

} // namespace kdsim::kernel
