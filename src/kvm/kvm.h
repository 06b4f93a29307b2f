// KVM on arm64 as the host kernel runs a guest's vCPUs (arch/arm64/kvm, virt/kvm): each vCPU is
// a host thread on a core of its own, looping in kvm_arch_vcpu_ioctl_run: enter the guest
// (__kvm_vcpu_run), take an exit, handle_exit, and enter again, or return from the KVM_RUN ioctl
// to the VMM in user space. What the model charges, all as cycles of the vCPU's core (the guest
// machine's CPU; the host's own CPUs run vhost and the host's tasks):
//  - an exit round trip (world switch out and back in, handle_exit's dispatch): [kvm].world_switch;
//  - the handler per exit kind:
//      HVC: kvm_handle_hvc -> kvm_smccc_call_handler (inside the round trip, the cheapest exit);
//      data abort on an MMIO address: kvm_handle_guest_abort -> io_mem_abort (abort_decode), then
//        kvm_io_bus_read -> the vGIC's dispatch_mmio_read (vgic_mmio), or kvm_io_bus_write ->
//        ioeventfd_write -> eventfd_signal (ioeventfd, plus the host's try_to_wake_up of the
//        thread it wakes), or no in-kernel device: KVM_EXIT_MMIO, kvm_arch_vcpu_put, return from
//        the KVM_RUN ioctl, the VMM's dispatch (vmm_mmio), the ioctl again,
//        kvm_handle_mmio_return, kvm_arch_vcpu_load (vcpu_put_load, user_exit);
//      trapped ICC_SGI1R_EL1 write: kvm_handle_sys_reg -> vgic_v3_dispatch_sgi -> kvm_vcpu_kick
//        (sgi_trap);
//  - an interrupt for the guest: kvm_vgic_inject_irq and kvm_vcpu_kick; the kick's IPI reaches the
//    vCPU's core after ipi_latency. A running vCPU exits on it (the host's irq entry and exit of
//    its [irq]), kvm_vgic_flush_hwstate writes a list register on the way back in (vgic_flush)
//    and the guest takes the virtual interrupt. The guest's timer is the EL1 virtual timer: its
//    interrupt reaches the host while the guest runs, kvm_arch_timer_handler ->
//    kvm_timer_update_irq injects it (timer_irq), then the same way back in;
//  - WFI: the guest's idle loop traps (HCR_EL2.TWI; KVM clears it only with GICv4 direct
//    injection), kvm_handle_wfx -> kvm_vcpu_wfi -> kvm_vcpu_halt -> kvm_vcpu_block schedules the
//    vCPU thread out (kvm_arch_vcpu_put). An interrupt for a blocked vCPU wakes it: the kick IPI,
//    or the host's background hrtimer (kvm_bg_timer_expire) for its timer, try_to_wake_up, the
//    context switch back to the vCPU thread, kvm_vcpu_block's return (wfi_block), vcpu load and
//    the entry half of the round trip. The exit half of that WFI exit runs while the guest has
//    nothing to do and delays nothing.
// By default each vCPU has a host core of its own (the guest machine's CPU). With vcpu_cpus, a
// vCPU's thread is a host task on a host CPU it shares with host work (kvm/vcpu_thread.h): the
// host's scheduler and interrupts decide when the guest CPU runs (steal time), a WFI blocks the
// thread and frees the host CPU, and the host side of the wake-up is the host scheduler's.
// FP/SIMD registers are switched lazily (arch/arm64/kvm/fpsimd.c, hyp/include/hyp/switch.h), with
// [kvm].fpsimd_trap: each vCPU load leaves them to the host (fp_state HOST_OWNED: the VMM thread's
// user state is live, or FREE when that thread's state was already saved); the guest's first
// FP/SIMD instruction then traps to EL2 (CPTR_EL2.TFP), and kvm_hyp_handle_fpsimd saves the host's
// live state (HOST_OWNED only: the host's [simd].save), loads the guest's and returns to the guest
// (fpsimd_trap), which owns them (GUEST_OWNED) until the next kvm_arch_vcpu_put saves them
// ([simd].save) and leaves the VMM thread's state to be loaded on its return to user space
// ([simd].restore, on a KVM_EXIT_MMIO). A plain exit (an interrupt, an HVC, an in-kernel MMIO)
// keeps the guest's ownership. With [kvm].fpsimd_trap 0 nothing of this is charged.
// Halt polling (virt/kvm/kvm_main.c kvm_vcpu_halt): before
// blocking, a vCPU in WFI polls for its interrupt for up to vcpu->halt_poll_ns (capped by kvm.ko's
// halt_poll_ns, the host's [machine.kernel] halt_poll_ns, default KVM_HALT_POLL_NS_DEFAULT). An
// interrupt raised while it polls needs no kick IPI and no wake-up: the poll loop sees it and the
// vCPU enters again (Paths::irq_poll_wake), with no put or load. After each halt the window adapts
// as the kernel's does: it grows (x halt_poll_ns_grow 2, from halt_poll_ns_grow_start 10 us) after
// a halt shorter than the cap that polling did not cover, and resets (halt_poll_ns_shrink 0) after
// a halt longer than the cap. A vCPU thread that shares its host CPU (vcpu_cpus) polls only while
// no other task is runnable there (kvm/vcpu_thread.h).
// Not modelled: GICv4 direct
// injection, a host kernel_neon_begin on a vCPU thread's CPU while the guest owns the registers
// (it saves the guest's state, and the next guest use traps again).
#pragma once

