// The per-CPU scheduler: runqueue, pick_next_task, __schedule with its switch costs, wake-ups
// that decide on preemption, and the scheduler tick that ends time slices. A wake-up of a task
// on another CPU that is idle (or, which no shipped machine has, beyond this CPU's last-level
// cache) goes on that CPU's wake_list: the waker pays try_to_wake_up's own part
// (sched.wakeup), the target the activation (sched.wakeup_activate) in its call-function IPI or
// polling idle loop (6.1's TTWU_QUEUE). Local and busy-remote wake-ups activate on the waker.
//
// Mirrors kernel/sched/core.c (__schedule, try_to_wake_up, ttwu_queue, scheduler_tick), fair.c and rt.c,
// reduced to what latency questions need: SCHED_FIFO tasks by priority run before all others
// and are never time-sliced; SCHED_NORMAL tasks run in vruntime order (all at nice 0), with
// the slice max(sched_latency / nr_running, sched_min_granularity) enforced by the tick and
// wake-up preemption when the woken task's vruntime leads by sched_wakeup_granularity.
#include "kernel/cpu.h"

#include <algorithm>
#include <cstdint>

namespace kdsim::kernel {

// Models: kthread_create_on_cpu() (kernel/kthread.c)
TaskStruct& Cpu::create_task(std::string comm, SchedPolicy policy, int rt_priority, bool kthread,
                             engine::Task<> body) {
    auto* t = new TaskStruct;
    t->pid = next_pid_++;
    t->comm = std::move(comm);
    t->policy = policy;
    t->rt_priority = rt_priority;
    t->kthread = kthread;
    t->cpu = this;
    t->frame.kind = CtxKind::TASK;
    t->frame.task = t;
    t->frame.root = std::move(body);
    t->frame.cont = t->frame.root.handle();
    t->frame.st = Frame::St::READY;
    t->frame.serial = ++serial_counter_;
    owner_names_.push_back("user registers of " + t->describe());
    t->user_token = SimdToken{static_cast<std::uint32_t>(owner_names_.size() - 1), 0};
    owner_names_.push_back("kernel-mode SIMD of " + t->describe());
    t->kernel_token = SimdToken{static_cast<std::uint32_t>(owner_names_.size() - 1), 0};
    t->saved_user = t->user_token; // a new task's user state starts in memory
    t->fpu_state_saved = true;
    t->vruntime = min_vruntime_;
    t->state = TaskState::RUNNABLE;
    tasks_.push_back(t);
    runqueue_.push_back(t);
    return *t;
}

// Models: enqueue_task() (kernel/sched/core.c)
void Cpu::enqueue(TaskStruct& t) { runqueue_.push_back(&t); }

// Models: dequeue_task() (kernel/sched/core.c)
void Cpu::dequeue(TaskStruct& t) {
    auto it = std::find(runqueue_.begin(), runqueue_.end(), &t);
    if (it != runqueue_.end()) runqueue_.erase(it);
}

// Models: pick_next_task() (kernel/sched/core.c)
TaskStruct* Cpu::pick_next_task() {
    TaskStruct* best = nullptr;
    for (TaskStruct* t : runqueue_) {
        if (!best) {
            best = t;
            continue;
        }
        if (t->policy == SchedPolicy::FIFO) {
            if (best->policy != SchedPolicy::FIFO || t->rt_priority > best->rt_priority) best = t;
        } else if (best->policy == SchedPolicy::NORMAL && t->vruntime < best->vruntime) {
            best = t;
        }
    }
    return best;
}

// Models: check_preempt_curr() (kernel/sched/core.c)
bool Cpu::preempts(const TaskStruct& woken, const TaskStruct& curr) const {
    if (curr.pid == 0) return true;
    if (woken.policy == SchedPolicy::FIFO)
        return curr.policy != SchedPolicy::FIFO || woken.rt_priority > curr.rt_priority;
    if (curr.policy == SchedPolicy::FIFO) return false;
    return woken.vruntime + cfg_.sched_wakeup_granularity < curr.vruntime;
}

// update_curr: charge the running task's time to its vruntime.
// Models: update_curr() (kernel/sched/fair.c)
void Cpu::update_curr() {
    TaskStruct* t = current_task_;
    if (!t || t->pid == 0) return;
    Tick delta = now() - t->last_ran;
    t->last_ran = now();
    t->sum_exec += delta;
    if (t->policy == SchedPolicy::NORMAL) t->vruntime += delta;
    Tick m = t->policy == SchedPolicy::NORMAL ? t->vruntime : min_vruntime_;
    for (TaskStruct* q : runqueue_)
        if (q->policy == SchedPolicy::NORMAL) m = std::min(m, q->vruntime);
    min_vruntime_ = std::max(min_vruntime_, m);
}

// __schedule(). `preempt` is true for involuntary switches (the previous task stays runnable).
// Models: __schedule() (kernel/sched/core.c)
void Cpu::schedule(bool preempt) {
    TaskStruct* prev = current_task_;
    update_curr();
    if (prev->pid != 0 && prev->state == TaskState::RUNNING) {
        prev->state = TaskState::RUNNABLE;
        enqueue(*prev);
    }
    TaskStruct* next = pick_next_task();
    if (next) dequeue(*next);
    else next = idle_task_;
    need_resched_ = false;
    next->state = TaskState::RUNNING;
    next->last_ran = now();
    if (next == prev) return;

    ++stats_.context_switches;
    if (preempt && prev->pid != 0) ++stats_.preemptions; // leaving idle is no preemption
    ++next->nr_switches;
    if constexpr (TRACE_COMPILED)
        if (trace_) [[unlikely]] trace_switch(*prev, *next);
    Cycles fpu_cycles = fpu_ ? fpu_->switch_fpu(*this, *prev, *next) : 0;
    current_task_ = next;
    stack_[0] = &next->frame;
    next->slice_start = now();
    // Paid on the incoming side before it continues: switch_to, then the FPU work, then the
    // restore on its way back to user space.
    if (next->in_user && fpu_)
        if (Cycles c = fpu_->exit_to_user(*this, *next))
            push_exec(next->frame, PendingExec{c, Cat::SIMD_SAVE_RESTORE, false, false, {}});
    if (fpu_cycles) push_exec(next->frame, PendingExec{fpu_cycles, Cat::SIMD_SAVE_RESTORE, false, false, {}});
    // __schedule runs with the runqueue lock taken by raw_spin_lock_irq and released with
    // interrupts re-enabled in finish_task_switch.
    ++stats_.irqflag_ops[0];
    ++stats_.irqflag_ops[1];
    push_exec(next->frame, PendingExec{costs_.local_irq_disable + costs_.local_irq_enable, Cat::IRQ_MASK, false, false, {}});
    push_exec(next->frame, PendingExec{costs_.context_switch + text(Text::CONTEXT_SWITCH), Cat::SCHEDULER, false, false, {}});
}

// Models: migrate_task_rq_fair() (kernel/sched/fair.c)
// Models: enqueue_entity() (kernel/sched/fair.c)
void Cpu::migrate_task(TaskStruct& t, Cpu& to) {
    if (t.policy == SchedPolicy::NORMAL) {
        // vruntime -= the old cfs_rq's min_vruntime (TASK_WAKING); ENQUEUE_MIGRATED adds the new one's
        const auto rel = static_cast<std::int64_t>(t.vruntime) - static_cast<std::int64_t>(min_vruntime_);
        t.vruntime = static_cast<Tick>(std::max<std::int64_t>(0, static_cast<std::int64_t>(to.min_vruntime_) + rel));
    }
    t.cpu = &to;
    ++t.nr_migrations;
}

// The wake-up placement of a task with several allowed CPUs. Across CPUs that share no cache in
// the scheduler's sense (cpus_share_cache; an arm32 kernel without CONFIG_SCHED_MC has no such
// domain at all), wake_affine_idle does not take the idle waker, select_idle_sibling does not
// take prev or the recently used CPU, and without an sd_llc it returns the target unscanned.
// Reduced from 6.1: wake_wide()'s flip counts and wake_affine_weight()'s PELT load comparison are
// not modelled (when wake_affine_idle() does not decide, the task stays with prev), nor is
// SIS_UTIL's limit on the idle scan (it shortens the scan only on a busy LLC) or SMT.
// Models: select_task_rq_fair() (kernel/sched/fair.c)
// Models: wake_affine_idle() (kernel/sched/fair.c)
// Models: select_idle_sibling() (kernel/sched/fair.c)
// Models: select_idle_cpu() (kernel/sched/fair.c)
Cpu& Cpu::select_task_rq(TaskStruct& t) {
    Cpu& prev = *t.cpu;
    auto allowed = [&t](const Cpu* c) {
        return std::find(t.cpus_allowed.begin(), t.cpus_allowed.end(), c) != t.cpus_allowed.end();
    };
    // want_affine when the waking CPU is in the task's mask; wake_affine() returns this CPU only
    // when wake_affine_idle() picks it: this CPU idle (a wake-up from an interrupt) and prev not
    Cpu* target = &prev;
    if (this != &prev && allowed(this) && available_idle() && cpus_share_cache(prev) && !prev.available_idle())
        target = this;
    if (target->available_idle()) return *target;
    if (target != &prev && prev.cpus_share_cache(*target) && prev.available_idle()) return prev;
    Cpu* recent = t.recent_used_cpu;
    t.recent_used_cpu = &prev;
    if (recent && recent != &prev && recent != target && recent->cpus_share_cache(*target) && recent->available_idle() &&
        allowed(recent))
        return *recent;
    if (!target->llc_domain_) return *target; // sd_llc is NULL: no idle scan
    // select_idle_cpu: the mask's CPUs in number order from target + 1, wrapping
    Cpu* first_idle_after = nullptr;
    Cpu* first_idle = nullptr;
    for (Cpu* c : t.cpus_allowed) {
        if (c == target || !c->available_idle()) continue;
        if (c->id_ > target->id_ && (!first_idle_after || c->id_ < first_idle_after->id_)) first_idle_after = c;
        if (!first_idle || c->id_ < first_idle->id_) first_idle = c;
    }
    if (first_idle_after) return *first_idle_after;
    if (first_idle) return *first_idle;
    return *target;
}

// try_to_wake_up up to ttwu_queue: ttwu_state_match, TASK_WAKING, select_task_rq and set_task_cpu.
// Models: try_to_wake_up() (kernel/sched/core.c)
bool Cpu::ttwu_claim(TaskStruct& t) {
    if (t.state != TaskState::SLEEPING) return false;
    t.state = TaskState::WAKING;
    // A task still current on its CPU (about to switch out) is woken there, not placed: 6.1 would
    // queue it on that CPU's wakelist (p->on_cpu), or wait for p->on_cpu to clear and then place it.
    if (t.cpus_allowed.size() > 1 && t.cpu->current_task_ != &t) {
        Cpu& to = select_task_rq(t);
        if (&to != t.cpu) t.cpu->migrate_task(t, to);
    }
    return true;
}

// Models: ttwu_do_activate() (kernel/sched/core.c)
// Models: check_preempt_curr() (kernel/sched/core.c)
void Cpu::ttwu_do_activate(TaskStruct& t) {
    if (t.state != TaskState::WAKING) return;
    Cpu& rq = *t.cpu;
    if (t.policy == SchedPolicy::NORMAL) {
        Tick floor = rq.min_vruntime_ > rq.cfg_.sched_latency / 2 ? rq.min_vruntime_ - rq.cfg_.sched_latency / 2 : 0;
        t.vruntime = std::max(t.vruntime, floor);
    }
    t.state = TaskState::RUNNABLE;
    if (t.frame.st == Frame::St::BLOCKED) t.frame.st = Frame::St::READY; // schedule() returns
    rq.enqueue(t);
    if (rq.current_task_ && rq.preempts(t, *rq.current_task_)) {
        rq.need_resched_ = true;
        // A remote CPU learns of it through the reschedule IPI (smp_send_reschedule), unless it
        // idles polling its flags. A vCPU waking a task on its own thread's host CPU: that CPU is
        // in this vCPU's exit and looks at need_resched before it enters the guest again
        // (kvm/vcpu_thread.h).
        if (&rq != this)
            sim_.schedule_at(now(), &rq, rq.idle_wakes_without_ipi() || &rq == vcpu_host_ ? EV_KICK : ipi_event(RESCHEDULE_VECTOR));
    } else if (&rq != this && rq.idle_) {
        sim_.schedule_at(now(), &rq, rq.idle_wakes_without_ipi() ? EV_KICK : ipi_event(RESCHEDULE_VECTOR));
    } else if (rq.in_guest_ && rq.in_guest_->polls()) {
        // a halt-polling vCPU thread stops at its loop's next single_task_running() test
        sim_.schedule_at(now(), &rq, EV_KICK);
    }
}

// Models: wake_up_process() (kernel/sched/core.c)
void Cpu::wake_up_process(TaskStruct& t) {
    if (ttwu_claim(t)) ttwu_do_activate(t);
}

// Whether a wake-up from this CPU leaves the activation to `rq` (TTWU_QUEUE, on without PREEMPT_RT):
// across last-level caches always, else only to another CPU with nothing running (nr_running == 0:
// the idle task current, the runqueue empty; the woken task is not counted yet).
// Models: ttwu_queue_cond() (kernel/sched/core.c)
bool Cpu::ttwu_queue_cond(const Cpu& rq) const {
    if (!cpus_share_cache(rq)) return true;
    if (&rq == this) return false;
    return rq.available_idle();
}

// The first entry on an empty wake_list sends the IPI (llist_add returned true); a CPU whose idle
// loop polls TIF_NEED_RESCHED is only flagged (set_nr_if_polling) and empties the list from
// do_idle, a vCPU's goes through KVM (Cpu::on_event's EV_KICK).
// Models: ttwu_queue_wakelist() (kernel/sched/core.c)
// Models: __ttwu_queue_wakelist() (kernel/sched/core.c)
// Models: __smp_call_single_queue() (kernel/smp.c)
// Models: send_call_function_single_ipi() (kernel/sched/core.c)
bool Cpu::ttwu_queue_wakelist(TaskStruct& t) {
    if (!ttwu_claim(t)) return false;
    Cpu& rq = *t.cpu;
    if (!ttwu_queue_cond(rq)) return false;
    rq.wake_list_.push_back(&t);
    if (rq.wake_list_.size() == 1)
        sim_.schedule_at(now(), &rq, rq.idle_wakes_without_ipi() ? EV_KICK : ipi_event(CALL_FUNCTION_SINGLE_VECTOR));
    return true;
}

Cycles Cpu::ttwu_cycles(TaskStruct& t) {
    if (ttwu_queue_wakelist(t)) return costs_.wakeup;
    ttwu_do_activate(t);
    return costs_.wakeup_whole();
}

TaskStruct& Cpu::wake_list_pop() {
    TaskStruct& t = *wake_list_.front();
    wake_list_.erase(wake_list_.begin());
    return t;
}

// Models: scheduler_ipi() (kernel/sched/core.c)
engine::Task<> Cpu::scheduler_ipi(Cpu& cpu, void*) { co_return; }

// The wake_list's tasks, each activated here at sched.wakeup_activate (one rq lock and clock
// update for the whole list in 6.1; the figure holds one per task).
// Models: generic_smp_call_function_single_interrupt() (kernel/smp.c)
// Models: sched_ttwu_pending() (kernel/sched/core.c)
engine::Task<> Cpu::call_function_single_ipi(Cpu& cpu, void*) {
    while (!cpu.wake_list_.empty()) {
        if (cpu.idle_flush_charged_) cpu.idle_flush_charged_ = false; // the idle loop paid for this one
        else co_await cpu.exec(cpu.costs_.wakeup_activate, Cat::SCHEDULER, Text::WAKEUP_ACTIVATE);
        cpu.ttwu_do_activate(cpu.wake_list_pop());
    }
}

// scheduler_tick: account the running task and end its slice if others wait.
// Models: scheduler_tick() (kernel/sched/core.c)
Cycles Cpu::sched_tick_fn(Cpu& cpu, void*, Tick expiry) {
    cpu.hrtimer_start(expiry + cpu.tick_period_, &Cpu::sched_tick_fn, nullptr);
    TaskStruct* curr = cpu.current_task_;
    if (curr && curr->pid != 0 && curr->policy == SchedPolicy::NORMAL) {
        cpu.update_curr();
        std::size_t nr = 1;
        bool fifo_waiting = false;
        for (TaskStruct* q : cpu.runqueue_) {
            if (q->policy == SchedPolicy::NORMAL) ++nr;
            else fifo_waiting = true;
        }
        Tick slice = std::max<Tick>(cpu.cfg_.sched_latency / nr, cpu.cfg_.sched_min_granularity);
        if (fifo_waiting || (nr > 1 && cpu.now() - curr->slice_start >= slice)) cpu.need_resched_ = true;
    }
    return cpu.costs_.tick;
}

// Models: do_idle() (kernel/sched/idle.c)
engine::Task<> Cpu::idle_body(Cpu&) { co_return; }

} // namespace kdsim::kernel
