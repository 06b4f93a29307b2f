// The dispatch loop of a simulated CPU: starting and interrupting execs, pushing and popping
// contexts, preemption points. Scheduler, softirq and timer parts are in sched.cpp,
// softirq.cpp and hrtimer.cpp. See cpu.h for the mechanism.
#include "kernel/cpu.h"
#include "kernel/timer.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace kdsim::kernel {

namespace {
}

std::string TaskStruct::describe() const {
    return comm + " (pid " + std::to_string(pid) + ")";
}

Cpu::Cpu(engine::Simulation& sim, int id, engine::Clock clock, const KernelCosts& costs,
         const KernelConfig& cfg)
    : sim_(sim), id_(id), clock_(clock), costs_(costs), cfg_(cfg),
      tick_period_(engine::PS_PER_S / cfg.hz) {
    plain_end_update();
    timers_.reserve(16);
    expired_.reserve(16);
    softirq_frame_.kind = CtxKind::SOFTIRQ;
    hardirq_frame_.kind = CtxKind::HARDIRQ;
    nmi_frame_.kind = CtxKind::NMI;
    for (unsigned nr = 0; nr < NR_SOFTIRQS; ++nr) {
        owner_names_.push_back(std::string("softirq ") + std::string(softirq_name(nr)) +
                               " on cpu" + std::to_string(id_));
        softirq_owner_[nr] = static_cast<std::uint32_t>(owner_names_.size() - 1);
    }
    owner_names_.push_back("hardirq on cpu" + std::to_string(id_));
    hardirq_owner_ = static_cast<std::uint32_t>(owner_names_.size() - 1);

    // The local timer interrupt drives hrtimers and the scheduler tick.
    timer_vector_ = LOCAL_TIMER_VECTOR;
    request_irq(timer_vector_, &Cpu::tick_handler, nullptr, "local_timer");
    request_irq(RESCHEDULE_VECTOR, &Cpu::scheduler_ipi, nullptr, "reschedule_ipi");
    request_irq(CALL_FUNCTION_SINGLE_VECTOR, &Cpu::call_function_single_ipi, nullptr, "call_function_single_ipi");
    wake_list_.reserve(8);
    open_softirq(SCHED_SOFTIRQ, &Cpu::run_rebalance_domains, nullptr);
    avg_idle_ = 2 * cfg_.sched_migration_cost; // sched_init
    max_idle_balance_cost_ = cfg_.sched_migration_cost;

    idle_task_ = &create_task("swapper/" + std::to_string(id_), SchedPolicy::NORMAL, 0, true,
                              idle_body(*this));
    dequeue(*idle_task_);
    idle_task_->pid = 0;
    idle_task_->frame.st = Frame::St::IDLE;
    ksoftirqd_ = &create_task("ksoftirqd/" + std::to_string(id_), SchedPolicy::NORMAL, 0, true,
                              ksoftirqd_body(*this));
    dequeue(*ksoftirqd_);
    ksoftirqd_->state = TaskState::SLEEPING;
}

Cpu::~Cpu() {
    for (TaskStruct* t : tasks_) delete t;
}

// Models: preempt_count_sub() (include/linux/preempt.h)
void Cpu::preempt_count_sub(std::uint32_t v) {
    if (v > preempt_count_) {
        std::fprintf(stderr, "kdsim internal error: preempt_count underflow on cpu%d (%#x - %#x)\n",
                     id_, preempt_count_, v);
        std::abort();
    }
    preempt_count_ -= v;
}

SimdToken Cpu::kernel_simd_token() {
    ++simd_gen_;
    Frame& f = *stack_[depth_ - 1];
    switch (f.kind) {
    case CtxKind::TASK: return SimdToken{current_task_->kernel_token.owner, simd_gen_};
    case CtxKind::SOFTIRQ: return SimdToken{softirq_owner_[softirq_running_nr_], simd_gen_};
    default: return SimdToken{hardirq_owner_, simd_gen_};
    }
}

std::string Cpu::describe_token(SimdToken t) const {
    if (t.owner == 0) return "no valid contents";
    if (t.owner < owner_names_.size()) return owner_names_[t.owner];
    return "owner " + std::to_string(t.owner);
}

// Models: request_irq() (kernel/irq/manage.c)
void Cpu::request_irq(unsigned vector, IrqHandler fn, void* ctx, std::string name) {
    if (vector >= irqs_.size()) throw std::out_of_range("irq vector out of range");
    irqs_[vector] = IrqDesc{fn, nullptr, ctx, std::move(name), 0};
}

void Cpu::request_irq(unsigned vector, IrqStepsHandler fn, void* ctx, std::string name) {
    if (vector >= irqs_.size()) throw std::out_of_range("irq vector out of range");
    irqs_[vector] = IrqDesc{nullptr, fn, ctx, std::move(name), 0};
}

// Models: request_nmi() (kernel/irq/manage.c)
void Cpu::request_nmi(unsigned vector, IrqHandler fn, void* ctx, std::string name) {
    request_irq(vector, fn, ctx, std::move(name));
    nmi_vectors_ |= 1ULL << vector;
}

// Models: open_softirq() (kernel/softirq.c)
void Cpu::open_softirq(unsigned nr, SoftirqHandler fn, void* ctx) {
    softirq_vec_[nr] = SoftirqAction{fn, ctx};
}

// ---------------------------------------------------------------------------------------
// Accounting and execs

// np_mark(false), inline where an exec starts (start_exec, ExecAwaiter::ready_asked).
[[gnu::always_inline]] inline void Cpu::np_mark_exec() {
    bool p = preemptible_now();
    if (p) {
        np_close(now());
    } else if (!np_open_) {
        np_open_ = true;
        np_start_ = now();
        np_holder_ = np_holder();
        // KERNEL_CODE: task context, no count, IRQs on, and not preemptible_now()
        np_quiet_ = np_holder_.why == NpHolder::KERNEL_CODE && preempt_count_ == 0;
        np_due_update();
    } else if (np_holder_.why != NpHolder::KERNEL_CODE && depth_ == 1 && preempt_count_ == 0 && !irqs_disabled_) {
        // The span outlived the section that opened it: what really holds the CPU is kernel
        // code with no preemption point under this preemption model.
        np_holder_ = np_holder();
        np_quiet_ = true;
        np_due_update();
    }
}

