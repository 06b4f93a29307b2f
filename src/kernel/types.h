// Small vocabulary types shared by the kernel model: execution-context kinds, the cost
// categories every simulated cycle is charged to (the whole attribution feature rests on
// these), preemption models and the owner tokens of the functional SIMD register file.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace kdsim::kernel {

enum class CtxKind : std::uint8_t { TASK, SOFTIRQ, HARDIRQ, NMI, COUNT };
inline constexpr std::size_t CTX_KINDS = static_cast<std::size_t>(CtxKind::COUNT);
std::string_view to_string(CtxKind k);

// What a cycle was spent on. Every exec names one.
enum class Cat : std::uint8_t {
    USER,              // user-space work of a task
    CRYPTO,            // hashing / cipher work
    SIMD_BEGIN_END,    // kernel_fpu_begin/end, kernel_neon_begin/end bookkeeping
    SIMD_SAVE_RESTORE, // saving and restoring SIMD register files (XSAVE/XRSTOR, vfp_save_state)
    SIMD_TRAP,         // SIMD-unavailable exceptions taken from kernel mode, and their warnings
    IRQ_ENTRY_EXIT,    // exception entry, irq_enter/irq_exit, exception return
    IRQ_MASK,          // local_irq_disable/enable/save/restore
    BH_MASK,           // local_bh_disable/enable
    SOFTIRQ,           // __do_softirq overhead
    TIMER,             // hrtimer expiry, scheduler tick
    SCHEDULER,         // wake-ups, context switches, cond_resched
    PROTOCOL,
    DRIVER,
    COPY,
    CACHE_MAINT,
    SYSCALL,           // kernel entry/exit for system calls
    QUEUEING,          // handing work to another context: workqueues, cryptd, ptr_rings
    VIRT,              // virtualisation: guest exits, interrupt injection, host backend work
    OTHER,
    COUNT
};
inline constexpr std::size_t CATS = static_cast<std::size_t>(Cat::COUNT);
std::string_view to_string(Cat c);

enum class PreemptModel : std::uint8_t { NONE, VOLUNTARY, FULL };
std::string_view to_string(PreemptModel m);

// Whose data the SIMD register file holds: an owner id (0 = nobody's valid data) and the
// generation of that owner's use. Owner ids are handed out by the Cpu and describe a context
// (a task's user state, a task's kernel-mode use, a softirq or hardirq context).
struct SimdToken {
    std::uint32_t owner = 0;
    std::uint32_t gen = 0;
    friend bool operator==(const SimdToken&, const SimdToken&) = default;
};

} // namespace kdsim::kernel
