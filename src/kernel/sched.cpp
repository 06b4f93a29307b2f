// The per-CPU scheduler: runqueue, pick_next_task, __schedule with its switch costs, wake-ups
// that decide on preemption, and the scheduler tick that ends time slices. A wake-up of a task
// on another CPU that is idle (or, which no shipped machine has, beyond this CPU's last-level
// cache) goes on that CPU's wake_list: the waker pays try_to_wake_up's own part
// (sched.wakeup), the target the activation (sched.wakeup_activate) in its call-function IPI or
// polling idle loop (6.1's TTWU_QUEUE). Local and busy-remote wake-ups activate on the waker.
//
// A task allowed on several CPUs also moves while it is queued: a CPU about to idle pulls one
// (newidle_balance), and a busy CPU's tick with two runnable kicks an idle CPU to pull one in its
// SCHED_SOFTIRQ (nohz_balancer_kick, nohz_idle_balance); both go through load_balance. After
// repeated failures the busiest CPU's stopper pushes its running task (active balance).
//
// Mirrors kernel/sched/core.c (__schedule, try_to_wake_up, ttwu_queue, scheduler_tick), fair.c and rt.c,
// reduced to what latency questions need: SCHED_FIFO tasks by priority run before all others
// and are never time-sliced; SCHED_NORMAL tasks run in vruntime order (all at nice 0), with
// the slice max(sched_latency / nr_running, sched_min_granularity) enforced by the tick and
// wake-up preemption when the woken task's vruntime leads by sched_wakeup_granularity.
#include "kernel/cpu.h"
#include "kernel/irqflags.h"
#include "kernel/sched.h"

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
    if (rd_ && nr_running() >= 2) rd_->overload = true; // wake_up_new_task -> activate_task: add_nr_running
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
    Cycles balance = 0; // newidle_balance's load_balance, paid before the switch
    if (!next && rd_) [[unlikely]]
        if (newidle_balance(balance)) next = pick_next_task();
    if (next) {
        dequeue(*next);
        next->list_stamp = now(); // pick_next_task_fair: list_move to the head of cfs_tasks
    } else {
        next = idle_task_;
    }
    need_resched_ = false;
    next->state = TaskState::RUNNING;
    next->last_ran = now();
    if (next == prev) {
        if (balance) push_exec(next->frame, PendingExec{balance, Cat::SCHEDULER, false, false, {}});
        return;
    }

    ++stats_.context_switches;
    if (preempt && prev->pid != 0) ++stats_.preemptions; // leaving idle is no preemption
    ++next->nr_switches;
    if constexpr (TRACE_COMPILED)
        if (trace_) [[unlikely]] trace_switch(*prev, *next);
    Cycles fpu_cycles = fpu_ ? fpu_->switch_fpu(*this, *prev, *next) : 0;
    current_task_ = next;
    np_quiet_ = false; // the open span, if any, is prev's
    np_due_update();
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
    if (balance) push_exec(next->frame, PendingExec{balance, Cat::SCHEDULER, false, false, {}});
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
    // want_affine when the waking CPU is in the task's mask; wake_affine() returns this CPU only
    // when wake_affine_idle() picks it: this CPU idle (a wake-up from an interrupt) and prev not
    Cpu* target = &prev;
    if (this != &prev && t.allowed_on(this) && available_idle() && cpus_share_cache(prev) && !prev.available_idle())
        target = this;
    if (target->available_idle()) return *target;
    if (target != &prev && prev.cpus_share_cache(*target) && prev.available_idle()) return prev;
    Cpu* recent = t.recent_used_cpu;
    t.recent_used_cpu = &prev;
    if (recent && recent != &prev && recent != target && recent->cpus_share_cache(*target) && recent->available_idle() &&
        t.allowed_on(recent))
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