// await_ready when exec_in_place_plain asked (the frame's exec list was empty): exec_in_place's
// work after that test, the exec as exec_in_place_plain takes it below the clock's fast end,
// and only for the trace or the slow conversion exec_in_place's own way. Only the awaiter
// lives across the mark.
[[gnu::noinline]] bool Cpu::ExecAwaiter::ready_asked() noexcept {
    if (cpu.pending_irqs_ != 0 && cpu.deliverable_irqs_at(*cpu.running_)) {
        cpu.refused_due_ = 0;
        return false;
    }
    if (cpu.np_mark_due()) cpu.np_mark_exec();
    Tick due = 0; // in a register: only the slow path's due goes through memory, into refused_due_
    switch (cpu.exec_in_place_below(remaining, cat, due, cpu.tracing() ? 0 : cpu.clock_.ceil_fast_end())) {
    case InPlace::REFUSED: break;
    case InPlace::DONE: return true;
    case InPlace::ASK:
        cpu.refused_due_ = 0;
        return cpu.exec_in_place_marked_slow(pending(), cpu.refused_due_);
    }
    cpu.refused_due_ = due;
    return false;
}

[[gnu::noinline, gnu::cold]] bool Cpu::exec_in_place_marked_slow(const PendingExec& e, Tick& due) {
    return exec_in_place_marked(e, due);
}

void Cpu::suspend_exec(std::coroutine_handle<> h, const PendingExec& e) {
    Frame& f = *running_;
    f.cont = h;
    f.st = Frame::St::READY;
    if (e.simd_check) f.simd_clobbered = false; // the finding is per SIMD exec
    push_exec(f, e);
}

void Cpu::trace_exec_in_place(Frame& f, const PendingExec& e, Tick start) {
    trace_exec_begin_ = start;
    trace_exec_end(f, e.cat, e.remaining);
}

void Cpu::suspend_point(std::coroutine_handle<> h, Point p) {
    Frame& f = *running_;
    f.cont = h;
    f.st = Frame::St::POINT;
    f.point = p;
}

// The exec first, then the point: the dispatch loop runs a frame's execs before it looks at
// the frame's state, and a POINT frame is handled as a point.
void Cpu::suspend_exec_point(std::coroutine_handle<> h, const PendingExec& e, Point p) {
    Frame& f = *running_;
    f.cont = h;
    f.st = Frame::St::POINT;
    f.point = p;
    push_exec(f, e);
}

// local_irq_restore's exec that was not done in place: the exec, then Point::IRQ_RESTORE, which
// sets the mask to `flags` only when the exec has ended (as `co_await exec; set mask; if
// unmasked: co_await point(IRQ_ENABLE)` in a coroutine of its own did, one frame less). With
// `due` (ExecAwaiter::due: the dispatch loop's next step would start this exec) the exec starts
// now, as suspend_exec_started starts it; the loop finds the POINT once it has ended.
void Cpu::suspend_exec_irq_restore(std::coroutine_handle<> h, const PendingExec& e, bool flags, Tick due) {
    Frame& f = *running_;
    f.restore_irqs_disabled = flags;
    if (!due) return suspend_exec_point(h, e, Point::IRQ_RESTORE);
    f.cont = h;
    f.st = Frame::St::POINT;
    f.point = Point::IRQ_RESTORE;
    exec_started(f, e, due);
}

void Cpu::suspend_block(std::coroutine_handle<> h) {
    Frame& f = *running_;
    f.cont = h;
    f.st = Frame::St::BLOCKED;
    current_task_->state = TaskState::SLEEPING;
}

void Cpu::suspend_guest(std::coroutine_handle<> h, GuestRun& g) {
    Frame& f = *running_;
    f.cont = h;
    f.st = Frame::St::GUEST;
    current_task_->guest = &g;
}

// The KVM_RUN loop enters the guest: from here the CPU's time is the guest's until host work
// takes it back (leave_guest). Entering is a point where a reschedule would be honoured (the
// run loop's xfer_to_guest_mode_handle_work checks need_resched first).
// Models: kvm_arch_vcpu_ioctl_run() (arch/arm64/kvm/arm.c)
// Models: guest_timing_enter_irqoff() (include/linux/kvm_host.h)
void Cpu::enter_guest(GuestRun& g) {
    if (idle_) end_idle();
    np_mark(true);
    in_guest_ = &g;
    guest_or_stalled_ = 1;
    guest_since_ = now();
    guest_cat_ = Cat::USER;
    g.enter(*this);
}

// Guest mode ends now: the time since entering is the task's guest (user) time; the exit and the
// re-entry are queued on the task before it enters again.
// Models: guest_timing_exit_irqoff() (include/linux/kvm_host.h)
// Models: account_guest_time() (kernel/sched/cputime.c)
void Cpu::leave_guest() {
    GuestRun& g = *in_guest_;
    in_guest_ = nullptr;
    guest_or_stalled_ = stalled_;
    const bool host_irq = deliverable_irqs() != 0;
    account(CtxKind::TASK, guest_cat_, clock_.to_cycles(now() - guest_since_));
    stats_.busy_ticks += now() - busy_base_;
    busy_base_ = now();
    busy_cycles_ = 0;
    if (Cycles c = g.exit(*this, host_irq)) push_exec(current_task_->frame, PendingExec{c, Cat::VIRT, false, false, {}});
}

