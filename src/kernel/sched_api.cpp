// Scheduler entry points called from model code; see sched.h for their contracts.
#include "kernel/sched.h"

#include "kernel/irqflags.h"

#include <algorithm>

namespace kdsim::kernel {

// Models: try_to_wake_up() (kernel/sched/core.c)
// Models: ttwu_queue() (kernel/sched/core.c)
engine::Task<> try_to_wake_up(Cpu& cpu, TaskStruct& t) {
    bool flags = co_await local_irq_save(cpu); // raw_spin_lock_irqsave(&p->pi_lock)
    co_await cpu.exec(cpu.costs().wakeup, Cat::SCHEDULER, Text::WAKEUP);
    if (!cpu.ttwu_queue_wakelist(t)) {
        // rq_lock, update_rq_clock, ttwu_do_activate, rq_unlock on the waker (also for a task
        // that was not sleeping: the whole figure stays charged there)
        co_await cpu.exec(cpu.costs().wakeup_activate, Cat::SCHEDULER, Text::WAKEUP_ACTIVATE);
        cpu.ttwu_do_activate(t);
    }
    co_await local_irq_restore(cpu, flags);
}

namespace {
// Models: hrtimer_wakeup() (kernel/time/hrtimer.c)
Cycles wake_sleeper(Cpu& cpu, void* ctx, Tick) {
    return cpu.ttwu_cycles(*static_cast<TaskStruct*>(ctx));
}
} // namespace

// Models: schedule_hrtimeout_range() (kernel/time/hrtimer.c)
engine::Task<> schedule_hrtimeout_range(Cpu& cpu, Tick expiry, Tick slack) {
    TaskStruct* self = cpu.current();
    if (expiry <= cpu.now()) co_return;
    cpu.hrtimer_start_range(expiry, slack, &wake_sleeper, self);
    co_await cpu.block();
}

// __estimate_accuracy's divfactor is 1000: nice (200 for nice > 0) is not modelled.
// Models: select_estimate_accuracy() (fs/select.c)
Tick select_estimate_accuracy(const Cpu& cpu, Tick expiry) {
    const TaskStruct* self = cpu.current();
    if (self->policy != SchedPolicy::NORMAL) return 0; // rt_task(current)
    constexpr Tick MAX_SLACK = 100 * engine::PS_PER_MS;
    const Tick timeout = expiry > cpu.now() ? expiry - cpu.now() : 0;
    return std::max(std::min(timeout / 1000, MAX_SLACK), self->timer_slack);
}

// Models: sched_setaffinity() (kernel/sched/core.c)
void set_cpus_allowed(TaskStruct& p, std::vector<Cpu*> cpus) {
    p.cpus_allowed = std::move(cpus);
    p.recent_used_cpu = p.cpu; // wake_up_new_task
}

// Models: syscall_enter_from_user_mode() (kernel/entry/common.c)
Cpu::ExecAwaiter syscall_enter(Cpu& cpu) {
    cpu.current()->in_user = false;
    return cpu.exec(cpu.costs().irq_entry_extra, Cat::IRQ_MASK);
}

// exit_to_user_mode_loop's schedule() may move a task with several allowed CPUs: the return to
// user after it runs on the CPU the task is on then (for any other task, `cpu`).
// Models: syscall_exit_to_user_mode() (kernel/entry/common.c)
engine::Task<> syscall_exit(Cpu& cpu) {
    TaskStruct& self = *cpu.current();
    co_await cpu.point(Point::RETURN_TO_USER);
    Cpu& here = *self.cpu;
    co_await here.exec(here.costs().exception_return_extra, Cat::IRQ_MASK);
}

} // namespace kdsim::kernel
