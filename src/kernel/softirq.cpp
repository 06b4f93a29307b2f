// Softirq processing and interrupt entry/exit (kernel/softirq.c).
//
// irq_exit() runs pending softirqs when it leaves the last interrupt level (!in_interrupt());
// local_bh_enable() runs them in the calling task. __do_softirq() handles the pending vectors
// in bit order with interrupts enabled, re-reads the pending mask and restarts while less than
// MAX_SOFTIRQ_TIME has passed (counted in jiffies, as the kernel does), need_resched() is
// clear and fewer than MAX_SOFTIRQ_RESTART rounds ran; whatever remains is handed to the
// per-CPU ksoftirqd thread, which runs it in task context at normal priority.
// Simplified: ksoftirqd deferral (the 2016-2023 ksoftirqd_running() rule) is not modelled,
// matching kernels after the 2023 revert.
#include "kernel/softirq.h"

#include "kernel/irqflags.h"
#include "kernel/sched.h"

#include <cstdio>
#include <cstdlib>

namespace kdsim::kernel {

std::string_view softirq_name(unsigned nr) {
    static constexpr std::string_view names[NR_SOFTIRQS] = {
        "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"};
    return nr < NR_SOFTIRQS ? names[nr] : "?";
}

// Models: wakeup_softirqd() (kernel/softirq.c)
void Cpu::wakeup_softirqd() {
    ++stats_.ksoftirqd_wakeups;
    wake_up_process(*ksoftirqd_);
}

// Models: raise_softirq_irqoff() (kernel/softirq.c)
void Cpu::raise_softirq_irqoff(unsigned nr) {
    softirq_pending_ |= 1u << nr;
    if (!in_interrupt(preempt_count_)) wakeup_softirqd();
}

// handle_softirqs() in ksoftirqd; the softirq frame (irq_exit, local_bh_enable) runs the same body
// as plain steps (Cpu::irq_steps' SOFTIRQ_* stages).
// Models: handle_softirqs(), __do_softirq() (kernel/softirq.c)
engine::Task<> Cpu::handle_softirqs() {
    const Tick start = now(); // MAX_SOFTIRQ_TIME counts from here: in jiffies, when a restart asks
    std::uint32_t max_restart = cfg_.max_softirq_restart;
    preempt_count_add(SOFTIRQ_OFFSET);
    ++stats_.softirq_runs;
    for (;;) {
        co_await exec(costs_.softirq_round, Cat::SOFTIRQ);
        std::uint32_t pending = softirq_pending_;
        softirq_pending_ = 0;
        if constexpr (TRACE_COMPILED)
            if (trace_) [[unlikely]] trace_softirq_mask_ |= pending;
        co_await local_irq_enable(*this);
        // The pending vectors in bit order, lowest first (h->action for each set bit).
        for (std::uint32_t left = pending & ((1u << NR_SOFTIRQS) - 1); left; left &= left - 1) {
            const unsigned nr = static_cast<unsigned>(__builtin_ctz(left));
            if (!softirq_vec_[nr].fn) continue;
            softirq_running_nr_ = nr;
            ++stats_.softirq_handled[nr];
            co_await softirq_vec_[nr].fn(*this, softirq_vec_[nr].ctx);
        }
        co_await local_irq_disable(*this);
        if (!softirq_pending_) break;
        const std::uint64_t end = start / tick_period_ + (cfg_.max_softirq_time + tick_period_ - 1) / tick_period_;
        if (jiffies() < end && !need_resched_ && --max_restart) {
            ++stats_.softirq_restarts;
            continue;
        }
        wakeup_softirqd();
        break;
    }
    preempt_count_sub(SOFTIRQ_OFFSET);
}

// run_ksoftirqd() in its smpboot thread loop.
// Models: run_ksoftirqd() (kernel/softirq.c)
engine::Task<> Cpu::ksoftirqd_body(Cpu& cpu) {
    for (;;) {
        if (!cpu.softirq_pending_) {
            co_await cpu.block();
            continue;
        }
        co_await local_irq_disable(cpu);
        if (cpu.softirq_pending_) co_await cpu.handle_softirqs();
        co_await local_irq_enable(cpu);
        co_await cond_resched(cpu);
    }
}

// Inline in irq_steps (one register save for its steps); the caller has tested c != 0. An exec
// that is not done in place starts now when the dispatch loop's next step would start it (no
// stall, no guest, no deliverable interrupt, the frame's top exec not empty): irq_steps returns
// false to the loop, which then sees exec_inflight_ and ends as after its own start_exec.
// exec_in_place's rare calls (ASK) are out of line, so that nothing of the step lives across a call.
[[gnu::always_inline]] inline bool Cpu::irq_step_exec(Frame& f, Cycles c, Cat cat, Frame::St next) {
    Tick due = 0;
    if (defer_exec_) {
        switch (exec_in_place_plain(c, cat, due)) {
        case InPlace::DONE: return true;
        case InPlace::ASK: [[unlikely]] return irq_step_asked(f, c, cat, next);
        case InPlace::REFUSED: break;
        }
    }
    return irq_step_queued(f, c, cat, next, due);
}

// irq_step_exec when exec_in_place_plain asked: exec_in_place's work after its first test, which
// exec_in_place_plain has passed (ExecAwaiter::ready_asked), then the exec queued or started.
[[gnu::noinline, gnu::cold]] bool Cpu::irq_step_asked(Frame& f, Cycles c, Cat cat, Frame::St next) {
    ExecAwaiter a{*this, c, cat};
    if (a.ready_asked()) return true;
    return irq_step_queued(f, c, cat, next, refused_due_);
}

// An exec of the steps not done in place: the frame takes stage `next` once it has ended; false.
[[gnu::always_inline]] inline bool Cpu::irq_step_queued(Frame& f, Cycles c, Cat cat, Frame::St next, Tick due) {
    const PendingExec e{c, cat, false, false, {}};
    f.st = next;
    if (due) {
        exec_started(f, e, due);
        return false;
    }
    if (f.nexecs == 0) { // push_exec's result without its call
        f.execs[0] = e;
        f.nexecs = 1;
    } else {
        push_exec(f, e);
    }
    // (nothing deliverable when nothing is pending: the mask only removes vectors)
    if (!guest_or_stalled_ && (pending_irqs_ == 0 || !deliverable_irqs_at(f)) && f.execs[f.nexecs - 1].remaining != 0)
        start_exec(f);
    return false;
}

// A hardirq's, NMI's or softirq's steps have ended (DONE). The dispatch loop's next pass would only
// pop the frame (no exec is queued, a DONE frame takes no interrupt) unless the CPU has stalled or
// is in a guest: the pop is made here. True when irq_exit's pop pushed the softirq frame and the
// pass after would run its steps (no stall, no guest, nothing queued or deliverable): the caller
// (irq_steps) runs them at once, softirq_frame_ running. False: the frame on top waits, or the
// loop's next pass takes it. Inline: GCC merges its two sites in irq_steps, which then saves one
// register fewer.
[[gnu::always_inline]] inline bool Cpu::irq_frame_end(Frame& f) {
    f.st = Frame::St::DONE;
    if (guest_or_stalled_ || f.nexecs != 0) [[unlikely]] return false; // stalled_ or in_guest_: one word
    running_ = nullptr; // as in the loop's pass
    pop_frame();
    Frame& s = softirq_frame_;
    // s is not an NMI frame: deliverable_irqs_at(s) is unmasked_irqs(), 0 when nothing is pending
    if (stack_[depth_ - 1] != &s || s.st != Frame::St::SOFTIRQ_START || guest_or_stalled_ || s.nexecs != 0 ||
        (pending_irqs_ != 0 && unmasked_irqs()))
        return false;
    running_ = &s;
    return true;
}

// The hardirq context: exception entry and irq_enter, the handler, irq_exit bookkeeping and
// exception return. irq_exit's softirq processing and the return path are the Cpu's (pop_frame).
// The steps around the handler are the dispatch loop's (a coroutine awaiting the handler cost a
// frame, its resumptions and a destroy per interrupt): each step's exec, and the instruction
// fetch in it, is taken when such a coroutine would have taken it. The loop enters at the frame's
// stage and, once the handler has returned, at DONE (Cpu::dispatch). The softirq frame's steps
// (SOFTIRQ_*) are handle_softirqs' body in the same way, each vector's handler the frame's root.
// The softirq frame's steps that follow in the same call (a handler's return, irq_exit's pop that
// pushed the frame: irq_frame_end) are this loop's next turn, not a nested call (`chained`): a
// handler started in such a turn is resumed here (softirq_resume) and the call returns false, as
// the nested call's caller did.
// Models: irq_enter(), irq_exit(), __do_softirq() (kernel/softirq.c)
bool Cpu::irq_steps(Frame& first) {
    using St = Frame::St;
    Frame* fp = &first;
    bool chained = false;
    for (;;) {
        Frame& f = *fp;
        switch (f.st) {
        case St::IRQ_ENTRY:
            if (const Cycles c = costs_.irq_entry + text(Text::IRQ_ENTER))
                if (!irq_step_exec(f, c, Cat::IRQ_ENTRY_EXIT, St::IRQ_ENTRY_EXTRA)) return false;
            [[fallthrough]];
        case St::IRQ_ENTRY_EXTRA:
            if (const Cycles c = costs_.irq_entry_extra)
                if (!irq_step_exec(f, c, Cat::IRQ_MASK, St::IRQ_HANDLER)) return false;
            [[fallthrough]];
        case St::IRQ_HANDLER: {
            const IrqDesc& d = irqs_[f.vector];
            if (!d.steps) {
                f.root = d.fn(*this, d.ctx);
                f.cont = f.root.handle();
                f.st = St::READY;
                return true;
            }
            for (;;) { // a plain handler: its steps until it returns, then irq_exit (f.root stays empty)
                const IrqStep s = d.steps(*this, d.ctx, f.irq_step++);
                if (s.end) { // its last exec, if any, then irq_exit (a copy of the exec: `end` not live across it)
                    if (s.c && !irq_step_exec(f, s.c, s.cat, St::IRQ_EXIT)) return false;
                    break;
                }
                if (s.c && !irq_step_exec(f, s.c, s.cat, St::IRQ_HANDLER)) return false;
            }
            goto irq_exit; // f.root is empty
        }
        case St::DONE: // the handler has returned: irq_exit, or a softirq frame's next vector
            f.root.rethrow_if_failed();
            f.root.reset();
            if (f.kind == CtxKind::SOFTIRQ) { // the next vector's handler, resumed here
                f.st = St::SOFTIRQ_ACTION;
                chained = true;
                continue;
            }
            [[fallthrough]];
        case St::IRQ_EXIT: // a plain handler's last exec has ended
        irq_exit:
            if (const Cycles c = costs_.irq_exit + text(Text::IRQ_EXIT))
                if (!irq_step_exec(f, c, Cat::IRQ_ENTRY_EXIT, St::IRQ_EXIT_EXTRA)) return false;
            [[fallthrough]];
        case St::IRQ_EXIT_EXTRA:
            if (const Cycles c = costs_.exception_return_extra)
                if (!irq_step_exec(f, c, Cat::IRQ_MASK, St::IRQ_RETURN)) return false;
            [[fallthrough]];
        case St::IRQ_RETURN:
            if (!irq_frame_end(f)) return false;
            fp = &softirq_frame_;
            chained = true;
            continue;

        // The softirq frame: handle_softirqs' body, each exec and point where the coroutine took it.
        case St::SOFTIRQ_START:
            softirq_start_ = now(); // MAX_SOFTIRQ_TIME counts from here: in jiffies, when a restart asks
            softirq_restarts_left_ = cfg_.max_softirq_restart;
            preempt_count_add(SOFTIRQ_OFFSET);
            ++stats_.softirq_runs;
        softirq_round:
            if (const Cycles c = costs_.softirq_round)
                if (!irq_step_exec(f, c, Cat::SOFTIRQ, St::SOFTIRQ_ROUND)) return false;
            [[fallthrough]];
        case St::SOFTIRQ_ROUND: {
            const std::uint32_t pending = softirq_pending_;
            softirq_pending_ = 0;
            if constexpr (TRACE_COMPILED)
                if (trace_) [[unlikely]] trace_softirq_mask_ |= pending;
            f.irq_step = pending & ((1u << NR_SOFTIRQS) - 1);
            count_irqflag_op(1); // local_irq_enable: its exec, then the mask, then its point
            if (const Cycles c = costs_.local_irq_enable)
                if (!irq_step_exec(f, c, Cat::IRQ_MASK, St::SOFTIRQ_ENABLED)) return false;
        }
            [[fallthrough]];
        case St::SOFTIRQ_ENABLED:
            irqs_disabled_ = false;
            if (pending_irqs_ != 0 && deliverable_irqs_at(f)) { // taken before the first vector
                f.st = St::SOFTIRQ_ACTION;
                return false;
            }
            [[fallthrough]];
        case St::SOFTIRQ_ACTION:
            // The pending vectors in bit order, lowest first (h->action for each set bit).
            for (std::uint32_t& left = f.irq_step; left;) {
                const unsigned nr = static_cast<unsigned>(__builtin_ctz(left));
                left &= left - 1;
                if (!softirq_vec_[nr].fn) continue;
                softirq_running_nr_ = nr;
                ++stats_.softirq_handled[nr];
                f.root = softirq_vec_[nr].fn(*this, softirq_vec_[nr].ctx);
                f.cont = f.root.handle();
                f.st = St::READY;
                if (!chained) return true;
                softirq_resume(f);
                return false;
            }
            count_irqflag_op(0); // local_irq_disable: the mask, then its exec
            irqs_disabled_ = true;
            if (const Cycles c = costs_.local_irq_disable)
                if (!irq_step_exec(f, c, Cat::IRQ_MASK, St::SOFTIRQ_DISABLED)) return false;
            [[fallthrough]];
        case St::SOFTIRQ_DISABLED:
            if (softirq_pending_) {
                const std::uint64_t end =
                    softirq_start_ / tick_period_ + (cfg_.max_softirq_time + tick_period_ - 1) / tick_period_;
                if (jiffies() < end && !need_resched_ && --softirq_restarts_left_) {
                    ++stats_.softirq_restarts;
                    goto softirq_round;
                }
                wakeup_softirqd();
            }
            // preempt_count_sub(SOFTIRQ_OFFSET) without its call: its underflow check goes to it
            if (preempt_count_ < SOFTIRQ_OFFSET) [[unlikely]] preempt_count_sub(SOFTIRQ_OFFSET);
            preempt_count_ -= SOFTIRQ_OFFSET;
            if (!irq_frame_end(f)) return false;
            fp = &softirq_frame_;
            chained = true;
            continue;
        default: return false;
        }
    }
}

// The softirq frame's handler that irq_steps has just started (f.st READY), resumed as the dispatch
// loop's resume would; each time a handler returns, the steps after it follow at once and the next
// handler is resumed here, as handle_softirqs' loop went on. Returns when the frame waits (an
// exec, a point) or its steps have ended.
[[gnu::noinline]] void Cpu::softirq_resume(Frame& f) {
    for (;;) {
        f.st = Frame::St::DONE; // unless the handler suspends on an awaitable
        f.cont.resume();
        if (f.st != Frame::St::DONE) return;
        if (!f.root.done()) {
            std::fprintf(stderr, "kdsim internal error: a context suspended on a foreign awaitable\n");
            std::abort();
        }
        f.root.rethrow_if_failed();
        f.root.reset();
        f.st = Frame::St::SOFTIRQ_ACTION;
        if (!irq_steps(f)) return;
    }
}

// Models: raise_softirq() (kernel/softirq.c)
engine::Task<> raise_softirq(Cpu& cpu, unsigned nr) {
    bool flags = co_await local_irq_save(cpu);
    cpu.raise_softirq_irqoff(nr);
    co_await local_irq_restore(cpu, flags);
}

} // namespace kdsim::kernel
