// A per-CPU workqueue worker (kernel/workqueue.c, reduced): queue_work_on() appends a work item
// to the worker pool of one CPU under the pool lock (raw_spin_lock_irqsave) and wakes its
// kworker if it sleeps; the kworker runs items in order in task context
// (process_one_work), calling cond_resched() between items, and sleeps when the list is empty.
// A work item that is already pending is not queued twice (WORK_STRUCT_PENDING); a running
// item may be queued again, and then runs again.
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"

#include <cstdint>
#include <deque>
#include <string>

namespace kdsim::kernel {

struct WorkStruct {
    using Fn = engine::Task<> (*)(Cpu& cpu, void* ctx);
    Fn fn = nullptr;
    void* ctx = nullptr;
    bool pending = false;
};

struct WorkqueueStats {
    std::uint64_t queued = 0;
    std::uint64_t executed = 0;
    std::uint64_t wakeups = 0;
};

class WorkerPool {
public:
    // Creates the kworker task on `cpu` (pinned, SCHED_NORMAL).
    WorkerPool(Cpu& cpu, const WorkqueueCosts& costs, std::string name);
    Cpu& cpu() { return cpu_; }
    // queue_work_on(this CPU): called from any context on `caller` (which pays). Returns false
    // when the item was already pending.
    engine::Task<bool> queue_work(Cpu& caller, WorkStruct& w);
    const WorkqueueStats& stats() const { return stats_; }

private:
    static engine::Task<> worker_thread(WorkerPool& p);

    Cpu& cpu_;
    WorkqueueCosts costs_;
    std::deque<WorkStruct*> list_;
    TaskStruct* task_ = nullptr;
    bool sleeping_ = false;
    WorkqueueStats stats_;
};

} // namespace kdsim::kernel