// ---- load balancing onto an idle CPU (kernel/sched/fair.c) ------------------------------------
// Reduced from 6.1 to one sched_domain spanning the machine (its MC domain, or DIE without
// CONFIG_SCHED_MC) whose groups are single CPUs, and to the task count: an idle CPU pulls one
// queued SCHED_NORMAL task from the CPU with the most runnable when that one has two or more
// (calculate_imbalance's migrate_task, (busiest - local) >> 1). The running task of the busiest CPU
// is on its cfs_tasks list too: never detached, but one allowed here clears LBF_ALL_PINNED, so a
// balance that finds only it movable fails (nr_balance_failed++) rather than ending all-pinned.
//
// Active balance: when a CPU_IDLE balance (or a newidle one, which does not count failures) has
// failed more than cache_nice_tries + 2 times in a row (imbalanced_active_balance, migrate_task),
// load_balance marks the busiest CPU (active_balance, push_cpu = this CPU) unless its current task
// may not run here (out_one_pinned) and wakes that CPU's stopper (stop_one_cpu_nowait). The
// stopper, a stop-class task above every SCHED_FIFO one, preempts what runs there at the next
// preemption point the kernel has (a reschedule IPI, then the return from it under PREEMPT=full or
// to user or guest mode; under none/voluntary a kernel task first reaches cond_resched or sleeps).
// Its active_load_balance_cpu_stop then finds the preempted task on cfs_tasks: detach_one_task
// (LBF_ACTIVE_LB: neither hot nor failure tests, only the CPU mask), attach_one_task on push_cpu,
// nr_balance_failed of push_cpu's domain reset. Costs: the stopper's wake-up (sched.wakeup and
// wakeup_activate, on the balancing CPU) and its two switches (sched.context_switch) as any task's,
// and in the stopper the detach and the attach at sched.wakeup_activate each (each is an rq lock,
// update_rq_clock and a dequeue or an enqueue with check_preempt_curr: the activation's work).
// need_active_balance's other cases are left out: asym packing (no SD_ASYM_PACKING domain is
// modelled), a lone CFS task on a CPU whose capacity RT or IRQ time reduced (no PELT), and
// migrate_misfit (no asymmetric capacities). A DIE domain's overloaded busiest would use
// migrate_util, for which imbalanced_active_balance does not fire; kdsim counts tasks there too.
//
// Not modelled: PELT load and utilisation (migrate_load, and the migrate_util a DIE domain uses,
// which can pull more than one task at a time), the balance a busy CPU's own tick runs
// (CPU_NOT_IDLE, every balance_interval * busy_factor), and NUMA. kdsim's idle CPUs take their
// tick, which a NO_HZ_IDLE kernel stops; that tick triggers no balance here, as it would not run
// there.

namespace {
constexpr std::uint32_t CACHE_NICE_TRIES = 1; // sd_init: SD_SHARE_PKG_RESOURCES, or the else branch
constexpr std::uint64_t MAX_PINNED_INTERVAL = 512; // ms
} // namespace

// Models: sched_init_domains() (kernel/sched/topology.c)
// Models: cpu_stop_init() (kernel/stop_machine.c)
void Cpu::set_root_domain(RootDomain* rd, engine::Rng rng) {
    rd_ = rd;
    sched_rng_ = rng;
    balance_interval_ms_ = rd->span.size(); // sd_init: balance_interval = sd_weight
    if (stopper_) return;
    // cpu_stop_init's smpboot thread: stop class, above every SCHED_FIFO priority (1..99). Its pid
    // is of a range of its own so that the pids of the tasks made after it stay as they were.
    const int pid = next_pid_;
    const bool overload = rd->overload;
    stopper_ = &create_task("migration/" + std::to_string(id_), SchedPolicy::FIFO, 100, true, cpu_stopper_thread(*this));
    next_pid_ = pid;
    rd->overload = overload;
    stopper_->pid = 32768 + id_; // PID_MAX_DEFAULT + cpu
    dequeue(*stopper_);
    stopper_->state = TaskState::SLEEPING;
}

