// x86-64 kernel-mode FPU use (arch/x86/kernel/fpu/core.c, arch/x86/include/asm/fpu/sched.h).
//
// State: per-CPU in_kernel_fpu and fpu_fpregs_owner_ctx (whose user state the registers
// validly hold); per task TIF_NEED_FPU_LOAD (TaskStruct::fpu_state_saved).
// kernel_fpu_begin() disables preemption (or, since d02198550423 in 2025, bottom halves),
// sets in_kernel_fpu, saves current's user registers with XSAVE unless a kernel thread or
// already saved (TIF_NEED_FPU_LOAD), invalidates the owner and loads MXCSR/FNINIT.
// A context switch saves the outgoing task's live registers (switch_fpu_prepare) and marks the
// incoming task TIF_NEED_FPU_LOAD; the registers are restored with XRSTOR on the way back to
// user space (switch_fpu_return), skipped when this CPU still holds that task's state.
// irq_fpu_usable(): false in NMI; false if in_kernel_fpu (what a softirq sees when it
// interrupts a task's FPU section — it must fall back); true outside hardirq; in hardirq only
// if the interrupted code had no BH-disabled region. The unsafe variant omits the
// in_kernel_fpu check, so a softirq overwrites the task's kernel FPU registers.
#pragma once

#include "arch/simd.h"

namespace kdsim::arch::x86 {

class Fpu final : public SimdUnit {
public:
    using SimdUnit::SimdUnit;
    bool may_use_simd() const override; // irq_fpu_usable()
    engine::Task<> begin() override;    // kernel_fpu_begin()
    engine::Task<> end() override;      // kernel_fpu_end()
    Cycles switch_fpu(Cpu& cpu, TaskStruct& prev, TaskStruct& next) override;
    Cycles exit_to_user(Cpu& cpu, TaskStruct& t) override;

    bool in_kernel_fpu() const { return in_kernel_fpu_; }

private:
    bool in_kernel_fpu_ = false;
    const TaskStruct* fpregs_owner_ = nullptr;
    std::array<bool, 4> bh_taken_{};
    std::size_t nest_ = 0;
};

} // namespace kdsim::arch::x86