void Cpu::guest_time_as(Cat cat) {
    if (!in_guest_ || cat == guest_cat_) return;
    account(CtxKind::TASK, guest_cat_, clock_.to_cycles(now() - guest_since_));
    guest_since_ = now();
    guest_cat_ = cat;
}

void Cpu::vcpu_stall() {
    if (stalled_) return;
    stalled_ = true;
    guest_or_stalled_ = 1;
    stalled_since_ = now();
    if (idle_) return; // in WFI: idle time goes on
    interrupt_exec();
    stats_.busy_ticks += now() - busy_base_;
    busy_base_ = now();
    busy_cycles_ = 0;
}

void Cpu::vcpu_resume() {
    if (!stalled_) return;
    stalled_ = false;
    guest_or_stalled_ = in_guest_ != nullptr;
    if (!idle_) {
        busy_base_ = now();
        busy_cycles_ = 0;
    }
    run();
}

// Queues work in front of whatever the frame still has to do (switch and restore costs are
// paid before the interrupted work resumes). Adjacent work of one category merges.
void Cpu::push_exec(Frame& f, const PendingExec& e) {
    // Work of one category that is already queued absorbs more of the same: a context that is
    // switched out and in again before it paid its switch costs owes them twice, not a deeper
    // stack. Only the order in which queued overheads are paid changes, not their sum.
    if (!e.simd_check)
        for (std::size_t i = f.nexecs; i-- > 0;) {
            PendingExec& q = f.execs[i];
            if (!q.simd_check && q.cat == e.cat) {
                q.remaining += e.remaining;
                return;
            }
        }
    if (f.nexecs == f.execs.size()) {
        std::fprintf(stderr, "kdsim internal error: too much pending work on one context\n");
        std::abort();
    }
    f.execs[f.nexecs++] = e;
}

// Whether the registers hold foreign contents; each distinct overwrite is reported once.
bool Cpu::check_simd(PendingExec& e, const char* where) {
    if (simd_regs_ == e.expect) return false;
    if (!(simd_regs_ == e.reported)) {
        report_clobber(e.expect, simd_regs_, where);
        e.reported = simd_regs_;
    }
    return true;
}

void Cpu::report_clobber(SimdToken expected, SimdToken found, const char* where) {
    ++stats_.simd_clobbers;
    if constexpr (TRACE_COMPILED)
        if (trace_) [[unlikely]] trace_clobber(expected, found, where);
    report_finding(stats::FindingKind::SIMD_CLOBBER, describe_token(found), describe_token(expected), where);
}

// The SIMD steps are out of line (not cold: SIMD work is common on some machines), so that the
// common path keeps only the CPU and the frame across its calls.
void Cpu::start_exec(Frame& f) {
    if (idle_) end_idle();
    if (f.execs[f.nexecs - 1].simd_check) [[unlikely]] {
        [this, &f]() __attribute__((noinline)) {
            if (!f.execs[f.nexecs - 1].arch_checked && fpu_) {
                f.execs[f.nexecs - 1].arch_checked = true;
                if (Cycles trap = fpu_->kernel_simd_exec(*this))
                    push_exec(f, PendingExec{trap, Cat::SIMD_TRAP, false, false, {}});
            }
        }();
    }
    if (np_mark_due()) np_mark_exec();
    PendingExec& e = f.execs[f.nexecs - 1];
    if (e.simd_check) [[unlikely]] {
        [this, &f, &e]() __attribute__((noinline)) {
            if (check_simd(e, "start of SIMD work")) f.simd_clobbered = true;
        }();
    }
    exec_start_cycles_ = busy_cycles_;
    exec_inflight_ = true;
    if constexpr (TRACE_COMPILED)
        if (trace_) [[unlikely]] trace_exec_begin_ = now();
    Tick done = engine::sat_add(busy_base_, clock_.to_ticks_ceil(busy_cycles_ + e.remaining));
    exec_done_arg_ += 4;
    if (defer_exec_) {
        exec_deferred_ = true;
        exec_done_at_ = done;
        return;
    }
    sim_.schedule_at(done, this, exec_done_arg_);
}

// The exec in flight has run to its end.
[[gnu::always_inline]] inline void Cpu::complete_exec() {
    exec_inflight_ = false;
    Frame& f = *stack_[depth_ - 1];
    PendingExec& e = f.execs[f.nexecs - 1];
    busy_cycles_ = exec_start_cycles_ + e.remaining;
    account(f.kind, e.cat, e.remaining);
    if constexpr (TRACE_COMPILED)
        if (trace_) [[unlikely]] trace_exec_end(f, e.cat, e.remaining);
    if (e.simd_check && check_simd(e, "end of SIMD work")) f.simd_clobbered = true;
    --f.nexecs;
}

// An interrupt arrives while an exec is in flight: charge what was done, keep the rest.
void Cpu::interrupt_exec() {
    if (!exec_inflight_) return;
    Frame& f = *stack_[depth_ - 1];
    PendingExec& e = f.execs[f.nexecs - 1];
    Cycles at = clock_.to_cycles(now() - busy_base_);
    Cycles done = at > exec_start_cycles_ ? at - exec_start_cycles_ : 0;
    if (done > e.remaining) done = e.remaining;
    e.remaining -= done;
    busy_cycles_ = exec_start_cycles_ + done;
    account(f.kind, e.cat, done);
    if constexpr (TRACE_COMPILED)
        if (trace_) [[unlikely]] trace_exec_end(f, e.cat, done);
    exec_inflight_ = false;
    exec_done_arg_ += 4; // the scheduled completion is now stale
}

