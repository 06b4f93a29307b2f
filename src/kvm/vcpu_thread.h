// A vCPU thread on a host CPU it shares with host work (vcpu_cpus in the scenario): KVM's vCPUs
// are host threads in the KVM_RUN ioctl, scheduled by the host's scheduler like any task
// (virt/kvm/kvm_main.c kvm_vcpu_ioctl, arch/arm64/kvm/arm.c kvm_arch_vcpu_ioctl_run).
//
// Design. The guest keeps its own kernel::Cpu (its contexts, execs and scheduler are the guest
// kernel's), and the host CPU decides when that Cpu may run:
//  - The thread is a host task (SCHED_NORMAL, like QEMU's vCPU threads) whose body loops in
//    KVM_RUN: `co_await host.run_guest(*this)` puts the task in guest mode (Frame::St::GUEST),
//    where the host CPU stays while it has nothing else to do; kvm_vcpu_block when the guest is
//    in WFI with nothing pending: `co_await host.block()`.
//  - Entering guest mode (GuestRun::enter) resumes the guest Cpu (Cpu::vcpu_resume); anything the
//    host CPU does instead - a hardirq, a softirq, another task the scheduler picks (a vhost
//    worker whose wake-up preempts the thread, the tick ending its slice) - first leaves guest
//    mode (GuestRun::exit), which stalls the guest Cpu (Cpu::vcpu_stall): its exec in flight keeps
//    its remaining cycles and resumes at the next entry, so guest work is delayed by exactly the
//    time the host CPU spent elsewhere; interrupts raised for it meanwhile stay pending. That
//    time, while the guest is runnable, is the vCPU's steal time (what arm64's paravirtual steal
//    clock reports, kvm_update_stolen_time; x86's kvm_steal_time; the guest does not run). The host charges the exit on a host interrupt and
//    the entry back in ([kvm].world_switch) to the thread, and a switch away from the runnable
//    thread the preempt notifiers' put and load (kvm_sched_out/kvm_sched_in: [kvm].vcpu_put_load);
//    its guest time is the thread's user time (account_guest_time); the host's scheduler sees
//    the thread's run time in its vruntime.
//  - A task the vCPU wakes on its own thread's host CPU (the ioeventfd of a vhost worker there)
//    is a local wake-up: the thread, in that exit, sees need_resched and schedules before it
//    enters again (Cpu::set_vcpu_host: no reschedule IPI, no second exit).
//  - WFI: the guest Cpu goes idle (Hypervisor::wfi); the host CPU, looking again (Cpu::kick),
//    finds the guest not runnable, leaves guest mode and the thread blocks (kvm_vcpu_block ->
//    schedule). An interrupt for the blocked vCPU (Hypervisor::stalled_irq: the vGIC injection's
//    kvm_vcpu_kick -> kvm_vcpu_wake_up) wakes the thread with try_to_wake_up; the host CPU's
//    scheduler then decides when it runs (the reschedule IPI if it preempts, the context switch).
//    The guest's delivery of that interrupt charges the rest of the WFI path (Paths::irq_wfi_thread).
//  - An interrupt injected while the thread is runnable but out of the guest needs no kick's
//    exit: the next entry writes it into a list register (Paths::irq_pending_entry).
//  - Halt polling (kvm_vcpu_halt, as for a vCPU with a core of its own: kvm/kvm.h): at WFI the
//    thread first polls for up to the vCPU's window, keeping the host CPU (the thread stays in
//    guest mode: State::POLLING), while the loop's kvm_vcpu_can_poll() holds:
//    single_task_running() && !need_resched(). So a task woken on that CPU (a vhost worker) ends
//    the poll at once (Cpu::wake_up_process looks again), and the thread blocks and yields to it.
//    An interrupt for the vCPU while it polls needs no wake-up: the guest CPU takes it
//    (Paths::irq_poll_wake). A host interrupt during the poll does not end it. The window's end
//    is an event. The poll's time is the thread's, in KVM (category VIRT: the host kernel counts
//    it as the thread's system time), not guest time.
// Absent vcpu_cpus, no VcpuThread exists: each vCPU is a core of its own, as before.
//  - With vcpu_affinity the threads are not pinned: each wake-up from kvm_vcpu_block goes through
//    the host scheduler's select_task_rq_fair (prev CPU if idle, else the recently used one, else
//    the first idle CPU of the mask after prev), and the thread runs on where it lands.
//  - A runnable thread out of the guest (preempted) may be pulled by an idle host CPU of its mask
//    (Cpu::load_balance); its coroutine waits in run_guest, which the new CPU's dispatch continues,
//    and the thread takes its host from its task at each entry (enter) and after each await.
// Not modelled: the paravirtual steal clock's effect on the guest scheduler's accounting.
#pragma once

