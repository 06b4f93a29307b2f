#include "kernel/workqueue.h"

#include "kernel/irqflags.h"
#include "kernel/sched.h"

namespace kdsim::kernel {

WorkerPool::WorkerPool(Cpu& cpu, const WorkqueueCosts& costs, std::string name) : cpu_(cpu), costs_(costs) {
    task_ = &cpu_.create_task(std::move(name), SchedPolicy::NORMAL, 0, true, worker_thread(*this));
}

// Models: queue_work_on() (kernel/workqueue.c)
engine::Task<bool> WorkerPool::queue_work(Cpu& caller, WorkStruct& w) {
    if (w.pending) co_return false; // test_and_set_bit(WORK_STRUCT_PENDING_BIT)
    bool flags = co_await local_irq_save(caller);
    co_await caller.exec(costs_.queue_work, Cat::QUEUEING);
    w.pending = true;
    list_.push_back(&w);
    ++stats_.queued;
    const bool wake = sleeping_;
    sleeping_ = false;
    co_await local_irq_restore(caller, flags);
    if (wake) {
        ++stats_.wakeups;
        co_await try_to_wake_up(caller, *task_);
    }
    co_return true;
}

// Models: worker_thread(), process_one_work() (kernel/workqueue.c)
engine::Task<> WorkerPool::worker_thread(WorkerPool& p) {
    Cpu& cpu = p.cpu_;
    for (;;) {
        while (!p.list_.empty()) {
            WorkStruct* w = p.list_.front();
            p.list_.pop_front();
            w->pending = false; // cleared before the function runs: it may queue itself again
            ++p.stats_.executed;
            co_await cpu.exec(p.costs_.process_one_work, Cat::QUEUEING);
            co_await w->fn(cpu, w->ctx);
            co_await cond_resched(cpu);
        }
        p.sleeping_ = true;
        co_await cpu.block();
    }
}

} // namespace kdsim::kernel