void Cpu::raise_irq(unsigned vector) {
    pending_irqs_ |= (1ULL << vector);
    plain_end_ = 0; // plain_end_update() with an interrupt pending
    if (in_run_) return; // the dispatch loop will see it
    if (stalled_) [[unlikely]] {
        if (hyp_) hyp_->stalled_irq(*this, vector);
        return;
    }
    if (deliverable_irqs()) {
        interrupt_exec();
        run();
    } else if (irqs_disabled_ && cfg_.soft_irq_masking && !hard_disabled_ && !idle_ && depth_ > 0) {
        // Lazy masking: the interrupt is taken at once, only to be recorded; the CPU then
        // hard-disables so that further arrivals wait silently until the replay at unmask.
        interrupt_exec();
        hard_disabled_ = true;
        ++soft_masked_irqs_;
        push_exec(*stack_[depth_ - 1], PendingExec{costs_.soft_mask_hit, Cat::IRQ_MASK, false, false, {}});
        run();
    }
}

void Cpu::end_idle() {
    idle_ = false;
    np_due_update();
    if constexpr (TRACE_COMPILED)
        if (trace_) [[unlikely]] trace_idle_end();
    stats_.idle_ticks += now() - idle_since_;
    busy_base_ = now();
    busy_cycles_ = 0;
}

// ---------------------------------------------------------------------------------------
// Context stack

void Cpu::push_frame(Frame& f, CtxKind kind) {
    f.kind = kind;
    f.serial = ++serial_counter_;
    f.nexecs = 0;
    f.simd_clobbered = false;
    stack_[depth_++] = &f;
    np_due_update();
    if constexpr (TRACE_COMPILED)
        if (trace_) [[unlikely]] trace_ctx_begin(f);
}

Frame& Cpu::push_hardirq(std::uint64_t ready) {
    // NMIs first: an NMI-priority vector passes the mask and preempts ordinary ones.
    const std::uint64_t nmi_ready = cfg_.pseudo_nmi ? ready & nmi_vectors_ : 0;
    const unsigned vector = static_cast<unsigned>(__builtin_ctzll(nmi_ready ? nmi_ready : ready));
    pending_irqs_ &= ~(1ULL << vector);
    ++irqs_[vector].count;
    const bool nmi = nmi_ready != 0; // the vector is one of them
    Frame& f = nmi ? nmi_frame_ : hardirq_frame_;
    push_frame(f, nmi ? CtxKind::NMI : CtxKind::HARDIRQ);
    f.saved_irqs_disabled = irqs_disabled_;
    f.vector = vector;
    irqs_disabled_ = true;
    if (nmi) {
        ++nmis_;
        preempt_count_add(NMI_OFFSET + HARDIRQ_OFFSET); // nmi_enter
    } else {
        ++stats_.hardirqs;
        preempt_count_add(HARDIRQ_OFFSET); // irq_enter
        if (hard_disabled_) { // soft masking: this is the replay of a recorded interrupt
            hard_disabled_ = false;
            push_exec(f, PendingExec{costs_.soft_mask_replay, Cat::IRQ_MASK, false, false, {}});
        }
    }
    f.st = Frame::St::IRQ_ENTRY; // Cpu::irq_steps
    f.irq_step = 0;
    if (hyp_) [[unlikely]]
        if (Cycles c = hyp_->irq_delivery(*this, vector, idle_)) push_exec(f, PendingExec{c, Cat::VIRT, false, false, {}});
    return f;
}

// The softirq context: handle_softirqs' body as the frame's steps (Cpu::irq_steps), each vector's
// handler its root while it runs (a coroutine of its own cost a frame, its resumptions and a
// destroy per run). The steps start where the coroutine's first resumption did.
// Models: invoke_softirq() (kernel/softirq.c)
void Cpu::push_softirq(bool from_irq_exit) {
    Frame& f = softirq_frame_;
    push_frame(f, CtxKind::SOFTIRQ);
    f.from_irq_exit = from_irq_exit;
    f.saved_irqs_disabled = irqs_disabled_;
    irqs_disabled_ = true; // do_softirq: local_irq_save
    f.st = Frame::St::SOFTIRQ_START;
}

// An interrupt frame's root is empty here: irq_steps took (rethrew) and reset each handler's as it
// returned, and a plain handler has none.
void Cpu::pop_frame() {
    Frame& f = *stack_[depth_ - 1];
    --depth_;
    np_due_update();
    if constexpr (TRACE_COMPILED)
        if (trace_) [[unlikely]] trace_ctx_end(f);
    switch (f.kind) {
    case CtxKind::NMI:
        preempt_count_sub(NMI_OFFSET + HARDIRQ_OFFSET); // nmi_exit: no softirqs, no rescheduling
        irqs_disabled_ = f.saved_irqs_disabled;
        return;
    case CtxKind::HARDIRQ: {
        preempt_count_sub(HARDIRQ_OFFSET); // irq_exit
        if (!in_interrupt(preempt_count_) && softirq_pending_) {
            push_softirq(true);
            softirq_frame_.saved_irqs_disabled = f.saved_irqs_disabled;
            return;
        }
        return_from_interrupt(f.saved_irqs_disabled);
        return;
    }
    case CtxKind::SOFTIRQ:
        if (f.from_irq_exit) {
            return_from_interrupt(f.saved_irqs_disabled);
        } else {
            irqs_disabled_ = f.saved_irqs_disabled; // do_softirq: local_irq_restore
        }
        return;
    default: return;
    }
}

// The exception-return path: back to the interrupted context, rescheduling first when
// returning to user space or, under PREEMPT=full, to preemptible kernel code
// (preempt_schedule_irq).
// Models: irqentry_exit(), preempt_schedule_irq() (kernel/entry/common.c)
void Cpu::return_from_interrupt(bool saved_irqs_disabled) {
    irqs_disabled_ = saved_irqs_disabled;
    Frame& below = *stack_[depth_ - 1];
    if (below.kind != CtxKind::TASK) return;
    TaskStruct& t = *current_task_;
    bool to_user = t.in_user;
    bool preemptible = to_user || t.pid == 0 || below.st == Frame::St::GUEST ||
                       (cfg_.preempt == PreemptModel::FULL && preempt_count_ == 0 && !irqs_disabled_);
    if (preemptible) np_mark(true);
    if (preemptible && need_resched_) {
        schedule(true);
        if (current_task_ != &t) return; // the switch queued the incoming task's restore
    }
    if (to_user && fpu_) {
        Cycles c = fpu_->exit_to_user(*this, t);
        if (c) push_exec(below, PendingExec{c, Cat::SIMD_SAVE_RESTORE, false, false, {}});
    }
}

