#include "arch/powerpc/spe.h"

#include "kernel/sched.h"

#include <stdexcept>

namespace kdsim::arch::powerpc {

using kernel::Cat;

bool Spe::msr_spe() const {
    std::uint64_t s = cpu_.context_serial();
    for (auto& [serial, on] : msr_)
        if (serial == s) return on;
    return false;
}

void Spe::set_msr_spe(bool on) {
    std::uint64_t s = cpu_.context_serial();
    for (auto& e : msr_)
        if (e.first == s) {
            e.second = on;
            return;
        }
    msr_[next_slot_] = {s, on};
    next_slot_ = (next_slot_ + 1) % msr_.size();
}

// Models: spe_begin() (arch/powerpc/crypto/sha256-spe-glue.c)
engine::Task<> Spe::begin() {
    kernel::preempt_disable(cpu_, "spe_begin");
    std::size_t slot = nest_ < saved_regs_.size() ? nest_ : saved_regs_.size() - 1;
    saved_regs_[slot] = cpu_.simd_regs();
    ++nest_;
    Cycles c = 0;
    if (policy_ == SimdPolicy::PPC_SPE) {
        // enable_kernel_spe(): msr_check_and_set(MSR_SPE); give up current's live user state
        set_msr_spe(true);
        TaskStruct& cur = *cpu_.current();
        if (user_live_ == &cur) {
            c = save_user_state(cur, "enable_kernel_spe (__giveup_spe)");
            user_live_ = nullptr;
        }
    }
    open_bracket(policy_ == SimdPolicy::PPC_SPE ? "spe_begin" : "spe_begin (without enable_kernel_spe)");
    charge_begin_end(costs_.begin + c);
    if (c) co_await cpu_.exec(c, Cat::SIMD_SAVE_RESTORE);
    if (policy_ == SimdPolicy::PPC_SPE) co_await cpu_.exec(costs_.begin, Cat::SIMD_BEGIN_END);
}

// Models: spe_end() (arch/powerpc/crypto/sha256-spe-glue.c)
engine::Task<> Spe::end() {
    if (nest_ > 0) --nest_;
    std::size_t slot = nest_ < saved_regs_.size() ? nest_ : saved_regs_.size() - 1;
    if (policy_ == SimdPolicy::PPC_SPE) {
        charge_begin_end(costs_.end);
        // disable_kernel_spe(): clears MSR_SPE only with ppc_strict_facility_enable; by
        // default the bit stays set until the context's next exception return.
        co_await cpu_.exec(costs_.end, Cat::SIMD_BEGIN_END);
    }
    close_bracket();
    cpu_.set_simd_regs(saved_regs_[slot]); // the assembler restored the registers it used
    co_await kernel::preempt_enable(cpu_);
}

// Models: SPEFloatingPointException(), KernelSPE() (arch/powerpc/kernel/traps.c)
Cycles Spe::kernel_simd_exec(Cpu& cpu) {
    if (cpu.ctx_kind() == kernel::CtxKind::TASK && cpu.current()->in_user) return 0; // user code: user_simd_use
    if (msr_spe()) return 0;
    if (!costs_.unavailable_trap || !costs_.kernel_use_warning)
        throw std::runtime_error("profile lacks simd.unavailable_trap / simd.kernel_use_warning, needed by the "
                                 "SPE-unavailable path");
    set_msr_spe(true); // KernelSPE: MSR_SPE set in the saved MSR until the context returns
    ++stats_.kernel_traps;
    ++stats_.kernel_use_warnings;
    return *costs_.unavailable_trap + *costs_.kernel_use_warning;
}

// Models: giveup_spe() (arch/powerpc/kernel/process.c)
Cycles Spe::switch_fpu(Cpu&, TaskStruct& prev, TaskStruct&) {
    // giveup_all(prev): save prev's user SPE state if the user MSR has SPE.
    if (user_live_ == &prev && !prev.kthread) {
        user_live_ = nullptr;
        return save_user_state(prev, "context switch (giveup_all)");
    }
    return 0;
}

Cycles Spe::exit_to_user(Cpu&, TaskStruct& t) {
    set_msr_spe(false); // the kernel's MSR_SPE does not survive the return to user mode
    return t.uses_user_simd ? user_simd_use(t) : 0;
}

// Models: load_up_spe() (arch/powerpc/kernel/head_85xx.S)
Cycles Spe::user_simd_use(TaskStruct& t) {
    if (user_live_ == &t) return 0;
    user_live_ = &t;
    return restore_user_state(t);
}

} // namespace kdsim::arch::powerpc
