// 32-bit ARM kernel-mode NEON (arch/arm/vfp/vfpmodule.c, arch/arm/include/asm/simd.h), SMP.
//
// State: per-CPU vfp_current_hw_state (the task whose state the registers hold, or none) and
// the FPEXC.EN bit. A context switch (THREAD_NOTIFY_SWITCH) saves the owner's registers if the
// unit is enabled and clears FPEXC.EN; a task's next user VFP/NEON instruction traps and
// vfp_support_entry reloads its state unless the CPU still holds it (lazy, trap-driven
// restore, nothing on return to user).
// kernel_neon_begin() saves current's state if it is in the registers, marks the registers
// as nobody's (vfp_current_hw_state = NULL) and enables the unit.
// Policies:
//  - arm32-task-only (before ARM 9283/1): may_use_simd() = !in_interrupt(); begin takes
//    get_cpu() (preemption off only), so softirqs run inside a task's NEON region but may not
//    use NEON there (they fall back).
//  - arm32-softirq-neon (ARM 9283/1, c79f81631142): may_use_simd() = !in_hardirq() (and, since
//    2025, !irqs_disabled()); begin keeps bottom halves disabled for the whole region, so a
//    softirq can never interrupt task-context NEON ("non-nested").
//  - arm32-unsafe-softirq-neon-no-bh: softirq NEON allowed but task regions only disable
//    preemption — a softirq landing in a task's region overwrites its registers.
#pragma once

#include "arch/simd.h"

namespace kdsim::arch::arm {

class Vfp final : public SimdUnit {
public:
    using SimdUnit::SimdUnit;
    bool may_use_simd() const override;
    engine::Task<> begin() override; // kernel_neon_begin()
    engine::Task<> end() override;   // kernel_neon_end()
    Cycles switch_fpu(Cpu& cpu, TaskStruct& prev, TaskStruct& next) override;
    // A user task that was in the middle of SIMD work traps on its first instruction back.
    Cycles exit_to_user(Cpu& cpu, TaskStruct& t) override { return t.uses_user_simd ? user_simd_use(t) : 0; }
    Cycles user_simd_use(TaskStruct& t) override; // the VFP trap: vfp_support_entry

private:
    bool takes_bh() const { return policy_ == SimdPolicy::ARM32_SOFTIRQ; }
    const TaskStruct* hw_state_ = nullptr; // vfp_current_hw_state[cpu]
    bool fpexc_en_ = false;
};

} // namespace kdsim::arch::arm