void Cpu::handle_point(Frame& f) {
    switch (f.point) {
    case Point::IRQ_ENABLE: break;
    case Point::IRQ_RESTORE:
        // The mask takes the saved state now that the exec has ended. The loop's next step looks
        // for deliverable interrupts before it resumes the frame: an unmasking restore's
        // IRQ_ENABLE point, and nothing more under a mask (no time passed since the last look).
        irqs_disabled_ = f.restore_irqs_disabled;
        break;
    case Point::BH_ENABLE:
    case Point::PREEMPT_ENABLE:
    case Point::MIGHT_RESCHED:
    case Point::COND_RESCHED:
        switch (point_due(f, f.point)) {
        case PointDue::SOFTIRQ: push_softirq(false); return; // handled again when the softirq frame pops
        case PointDue::SCHEDULE: schedule(true); return;
        case PointDue::NOTHING: break;
        }
        break;
    case Point::RETURN_TO_USER: {
        TaskStruct& t = *current_task_;
        np_mark(true);
        if (need_resched_) {
            schedule(true);
            return;
        }
        t.in_user = true;
        f.st = Frame::St::READY;
        if (fpu_) {
            Cycles c = fpu_->exit_to_user(*this, t);
            if (c) push_exec(f, PendingExec{c, Cat::SIMD_SAVE_RESTORE, false, false, {}});
        }
        return;
    }
    }
    f.st = Frame::St::READY;
}

[[gnu::always_inline]] inline Cpu::PointDue Cpu::point_due(const Frame& f, Point p) {
    const bool task_ctx = f.kind == CtxKind::TASK;
    switch (p) {
    case Point::BH_ENABLE:
        if (softirq_pending_ && !in_interrupt(preempt_count_) && !irqs_disabled_) return PointDue::SOFTIRQ;
        [[fallthrough]];
    case Point::PREEMPT_ENABLE:
        if (task_ctx && cfg_.preempt == PreemptModel::FULL && preempt_count_ == 0 && !irqs_disabled_) {
            np_mark(true);
            if (need_resched_) return PointDue::SCHEDULE;
        }
        return PointDue::NOTHING;
    case Point::MIGHT_RESCHED:
        if (cfg_.preempt != PreemptModel::VOLUNTARY) return PointDue::NOTHING;
        [[fallthrough]];
    case Point::COND_RESCHED:
        if (task_ctx && preempt_count_ == 0 && !irqs_disabled_) {
            np_mark(true);
            if (need_resched_) return PointDue::SCHEDULE;
        }
        return PointDue::NOTHING;
    default: return PointDue::NOTHING;
    }
}

bool Cpu::point_in_place(Point p) {
    const Frame& f = *running_;
    if (f.nexecs != 0 || deliverable_irqs_at(f)) return false;
    switch (p) { // handle_point's cases that end with the frame READY when nothing is due
    case Point::BH_ENABLE:
    case Point::PREEMPT_ENABLE:
    case Point::MIGHT_RESCHED:
    case Point::COND_RESCHED: return point_due(f, p) == PointDue::NOTHING;
    default: return false;
    }
}

bool Cpu::return_to_user_in_place(Cycles& restore) {
    const Frame& f = *running_;
    if (f.nexecs != 0 || deliverable_irqs_at(f)) return false;
    np_mark(true);
    if (need_resched_) return false; // handle_point marks again (a closed span: nothing) and switches
    TaskStruct& t = *current_task_;
    t.in_user = true;
    if (fpu_) restore = fpu_->exit_to_user(*this, t);
    return restore == 0;
}

