// Timer-wheel timers (kernel/time/timer.c): a timer_list runs its callback in TIMER_SOFTIRQ on
// the CPU whose base it is queued on, at the first jiffy tick at or after its expiry. TCP's
// retransmit and delayed-ACK timers are timer_lists. Each CPU's base keeps its pending timers
// in a preallocated list and one hrtimer at the earliest expiry (standing in for the tick that
// raises TIMER_SOFTIRQ); moving a timer later (mod_timer on every ACK) touches no hrtimer.
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"

#include <cstdint>
#include <limits>
#include <vector>

namespace kdsim::kernel {

class TimerBase;

struct TimerList {
    // The callback: runs in TIMER_SOFTIRQ on `cpu`.
    using Fn = engine::Task<> (*)(Cpu& cpu, TimerList& t);
    Fn function = nullptr;
    void* data = nullptr; // the owner, for the callback
    Tick expires = 0;     // on a jiffy boundary
    TimerBase* base = nullptr; // non-null while pending
};

class TimerBase {
public:
    explicit TimerBase(Cpu& cpu);
    TimerBase(const TimerBase&) = delete;
    TimerBase& operator=(const TimerBase&) = delete;

    void add(TimerList& t);
    void remove(TimerList& t);
    void rearm(); // the hrtimer for the earliest pending expiry, if earlier than the armed one

private:
    static Cycles tick_fn(Cpu& cpu, void* ctx, Tick expiry);
    static engine::Task<> run_timer_softirq(Cpu& cpu, void* ctx);
    Cpu& cpu_;
    std::vector<TimerList*> pending_;
    std::vector<TimerList*> due_;
    Tick armed_at_ = std::numeric_limits<Tick>::max();
};

// mod_timer: (re)queues `t` on the calling CPU's base to expire at the first jiffy at or after
// `expires`. Returns whether it was pending.
bool mod_timer(Cpu& cpu, TimerList& t, Tick expires);
// del_timer: dequeues `t`; returns whether it was pending.
bool del_timer(TimerList& t);
inline bool timer_pending(const TimerList& t) { return t.base != nullptr; }

} // namespace kdsim::kernel
