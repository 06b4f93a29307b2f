// The architectures, the kernel-mode SIMD policies (kernel versions and variants of the rules)
// and the [simd] figures of a profile: plain data, so that system::MachineConfig and
// system::Profile can hold them without the SIMD unit models (arch/simd.h).
#pragma once

#include "engine/time.h"

#include <cstdint>
#include <optional>
#include <string_view>

namespace kdsim::arch {

using engine::Cycles;

enum class Arch : std::uint8_t { X86_64, ARM32, ARM64, PPC32_E500 };
std::string_view to_string(Arch a);
std::optional<Arch> arch_from_string(std::string_view s);
// The arch's idle loop waits with TIF_POLLING_NRFLAG set, so that a remote wake-up needs no IPI.
// x86: the cpuidle states a busy machine's governor picks (the poll state, intel_idle's and
// acpi_idle's MWAIT states) monitor the thread flags (mwait_idle_with_hints ->
// current_set_polling_and_test). arm and arm64 (6.1) have no TIF_POLLING_NRFLAG and idle in WFI;
// PowerPC e500 defines the flag but its power_save (doze) runs from default_idle_call after
// current_clr_polling_and_test: each of these takes a reschedule IPI to leave idle.
bool idle_polls(Arch a);

// Kernel versions and variants of the kernel-mode SIMD rules.
enum class SimdPolicy : std::uint8_t {
    X86_PREEMPT,          // x86 until 2025: begin = preempt_disable; a softirq sees in_kernel_fpu
    X86_BH_OFF,           // x86 d02198550423 (2025): begin takes fpregs_lock (BH off)
    X86_UNSAFE_NO_INUSE,  // unsafe: irq_fpu_usable() without the in_kernel_fpu check
    ARM32_TASK_ONLY,      // ARM before 9283/1: NEON only where !in_interrupt()
    ARM32_SOFTIRQ,        // ARM 9283/1: NEON in softirq too, BH off around task-context NEON
    ARM32_UNSAFE_SOFTIRQ_NO_BH, // unsafe: softirq NEON allowed, task NEON leaves BH on
    ARM64_BH_OFF,         // arm64 5.13..6.7: NEON with softirqs disabled
    PPC_SPE,              // e500: spe_begin = preempt_disable + enable_kernel_spe
    PPC_SPE_NO_ENABLE,    // e500 glue that forgets enable_kernel_spe: every bracket traps (KernelSPE)
};
std::string_view to_string(SimdPolicy p);
std::optional<SimdPolicy> simd_policy_from_string(std::string_view s);
Arch arch_of(SimdPolicy p);

// [simd] section of a profile.
struct SimdCosts {
    Cycles begin = 0;   // kernel_*_begin bookkeeping without a save
    Cycles end = 0;     // kernel_*_end
    Cycles save = 0;    // saving live user state (XSAVE, vfp_save_state, fpsimd_save_state)
    Cycles restore = 0; // restoring it (XRSTOR, vfp_load_state, fpsimd load)
    std::uint64_t state_size = 0; // bytes
    // Optional figures, required only where the mechanism exists (PowerPC SPE):
    std::optional<Cycles> unavailable_trap;   // SPE-unavailable exception taken from kernel mode
    std::optional<Cycles> kernel_use_warning; // its printk("SPE used in kernel ...") into the log
};

} // namespace kdsim::arch
