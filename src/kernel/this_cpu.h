// smp_processor_id() for code that a movable task runs: the CPU the code runs on now.
//
// A task with several allowed CPUs (TaskStruct::cpus_allowed) may be moved to another CPU at any
// await where it can be preempted or sleep, so its body takes its CPU from its task after every
// such await and holds no Cpu& across one (cpu.h, docs/architecture.md). Model code that runs
// both in such a task and in interrupt context (TCP's output path: tcp_write_xmit from the writer
// and from the ACK's softirq) takes a ThisCpu: a fixed CPU where the code cannot move (interrupt
// context, a pinned task: what a Cpu& converts to), else the task whose `cpu` it reads at each
// use. A Cpu& made from it at a call (`stack.ip_output(cpu, p)`) is the CPU of that moment.
// Mirrors: smp_processor_id() / raw_smp_processor_id() (include/linux/smp.h).
#pragma once

#include "kernel/cpu.h"

namespace kdsim::kernel {

class ThisCpu {
public:
    // A fixed CPU: interrupt context, or a task that cannot move.
    ThisCpu(Cpu& cpu) noexcept : cpu_(&cpu) {} // NOLINT(google-explicit-constructor): a Cpu& is a fixed ThisCpu
    // The CPU of task `self` from now on: `start` while the task is pinned (no cpus_allowed), else
    // whatever CPU the task is on at each use.
    static ThisCpu of(TaskStruct& self, Cpu& start) noexcept {
        ThisCpu c(start);
        if (self.cpus_allowed.size() > 1) c.task_ = &self;
        return c;
    }
    Cpu& get() const noexcept { return task_ ? *task_->cpu : *cpu_; }
    operator Cpu&() const noexcept { return get(); } // NOLINT(google-explicit-constructor)
    Cpu* operator->() const noexcept { return &get(); }
    // Whether the code may move between uses (a movable task's).
    bool movable() const noexcept { return task_ != nullptr; }

private:
    Cpu* cpu_;
    TaskStruct* task_ = nullptr;
};

} // namespace kdsim::kernel
