#include "arch/arm64/fpsimd.h"

#include "kernel/softirq.h"

namespace kdsim::arch::arm64 {

using kernel::Cat;

// Models: may_use_simd() (arch/arm64/include/asm/simd.h)
bool Fpsimd::may_use_simd() const {
    std::uint32_t pc = cpu_.preempt_count();
    return !kernel::in_hardirq(pc) && !cpu_.irqs_disabled() && !kernel::in_nmi(pc) && !busy_;
}

// Models: kernel_neon_begin() (arch/arm64/kernel/fpsimd.c)
engine::Task<> Fpsimd::begin() {
    busy_ = true;
    TaskStruct& cur = *cpu_.current();
    const Cycles trap = guest_fp_trap(); // the save, or else the NEON code, is the first touch
    Cycles save = 0;
    // A vCPU thread in KVM_RUN: the registers are the loaded vCPU's (kvm_arch_vcpu_ctxsync_fp
    // bound the guest's state to this CPU), so fpsimd_save saves whatever its fp_state says is live.
    const std::optional<Cycles> vcpu_save = cur.guest ? cur.guest->host_kernel_neon_begin() : std::nullopt;
    if (vcpu_save) save = *vcpu_save;
    else if (!cur.kthread && !cur.fpu_state_saved) save = save_user_state(cur, "kernel_neon_begin (fpsimd_save)");
    last_state_ = nullptr; // fpsimd_flush_cpu_state()
    cur.fpu_state_saved = true; // TIF_FOREIGN_FPSTATE
    open_bracket("kernel_neon_begin");
    charge_begin_end(costs_.begin + save);
    co_await kernel::local_bh_disable(cpu_);
    if (trap) co_await cpu_.exec(trap, Cat::VIRT);
    if (save) co_await cpu_.exec(save, Cat::SIMD_SAVE_RESTORE);
    co_await cpu_.exec(costs_.begin, Cat::SIMD_BEGIN_END);
}

// Models: kernel_neon_end() (arch/arm64/kernel/fpsimd.c)
engine::Task<> Fpsimd::end() {
    charge_begin_end(costs_.end);
    co_await cpu_.exec(costs_.end, Cat::SIMD_BEGIN_END);
    close_bracket();
    busy_ = false;
    co_await kernel::local_bh_enable(cpu_);
}

// Models: fpsimd_thread_switch() (arch/arm64/kernel/fpsimd.c)
Cycles Fpsimd::switch_fpu(Cpu&, TaskStruct& prev, TaskStruct& next) {
    Cycles c = 0;
    if (!prev.kthread && !prev.fpu_state_saved) {
        c = save_user_state(prev, "context switch (fpsimd_thread_switch)");
        last_state_ = &prev;
    }
    if (!next.kthread) next.fpu_state_saved = last_state_ != &next;
    return c;
}

// Models: fpsimd_restore_current_state() (arch/arm64/kernel/fpsimd.c)
Cycles Fpsimd::exit_to_user(Cpu&, TaskStruct& t) {
    if (t.kthread || !t.fpu_state_saved) return 0;
    last_state_ = &t;
    return restore_user_state(t);
}

} // namespace kdsim::arch::arm64