template <bool IN_LOOP>
[[gnu::always_inline]] inline void Cpu::dispatch() {
    if constexpr (!IN_LOOP) in_run_ = true;
    for (;;) {
        Frame& f = *stack_[depth_ - 1];
        // A stall, guest mode and a deliverable interrupt all need one of the two words nonzero.
        if ((pending_irqs_ | guest_or_stalled_) != 0) [[unlikely]] {
            if (stalled_) [[unlikely]] break;
            if (in_guest_) [[unlikely]] {
                if (depth_ == 1 && f.st == Frame::St::GUEST && f.nexecs == 0 && !deliverable_irqs() && !need_resched_ &&
                    in_guest_->runnable())
                    break; // the guest keeps the CPU
                leave_guest();
            }
            if (const std::uint64_t ready = deliverable_irqs_at(f); ready && f.st != Frame::St::DONE) {
                // The next pass's steps for the new frame when they lead to its entry steps: without a
                // hypervisor the push changes neither stalled_ nor in_guest_ (both clear here), so with
                // no exec queued (no soft-masking replay) and no NMI deliverable the pass runs irq_steps.
                Frame& h = push_hardirq(ready);
                if (h.nexecs == 0 && !hyp_ && !deliverable_irqs_at(h)) [[likely]] {
                    running_ = &h;
                    if (irq_steps(h)) continue; // a coroutine handler: READY, resumed at the next pass
                    running_ = nullptr;
                    if (exec_inflight_) {
                        if constexpr (!IN_LOOP) in_run_ = false;
                        return;
                    }
                }
                continue;
            }
        }
        if (f.nexecs > 0) {
            if (f.execs[f.nexecs - 1].remaining == 0) {
                PendingExec& e = f.execs[f.nexecs - 1];
                if (e.simd_check && check_simd(e, "start of SIMD work")) f.simd_clobbered = true;
                --f.nexecs;
                continue;
            }
            // defer_exec_ is IN_LOOP: on_event sets and clears it with in_run_, and run() calls
            // dispatch<false> only when in_run_ is clear
            if (IN_LOOP && !idle_ && !f.execs[f.nexecs - 1].simd_check) [[likely]] {
                // start_exec's steps in on_event's completion loop, for an exec without SIMD
                // work on a busy CPU: its completion deferred to that loop
                if (np_mark_due()) np_mark_exec();
                exec_start_cycles_ = busy_cycles_;
                exec_inflight_ = true;
                if constexpr (TRACE_COMPILED)
                    if (trace_) [[unlikely]] trace_exec_begin_ = now();
                exec_done_at_ = engine::sat_add(busy_base_, clock_.to_ticks_ceil(busy_cycles_ + f.execs[f.nexecs - 1].remaining));
                exec_done_arg_ += 4;
                exec_deferred_ = true;
                break;
            }
            start_exec(f);
            break;
        }
        if (f.st == Frame::St::READY) [[likely]] { // most steps: a test, not the switch's table
            running_ = &f;
        resume:
            f.st = Frame::St::DONE; // unless the coroutine suspends on an awaitable
            f.cont.resume();
            if (f.st == Frame::St::DONE) {
                if (!f.root.done()) {
                    std::fprintf(stderr, "kdsim internal error: a context suspended on a foreign awaitable\n");
                    std::abort();
                }
                // A hardirq's or softirq's handler has returned: the frame's steps after it follow
                // at once, as in the coroutine that awaited the handler.
                if (f.kind != CtxKind::TASK) irq_steps(f);
            }
            running_ = nullptr;
            if (exec_inflight_) { // its exec started as it suspended (suspend_exec_started)
                if constexpr (!IN_LOOP) in_run_ = false;
                return;
            }
            continue;
        }
        switch (f.st) {
        case Frame::St::READY: continue; // above
        case Frame::St::IRQ_ENTRY:
        case Frame::St::IRQ_ENTRY_EXTRA:
        case Frame::St::IRQ_HANDLER:
        case Frame::St::IRQ_EXIT:
        case Frame::St::IRQ_EXIT_EXTRA:
        case Frame::St::IRQ_RETURN:
        case Frame::St::SOFTIRQ_START:
        case Frame::St::SOFTIRQ_ROUND:
        case Frame::St::SOFTIRQ_ENABLED:
        case Frame::St::SOFTIRQ_ACTION:
        case Frame::St::SOFTIRQ_DISABLED:
            running_ = &f;
            if (irq_steps(f)) goto resume; // the handler starts now, as the awaiting coroutine started it
            running_ = nullptr;
            if (exec_inflight_) {
                if constexpr (!IN_LOOP) in_run_ = false;
                return;
            }
            continue;
        case Frame::St::POINT:
            if (f.point == Point::IRQ_RESTORE) {
                // handle_point's IRQ_RESTORE, then this loop's next pass up to the resume (the
                // mask changes neither stalled_ nor in_guest_, and queues no exec)
                irqs_disabled_ = f.restore_irqs_disabled;
                f.st = Frame::St::READY;
                if (deliverable_irqs_at(f)) continue;
                running_ = &f;
                goto resume;
            }
            handle_point(f);
            continue;
        case Frame::St::GUEST:
            // A thread whose guest is done (in WFI, its halt poll over) goes on to block, even when
            // a reschedule is due: kvm_vcpu_block's schedule() puts it to sleep, no preemption.
            if (!current_task_->guest->runnable()) { // back from the KVM_RUN loop's guest entry
                current_task_->guest = nullptr;
                f.st = Frame::St::READY;
                continue;
            }
            if (need_resched_) {
                schedule(true);
                continue;
            }
            if (Cycles c = current_task_->guest->entry_cost(*this)) {
                push_exec(f, PendingExec{c, Cat::VIRT, false, false, {}});
                continue;
            }
            enter_guest(*current_task_->guest);
            continue;
        case Frame::St::BLOCKED: schedule(false); continue;
        case Frame::St::DONE:
            if (f.kind == CtxKind::TASK) {
                f.root.rethrow_if_failed();
                current_task_->state = TaskState::DEAD;
                f.st = Frame::St::BLOCKED;
                schedule(false);
                continue;
            }
            pop_frame();
            continue;
        case Frame::St::IDLE:
            // do_idle's flush_smp_call_function_queue before schedule_idle: the wake_list's tasks
            // that no IPI came for (a polling idle loop's), each activated in the idle task
            if (!wake_list_.empty()) [[unlikely]] {
                if (!idle_flush_charged_) {
                    idle_flush_charged_ = true;
                    push_exec(f, PendingExec{costs_.wakeup_activate, Cat::SCHEDULER, false, false, {}});
                    continue;
                }
                idle_flush_charged_ = false;
                ttwu_do_activate(wake_list_pop());
                continue;
            }
            // and the nohz kick's csd, whose SCHED_SOFTIRQ do_idle runs at once (do_softirq)
            if (nohz_kick_pending_) [[unlikely]] {
                nohz_kick_pending_ = false;
                softirq_pending_ |= 1u << SCHED_SOFTIRQ;
                push_softirq(false);
                continue;
            }
            if (need_resched_ || !runqueue_.empty()) {
                schedule(false);
                continue;
            }
            if (!idle_) {
                np_mark(true);
                np_close(now());
                idle_ = true;
                np_due_update();
                idle_since_ = now();
                if constexpr (TRACE_COMPILED)
                    if (trace_) [[unlikely]] trace_idle_begin();
                stats_.busy_ticks += now() - busy_base_;
            }
            if (hyp_) [[unlikely]] hyp_->wfi(*this);
            if constexpr (!IN_LOOP) in_run_ = false;
            return;
        }
    }
    if constexpr (!IN_LOOP) in_run_ = false;
}

