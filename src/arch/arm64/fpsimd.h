// arm64 kernel-mode NEON, kernels 5.13 to 6.7 (arch/arm64/kernel/fpsimd.c, asm/simd.h).
//
// State: per-CPU fpsimd_last_state (whose user state the registers hold) and
// fpsimd_context_busy; per task TIF_FOREIGN_FPSTATE (TaskStruct::fpu_state_saved: the
// registers do not hold this task's latest user state).
// kernel_neon_begin() takes get_cpu_fpsimd_context() = local_bh_disable() for the whole
// region (13150149aa6d), saves current's user registers unless TIF_FOREIGN_FPSTATE is set,
// flushes the CPU's binding and sets TIF_FOREIGN_FPSTATE. The user state is restored once, on
// return to user (fpsimd_restore_current_state). may_use_simd() = !in_hardirq() &&
// !irqs_disabled() && !in_nmi() && !fpsimd_context_busy. A context switch
// (fpsimd_thread_switch) saves prev's live state and sets next's TIF_FOREIGN_FPSTATE unless
// this CPU still holds next's state.
#pragma once

#include "arch/simd.h"

namespace kdsim::arch::arm64 {

class Fpsimd final : public SimdUnit {
public:
    using SimdUnit::SimdUnit;
    bool may_use_simd() const override;
    engine::Task<> begin() override; // kernel_neon_begin()
    engine::Task<> end() override;   // kernel_neon_end()
    Cycles switch_fpu(Cpu& cpu, TaskStruct& prev, TaskStruct& next) override;
    Cycles exit_to_user(Cpu& cpu, TaskStruct& t) override;

private:
    const TaskStruct* last_state_ = nullptr; // fpsimd_last_state
    bool busy_ = false;                      // fpsimd_context_busy
};

} // namespace kdsim::arch::arm64
