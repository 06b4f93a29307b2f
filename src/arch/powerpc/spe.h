// PowerPC e500 SPE in the kernel (arch/powerpc/kernel/process.c, head_85xx.S,
// arch/powerpc/crypto/sha*-spe-glue.c).
//
// State: the MSR_SPE bit of each running context (it lives in the context's MSR and is saved
// and restored by exception entry and return, so a nested context's setting does not leak
// into the one it interrupted), and whether a task's user SPE state (upper halves of the 32
// GPRs and the accumulator) is live in the registers.
// spe_begin() = preempt_disable() + enable_kernel_spe(): sets MSR_SPE and, if current's user
// state is live, __giveup_spe() saves it (the next user SPE instruction traps and reloads it,
// load_up_spe). spe_end() = disable_kernel_spe() + preempt_enable(). There is no
// may_use_simd()-style check: the SPE assembler saves and restores the registers it uses "so it
// can run from interrupt context", which the model mirrors by restoring the register-file token
// at the end of each bracket. Kernel code that executes SPE instructions with MSR_SPE clear
// takes the SPE-unavailable exception from kernel mode: KernelSPE sets MSR_SPE in the saved
// MSR (so the context may go on using SPE until it returns to user space) and prints
// "SPE used in kernel  (task=%p, pc=%x)". Policy `ppc-spe-no-enable` models glue that forgets
// enable_kernel_spe(), to measure that path.
#pragma once

#include "arch/simd.h"

#include <array>
#include <utility>

namespace kdsim::arch::powerpc {

class Spe final : public SimdUnit {
public:
    using SimdUnit::SimdUnit;
    bool may_use_simd() const override { return true; }
    engine::Task<> begin() override; // spe_begin()
    engine::Task<> end() override;   // spe_end()
    Cycles switch_fpu(Cpu& cpu, TaskStruct& prev, TaskStruct& next) override; // giveup_all(prev)
    Cycles exit_to_user(Cpu& cpu, TaskStruct& t) override;
    Cycles user_simd_use(TaskStruct& t) override;   // the user's SPE-unavailable trap: load_up_spe
    Cycles kernel_simd_exec(Cpu& cpu) override;     // KernelSPE when MSR_SPE is clear

private:
    bool msr_spe() const;
    void set_msr_spe(bool on);
    // MSR_SPE of recent context activations (by Cpu::context_serial); absent means clear,
    // which is what exception entry gives a new context.
    std::array<std::pair<std::uint64_t, bool>, 8> msr_{};
    std::size_t next_slot_ = 0;
    const TaskStruct* user_live_ = nullptr; // whose user SPE state the registers hold
    std::array<SimdToken, 4> saved_regs_{};
    std::size_t nest_ = 0;
};

} // namespace kdsim::arch::powerpc