void Cpu::run() {
    if (in_run_) return;
    dispatch<false>();
}

// Defined after dispatch, so that dispatch<true> is inlined here (it was not from above it).
void Cpu::on_event(std::uint64_t arg) {
    // Nearly every event: the current exec's completion, told by one compare (its kind bits are
    // EV_EXEC_DONE's 0); an EV_EXEC_DONE with another arg is an earlier exec's (stale).
    if (arg == exec_done_arg_) [[likely]] {
        if (!exec_inflight_) return; // stale
        // The dispatch after a completion ends with start_exec or with nothing to run, and
        // nothing is scheduled after start_exec in this handler: deferring its push keeps the
        // event's place in the order. Each completion taken in place is one engine event.
        // Only the engine's run loop calls on_event, never a dispatch: in_run_ is false here. It
        // is set for the whole loop: between two dispatches only complete_exec and run_inline run,
        // and neither raises an interrupt or reads it.
        defer_exec_ = true;
        in_run_ = true;
        for (;;) {
            complete_exec();
            dispatch<true>();
            if (!exec_deferred_) break;
            exec_deferred_ = false;
            if (!sim_.run_inline(exec_done_at_)) {
                defer_exec_ = false;
                in_run_ = false;
                sim_.schedule_refused(exec_done_at_, this, exec_done_arg_);
                return;
            }
        }
        defer_exec_ = false;
        in_run_ = false;
        return;
    }
    switch (arg & 3) {
    case EV_EXEC_DONE: return; // stale
    case EV_TIMER:
        timer_event_at_ = engine::TICK_MAX;
        expire_timers();
        arm_next_timer_event();
        return;
    case EV_KICK:
        if (hyp_ && idle_) { // a vCPU in WFI: the scheduler's wake-up comes as an IPI, through KVM
            // (none for a look with nothing to run: the boot's, after a shared vCPU idled at once);
            // a wake_list entry's is the call-function IPI
            if (!wake_list_.empty() || nohz_kick_pending_) {
                raise_irq(CALL_FUNCTION_SINGLE_VECTOR);
                return;
            }
            if (runqueue_.empty() && !need_resched_) return;
            raise_irq(RESCHEDULE_VECTOR);
            return;
        }
        if (idle_ || !exec_inflight_) run();
        return;
    case EV_IPI: raise_irq(static_cast<unsigned>(arg >> 2)); return;
    }
}

void Cpu::boot() {
    // periodic scheduler tick
    hrtimer_start(now() + tick_period_, &Cpu::sched_tick_fn, nullptr);
    busy_base_ = now();
    busy_cycles_ = 0;
    TaskStruct* first = pick_next_task();
    if (!first) first = idle_task_;
    else dequeue(*first);
    first->state = TaskState::RUNNING;
    first->slice_start = now();
    current_task_ = first;
    if constexpr (TRACE_COMPILED)
        if (trace_) [[unlikely]] first->frame.trace_begin = now();
    depth_ = 0;
    stack_[depth_++] = &first->frame;
    np_due_update();
    if (first->in_user && fpu_)
        if (Cycles c = fpu_->exit_to_user(*this, *first))
            push_exec(first->frame, PendingExec{c, Cat::SIMD_SAVE_RESTORE, false, false, {}});
    sim_.schedule_at(now(), this, EV_KICK);
}

void Cpu::finish() {
    if (in_guest_) { // the guest time so far; guest mode itself stays open
        account(CtxKind::TASK, guest_cat_, clock_.to_cycles(now() - guest_since_));
        guest_since_ = now();
    }
    if (exec_inflight_) interrupt_exec();
    if constexpr (TRACE_COMPILED)
        if (trace_) [[unlikely]] trace_finish();
    if (idle_) {
        stats_.idle_ticks += now() - idle_since_;
        idle_since_ = now();
    } else {
        if (!stalled_) stats_.busy_ticks += now() - busy_base_; // a stall's time is no busy time
        busy_base_ = now();
        busy_cycles_ = 0;
        np_close(now());
    }
}

// ---------------------------------------------------------------------------------------
// The run trace (kernel/trace.h): slices end where the CPU's state changes, so that an exec cut
// by an interrupt ends before the interrupt's context begins and the slices of a CPU nest.

std::uint32_t Cpu::trace_comm(TaskStruct& t) {
    if (!t.trace_name) t.trace_name = trace_->intern(t.comm);
    return t.trace_name;
}

static_assert(CATS <= 32 && CTX_KINDS <= 8, "TraceRecord::sub packs a category and a context kind");

void Cpu::trace_exec_end(const Frame& f, Cat cat, Cycles done) {
    if (now() == trace_exec_begin_) return;
    const std::uint32_t comm = f.kind == CtxKind::TASK ? trace_comm(*current_task_) : 0;
    const auto sub = static_cast<std::uint8_t>(static_cast<unsigned>(cat) | static_cast<unsigned>(f.kind) << 5);
    trace_->record(TraceRecord{trace_exec_begin_, now(), done, comm, trace_track_, TraceKind::EXEC, sub});
}

void Cpu::trace_ctx_begin(Frame& f) {
    if (trace_idle_open_) trace_idle_end();
    f.trace_begin = now();
    if (f.kind == CtxKind::SOFTIRQ) trace_softirq_mask_ = 0;
}