// Models: cpu_stopper_thread() (kernel/stop_machine.c)
engine::Task<> Cpu::cpu_stopper_thread(Cpu& cpu) {
    for (;;) {
        if (!cpu.stop_work_pending_) {
            co_await cpu.block();
            continue;
        }
        cpu.stop_work_pending_ = false;
        // active_load_balance_cpu_stop: rq_lock_irq(busiest_rq)
        co_await local_irq_disable(cpu);
        Cpu& target = *cpu.push_cpu_;
        TaskStruct* p = nullptr;
        if (cpu.active_balance_ && cpu.nr_running() > 1) { // the stopper itself is one of them
            p = cpu.detach_one_task(target);
            co_await cpu.exec(cpu.costs_.wakeup_activate, Cat::SCHEDULER); // update_rq_clock, the walk, detach_task
            if (p) {
                ++cpu.stats_.active_balances;
                target.nr_balance_failed_ = 0; // active balancing done
            }
        }
        cpu.active_balance_ = false;
        if (p) {
            co_await cpu.exec(cpu.costs_.wakeup_activate, Cat::SCHEDULER); // attach_one_task: rq lock, activate, check_preempt_curr
            cpu.attach_one_task(*p);
        }
        co_await local_irq_enable(cpu);
    }
}

TaskStruct* Cpu::cfs_tasks_prev(const TaskStruct* after) const {
    TaskStruct* oldest = nullptr;
    for (TaskStruct* q : runqueue_)
        if (q->policy == SchedPolicy::NORMAL &&
            (!after || q->list_stamp > after->list_stamp || (q->list_stamp == after->list_stamp && q->pid > after->pid)) &&
            (!oldest || q->list_stamp < oldest->list_stamp || (q->list_stamp == oldest->list_stamp && q->pid < oldest->pid)))
            oldest = q;
    return oldest;
}

// From the tail of cfs_tasks, the first task that may run on `dst`; the stopper is current, so the
// task it preempted is queued and may go. Detached: off this runqueue, its CPU set to `dst`.
// Models: detach_one_task(), detach_task() (kernel/sched/fair.c)
TaskStruct* Cpu::detach_one_task(Cpu& dst) {
    for (TaskStruct* p = cfs_tasks_prev(nullptr); p; p = cfs_tasks_prev(p)) {
        if (!p->allowed_on(&dst)) continue; // can_migrate_task with LBF_ACTIVE_LB: the mask only
        dequeue(*p);
        migrate_task(*p, dst);
        return p;
    }
    return nullptr;
}

// Enqueues a task detached for this CPU's push_cpu there, and check_preempt_curr: an idle CPU (or
// one whose current task the task preempts) learns of it by the reschedule IPI, unless it polls.
// Models: attach_one_task(), attach_task() (kernel/sched/fair.c)
void Cpu::attach_one_task(TaskStruct& p) {
    Cpu& rq = *p.cpu;
    rq.enqueue(p);
    p.list_stamp = now();
    ++p.nr_balance_moves;
    if (rq.rd_ && rq.nr_running() >= 2) rq.rd_->overload = true;
    if (rq.current_task_ && rq.preempts(p, *rq.current_task_)) { // the idle task always yields
        rq.need_resched_ = true;
        sim_.schedule_at(now(), &rq, rq.idle_wakes_without_ipi() ? EV_KICK : ipi_event(RESCHEDULE_VECTOR));
    }
}

// Models: can_migrate_task() (kernel/sched/fair.c)
// Models: task_hot() (kernel/sched/fair.c)
bool Cpu::can_migrate_task(const TaskStruct& t) const {
    if (t.policy != SchedPolicy::NORMAL) return false; // detach_tasks walks cfs_tasks only
    if (!t.allowed_on(this)) return false;
    // rq_clock_task - se.exec_start; a task that never ran has exec_start 0, long before
    const bool ran = t.sum_exec != 0 || t.nr_switches != 0;
    const bool hot = ran && now() - t.last_ran < cfg_.sched_migration_cost;
    return !hot || nr_balance_failed_ > CACHE_NICE_TRIES;
}

