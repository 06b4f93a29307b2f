// Scheduler entry points called from model code; see sched.h for their contracts.
#include "kernel/sched.h"

#include "kernel/irqflags.h"

namespace kdsim::kernel {

// Models: preempt_enable() (include/linux/preempt.h)
engine::Task<> preempt_enable(Cpu& cpu) {
    cpu.preempt_count_sub(PREEMPT_OFFSET);
    if (cpu.preempt_count() == 0) co_await cpu.point(Point::PREEMPT_ENABLE);
}

// Models: __cond_resched() (kernel/sched/core.c)
engine::Task<> cond_resched(Cpu& cpu) {
    if (cpu.config().preempt == PreemptModel::FULL) co_return;
    co_await cpu.exec(cpu.costs().cond_resched, Cat::SCHEDULER);
    co_await cpu.point(Point::COND_RESCHED);
}

// Models: might_resched() (include/linux/kernel.h)
engine::Task<> might_resched(Cpu& cpu) {
    if (cpu.config().preempt != PreemptModel::VOLUNTARY) co_return;
    co_await cpu.exec(cpu.costs().cond_resched, Cat::SCHEDULER);
    co_await cpu.point(Point::MIGHT_RESCHED);
}

// Models: try_to_wake_up() (kernel/sched/core.c)
engine::Task<> try_to_wake_up(Cpu& cpu, TaskStruct& t) {
    bool flags = co_await local_irq_save(cpu); // raw_spin_lock_irqsave(&p->pi_lock)
    co_await cpu.exec(cpu.costs().wakeup, Cat::SCHEDULER);
    cpu.wake_up_process(t);
    co_await local_irq_restore(cpu, flags);
}

namespace {
// Models: hrtimer_wakeup() (kernel/time/hrtimer.c)
Cycles wake_sleeper(Cpu& cpu, void* ctx, Tick) {
    cpu.wake_up_process(*static_cast<TaskStruct*>(ctx));
    return cpu.costs().wakeup;
}
} // namespace

// Models: do_nanosleep() (kernel/time/hrtimer.c)
engine::Task<> hrtimer_sleep_until(Cpu& cpu, Tick expiry) {
    TaskStruct* self = cpu.current();
    if (expiry <= cpu.now()) co_return;
    cpu.hrtimer_start(expiry, &wake_sleeper, self);
    co_await cpu.block();
}

// Models: syscall_enter_from_user_mode() (kernel/entry/common.c)
engine::Task<> syscall_enter(Cpu& cpu) {
    cpu.current()->in_user = false;
    co_await cpu.exec(cpu.costs().irq_entry_extra, Cat::IRQ_MASK);
}

// Models: syscall_exit_to_user_mode() (kernel/entry/common.c)
engine::Task<> syscall_exit(Cpu& cpu) {
    co_await cpu.point(Point::RETURN_TO_USER);
    co_await cpu.exec(cpu.costs().exception_return_extra, Cat::IRQ_MASK);
}

} // namespace kdsim::kernel
