// The kvm-unit-tests ipi test with its target vCPU idle in WFI (target = "wfi") against the
// published one, whose target spins: the same scenario (the reality case's ipi.toml), and the
// difference is the WFI path's wake-up less the running vCPU's exit (kvm/kvm.h), by hand from
// the arm64/neoverse-n1 figures.
#include "helpers.h"

#include <gtest/gtest.h>

namespace kdsim {
namespace {

using namespace testing; // ROOT, metric, stat (helpers.h)

// `halt_poll`: the host's kvm.halt_poll_ns ("" for its default, arm64's 500 us).
results::RunResults run_ipi(const char* target, const char* halt_poll = "0 us") {
    scenario::LoadOptions lo;
    lo.assignments.push_back(scenario::Assignment{"machine[1].workload[0].target", target, "--set"});
    if (*halt_poll) lo.assignments.push_back(scenario::Assignment{"machine[0].kernel.halt_poll_ns", halt_poll, "--set"});
    const system::ScenarioConfig cfg = scenario::load_scenario(ROOT / "scenarios/reality/kvm-microbench-n1/ipi.toml", lo);
    system::System sys(cfg); // keeps a reference to cfg
    return sys.run();
}

// Halt polling off (kvm.halt_poll_ns=0): every SGI finds the idle target blocked.
TEST(KvmMicroBenchIpi, AnIdleTargetCostsTheWakeFromWfiInsteadOfTheRunningExit) {
    const auto spin = run_ipi("spin"), wfi = run_ipi("wfi");
    // arm64/neoverse-n1 at 3.0 GHz. Running target: world_switch 876 + irq entry 430 + exit 210
    // + vgic_flush 450. Blocked in WFI: irq entry 430 + exit 210 + context_switch 1,030 +
    // wfi_block 300 + vcpu_put_load/2 550 + the entry half 438 + vgic_flush 450.
    // Difference: 1,030 + 300 + 550 + 438 - 876 = 1,442 cycles = 480.67 ns per iteration.
    // Either run sees the flag at the end of a 5-cycle poll: one poll (1.67 ns) of slack.
    const double poll_ns = 5 / 3.0;
    const double delta_ns = 1442 / 3.0;
    EXPECT_NEAR(metric(wfi, "micro-bench", "avg_ns") - metric(spin, "micro-bench", "avg_ns"), delta_ns, poll_ns);
    // The idle target's iteration: the loop 5 + the SGI trap's exit half 438 + sgi_trap 600, the
    // kick's ipi_latency 600, the wake from WFI 3,408 (above), the guest's irq entry 100 (the
    // handler sets the flag) = 5,151 cycles, then up to one poll.
    EXPECT_GE(metric(wfi, "micro-bench", "avg_ns"), 5151 / 3.0);
    EXPECT_LE(metric(wfi, "micro-bench", "avg_ns"), 5151 / 3.0 + poll_ns);
    // 4,096 SGIs: each one an irq exit of the spinning target, or a wake-up of the idle one
    // (the target's own ticks add a few of either kind).
    const double n = metric(spin, "micro-bench", "iterations");
    EXPECT_EQ(n, 4096);
    EXPECT_GE(stat(spin, "guest/kvm/vcpu1/exits/irq"), n);
    EXPECT_LT(stat(spin, "guest/kvm/vcpu1/wfi_wakes"), 5);
    EXPECT_GE(stat(wfi, "guest/kvm/vcpu1/wfi_wakes"), n);
    EXPECT_LT(stat(wfi, "guest/kvm/vcpu1/exits/irq"), 5);
}

TEST(KvmMicroBenchIpi, WithHaltPollingAnIdleTargetIsWokenByItsPollWithoutTheKickIpi) {
    const auto polled = run_ipi("wfi", "");
    // The idle target's iteration when the SGI comes while it polls (kvm_vcpu_halt): the loop 5 +
    // the SGI trap's exit half 438 + sgi_trap 600, no IPI (a polling vCPU is not in guest mode),
    // the poll's wake-up: one poll iteration 5 + wfi_block 300 + the entry half 438 + vgic_flush
    // 450 = 1,193, the guest's irq entry 100 = 2,336 cycles, then up to one poll.
    const double poll_ns = 5 / 3.0;
    EXPECT_GE(metric(polled, "micro-bench", "avg_ns"), 2336 / 3.0);
    EXPECT_LE(metric(polled, "micro-bench", "avg_ns"), 2336 / 3.0 + poll_ns);
    // The window grows from 0 (first halt, blocked) to 10 us (second), after which the halts of
    // about 0.8 us are all covered: every wake-up but the first few is a polled one.
    const double n = metric(polled, "micro-bench", "iterations");
    EXPECT_GE(stat(polled, "guest/kvm/vcpu1/halt_poll/successful"), n - 5);
    EXPECT_GE(stat(polled, "guest/kvm/vcpu1/wfi_wakes"), n);
}

} // namespace
} // namespace kdsim
