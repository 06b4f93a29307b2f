// Scheduler entry points as model code calls them (kernel/sched/core.c, include/linux/sched.h).
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"

namespace kdsim::kernel {

// preempt_disable: `who` names the holder for the watchdog report. Must pair with
// preempt_enable in the same context.
inline void preempt_disable(Cpu& cpu, const char* who) {
    if ((cpu.preempt_count() & PREEMPT_MASK) == 0) cpu.set_preempt_holder(who);
    cpu.preempt_count_add(PREEMPT_OFFSET);
}
// preempt_enable: a preemption point under PREEMPT=full when the count reaches zero.
engine::Task<> preempt_enable(Cpu& cpu);

// cond_resched: reschedules if need_resched under none/voluntary (a no-op under full).
engine::Task<> cond_resched(Cpu& cpu);
// might_sleep's implicit reschedule under PREEMPT_VOLUNTARY.
engine::Task<> might_resched(Cpu& cpu);

// try_to_wake_up with its cost charged to the caller.
engine::Task<> try_to_wake_up(Cpu& cpu, TaskStruct& t);

// hrtimer_nanosleep to an absolute time: arms a timer whose expiry wakes the caller.
engine::Task<> hrtimer_sleep_until(Cpu& cpu, Tick expiry);

// System-call boundary of a user task: entering the kernel, and exit_to_user_mode (which may
// reschedule and restores user SIMD state lazily).
engine::Task<> syscall_enter(Cpu& cpu);
engine::Task<> syscall_exit(Cpu& cpu);

} // namespace kdsim::kernel
