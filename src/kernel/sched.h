// Scheduler entry points as model code calls them (kernel/sched/core.c, include/linux/sched.h).
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"

#include <vector>

namespace kdsim::kernel {

// preempt_disable: `who` names the holder for the watchdog report. Must pair with
// preempt_enable in the same context.
inline void preempt_disable(Cpu& cpu, const char* who) {
    if ((cpu.preempt_count() & PREEMPT_MASK) == 0) cpu.set_preempt_holder(who);
    cpu.preempt_count_add(PREEMPT_OFFSET);
}
// The next three are awaitables, not coroutines, for the simulator's speed (as
// kernel/irqflags.h).

// preempt_enable: a preemption point under PREEMPT=full when the count reaches zero.
// Models: preempt_enable() (include/linux/preempt.h)
inline Cpu::ExecPointAwaiter preempt_enable(Cpu& cpu) {
    cpu.preempt_count_sub(PREEMPT_OFFSET);
    return cpu.exec_point(0, Cat::OTHER, Point::PREEMPT_ENABLE, cpu.preempt_count() != 0);
}

// cond_resched: reschedules if need_resched under none/voluntary (a no-op under full).
// Models: __cond_resched() (kernel/sched/core.c)
inline Cpu::ExecPointAwaiter cond_resched(Cpu& cpu) {
    return cpu.exec_point(cpu.costs().cond_resched, Cat::SCHEDULER, Point::COND_RESCHED,
                          cpu.config().preempt == PreemptModel::FULL);
}
// might_sleep's implicit reschedule under PREEMPT_VOLUNTARY.
// Models: might_resched() (include/linux/kernel.h)
inline Cpu::ExecPointAwaiter might_resched(Cpu& cpu) {
    return cpu.exec_point(cpu.costs().cond_resched, Cat::SCHEDULER, Point::MIGHT_RESCHED,
                          cpu.config().preempt != PreemptModel::VOLUNTARY);
}

// try_to_wake_up with its cost charged to the caller: sched.wakeup, then sched.wakeup_activate
// unless the task goes to its CPU's wake_list (Cpu::ttwu_queue_wakelist), whose CPU pays that.
engine::Task<> try_to_wake_up(Cpu& cpu, TaskStruct& t);

// schedule_hrtimeout_range: the caller sleeps until a timer armed over [expiry, expiry + slack]
// wakes it (at once if `expiry` has passed).
engine::Task<> schedule_hrtimeout_range(Cpu& cpu, Tick expiry, Tick slack);
// A sleep to an absolute time with no slack (hrtimer_set_expires, as kernel threads and
// SCHED_FIFO tasks get).
inline engine::Task<> hrtimer_sleep_until(Cpu& cpu, Tick expiry) { return schedule_hrtimeout_range(cpu, expiry, 0); }
// The slack of a select/poll/epoll_wait timeout of the current task that ends at `expiry`: 0 for a
// real-time task, else 0.1 % of the timeout (at most 100 ms) but at least its timer_slack.
Tick select_estimate_accuracy(const Cpu& cpu, Tick expiry);

// sched_setaffinity of a task that has not run yet: the CPUs `p` may run on (empty: only the one
// it was created on), and p->recent_used_cpu = task_cpu(p) as wake_up_new_task sets it.
void set_cpus_allowed(TaskStruct& p, std::vector<Cpu*> cpus);

// System-call boundary of a user task: entering the kernel, and exit_to_user_mode (which may
// reschedule and restores user SIMD state lazily).
Cpu::ExecAwaiter syscall_enter(Cpu& cpu); // its exec: no coroutine frame of its own
engine::Task<> syscall_exit(Cpu& cpu);

} // namespace kdsim::kernel
