// preempt_count and the context predicates, as include/linux/preempt.h defines them.
//
// The count packs four fields: PREEMPT (bits 0-7, preempt_disable nesting), SOFTIRQ (bits
// 8-15), HARDIRQ (16-19) and NMI (20-23). Serving a softirq adds SOFTIRQ_OFFSET (1<<8) while
// local_bh_disable() adds SOFTIRQ_DISABLE_OFFSET (2<<8), so "serving a softirq" (odd SOFTIRQ
// field) and "bottom halves merely disabled" are distinguishable; in_interrupt() is true in
// both, which is why may_use_simd() on old ARM kernels refused BH-disabled task code too.
#pragma once

#include <cstdint>

namespace kdsim::kernel {

inline constexpr std::uint32_t PREEMPT_BITS = 8;
inline constexpr std::uint32_t SOFTIRQ_BITS = 8;
inline constexpr std::uint32_t HARDIRQ_BITS = 4;
inline constexpr std::uint32_t NMI_BITS = 4;

inline constexpr std::uint32_t PREEMPT_SHIFT = 0;
inline constexpr std::uint32_t SOFTIRQ_SHIFT = PREEMPT_SHIFT + PREEMPT_BITS;
inline constexpr std::uint32_t HARDIRQ_SHIFT = SOFTIRQ_SHIFT + SOFTIRQ_BITS;
inline constexpr std::uint32_t NMI_SHIFT = HARDIRQ_SHIFT + HARDIRQ_BITS;

constexpr std::uint32_t preempt_mask_of(std::uint32_t bits, std::uint32_t shift) {
    return ((1u << bits) - 1) << shift;
}
inline constexpr std::uint32_t PREEMPT_MASK = preempt_mask_of(PREEMPT_BITS, PREEMPT_SHIFT);
inline constexpr std::uint32_t SOFTIRQ_MASK = preempt_mask_of(SOFTIRQ_BITS, SOFTIRQ_SHIFT);
inline constexpr std::uint32_t HARDIRQ_MASK = preempt_mask_of(HARDIRQ_BITS, HARDIRQ_SHIFT);
inline constexpr std::uint32_t NMI_MASK = preempt_mask_of(NMI_BITS, NMI_SHIFT);

inline constexpr std::uint32_t PREEMPT_OFFSET = 1u << PREEMPT_SHIFT;
inline constexpr std::uint32_t SOFTIRQ_OFFSET = 1u << SOFTIRQ_SHIFT;
inline constexpr std::uint32_t SOFTIRQ_DISABLE_OFFSET = 2 * SOFTIRQ_OFFSET;
inline constexpr std::uint32_t HARDIRQ_OFFSET = 1u << HARDIRQ_SHIFT;
inline constexpr std::uint32_t NMI_OFFSET = 1u << NMI_SHIFT;

constexpr std::uint32_t nmi_count(std::uint32_t pc) { return pc & NMI_MASK; }
constexpr std::uint32_t hardirq_count(std::uint32_t pc) { return pc & HARDIRQ_MASK; }
constexpr std::uint32_t softirq_count(std::uint32_t pc) { return pc & SOFTIRQ_MASK; }
constexpr std::uint32_t irq_count(std::uint32_t pc) { return pc & (NMI_MASK | HARDIRQ_MASK | SOFTIRQ_MASK); }

constexpr bool in_nmi(std::uint32_t pc) { return nmi_count(pc) != 0; }
constexpr bool in_hardirq(std::uint32_t pc) { return hardirq_count(pc) != 0; }
constexpr bool in_serving_softirq(std::uint32_t pc) { return (softirq_count(pc) & SOFTIRQ_OFFSET) != 0; }
constexpr bool in_interrupt(std::uint32_t pc) { return irq_count(pc) != 0; }
constexpr bool in_task(std::uint32_t pc) {
    return (pc & (NMI_MASK | HARDIRQ_MASK | SOFTIRQ_OFFSET)) == 0;
}

} // namespace kdsim::kernel