#include "engine/simulation.h"
#include "engine/task.h"
#include "kernel/cpu.h"
#include "kernel/costs.h"
#include "kvm/kvm_costs.h"
#include "stats/registry.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kdsim::kvm {

using engine::Cycles;

enum class Exit : std::uint8_t { HVC, MMIO_KERNEL, IOEVENTFD, MMIO_USER, SYSREG, IRQ, WFI };
inline constexpr std::size_t EXIT_KINDS = 7;
const char* exit_name(Exit e);

// The host's [simd] figures KVM's lazy FP/SIMD switch uses: fpsimd_save_state and the VMM
// thread's fpsimd_restore_current_state.
struct HostFpsimd {
    Cycles save = 0;
    Cycles restore = 0;
};

// Cycles of the vCPU's core for each path, from the figures alone (tests check them by hand).
struct Paths {
    KvmCosts k;
    kernel::KernelCosts host; // the host kernel's [sched] and [irq] figures
    HostFpsimd fp;
    Cycles hvc() const { return k.world_switch; }
    Cycles mmio_vgic() const { return k.world_switch + k.abort_decode + k.vgic_mmio; }
    Cycles mmio_ioeventfd(bool wakes) const {
        return k.world_switch + k.abort_decode + k.ioeventfd + (wakes ? host.wakeup_whole() : 0);
    }
    Cycles mmio_user() const {
        return k.world_switch + k.abort_decode + k.vcpu_put_load + k.user_exit + k.vmm_mmio;
    }
    // The sender's side of a trapped SGI write: exit half, handling (the kick IPI leaves at its
    // end), entry half.
    Cycles sgi_exit_half() const { return k.world_switch / 2; }
    Cycles sgi_entry_half() const { return k.world_switch - k.world_switch / 2; }
    // An interrupt for a running vCPU: the exit on the host IRQ and the way back in.
    Cycles irq_running(bool vtimer) const {
        return k.world_switch + host.irq_entry + host.irq_exit + (vtimer ? k.timer_irq : 0) + k.vgic_flush;
    }
    // An interrupt for a vCPU blocked in WFI: the host interrupt on its core (the kick IPI, or the
    // background hrtimer that wakes it), the switch back to the vCPU thread and the entry.
    Cycles irq_wfi(bool vtimer) const {
        const Cycles wake = vtimer ? host.timer_handler + host.wakeup_whole() + k.timer_irq : 0;
        return host.irq_entry + wake + host.irq_exit + host.context_switch + k.wfi_block + k.vcpu_put_load / 2 +
               (k.world_switch - k.world_switch / 2) + k.vgic_flush;
    }
    // The same for a vCPU thread that shares its host CPU (kvm/vcpu_thread.h): the host CPU's
    // interrupt for the wake-up (a reschedule IPI where the host CPU is busy) and its switch to the
    // thread are the host scheduler's own, as for any task it wakes.
    Cycles irq_wfi_thread(bool vtimer) const {
        return irq_wfi(vtimer) - host.irq_entry - host.irq_exit - host.context_switch;
    }
    // An interrupt injected while the vCPU thread was runnable but out of the guest: no kick's
    // exit, the next entry writes its list register.
    Cycles irq_pending_entry(bool vtimer) const { return k.vgic_flush + (vtimer ? k.timer_irq : 0); }
    // Host work (a host interrupt) takes the host CPU from a guest: the exit and the entry back.
    Cycles host_exit() const { return k.world_switch; }
    // An interrupt for a vCPU that is halt-polling in WFI: the poll loop's iteration that sees it,
    // kvm_vcpu_halt's return (the halt statistics and window update, as kvm_vcpu_block's: wfi_block),
    // the entry half and the list register. No IPI, no host interrupt, no switch, no put or load.
    Cycles irq_poll_wake(bool vtimer) const {
        return k.spin_poll + k.wfi_block + (k.world_switch - k.world_switch / 2) + k.vgic_flush +
               (vtimer ? k.timer_irq : 0);
    }
};