// Models: load_balance() (kernel/sched/fair.c)
// Models: find_busiest_group(), find_busiest_queue() (kernel/sched/fair.c)
// Models: detach_tasks(), attach_one_task() (kernel/sched/fair.c)
// Models: need_active_balance(), imbalanced_active_balance() (kernel/sched/fair.c)
TaskStruct* Cpu::load_balance(CpuIdleType idle, Cpu*& stop_kick) {
    stop_kick = nullptr;
    // update_sd_lb_stats at the root domain: rd->overload from every runqueue
    bool overload = false;
    for (const Cpu* c : rd_->span) overload |= c->nr_running() > 1;
    rd_->overload = overload;
    const std::size_t local = nr_running();
    std::uint64_t excluded = 0; // LBF_ALL_PINNED: redo without that CPU (bit i: span[i])
    bool all_pinned = false;
    for (;;) {
        Cpu* busiest = nullptr;
        std::size_t busiest_i = 0;
        for (std::size_t i = 0; i < rd_->span.size(); ++i) {
            Cpu* c = rd_->span[i];
            if (c != this && !(excluded >> i & 1) && (!busiest || c->nr_running() > busiest->nr_running())) {
                busiest = c;
                busiest_i = i;
            }
        }
        if (!busiest || busiest->nr_running() < local + 2) { // imbalance (busiest - local) >> 1 == 0
            nr_balance_failed_ = 0; // out_balanced, out_all_pinned
            if (idle != CpuIdleType::CPU_NEWLY_IDLE) { // out_one_pinned: tune up the interval
                if (all_pinned && balance_interval_ms_ < MAX_PINNED_INTERVAL) balance_interval_ms_ *= 2;
                else if (!all_pinned && balance_interval_ms_ < 2 * rd_->span.size()) balance_interval_ms_ *= 2;
            }
            return nullptr;
        }
        // detach_tasks: from the tail of cfs_tasks (the task longest at neither head), one task
        TaskStruct* moved = nullptr;
        bool any_allowed = false;
        for (TaskStruct* q = busiest->cfs_tasks_prev(nullptr); q; q = busiest->cfs_tasks_prev(q)) {
            any_allowed |= q->allowed_on(this);
            if (can_migrate_task(*q)) {
                moved = q;
                break;
            }
        }
        // The running task, at the head of cfs_tasks: can_migrate_task clears LBF_ALL_PINNED for it
        // when its mask has this CPU, then refuses it (task_on_cpu).
        const TaskStruct* curr = busiest->current_task_;
        if (!moved && curr && curr != busiest->idle_task_ && curr->policy == SchedPolicy::NORMAL)
            any_allowed |= curr->allowed_on(this);
        if (!moved && !any_allowed) { // LBF_ALL_PINNED
            all_pinned = true;
            excluded |= std::uint64_t{1} << busiest_i;
            continue;
        }
        if (!moved) { // every queued task it may take ran within sysctl_sched_migration_cost
            if (idle != CpuIdleType::CPU_NEWLY_IDLE) ++nr_balance_failed_;
            if (nr_balance_failed_ > CACHE_NICE_TRIES + 2) { // need_active_balance: imbalanced_active_balance
                // Don't kick the stopper if busiest's current task may not run on this CPU:
                // out_one_pinned (the failure count stays; the interval is tuned up).
                if (!busiest->current_task_->allowed_on(this)) {
                    if (idle != CpuIdleType::CPU_NEWLY_IDLE && balance_interval_ms_ < 2 * rd_->span.size())
                        balance_interval_ms_ *= 2;
                    return nullptr;
                }
                if (!busiest->active_balance_) {
                    busiest->active_balance_ = true;
                    busiest->push_cpu_ = this;
                    busiest->stop_work_pending_ = true; // stop_one_cpu_nowait: queue the work
                    stop_kick = busiest;
                }
            }
            balance_interval_ms_ = rd_->span.size(); // sd->min_interval
            return nullptr;
        }
        balance_interval_ms_ = rd_->span.size(); // sd->min_interval
        nr_balance_failed_ = 0;
        // detach_task: deactivate_task + set_task_cpu; attach_task: activate_task + check_preempt_curr
        busiest->dequeue(*moved);
        busiest->migrate_task(*moved, *this);
        enqueue(*moved);
        moved->list_stamp = now();
        ++moved->nr_balance_moves;
        ++stats_.lb_pulled;
        need_resched_ = true; // this CPU is idle, or about to be
        return moved;
    }
}

