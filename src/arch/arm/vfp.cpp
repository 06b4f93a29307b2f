#include "arch/arm/vfp.h"

#include "kernel/sched.h"
#include "kernel/softirq.h"

namespace kdsim::arch::arm {

using kernel::Cat;

// Models: may_use_simd() (arch/arm/include/asm/simd.h)
bool Vfp::may_use_simd() const {
    std::uint32_t pc = cpu_.preempt_count();
    if (policy_ == SimdPolicy::ARM32_TASK_ONLY) return !kernel::in_interrupt(pc);
    if (policy_ == SimdPolicy::ARM32_SOFTIRQ) return !kernel::in_hardirq(pc) && !cpu_.irqs_disabled();
    return !kernel::in_hardirq(pc);
}

// Models: kernel_neon_begin() (arch/arm/vfp/vfpmodule.c)
engine::Task<> Vfp::begin() {
    if (!takes_bh()) kernel::preempt_disable(cpu_, "kernel_neon_begin");
    fpexc_en_ = true;
    TaskStruct& cur = *cpu_.current();
    const Cycles trap = guest_fp_trap(); // the FPEXC write is the first touch
    Cycles save = 0;
    if (hw_state_ == &cur && !cur.kthread) save = save_user_state(cur, "kernel_neon_begin (vfp_save_state)");
    hw_state_ = nullptr;
    open_bracket("kernel_neon_begin");
    charge_begin_end(costs_.begin + save);
    if (takes_bh()) co_await kernel::local_bh_disable(cpu_);
    if (trap) co_await cpu_.exec(trap, Cat::VIRT);
    if (save) co_await cpu_.exec(save, Cat::SIMD_SAVE_RESTORE);
    co_await cpu_.exec(costs_.begin, Cat::SIMD_BEGIN_END);
}

// Models: kernel_neon_end() (arch/arm/vfp/vfpmodule.c)
engine::Task<> Vfp::end() {
    fpexc_en_ = false;
    charge_begin_end(costs_.end);
    co_await cpu_.exec(costs_.end, Cat::SIMD_BEGIN_END);
    close_bracket();
    if (takes_bh()) co_await kernel::local_bh_enable(cpu_);
    else co_await kernel::preempt_enable(cpu_);
}

// Models: vfp_notifier() (arch/arm/vfp/vfpmodule.c)
Cycles Vfp::switch_fpu(Cpu&, TaskStruct& prev, TaskStruct&) {
    Cycles c = 0;
    if (fpexc_en_ && hw_state_ == &prev && !prev.kthread)
        c = save_user_state(prev, "context switch (vfp_notifier)");
    fpexc_en_ = false;
    return c;
}

// The undefined-instruction trap of a user VFP/NEON instruction with FPEXC.EN clear. The
// profile's `restore` figure is dominated by the trap itself, so it is charged for every trap,
// also when vfp_state_in_hw() only re-enables the unit without loading.
// Models: vfp_support_entry() (arch/arm/vfp/vfpmodule.c)
Cycles Vfp::user_simd_use(TaskStruct& t) {
    if (fpexc_en_ && hw_state_ == &t) return 0;
    fpexc_en_ = true;
    if (hw_state_ == &t) return costs_.restore + guest_fp_trap(); // the FPEXC access
    hw_state_ = &t;
    return restore_user_state(t);
}

} // namespace kdsim::arch::arm