void Cpu::trace_ctx_end(const Frame& f) {
    TraceRecord r{f.trace_begin, now(), 0, 0, trace_track_, TraceKind::TASK, 0};
    switch (f.kind) {
    case CtxKind::SOFTIRQ:
        r.kind = TraceKind::SOFTIRQ;
        r.arg = trace_softirq_mask_;
        break;
    case CtxKind::HARDIRQ:
    case CtxKind::NMI: {
        IrqDesc& d = irqs_[f.vector];
        if (!d.trace_name) d.trace_name = trace_->intern(d.name.empty() ? "irq" : d.name);
        r.kind = f.kind == CtxKind::NMI ? TraceKind::NMI : TraceKind::HARDIRQ;
        r.name = d.trace_name;
        r.arg = f.vector;
        break;
    }
    default: {
        TaskStruct& t = *f.task;
        r.name = trace_comm(t);
        r.arg = static_cast<std::uint64_t>(t.pid);
        break;
    }
    }
    if (r.end > r.begin) trace_->record(r);
    // Back on an idle CPU whose interrupt did no work: the idle slice continues.
    if (f.kind != CtxKind::TASK && depth_ == 1 && idle_) trace_idle_begin();
}

void Cpu::trace_idle_begin() {
    trace_idle_open_ = true;
    trace_idle_begin_ = now();
}

void Cpu::trace_idle_end() {
    if (!trace_idle_open_) return;
    trace_idle_open_ = false;
    if (now() > trace_idle_begin_)
        trace_->record(TraceRecord{trace_idle_begin_, now(), 0, 0, trace_track_, TraceKind::IDLE, 0});
}

void Cpu::trace_switch(TaskStruct& prev, TaskStruct& next) {
    trace_idle_end();
    trace_ctx_end(prev.frame);
    next.frame.trace_begin = now();
    trace_->record(TraceRecord{now(), now(), trace_comm(next), trace_comm(prev), trace_track_, TraceKind::SWITCH, 0});
}

void Cpu::trace_clobber(SimdToken expected, SimdToken found, const char* where) {
    const std::uint64_t culprit = trace_->intern(describe_token(found));
    const std::uint64_t at = trace_->intern_static(where);
    trace_->record(TraceRecord{now(), now(), culprit << 32 | at, trace_->intern(describe_token(expected)),
                               trace_track_, TraceKind::CLOBBER, 0});
}

void Cpu::trace_bracket(Tick begin, std::uint64_t serial, const char* who) {
    if (!tracing() || serial != context_serial() || now() == begin) return;
    trace_->record(TraceRecord{begin, now(), 0, trace_->intern_static(who), trace_track_, TraceKind::BRACKET, 0});
}

// The end of the run: every open slice ends now, innermost first.
void Cpu::trace_finish() {
    trace_idle_end();
    for (std::size_t i = depth_; i-- > 0;) trace_ctx_end(*stack_[i]);
    trace_idle_open_ = false;
}

// ---------------------------------------------------------------------------------------
// Watchdog view: the longest span during which a reschedule request could not be honoured.

bool Cpu::preemptible_now() const {
    if (idle_) return true;
    if (depth_ != 1) return false; // interrupt context
    const TaskStruct& t = *current_task_;
    if (t.pid == 0) return true;
    if (preempt_count_ != 0 || irqs_disabled_) return false;
    return t.in_user || cfg_.preempt == PreemptModel::FULL;
}

// What keeps the CPU from rescheduling right now; captured cheaply, described only when the
// span turns out to be the longest.
Cpu::NpHolder Cpu::np_holder() const {
    const Frame& top = *stack_[depth_ - 1];
    NpHolder h;
    h.task = current_task_;
    h.holder = preempt_holder_;
    h.vector = top.vector;
    if (top.kind == CtxKind::HARDIRQ || top.kind == CtxKind::NMI) h.why = NpHolder::HARDIRQ;
    else if (top.kind == CtxKind::SOFTIRQ) h.why = NpHolder::SOFTIRQ;
    else if (irqs_disabled_) h.why = NpHolder::IRQS_OFF;
    else if (preempt_count_ & PREEMPT_MASK) h.why = NpHolder::PREEMPT_OFF;
    else if (softirq_count(preempt_count_)) h.why = NpHolder::BH_OFF;
    else h.why = NpHolder::KERNEL_CODE;
    return h;
}

std::string Cpu::describe(const NpHolder& h) const {
    std::string who = h.task ? h.task->describe() : "?";
    switch (h.why) {
    case NpHolder::HARDIRQ: return "hardirq " + irqs_[h.vector].name + " interrupting " + who;
    case NpHolder::SOFTIRQ: return "softirq processing interrupting " + who;
    case NpHolder::IRQS_OFF: return "IRQs disabled in " + who;
    case NpHolder::PREEMPT_OFF: return std::string("preemption disabled by ") + h.holder + " in " + who;
    case NpHolder::BH_OFF: return "bottom halves disabled in " + who;
    case NpHolder::KERNEL_CODE: break;
    }
    return "kernel code of " + who + " (PREEMPT=" + std::string(to_string(cfg_.preempt)) +
           ": no preemption point reached)";
}

std::string Cpu::describe_np_state() const {
    if (!np_open_) return "";
    // The interrupt we are in is the wake-up's own: describe what it interrupted.
    char since[64];
    std::snprintf(since, sizeof since, " (for %.3f us before the wake-up)", engine::to_us(now() - np_start_));
    return describe(np_holder_) + since;
}

void Cpu::np_close(Tick end) {
    if (!np_open_) return;
    np_open_ = false;
    np_quiet_ = false;
    np_due_update();
    Tick len = end - np_start_;
    if (len > stats_.longest_np_span) {
        stats_.longest_np_span = len;
        stats_.longest_np_span_start = np_start_;
        stats_.longest_np_holder = describe(np_holder_);
    }
    if (len > cfg_.rcu_cpu_stall_timeout) ++stats_.rcu_stall_warnings;
    if (len > cfg_.rcu_exp_cpu_stall_timeout) ++stats_.rcu_exp_stall_warnings;
    if (len > cfg_.softlockup_thresh) ++stats_.soft_lockups;
}

// Called when time is about to pass (honour_point = false) or at a point where a pending
// reschedule would be honoured (honour_point = true).
void Cpu::np_mark(bool honour_point) {
    if (honour_point) np_close(now());
    else np_mark_exec();
}

} // namespace kdsim::kernel