// Debian's 6.1.192 names it sched_balance_newidle (a backport that brought NI_RANDOM).
// Models: newidle_balance() (kernel/sched/fair.c)
// Models: update_newidle_cost(), update_newidle_stats() (kernel/sched/fair.c)
bool Cpu::newidle_balance(Cycles& cost) {
    cost = 0;
    if (!wake_list_.empty()) return false; // this_rq->ttwu_pending
    idle_stamp_ = now();
    idle_stamped_ = true;
    if (!rd_->overload || avg_idle_ < max_newidle_lb_cost_) return false;
    // NI_RANDOM: run in proportion to the recent success rate (newidle_ratio of 1024)
    std::uint32_t weight = 1 + newidle_ratio_;
    auto update_newidle_stats = [this](std::uint32_t success) {
        ++newidle_call_;
        newidle_success_ += success;
        if (newidle_call_ >= 1024) {
            newidle_ratio_ = newidle_success_;
            newidle_call_ /= 2;
            newidle_success_ /= 2;
        }
    };
    if (cfg_.sched_feat_ni_random && static_cast<std::uint32_t>(sched_rng_.next() % 1024) > weight) {
        update_newidle_stats(0);
        return false;
    }
    weight = cfg_.sched_feat_ni_random ? (1024 + weight / 2) / weight : 1;
    ++stats_.lb_newidle;
    Cpu* stop_kick = nullptr;
    TaskStruct* pulled = load_balance(CpuIdleType::CPU_NEWLY_IDLE, stop_kick);
    cost = costs_.load_balance;
    if (stop_kick) cost += ttwu_cycles(*stop_kick->stopper_); // stop_one_cpu_nowait's wake_up_q
    const Tick domain_cost = clock_.to_ticks_ceil(cost);
    update_newidle_stats(pulled ? weight : 0);
    max_newidle_lb_cost_ = std::max(max_newidle_lb_cost_, domain_cost); // (its 1 %/s decay: the figure is constant)
    max_idle_balance_cost_ = std::max(max_idle_balance_cost_, domain_cost);
    if (pulled) idle_stamped_ = false;
    return pulled != nullptr;
}

// A busy CPU's tick with two or more runnable kicks the first idle CPU of the machine, at most once
// a jiffy for the machine; that CPU balances in its SCHED_SOFTIRQ (run_rebalance_domains).
// Models: nohz_balancer_kick(), kick_ilb(), find_new_ilb() (kernel/sched/fair.c)
void Cpu::nohz_balancer_kick() {
    if (available_idle()) return; // rq->idle_balance
    const std::uint64_t j = jiffies();
    if (j < rd_->nohz_next_balance || nr_running() < 2) return;
    rd_->nohz_next_balance = j + 1;
    for (Cpu* ilb : rd_->span) {
        if (ilb == this || !ilb->available_idle()) continue;
        if (ilb->nohz_kick_pending_) return; // NOHZ_KICK_MASK: its csd is already queued
        ilb->nohz_kick_pending_ = true;
        ++stats_.nohz_kicks;
        // smp_call_function_single_async: the call-function IPI, none to a polling idle loop
        sim_.schedule_at(now(), ilb, ilb->idle_wakes_without_ipi() ? EV_KICK : ipi_event(CALL_FUNCTION_SINGLE_VECTOR));
        return;
    }
}

