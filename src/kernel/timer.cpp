#include "kernel/timer.h"

#include <algorithm>

namespace kdsim::kernel {

TimerBase::TimerBase(Cpu& cpu) : cpu_(cpu) {
    pending_.reserve(16);
    due_.reserve(16);
    cpu_.open_softirq(TIMER_SOFTIRQ, &TimerBase::run_timer_softirq, this);
}

TimerBase& Cpu::timer_base() {
    if (!timer_base_) timer_base_ = std::make_unique<TimerBase>(*this);
    return *timer_base_;
}

void TimerBase::add(TimerList& t) {
    t.base = this;
    pending_.push_back(&t);
    rearm();
}

void TimerBase::remove(TimerList& t) {
    auto it = std::find(pending_.begin(), pending_.end(), &t);
    if (it != pending_.end()) pending_.erase(it);
    t.base = nullptr;
}

void TimerBase::rearm() {
    Tick first = std::numeric_limits<Tick>::max();
    for (const TimerList* t : pending_) first = std::min(first, t->expires);
    if (first < armed_at_) {
        armed_at_ = first;
        cpu_.hrtimer_start(first, &TimerBase::tick_fn, this);
    }
}

// The tick at which a timer is due: raise TIMER_SOFTIRQ (run_local_timers).
Cycles TimerBase::tick_fn(Cpu& cpu, void* ctx, Tick expiry) {
    auto& b = *static_cast<TimerBase*>(ctx);
    if (expiry == b.armed_at_) b.armed_at_ = std::numeric_limits<Tick>::max();
    cpu.raise_softirq_irqoff(TIMER_SOFTIRQ);
    return 0;
}

// Every due timer leaves the base before its callback runs (the callback may re-add it).
// Models: run_timer_softirq() (kernel/time/timer.c)
engine::Task<> TimerBase::run_timer_softirq(Cpu& cpu, void* ctx) {
    auto& b = *static_cast<TimerBase*>(ctx);
    b.due_.clear();
    for (std::size_t i = 0; i < b.pending_.size();) {
        TimerList* t = b.pending_[i];
        if (t->expires <= cpu.now()) {
            b.due_.push_back(t);
            b.pending_[i] = b.pending_.back();
            b.pending_.pop_back();
            t->base = nullptr;
        } else {
            ++i;
        }
    }
    std::sort(b.due_.begin(), b.due_.end(), [](const TimerList* x, const TimerList* y) { return x->expires < y->expires; });
    b.rearm();
    for (std::size_t i = 0; i < b.due_.size(); ++i) {
        TimerList* t = b.due_[i];
        if (t->base) continue; // re-queued by an earlier callback
        co_await t->function(cpu, *t);
    }
}

// Models: mod_timer() (kernel/time/timer.c)
bool mod_timer(Cpu& cpu, TimerList& t, Tick expires) {
    const Tick period = cpu.tick_period();
    const Tick at = (expires + period - 1) / period * period;
    const bool was = t.base != nullptr;
    TimerBase& local = cpu.timer_base();
    if (t.base && t.base != &local) t.base->remove(t);
    t.expires = at;
    if (t.base == &local) local.rearm();
    else local.add(t);
    return was;
}

// Models: del_timer() (kernel/time/timer.c)
bool del_timer(TimerList& t) {
    if (!t.base) return false;
    t.base->remove(t);
    return true;
}

} // namespace kdsim::kernel
