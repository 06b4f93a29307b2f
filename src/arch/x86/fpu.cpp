#include "arch/x86/fpu.h"

#include "kernel/sched.h"
#include "kernel/softirq.h"

namespace kdsim::arch::x86 {

using kernel::Cat;

// Models: irq_fpu_usable() (arch/x86/kernel/fpu/core.c)
bool Fpu::may_use_simd() const {
    std::uint32_t pc = cpu_.preempt_count();
    if (kernel::in_nmi(pc)) return false;
    if (in_kernel_fpu_ && policy_ != SimdPolicy::X86_UNSAFE_NO_INUSE) return false;
    if (!kernel::in_hardirq(pc)) return true;
    return kernel::softirq_count(pc) == 0;
}

// Models: kernel_fpu_begin_mask() (arch/x86/kernel/fpu/core.c)
engine::Task<> Fpu::begin() {
    const bool bh = policy_ == SimdPolicy::X86_BH_OFF && !cpu_.irqs_disabled();
    std::size_t slot = nest_ < bh_taken_.size() ? nest_ : bh_taken_.size() - 1;
    bh_taken_[slot] = bh;
    ++nest_;
    if (!bh) kernel::preempt_disable(cpu_, "kernel_fpu_begin");
    in_kernel_fpu_ = true;
    TaskStruct& cur = *cpu_.current();
    Cycles save = 0;
    if (!cur.kthread && !cur.fpu_state_saved) save = save_user_state(cur, "kernel_fpu_begin (save_fpregs_to_fpstate)");
    fpregs_owner_ = nullptr; // __cpu_invalidate_fpregs_state()
    open_bracket("kernel_fpu_begin");
    charge_begin_end(costs_.begin + save);
    if (bh) co_await kernel::local_bh_disable(cpu_);
    if (save) co_await cpu_.exec(save, Cat::SIMD_SAVE_RESTORE);
    co_await cpu_.exec(costs_.begin, Cat::SIMD_BEGIN_END);
}

// Models: kernel_fpu_end() (arch/x86/kernel/fpu/core.c)
engine::Task<> Fpu::end() {
    if (nest_ > 0) --nest_;
    std::size_t slot = nest_ < bh_taken_.size() ? nest_ : bh_taken_.size() - 1;
    const bool bh = bh_taken_[slot];
    in_kernel_fpu_ = false;
    charge_begin_end(costs_.end);
    co_await cpu_.exec(costs_.end, Cat::SIMD_BEGIN_END);
    close_bracket();
    if (bh) co_await kernel::local_bh_enable(cpu_);
    else co_await kernel::preempt_enable(cpu_);
}

// Models: switch_fpu_prepare() (arch/x86/include/asm/fpu/sched.h)
Cycles Fpu::switch_fpu(Cpu&, TaskStruct& prev, TaskStruct& next) {
    Cycles c = 0;
    if (!prev.kthread && !prev.fpu_state_saved) {
        c += save_user_state(prev, "context switch (switch_fpu_prepare)");
        fpregs_owner_ = &prev; // the registers still hold prev's state
    }
    if (!next.kthread) next.fpu_state_saved = true; // TIF_NEED_FPU_LOAD
    return c;
}

// Models: switch_fpu_return() (arch/x86/kernel/fpu/core.c)
Cycles Fpu::exit_to_user(Cpu&, TaskStruct& t) {
    if (t.kthread || !t.fpu_state_saved) return 0;
    if (fpregs_owner_ == &t) { // fpregs_state_valid(): nothing to load
        t.fpu_state_saved = false;
        return 0;
    }
    fpregs_owner_ = &t;
    return restore_user_state(t);
}

} // namespace kdsim::arch::x86