#include "engine/task.h"
#include "engine/time.h"
#include "kernel/cpu.h"
#include "stats/registry.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kdsim::kvm {

class Vcpu;
using engine::Cycles;

struct VcpuThreadStats {
    engine::Tick steal = 0;       // runnable (not in WFI) while the thread was not in the guest
    engine::Tick polled = 0;      // halt polling: the thread held its host CPU for a guest in WFI
    std::uint64_t preempted = 0;  // host work took the host CPU from the runnable guest
    std::uint64_t wakeups = 0;    // the blocked thread was woken for an interrupt
    std::uint64_t blocks = 0;     // kvm_vcpu_block: the thread slept in WFI
};

class VcpuThread final : public kernel::GuestRun, public engine::EventTarget {
public:
    enum class State : std::uint8_t { IN_GUEST, RUNNABLE, POLLING, BLOCKED };
    // The thread starts on `host`; with `affinity` (host CPUs, `host` among them) the host's
    // scheduler places it at each wake-up from kvm_vcpu_block (kernel::Cpu::select_task_rq).
    VcpuThread(Vcpu& vcpu, kernel::Cpu& host, std::string comm, std::vector<kernel::Cpu*> affinity = {});
    kernel::Cpu& host() { return *host_; }
    kernel::TaskStruct& task() { return *task_; }
    State state() const { return state_; }
    bool runnable() const override;
    void enter(kernel::Cpu& host) override;
    Cycles exit(kernel::Cpu& host, bool host_irq) override;
    Cycles entry_cost(kernel::Cpu& host) override;
    bool polls() const override { return state_ == State::POLLING; }
    std::optional<Cycles> host_kernel_neon_begin() override;
    // kvm_vcpu_kick for an interrupt injected while the guest is stalled: wakes a blocked thread.
    // True when the thread was runnable but out of the guest (the interrupt waits for the entry).
    bool kick();
    // The guest entered WFI. With a poll `window` (> 0) and no other task runnable on the host
    // CPU the thread polls; else the host CPU looks again and, finding the guest idle, blocks it.
    void wfi(engine::Tick window);
    // The guest took an interrupt while the thread polled: the poll succeeded, the guest runs on.
    void poll_success();
    // The poll's window ended (`arg`: the poll's generation).
    void on_event(std::uint64_t arg) override;
    // Closes the steal interval open at the end of the run.
    void finish();
    const VcpuThreadStats& stats() const { return stats_; }
    void register_stats(const stats::Scope& s) const;

private:
    static engine::Task<> kvm_vcpu_ioctl_run(VcpuThread& t);
    // The thread runs on `host` now (a wake-up placed it there, or a balance pulled it).
    void resumed_on(kernel::Cpu& host);
    void steal_from(engine::Tick t);
    // kvm_arch_vcpu_runnable || kvm_vcpu_check_block: the guest has work.
    bool guest_has_work() const;
    // kvm_vcpu_can_poll(): the poll goes on.
    bool can_poll() const;
    // The poll is over without an interrupt: the thread goes on to kvm_vcpu_block (its put).
    void end_poll_and_block();
    Vcpu& vcpu_;
    kernel::Cpu* host_;
    kernel::TaskStruct* task_ = nullptr;
    State state_ = State::RUNNABLE;
    engine::Tick runnable_since_ = 0;
    bool put_owed_ = false;          // out of the guest while runnable: a switch away costs put + load
    engine::Tick poll_start_ = 0, poll_end_ = 0;
    std::uint64_t poll_gen_ = 0;     // stales the window-end event of a poll that ended earlier
    std::uint64_t switches_at_exit_ = 0;
    VcpuThreadStats stats_;
};

} // namespace kdsim::kvm