// KVM_HALT_POLL_NS_DEFAULT of an arm64 host (arch/arm64/include/asm/kvm_host.h): kvm.ko's
// halt_poll_ns unless the host's [machine.kernel] sets it.
inline constexpr engine::Tick KVM_HALT_POLL_NS_DEFAULT = 500 * engine::PS_PER_US;
// halt_poll_ns_grow_start and halt_poll_ns_grow (virt/kvm/kvm_main.c); halt_poll_ns_shrink is 0.
inline constexpr engine::Tick HALT_POLL_NS_GROW_START = 10 * engine::PS_PER_US;
inline constexpr unsigned HALT_POLL_NS_GROW = 2;

struct VcpuStats {
    std::array<std::uint64_t, EXIT_KINDS> exits{};
    std::uint64_t injections = 0;  // interrupts the guest took through the vGIC
    std::uint64_t vtimer = 0;      // of which the virtual timer's
    std::uint64_t wfi_wakes = 0;   // of which woke the vCPU from WFI
    std::uint64_t fp_traps = 0;    // the guest's first FP/SIMD use after a vCPU load
    std::uint64_t fp_host_saves = 0;  // of which saved the host's live state first
    std::uint64_t fp_guest_saves = 0; // kvm_arch_vcpu_put saved the guest's state
    std::uint64_t fp_host_neon_saves = 0; // a host kernel_neon_begin on the thread saved live state
    std::uint64_t halt_attempted_poll = 0;  // halts that polled (vcpu->halt_poll_ns > 0)
    std::uint64_t halt_successful_poll = 0; // of which the interrupt came while polling
};

// vcpu->arch.fp_state (arch/arm64/include/asm/kvm_host.h)
enum class FpState : std::uint8_t { FREE, HOST_OWNED, GUEST_OWNED };

class Vm;
class VcpuThread;

