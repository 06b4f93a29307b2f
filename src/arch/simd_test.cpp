// may_use_simd() per architecture x context x policy, against the kernel code each policy
// mirrors (expectations typed from those definitions, see the comments), and the effect of a
// running bracket on what a nested context may do.
#include "arch/simd.h"

#include "kernel/preempt.h"

#include <gtest/gtest.h>

namespace kdsim::arch {
namespace {

using kernel::HARDIRQ_OFFSET;
using kernel::NMI_OFFSET;
using kernel::SOFTIRQ_DISABLE_OFFSET;
using kernel::SOFTIRQ_OFFSET;

struct Ctx {
    const char* name;
    std::uint32_t pc;
    bool irqs_off;
};

// Contexts a CPU can be in when crypto code asks may_use_simd().
const Ctx CONTEXTS[] = {
    {"task", 0, false},
    {"task, BH disabled", SOFTIRQ_DISABLE_OFFSET, false},
    {"task, IRQs disabled", 0, true},
    {"serving softirq", SOFTIRQ_OFFSET, false},
    {"hardirq over task", HARDIRQ_OFFSET, true},
    {"hardirq over BH-disabled task", HARDIRQ_OFFSET | SOFTIRQ_DISABLE_OFFSET, true},
    {"NMI over hardirq", NMI_OFFSET | HARDIRQ_OFFSET, true},
};

struct PolicyRow {
    SimdPolicy policy;
    bool expect[7]; // one per CONTEXTS entry
};

const PolicyRow ROWS[] = {
    // x86 irq_fpu_usable(): !in_nmi; !in_kernel_fpu; !in_hardirq() -> true; in hardirq only
    // if !softirq_count(). IRQs-disabled task code may use the FPU.
    {SimdPolicy::X86_PREEMPT, {true, true, true, true, true, false, false}},
    {SimdPolicy::X86_BH_OFF, {true, true, true, true, true, false, false}},
    {SimdPolicy::X86_UNSAFE_NO_INUSE, {true, true, true, true, true, false, false}},
    // arm32 before 9283/1: asm-generic may_use_simd() = !in_interrupt() (BH-disabled counts).
    {SimdPolicy::ARM32_TASK_ONLY, {true, false, true, false, false, false, false}},
    // arm32 after 9283/1 (+2025 fix): !in_hardirq() && !irqs_disabled().
    {SimdPolicy::ARM32_SOFTIRQ, {true, true, false, true, false, false, false}},
    // unsafe variant: !in_hardirq() only.
    {SimdPolicy::ARM32_UNSAFE_SOFTIRQ_NO_BH, {true, true, true, true, false, false, false}},
    // arm64 5.13..6.7: !in_hardirq() && !irqs_disabled() && !in_nmi() && !busy.
    {SimdPolicy::ARM64_BH_OFF, {true, true, false, true, false, false, false}},
};

kernel::KernelCosts costs() {
    kernel::KernelCosts c;
    c.context_switch = 100;
    c.irq_entry = c.irq_exit = 10;
    return c;
}

TEST(MayUseSimd, FollowsEachPolicysKernelDefinitionInEveryContext) {
    for (const PolicyRow& row : ROWS) {
        for (std::size_t i = 0; i < std::size(CONTEXTS); ++i) {
            const Ctx& c = CONTEXTS[i];
            engine::Simulation sim;
            kernel::Cpu cpu(sim, 0, engine::Clock(1'000'000'000), costs(), kernel::KernelConfig{});
            auto unit = make_simd_unit(cpu, row.policy, SimdCosts{});
            cpu.preempt_count_add(c.pc);
            cpu.set_irqs_disabled(c.irqs_off);
            EXPECT_EQ(unit->may_use_simd(), row.expect[i]) << to_string(row.policy) << " in " << c.name;
        }
    }
}

struct Probe {
    bool inside = true;
    std::uint32_t pc_inside = 0;
};

engine::Task<> bracket(kernel::Cpu& cpu, SimdUnit& u, Probe& p) {
    co_await u.begin();
    // What a softirq interrupting here would see: the task's count plus SOFTIRQ_OFFSET.
    p.pc_inside = cpu.preempt_count();
    cpu.preempt_count_add(SOFTIRQ_OFFSET);
    p.inside = u.may_use_simd();
    cpu.preempt_count_sub(SOFTIRQ_OFFSET);
    co_await u.end();
}

bool softirq_may_nest(SimdPolicy pol, std::uint32_t* pc_inside) {
    engine::Simulation sim;
    kernel::Cpu cpu(sim, 0, engine::Clock(1'000'000'000), costs(), kernel::KernelConfig{});
    auto unit = make_simd_unit(cpu, pol, SimdCosts{.begin = 10, .end = 10, .save = 10, .restore = 10, .state_size = 0, .unavailable_trap = {}, .kernel_use_warning = {}});
    Probe p;
    cpu.create_task("kthread", kernel::SchedPolicy::NORMAL, 0, true, bracket(cpu, *unit, p));
    cpu.boot();
    sim.run(engine::PS_PER_MS);
    *pc_inside = p.pc_inside;
    return p.inside;
}

TEST(MayUseSimd, ASoftirqInsideATaskBracketMayUseSimdOnlyUnderTheUnsafePolicies) {
    // x86 (until 2025): in_kernel_fpu makes irq_fpu_usable() false for the nested softirq; the
    // section only disables preemption. x86 2025 and arm32/arm64 keep BH disabled, so no
    // softirq can actually interrupt (the counts show SOFTIRQ_DISABLE_OFFSET); the unsafe
    // variants allow the nested use.
    std::uint32_t pc = 0;
    EXPECT_FALSE(softirq_may_nest(SimdPolicy::X86_PREEMPT, &pc));
    EXPECT_EQ(pc, 1u);
    EXPECT_TRUE(softirq_may_nest(SimdPolicy::X86_UNSAFE_NO_INUSE, &pc));
    EXPECT_EQ(pc, 1u);
    softirq_may_nest(SimdPolicy::X86_BH_OFF, &pc);
    EXPECT_EQ(pc, SOFTIRQ_DISABLE_OFFSET);
    softirq_may_nest(SimdPolicy::ARM32_SOFTIRQ, &pc);
    EXPECT_EQ(pc, SOFTIRQ_DISABLE_OFFSET);
    EXPECT_FALSE(softirq_may_nest(SimdPolicy::ARM32_TASK_ONLY, &pc));
    EXPECT_EQ(pc, 1u);
    EXPECT_TRUE(softirq_may_nest(SimdPolicy::ARM32_UNSAFE_SOFTIRQ_NO_BH, &pc));
    EXPECT_EQ(pc, 1u);
    EXPECT_FALSE(softirq_may_nest(SimdPolicy::ARM64_BH_OFF, &pc)); // fpsimd_context_busy
    EXPECT_EQ(pc, SOFTIRQ_DISABLE_OFFSET);
}

TEST(SimdPolicyNames, RoundTripAndBelongToTheirArchitecture) {
    for (const PolicyRow& row : ROWS) {
        auto back = simd_policy_from_string(to_string(row.policy));
        ASSERT_TRUE(back.has_value());
        EXPECT_EQ(*back, row.policy);
    }
    EXPECT_EQ(arch_of(SimdPolicy::ARM32_SOFTIRQ), Arch::ARM32);
    EXPECT_EQ(arch_of(SimdPolicy::X86_BH_OFF), Arch::X86_64);
    EXPECT_FALSE(simd_policy_from_string("x86-whatever").has_value());
}

} // namespace
} // namespace kdsim::arch
