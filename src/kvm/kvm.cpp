#include "kvm/kvm.h"

#include "kvm/vcpu_thread.h"

#include <algorithm>

namespace kdsim::kvm {

using kernel::Cat;

const char* exit_name(Exit e) {
    switch (e) {
    case Exit::HVC: return "hvc";
    case Exit::MMIO_KERNEL: return "mmio_kernel";
    case Exit::IOEVENTFD: return "ioeventfd";
    case Exit::MMIO_USER: return "mmio_user";
    case Exit::SYSREG: return "sysreg";
    case Exit::IRQ: return "irq";
    case Exit::WFI: return "wfi";
    }
    return "?";
}

Vcpu::Vcpu(Vm& vm, kernel::Cpu& cpu) : vm_(vm), cpu_(cpu) { cpu_.set_hypervisor(this); }
Vcpu::~Vcpu() = default;

void Vcpu::run_on(kernel::Cpu& host, std::string comm, std::vector<kernel::Cpu*> affinity) {
    thread_ = std::make_unique<VcpuThread>(*this, host, std::move(comm), std::move(affinity));
}

// The guest's timer is the EL1 virtual timer, whose PPI the guest kernel takes on its local timer
// vector; every other vector reaches the guest through kvm_vgic_inject_irq and a kick.
// Models: kvm_arch_timer_handler() (arch/arm64/kvm/arch_timer.c)
// Models: kvm_vcpu_kick(), kvm_vcpu_block() (virt/kvm/kvm_main.c)
// Models: kvm_vgic_flush_hwstate() (arch/arm64/kvm/vgic/vgic.c)
Cycles Vcpu::irq_delivery(kernel::Cpu&, unsigned vector, bool idle) {
    const bool vtimer = vector == kernel::Cpu::LOCAL_TIMER_VECTOR;
    ++stats_.injections;
    if (vtimer) ++stats_.vtimer;
    if (idle) {
        ++stats_.wfi_wakes;
        ++stats_.exits[static_cast<std::size_t>(Exit::WFI)];
        const engine::Tick halt = halted_ ? cpu_.now() - halt_start_ : 0;
        const bool polled = polling();
        halted_ = false;
        if (poll_window_) ++stats_.halt_attempted_poll;
        if (polled) ++stats_.halt_successful_poll;
        adapt_halt_poll(halt);
        if (thread_) {
            if (!polled) return vm_.paths().irq_wfi_thread(vtimer);
            thread_->poll_success();
            return vm_.paths().irq_poll_wake(vtimer);
        }
        if (polled) return vm_.paths().irq_poll_wake(vtimer);
        if (poll_window_) put_fp(); // the poll ran out: kvm_vcpu_block scheduled the thread out (else wfi() put it)
        return vm_.paths().irq_wfi(vtimer);
    }
    if (entry_pending_ >> vector & 1) [[unlikely]] { // no exit: it waited for the thread's entry
        entry_pending_ &= ~(1ULL << vector);
        return vm_.paths().irq_pending_entry(vtimer);
    }
    ++stats_.exits[static_cast<std::size_t>(Exit::IRQ)];
    return vm_.paths().irq_running(vtimer);
}

bool Vcpu::polling() const {
    if (thread_) return thread_->polls();
    return halted_ && poll_window_ && cpu_.now() - halt_start_ <= poll_window_;
}

void Vcpu::stalled_irq(kernel::Cpu&, unsigned vector) {
    if (thread_ && thread_->kick()) entry_pending_ |= 1ULL << vector;
}

// WFI blocks the thread (kvm_vcpu_block -> schedule -> kvm_sched_out): the put saves a guest-owned
// state while the guest has nothing to do, so it delays nothing and is not charged.
// The vCPU first polls (kvm_vcpu_halt); its put waits for the poll's end. A vCPU thread polls
// while no other task is runnable on its host CPU (VcpuThread::wfi).
// Models: kvm_vcpu_halt() (virt/kvm/kvm_main.c)
void Vcpu::wfi(kernel::Cpu&) {
    if (halted_) return; // the idle loop looked again: the same halt
    halted_ = true;
    halt_start_ = cpu_.now();
    poll_window_ = std::min(halt_poll_, vm_.halt_poll_max());
    if (thread_) {
        thread_->wfi(poll_window_);
        return;
    }
    if (!poll_window_) put_fp();
}

// Models: grow_halt_poll_ns(), shrink_halt_poll_ns() (virt/kvm/kvm_main.c)
void Vcpu::adapt_halt_poll(engine::Tick halt) {
    const engine::Tick max = vm_.halt_poll_max();
    if (max == 0) {
        halt_poll_ = 0;
    } else if (halt <= halt_poll_) {
        // polling covered it: keep the window
    } else if (halt_poll_ && halt > max) {
        halt_poll_ = 0; // a long block: shrink (halt_poll_ns_shrink 0 resets)
    } else if (halt_poll_ < max && halt < max) {
        halt_poll_ = std::max(halt_poll_ * HALT_POLL_NS_GROW, HALT_POLL_NS_GROW_START);
    }
}

// Models: kvm_hyp_handle_fpsimd() (arch/arm64/kvm/hyp/include/hyp/switch.h)
Cycles Vcpu::fpsimd_access(kernel::Cpu&) {
    const Paths& p = vm_.paths();
    if (fp_ == FpState::GUEST_OWNED || p.k.fpsimd_trap == 0) return 0;
    ++stats_.fp_traps;
    Cycles c = p.k.fpsimd_trap;
    if (fp_ == FpState::HOST_OWNED) {
        ++stats_.fp_host_saves;
        c += p.fp.save;
    }
    fp_ = FpState::GUEST_OWNED;
    return c;
}

// Models: kvm_arch_vcpu_put_fp() (arch/arm64/kvm/fpsimd.c)
Cycles Vcpu::put_fp() {
    if (fp_ != FpState::GUEST_OWNED) return 0;
    ++stats_.fp_guest_saves;
    fp_ = FpState::FREE; // fpsimd_save_and_flush_cpu_state: TIF_FOREIGN_FPSTATE, the next load's ctxflush sees it
    return vm_.paths().fp.save;
}

// fpsimd_save() from the host's kernel_neon_begin: with the guest's state bound to the CPU
// (GUEST_OWNED) it saves that; with the VMM thread's state live (HOST_OWNED) it saves that; FREE
// means TIF_FOREIGN_FPSTATE is set and nothing is live. fpsimd_flush_cpu_state() then sets
// TIF_FOREIGN_FPSTATE, which the next entry's kvm_arch_vcpu_ctxflush_fp turns into FP_STATE_FREE.
// Models: kernel_neon_begin() (arch/arm64/kernel/fpsimd.c)
// Models: kvm_arch_vcpu_ctxflush_fp() (arch/arm64/kvm/fpsimd.c)
std::optional<Cycles> Vcpu::host_kernel_neon_begin() {
    const Paths& p = vm_.paths();
    if (p.k.fpsimd_trap == 0) return std::nullopt;
    if (fp_ == FpState::FREE) return 0;
    ++stats_.fp_host_neon_saves;
    fp_ = FpState::FREE;
    return p.fp.save;
}

engine::Task<> Vcpu::exit(Exit e, Cycles c) {
    ++stats_.exits[static_cast<std::size_t>(e)];
    co_await cpu_.exec(c, Cat::VIRT);
}

// Models: kvm_handle_hvc() (arch/arm64/kvm/handle_exit.c)
engine::Task<> Vcpu::hvc() { return exit(Exit::HVC, vm_.paths().hvc()); }

// Models: dispatch_mmio_read() (arch/arm64/kvm/vgic/vgic-mmio.c)
engine::Task<> Vcpu::mmio_read_vgic() { return exit(Exit::MMIO_KERNEL, vm_.paths().mmio_vgic()); }

// The exit to the VMM puts the vCPU and returns the thread to user space, which loads its own
// FP/SIMD state when the guest had taken the registers (fpsimd_restore_current_state); the VMM's
// state is then live at the next load.
// Models: io_mem_abort(), kvm_handle_mmio_return() (arch/arm64/kvm/mmio.c)
engine::Task<> Vcpu::mmio_user() {
    const Paths& p = vm_.paths();
    Cycles fp = 0;
    if (p.k.fpsimd_trap) {
        fp = put_fp();
        if (fp_ != FpState::HOST_OWNED) fp += p.fp.restore;
        fp_ = FpState::HOST_OWNED;
    }
    return exit(Exit::MMIO_USER, p.mmio_user() + fp);
}

// Models: ioeventfd_write() (virt/kvm/eventfd.c)
engine::Task<> Vcpu::mmio_ioeventfd(bool wakes) { return exit(Exit::IOEVENTFD, vm_.paths().mmio_ioeventfd(wakes)); }

// Models: vgic_v3_dispatch_sgi() (arch/arm64/kvm/vgic/vgic-mmio-v3.c)
engine::Task<> Vcpu::send_sgi(Vcpu& target, unsigned vector) {
    ++stats_.exits[static_cast<std::size_t>(Exit::SYSREG)];
    const Paths& p = vm_.paths();
    co_await cpu_.exec(p.sgi_exit_half() + p.k.sgi_trap, Cat::VIRT);
    target.kick(vector);
    co_await cpu_.exec(p.sgi_entry_half(), Cat::VIRT);
}

// A halt-polling vCPU is not in guest mode: kvm_vcpu_kick sends no IPI, the poll loop sees the
// interrupt pending.
void Vcpu::kick(unsigned vector) {
    const Cycles ipi = polling() ? 0 : vm_.paths().k.ipi_latency;
    cpu_.sim().schedule_at(cpu_.now() + cpu_.clock().to_ticks(ipi), this, vector);
}

void Vcpu::on_event(std::uint64_t vector) { cpu_.raise_irq(static_cast<unsigned>(vector)); }

void Vcpu::register_stats(const stats::Scope& s) const {
    const stats::Scope x = s.sub("exits");
    for (std::size_t i = 0; i < EXIT_KINDS; ++i)
        x.counter(exit_name(static_cast<Exit>(i)), stats_.exits[i], "count", "exits of this kind");
    s.counter("injections", stats_.injections, "count", "interrupts the guest took through the vGIC")
        .counter("vtimer", stats_.vtimer, "count", "of which the virtual timer's")
        .counter("wfi_wakes", stats_.wfi_wakes, "count", "of which woke the vCPU from WFI");
    if (vm_.halt_poll_max())
        s.sub("halt_poll")
            .counter("attempted", stats_.halt_attempted_poll, "count", "halts that polled (halt_attempted_poll)")
            .counter("successful", stats_.halt_successful_poll, "count",
                     "of which the interrupt came while polling (halt_successful_poll)")
            .value("window_us", [this] { return engine::to_us(halt_poll_); }, "us",
                   "vcpu->halt_poll_ns at the end of the run");
    if (vm_.paths().k.fpsimd_trap) {
        const stats::Scope fp = s.sub("fpsimd");
        fp.counter("traps", stats_.fp_traps, "count", "the guest's first FP/SIMD use after a vCPU load trapped")
            .counter("host_saves", stats_.fp_host_saves, "count", "of which saved the host's live state first")
            .counter("guest_saves", stats_.fp_guest_saves, "count", "kvm_arch_vcpu_put saved the guest's state");
        if (thread_)
            fp.counter("host_neon_saves", stats_.fp_host_neon_saves, "count",
                       "a host kernel_neon_begin in the vCPU thread's context saved the live state");
    }
    if (thread_) thread_->register_stats(s.sub("thread"));
}

Vm::Vm(const KvmCosts& kvm, const kernel::KernelCosts& host, std::vector<kernel::Cpu*> vcpus,
       const std::vector<kernel::Cpu*>& threads_on, HostFpsimd fp, engine::Tick halt_poll_ns,
       const std::vector<kernel::Cpu*>& affinity)
    : paths_{kvm, host, fp}, halt_poll_max_(halt_poll_ns) {
    for (kernel::Cpu* c : vcpus) vcpus_.push_back(std::make_unique<Vcpu>(*this, *c));
    for (std::size_t i = 0; i < threads_on.size() && i < vcpus_.size(); ++i)
        vcpus_[i]->run_on(*threads_on[i], "CPU " + std::to_string(i) + "/KVM", affinity);
}

void Vm::finish() {
    for (auto& v : vcpus_)
        if (v->thread()) v->thread()->finish();
}

void Vm::register_stats(const stats::Scope& s) const {
    for (std::size_t i = 0; i < vcpus_.size(); ++i) vcpus_[i]->register_stats(s.sub("vcpu" + std::to_string(i)));
}

} // namespace kdsim::kvm