// One vCPU: the guest's CPU `cpu` and its hypervisor hook.
class Vcpu final : public kernel::Hypervisor, public engine::EventTarget {
public:
    Vcpu(Vm& vm, kernel::Cpu& cpu);
    ~Vcpu() override;
    kernel::Cpu& cpu() { return cpu_; }
    const kernel::Cpu& cpu() const { return cpu_; }
    Vm& vm() { return vm_; }
    // The vCPU's thread runs on `host`, shared with host work (kvm/vcpu_thread.h); call before boot.
    // With `affinity` (host CPUs, `host` among them) the thread is placed at each wake-up.
    void run_on(kernel::Cpu& host, std::string comm, std::vector<kernel::Cpu*> affinity = {});
    VcpuThread* thread() { return thread_.get(); }
    Cycles irq_delivery(kernel::Cpu& cpu, unsigned vector, bool idle) override;
    void stalled_irq(kernel::Cpu& cpu, unsigned vector) override;
    void wfi(kernel::Cpu& cpu) override;
    Cycles fpsimd_access(kernel::Cpu& cpu) override;
    // kvm_arch_vcpu_put_fp: the cycles of saving the guest's FP/SIMD state when it owns the
    // registers (they are then free: the VMM thread's own state was saved at the trap).
    Cycles put_fp();
    // A host kernel_neon_begin in the vCPU thread's context while the vCPU is loaded: the cycles
    // of saving the live state (the guest's, or the VMM thread's before the guest took the
    // registers), after which they are free and the guest's next use traps without a host save;
    // none when the lazy switch is not modelled ([kvm].fpsimd_trap = 0).
    std::optional<Cycles> host_kernel_neon_begin();
    FpState fp_state() const { return fp_; }
    // vcpu->halt_poll_ns: the poll window of the next halt (ps), before the cap.
    engine::Tick halt_poll() const { return halt_poll_; }
    // Exits taken by guest code running on this vCPU (the calling context's coroutine).
    engine::Task<> hvc();
    engine::Task<> mmio_read_vgic();
    engine::Task<> mmio_user();
    // A virtqueue notify: the MMIO write exits and signals the ioeventfd; `wakes`: the eventfd's
    // waiter (a vhost worker) was asleep and is woken from here.
    engine::Task<> mmio_ioeventfd(bool wakes);
    // The guest writes ICC_SGI1R_EL1 to send SGI `vector` to `target`.
    engine::Task<> send_sgi(Vcpu& target, unsigned vector);
    // kvm_vgic_inject_irq + kvm_vcpu_kick from the host: the guest sees `vector` once the kick's
    // IPI reaches this vCPU's core.
    void kick(unsigned vector);
    void on_event(std::uint64_t vector) override;
    const VcpuStats& stats() const { return stats_; }
    void register_stats(const stats::Scope& s) const;

private:
    engine::Task<> exit(Exit e, Cycles c);
    Vm& vm_;
    kernel::Cpu& cpu_;
    VcpuStats stats_;
    std::unique_ptr<VcpuThread> thread_;
    std::uint64_t entry_pending_ = 0; // vectors injected while the thread was out of the guest
    FpState fp_ = FpState::HOST_OWNED; // the first KVM_RUN's load: the VMM thread's state is live
    // kvm_vcpu_halt: whether the vCPU is in WFI, since when, and the window it polls for.
    bool halted_ = false;
    engine::Tick halt_start_ = 0;
    engine::Tick poll_window_ = 0;
    engine::Tick halt_poll_ = 0; // vcpu->halt_poll_ns
    // The vCPU is halt-polling now: within its window with a core of its own, while its thread
    // keeps the host CPU for the poll (VcpuThread::POLLING) with a shared one.
    bool polling() const;
    // The end of kvm_vcpu_halt after a halt of `halt` ps: the window grows, stays or resets.
    void adapt_halt_poll(engine::Tick halt);
};

// A VM: its vCPUs, one per CPU of the guest machine, and the host's figures they cost.
class Vm {
public:
    // `threads_on`: the host CPU each vCPU's thread shares (vcpu_cpus); empty: a core of its own each.
    // `fp`: the host's [simd] save and restore, for the lazy FP/SIMD switch; `halt_poll_ns`: kvm.ko's
    // cap on halt polling (0: none); `affinity`: the host CPUs every thread may run on (vcpu_affinity;
    // empty: each pinned to its `threads_on` CPU).
    Vm(const KvmCosts& kvm, const kernel::KernelCosts& host, std::vector<kernel::Cpu*> vcpus,
       const std::vector<kernel::Cpu*>& threads_on = {}, HostFpsimd fp = {}, engine::Tick halt_poll_ns = 0,
       const std::vector<kernel::Cpu*>& affinity = {});
    const Paths& paths() const { return paths_; }
    engine::Tick halt_poll_max() const { return halt_poll_max_; }
    Vcpu& vcpu(int i) { return *vcpus_[static_cast<std::size_t>(i)]; }
    std::size_t size() const { return vcpus_.size(); }
    void register_stats(const stats::Scope& s) const;
    // Closes the vCPU threads' open intervals at the end of the run.
    void finish();

private:
    Paths paths_;
    engine::Tick halt_poll_max_;
    std::vector<std::unique_ptr<Vcpu>> vcpus_;
};

} // namespace kdsim::kvm
