// What a CPU counts, registered under its path (`<machine>/cpu<N>/...`): interrupts, the
// softirq machinery of kernel/softirq.c (per vector as in /proc/softirqs), the scheduler's
// switches, the irqflags and bh primitives, the watchdogs and the SIMD clobbers found; and the
// findings caught on this CPU, pushed to its machine's log.
#include "kernel/cpu.h"

#include <cctype>

namespace kdsim::kernel {

void Cpu::register_stats(const stats::Scope& s) const {
    const CpuStats& c = stats_;
    s.counter("hardirqs", c.hardirqs, "count", "hard interrupts taken (irq_enter)");
    const stats::Scope softirq = s.sub("softirq");
    softirq.counter("runs", c.softirq_runs, "count", "__do_softirq invocations")
        .counter("restarts", c.softirq_restarts, "count", "extra rounds of __do_softirq's loop (MAX_SOFTIRQ_RESTART)")
        .counter("ksoftirqd_wakeups", c.ksoftirqd_wakeups, "count", "wakeup_softirqd: pending work handed to ksoftirqd")
        .counter("local_bh_disable", c.bh_disable_ops, "count", "local_bh_disable calls");
    for (unsigned nr = 0; nr < NR_SOFTIRQS; ++nr) {
        std::string name(softirq_name(nr));
        for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        softirq.sub(name).counter("runs", c.softirq_handled[nr], "count", "times the vector's action ran (/proc/softirqs)");
    }
    s.sub("sched")
        .counter("context_switches", c.context_switches, "count", "__schedule switches to another task")
        .counter("preemptions", c.preemptions, "count", "involuntary switches (preemption)");
    if (rd_)
        s.sub("sched")
            .counter("newidle_balances", c.lb_newidle, "count", "newidle_balance load balances run here as the CPU was about to idle")
            .counter("idle_balances", c.lb_idle, "count", "CPU_IDLE load balances for this CPU from a nohz kick")
            .counter("balance_pulls", c.lb_pulled, "count", "queued tasks those balances pulled here")
            .counter("nohz_kicks", c.nohz_kicks, "count", "nohz_balancer_kick: this busy CPU kicked an idle one to balance")
            .counter("active_balances", c.active_balances, "count",
                     "active balances: running tasks this CPU's stopper pushed to an idle CPU (active_load_balance_cpu_stop)");
    s.sub("irqflags")
        .counter("local_irq_disable", c.irqflag_ops[0], "count", "local_irq_disable calls")
        .counter("local_irq_enable", c.irqflag_ops[1], "count", "local_irq_enable calls")
        .counter("local_irq_save", c.irqflag_ops[2], "count", "local_irq_save calls")
        .counter("local_irq_restore", c.irqflag_ops[3], "count", "local_irq_restore calls");
    s.sub("watchdog")
        .counter("rcu_stall_warnings", c.rcu_stall_warnings, "count", "non-preemptible spans past the RCU stall timeout")
        .counter("rcu_exp_stall_warnings", c.rcu_exp_stall_warnings, "count",
                 "non-preemptible spans past the expedited RCU stall timeout")
        .counter("soft_lockups", c.soft_lockups, "count", "non-preemptible spans past the soft-lockup threshold");
    s.sub("simd").counter("clobbers", c.simd_clobbers, "count", "live SIMD registers found overwritten by another context");
}

std::string Cpu::running_context() const {
    switch (ctx_kind()) {
    case CtxKind::TASK: return current_task_ ? "task " + current_task_->comm : "task";
    case CtxKind::SOFTIRQ: return "softirq " + std::string(softirq_name(softirq_running_nr_));
    default: return std::string(to_string(ctx_kind()));
    }
}

void Cpu::report_finding(stats::FindingKind kind, std::string culprit, std::string victim, std::string where) {
    if (findings_) findings_->report(stats::Finding{kind, id_, now(), std::move(culprit), std::move(victim), std::move(where)});
}

} // namespace kdsim::kernel
