// A vCPU thread sharing its host CPU (kvm/vcpu_thread.h has the design).
#include "kvm/vcpu_thread.h"

#include "kernel/sched.h"
#include "kvm/kvm.h"

namespace kdsim::kvm {

VcpuThread::VcpuThread(Vcpu& vcpu, kernel::Cpu& host, std::string comm, std::vector<kernel::Cpu*> affinity)
    : vcpu_(vcpu), host_(&host) {
    // A user thread of the VMM (QEMU's "CPU n/KVM"), SCHED_NORMAL; runnable from the start.
    task_ = &host.create_task(std::move(comm), kernel::SchedPolicy::NORMAL, 0, false, kvm_vcpu_ioctl_run(*this));
    kernel::set_cpus_allowed(*task_, std::move(affinity));
    runnable_since_ = host.now();
    vcpu_.cpu().vcpu_stall(); // the guest runs once its thread first enters it
    vcpu_.cpu().set_vcpu_host(&host);
}

// The KVM_RUN loop: guest mode until the guest is in WFI with nothing pending, then
// kvm_vcpu_block until an interrupt for it wakes the thread.
// Models: kvm_arch_vcpu_ioctl_run() (arch/arm64/kvm/arm.c)
// Models: kvm_vcpu_block() (virt/kvm/kvm_main.c)
engine::Task<> VcpuThread::kvm_vcpu_ioctl_run(VcpuThread& t) {
    for (;;) {
        co_await t.task_->cpu->run_guest(t);
        t.resumed_on(*t.task_->cpu); // a balance may have pulled it while it was queued out of the guest
        if (t.state_ == State::POLLING) t.end_poll_and_block(); // the poll ended while the host CPU was elsewhere
        ++t.stats_.blocks;
        co_await t.task_->cpu->block();
        t.resumed_on(*t.task_->cpu);
    }
}

void VcpuThread::resumed_on(kernel::Cpu& host) {
    if (&host == host_) return;
    host_ = &host;
    vcpu_.cpu().set_vcpu_host(&host);
}

// Models: kvm_arch_vcpu_runnable() (arch/arm64/kvm/arm.c)
// Models: kvm_vcpu_check_block() (virt/kvm/kvm_main.c)
bool VcpuThread::guest_has_work() const {
    const kernel::Cpu& g = vcpu_.cpu();
    return !g.idle() || g.irqs_deliverable();
}

// Models: kvm_vcpu_can_poll() (virt/kvm/kvm_main.c)
bool VcpuThread::can_poll() const {
    return host_->single_task_running() && !host_->need_resched() && host_->now() < poll_end_;
}

// The thread keeps the host CPU while its guest has work, or while it polls.
bool VcpuThread::runnable() const { return guest_has_work() || (state_ == State::POLLING && can_poll()); }

// Models: kvm_vcpu_halt() (virt/kvm/kvm_main.c)
void VcpuThread::wfi(engine::Tick window) {
    if (state_ != State::IN_GUEST) return;
    if (window && host_->single_task_running() && !host_->need_resched()) {
        state_ = State::POLLING;
        poll_start_ = host_->now();
        poll_end_ = poll_start_ + window;
        host_->sim().schedule_at(poll_end_, this, ++poll_gen_);
        host_->guest_time_as(kernel::Cat::VIRT);
        return;
    }
    vcpu_.put_fp(); // kvm_vcpu_block -> schedule -> kvm_sched_out (the guest is idle: not charged)
    host_->kick();
}

void VcpuThread::poll_success() {
    if (state_ != State::POLLING) return;
    stats_.polled += host_->now() - poll_start_;
    ++poll_gen_;
    state_ = State::IN_GUEST;
    host_->guest_time_as(kernel::Cat::USER);
}

void VcpuThread::on_event(std::uint64_t arg) {
    if (arg == poll_gen_ && state_ == State::POLLING) host_->kick(); // the host CPU looks again: the window is over
}

void VcpuThread::end_poll_and_block() {
    stats_.polled += host_->now() - poll_start_;
    ++poll_gen_;
    state_ = State::BLOCKED;
    vcpu_.put_fp(); // kvm_vcpu_block -> schedule -> kvm_sched_out (the guest is idle: not charged)
}

void VcpuThread::steal_from(engine::Tick t) {
    state_ = State::RUNNABLE;
    runnable_since_ = t;
}

// Models: kvm_update_stolen_time() (arch/arm64/kvm/pvtime.c)
void VcpuThread::enter(kernel::Cpu& host) {
    resumed_on(host); // a load balance may have pulled the queued thread to another host CPU
    if (state_ == State::POLLING) { // back in the poll loop after a host interrupt
        host.guest_time_as(kernel::Cat::VIRT);
        vcpu_.cpu().vcpu_resume();
        return;
    }
    if (state_ == State::RUNNABLE) stats_.steal += host.now() - runnable_since_;
    state_ = State::IN_GUEST;
    put_owed_ = false;
    vcpu_.cpu().vcpu_resume();
}

// A host interrupt exits the guest (its exit and entry back: world_switch); a reschedule the
// guest's own exit found (a local wake-up) costs no second exit.
// Models: handle_exit() (arch/arm64/kvm/handle_exit.c)
Cycles VcpuThread::exit(kernel::Cpu& host, bool host_irq) {
    vcpu_.cpu().vcpu_stall();
    if (state_ == State::POLLING) {
        // a host interrupt in the poll loop: the loop goes on after it unless the interrupt
        // ended it (a task it woke here); the poll's end blocks the thread
        if (!(host_irq && can_poll()) && !guest_has_work()) end_poll_and_block();
        return 0;
    }
    if (!guest_has_work()) { // WFI: the thread goes on to kvm_vcpu_block
        state_ = State::BLOCKED;
        return 0;
    }
    ++stats_.preempted;
    steal_from(host.now());
    put_owed_ = true;
    switches_at_exit_ = task_->nr_switches;
    return host_irq ? vcpu_.vm().paths().host_exit() : 0;
}

// Switched away from while runnable and back: the preempt notifiers ran kvm_arch_vcpu_put and
// kvm_arch_vcpu_load around it.
// Models: kvm_sched_out(), kvm_sched_in() (virt/kvm/kvm_main.c)
Cycles VcpuThread::entry_cost(kernel::Cpu&) {
    if (!put_owed_ || task_->nr_switches == switches_at_exit_) return 0;
    put_owed_ = false;
    return vcpu_.vm().paths().k.vcpu_put_load + vcpu_.put_fp();
}

std::optional<Cycles> VcpuThread::host_kernel_neon_begin() { return vcpu_.host_kernel_neon_begin(); }

// Models: kvm_vcpu_kick(), kvm_vcpu_wake_up() (virt/kvm/kvm_main.c)
bool VcpuThread::kick() {
    if (state_ == State::RUNNABLE) return true;
    if (state_ == State::BLOCKED) {
        if (task_->state == kernel::TaskState::SLEEPING) ++stats_.wakeups;
        steal_from(vcpu_.cpu().now());
        // try_to_wake_up from another CPU: the host CPU's scheduler decides (reschedule IPI or kick)
        vcpu_.cpu().wake_up_process(*task_);
    }
    return false;
}

void VcpuThread::finish() {
    if (state_ == State::RUNNABLE) stats_.steal += host_->now() - runnable_since_;
    runnable_since_ = host_->now();
    if (state_ == State::POLLING) {
        stats_.polled += host_->now() - poll_start_;
        poll_start_ = host_->now();
    }
}

void VcpuThread::register_stats(const stats::Scope& s) const {
    s.value("host_cpu", [this] { return static_cast<double>(host_->id()); }, "cpu", "the host CPU the vCPU thread runs on")
        .value("steal_us", [this] { return engine::to_us(stats_.steal); }, "us",
               "runnable, not in WFI, while the thread was not in the guest (steal time)")
        .value("halt_poll_us", [this] { return engine::to_us(stats_.polled); }, "us",
               "halt polling: the thread held its host CPU for its guest in WFI (kvm_vcpu_halt)")
        .counter("preempted", stats_.preempted, "count", "host work took the host CPU from the runnable guest")
        .counter("wakeups", stats_.wakeups, "count", "the thread blocked in WFI was woken for an interrupt")
        .counter("blocks", stats_.blocks, "count", "the thread blocked in WFI (kvm_vcpu_block)");
    if (task_->cpus_allowed.size() > 1)
        s.counter("migrations", task_->nr_migrations, "count",
                  "moves to another host CPU: wake-up placements (select_task_rq_fair) and load balances")
            .counter("balance_moves", task_->nr_balance_moves, "count",
                     "load balances that pulled the queued thread to an idle host CPU (newidle_balance, nohz_idle_balance)");
}

} // namespace kdsim::kvm