// SCHED_SOFTIRQ of the kicked CPU: every idle CPU of the machine, from the next one round to
// itself, whose rq->next_balance is due gets a CPU_IDLE balance, paid here.
// Models: run_rebalance_domains(), nohz_idle_balance(), _nohz_idle_balance() (kernel/sched/fair.c)
// Models: rebalance_domains(), get_sd_balance_interval() (kernel/sched/fair.c)
engine::Task<> Cpu::run_rebalance_domains(Cpu& cpu, void*) {
    if (!cpu.rd_) co_return;
    const std::vector<Cpu*>& span = cpu.rd_->span;
    const auto me = static_cast<std::size_t>(std::find(span.begin(), span.end(), &cpu) - span.begin());
    const std::uint64_t max_interval = std::max<std::uint64_t>(1, std::uint64_t{cpu.cfg_.hz} * span.size() / 10);
    auto interval = [max_interval](const Cpu& c, bool busy) {
        const std::uint64_t ms = c.balance_interval_ms_ * (busy ? 16 : 1); // busy_factor
        return std::clamp<std::uint64_t>(c.msecs_to_jiffies(ms), 1, max_interval);
    };
    std::uint64_t next_balance = cpu.jiffies() + 60 * std::uint64_t{cpu.cfg_.hz};
    bool update_next_balance = false;
    for (std::size_t k = 1; k <= span.size(); ++k) {
        Cpu& c = *span[(me + k) % span.size()];
        if (!c.available_idle()) continue;
        if (!cpu.available_idle() && cpu.need_resched_) co_return; // this CPU got work: abort
        if (cpu.jiffies() >= c.next_balance_) {
            if (cpu.jiffies() >= c.last_balance_ + interval(c, false)) {
                co_await cpu.exec(cpu.costs_.load_balance, Cat::SCHEDULER);
                ++c.stats_.lb_idle;
                Cpu* stop_kick = nullptr;
                TaskStruct* pulled = c.load_balance(CpuIdleType::CPU_IDLE, stop_kick);
                if (stop_kick) co_await try_to_wake_up(cpu, *stop_kick->stopper_); // stop_one_cpu_nowait
                if (pulled && &c != &cpu) // attach_task's check_preempt_curr on an idle CPU
                    cpu.sim_.schedule_at(cpu.now(), &c, c.idle_wakes_without_ipi() ? EV_KICK : ipi_event(RESCHEDULE_VECTOR));
                c.last_balance_ = cpu.jiffies();
                c.next_balance_ = c.last_balance_ + interval(c, pulled != nullptr);
            } else {
                c.next_balance_ = c.last_balance_ + interval(c, false);
            }
        }
        if (c.next_balance_ < next_balance) {
            next_balance = c.next_balance_;
            update_next_balance = true;
        }
    }
    if (update_next_balance) cpu.rd_->nohz_next_balance = next_balance;
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
    t.list_stamp = now(); // account_entity_enqueue: list_add to the head of cfs_tasks
    if (rq.rd_ && rq.nr_running() >= 2) rq.rd_->overload = true; // add_nr_running
    // ttwu_do_wakeup: the idle time that ended, into rq->avg_idle (update_avg: 1/8 of the error)
    if (rq.idle_stamped_) {
        const auto delta = static_cast<std::int64_t>(now() - rq.idle_stamp_);
        const auto avg = static_cast<std::int64_t>(rq.avg_idle_);
        rq.avg_idle_ = static_cast<Tick>(avg + (delta - avg) / 8);
        rq.avg_idle_ = std::min(rq.avg_idle_, 2 * rq.max_idle_balance_cost_);
        rq.idle_stamped_ = false;
    }
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
IrqStep Cpu::scheduler_ipi(Cpu&, void*, unsigned) { return {0, Cat::OTHER, true}; }

// The wake_list's tasks, each activated here at sched.wakeup_activate (one rq lock and clock
// update for the whole list in 6.1; the figure holds one per task). In plain steps: step 0
// begins; every later step follows the exec of the step before it, whose task it activates.
// Models: generic_smp_call_function_single_interrupt() (kernel/smp.c)
// Models: sched_ttwu_pending() (kernel/sched/core.c)
IrqStep Cpu::call_function_single_ipi(Cpu& cpu, void*, unsigned step) {
    if (step == 0) {
        if (cpu.nohz_kick_pending_) { // nohz_csd_func: the balance runs in SCHED_SOFTIRQ at irq_exit
            cpu.nohz_kick_pending_ = false;
            cpu.__raise_softirq_irqoff(SCHED_SOFTIRQ);
        }
    } else {
        cpu.ttwu_do_activate(cpu.wake_list_pop());
    }
    while (!cpu.wake_list_.empty()) {
        if (!cpu.idle_flush_charged_)
            return {cpu.costs_.wakeup_activate + cpu.text(Text::WAKEUP_ACTIVATE), Cat::SCHEDULER, false};
        cpu.idle_flush_charged_ = false; // the idle loop paid for this one
        cpu.ttwu_do_activate(cpu.wake_list_pop());
    }
    return {0, Cat::OTHER, true};
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
    if (cpu.rd_) cpu.nohz_balancer_kick(); // trigger_load_balance
    return cpu.costs_.tick;
}

// Models: do_idle() (kernel/sched/idle.c)
engine::Task<> Cpu::idle_body(Cpu&) { co_return; }

} // namespace kdsim::kernel
