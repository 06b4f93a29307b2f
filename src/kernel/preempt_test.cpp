// preempt_count layout and context predicates, checked against the values include/linux/preempt.h
// defines (the masks and offsets below are typed from that header, not computed by the code).
#include "kernel/preempt.h"

#include <gtest/gtest.h>

namespace kdsim::kernel {
namespace {

TEST(PreemptCount, MasksAndOffsetsMatchLinuxPreemptH) {
    EXPECT_EQ(PREEMPT_MASK, 0x000000ffu);
    EXPECT_EQ(SOFTIRQ_MASK, 0x0000ff00u);
    EXPECT_EQ(HARDIRQ_MASK, 0x000f0000u);
    EXPECT_EQ(NMI_MASK, 0x00f00000u);
    EXPECT_EQ(PREEMPT_OFFSET, 0x1u);
    EXPECT_EQ(SOFTIRQ_OFFSET, 0x100u);
    EXPECT_EQ(SOFTIRQ_DISABLE_OFFSET, 0x200u);
    EXPECT_EQ(HARDIRQ_OFFSET, 0x10000u);
    EXPECT_EQ(NMI_OFFSET, 0x100000u);
}

struct Row {
    const char* what;
    std::uint32_t pc;
    bool in_interrupt, in_hardirq, in_serving_softirq, in_nmi, in_task;
};

// Each row: a preempt_count a real kernel has in that situation, and the predicates' values
// as the kernel's definitions give them.
const Row ROWS[] = {
    {"plain task", 0x0, false, false, false, false, true},
    {"task, preempt_disable x2", 0x2, false, false, false, false, true},
    {"task, local_bh_disable", 0x200, true, false, false, false, true},
    {"task, local_bh_disable x2", 0x400, true, false, false, false, true},
    {"serving softirq (irq_exit path)", 0x100, true, false, true, false, false},
    {"serving softirq with BH disabled inside", 0x300, true, false, true, false, false},
    {"hardirq over task", 0x10000, true, true, false, false, false},
    {"hardirq over serving softirq", 0x10100, true, true, true, false, false},
    {"hardirq over BH-disabled task", 0x10200, true, true, false, false, false},
    {"nmi over hardirq", 0x110000, true, true, false, true, false},
};

TEST(PreemptCount, PredicatesFollowTheKernelDefinitionsInEveryContext) {
    for (const Row& r : ROWS) {
        SCOPED_TRACE(r.what);
        EXPECT_EQ(in_interrupt(r.pc), r.in_interrupt);
        EXPECT_EQ(in_hardirq(r.pc), r.in_hardirq);
        EXPECT_EQ(in_serving_softirq(r.pc), r.in_serving_softirq);
        EXPECT_EQ(in_nmi(r.pc), r.in_nmi);
        EXPECT_EQ(in_task(r.pc), r.in_task);
    }
}

TEST(PreemptCount, BhDisabledTaskIsDistinguishableFromServingSoftirq) {
    EXPECT_EQ(softirq_count(0x200), 0x200u);
    EXPECT_FALSE(in_serving_softirq(0x200));
    EXPECT_TRUE(in_serving_softirq(0x100));
}

} // namespace
} // namespace kdsim::kernel
