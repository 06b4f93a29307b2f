// hrtimers on a 1 GHz clock (1 cycle = 1 ns): timer slack (a range between soft and hard expiry)
// and __hrtimer_run_queues's stop rule; select_estimate_accuracy; the timer interrupt of a guest,
// which pays the profile's guest_timer_delivery before the expired timers' callbacks.
#include "kernel/cpu.h"
#include "kernel/cpu_test_support.h"
#include "kernel/sched.h"

#include <gtest/gtest.h>

#include <vector>

namespace kdsim::kernel {
namespace {

struct Fired {
    std::vector<Tick> at;
};

Cycles record(Cpu& cpu, void* ctx, Tick) {
    static_cast<Fired*>(ctx)->at.push_back(cpu.now());
    return 0;
}

// Two timers 1 ms and 2 ms after boot (the tick at 10 ms, after them): when each callback ran,
// and the CPU's cycles in VIRT.
std::pair<Fired, Cycles> run_timers(KernelCosts costs) {
    engine::Simulation sim{1};
    KernelConfig cfg;
    cfg.hz = 100;
    Cpu cpu(sim, 0, engine::Clock(1'000'000'000), costs, cfg);
    Fired f;
    cpu.boot();
    cpu.hrtimer_start(engine::PS_PER_MS, &record, &f);
    cpu.hrtimer_start(2 * engine::PS_PER_MS, &record, &f);
    sim.run(5 * engine::PS_PER_MS);
    Cycles virt = 0;
    for (const auto& ctx : cpu.stats().cycles) virt += ctx[static_cast<std::size_t>(Cat::VIRT)];
    return {f, virt};
}

using engine::PS_PER_MS;
using engine::PS_PER_NS;
using engine::PS_PER_US;

struct TimerHarness {
    TimerHarness() : cpu(sim, 0, engine::Clock(1'000'000'000), testing::round_costs(), config()) {}
    static KernelConfig config() {
        KernelConfig cfg;
        cfg.hz = 100; // the tick at 10 ms, after everything below
        return cfg;
    }
    engine::Simulation sim{1};
    Cpu cpu;
};

TEST(HrTimer, ATimerWithSlackAndNothingElseArmedFiresAtItsHardExpiry) {
    TimerHarness h;
    Fired f;
    h.cpu.boot();
    h.cpu.hrtimer_start_range(PS_PER_MS, 50 * PS_PER_US, &record, &f);
    h.sim.run(5 * PS_PER_MS);
    ASSERT_EQ(f.at.size(), 1u);
    EXPECT_EQ(f.at[0], PS_PER_MS + 50 * PS_PER_US + 300 * PS_PER_NS); // hard expiry + irq_entry
}

TEST(HrTimer, ATimerInterruptBetweenSoftAndHardExpiryAlsoExpiresTheSlackTimer) {
    // slack timer [1 ms, 1.05 ms]; an exact timer at 1.02 ms: its interrupt takes both. The
    // exact one is first in hard-expiry order; its callback runs at 1.02 ms + 300 ns, the slack
    // one's after the first's timer_handler (400 ns).
    TimerHarness h;
    Fired f;
    h.cpu.boot();
    h.cpu.hrtimer_start_range(PS_PER_MS, 50 * PS_PER_US, &record, &f);
    h.cpu.hrtimer_start(PS_PER_MS + 20 * PS_PER_US, &record, &f);
    h.sim.run(5 * PS_PER_MS);
    ASSERT_EQ(f.at.size(), 2u);
    EXPECT_EQ(f.at[0], PS_PER_MS + 20 * PS_PER_US + 300 * PS_PER_NS);
    EXPECT_EQ(f.at[1], PS_PER_MS + 20 * PS_PER_US + 700 * PS_PER_NS);
}

TEST(HrTimer, TheRunStopsAtTheFirstTimerWhoseSoftExpiryIsAhead) {
    // A: [0.1 ms, 2 ms]; B: [1.5 ms, 1.6 ms]; C: exact at 1 ms. Hard order: C (1), B (1.6), A (2).
    // At C's interrupt (1 ms) B's soft expiry is ahead, so the walk stops there and A, though
    // past its soft expiry, waits for B's interrupt at 1.6 ms (B then A: +300, +700 ns).
    TimerHarness h;
    Fired a, b, c;
    h.cpu.boot();
    h.cpu.hrtimer_start_range(PS_PER_MS / 10, 19 * PS_PER_MS / 10, &record, &a);
    h.cpu.hrtimer_start_range(3 * PS_PER_MS / 2, PS_PER_MS / 10, &record, &b);
    h.cpu.hrtimer_start(PS_PER_MS, &record, &c);
    h.sim.run(5 * PS_PER_MS);
    ASSERT_EQ(c.at.size(), 1u);
    ASSERT_EQ(b.at.size(), 1u);
    ASSERT_EQ(a.at.size(), 1u);
    EXPECT_EQ(c.at[0], PS_PER_MS + 300 * PS_PER_NS);
    EXPECT_EQ(b.at[0], 16 * PS_PER_MS / 10 + 300 * PS_PER_NS);
    EXPECT_EQ(a.at[0], 16 * PS_PER_MS / 10 + 700 * PS_PER_NS);
}

struct Slack {
    Tick normal_10ms = 0, normal_1s = 0, normal_1000s = 0, fifo_1s = 0, custom_10ms = 0;
};

engine::Task<> measure_slack(Cpu& cpu, Slack& s, bool fifo) {
    const Tick now = cpu.now();
    if (fifo) {
        s.fifo_1s = select_estimate_accuracy(cpu, now + engine::PS_PER_S);
        co_return;
    }
    s.normal_10ms = select_estimate_accuracy(cpu, now + 10 * PS_PER_MS);
    s.normal_1s = select_estimate_accuracy(cpu, now + engine::PS_PER_S);
    s.normal_1000s = select_estimate_accuracy(cpu, now + 1000 * engine::PS_PER_S);
    cpu.current()->timer_slack = 5 * PS_PER_US;
    s.custom_10ms = select_estimate_accuracy(cpu, now + 10 * PS_PER_MS);
}

TEST(HrTimer, APollTimeoutsSlackIsATenthOfAPercentCappedAt100msButAtLeastTheTaskSlackAndZeroForRt) {
    TimerHarness h;
    Slack s;
    h.cpu.create_task("normal", SchedPolicy::NORMAL, 0, false, measure_slack(h.cpu, s, false));
    h.cpu.create_task("rt", SchedPolicy::FIFO, 50, false, measure_slack(h.cpu, s, true));
    h.cpu.boot();
    h.sim.run(5 * PS_PER_MS);
    EXPECT_EQ(s.normal_10ms, 50 * PS_PER_US);     // 10 us < init_task's 50 us
    EXPECT_EQ(s.normal_1s, PS_PER_MS);            // 1 s / 1000
    EXPECT_EQ(s.normal_1000s, 100 * PS_PER_MS);   // capped
    EXPECT_EQ(s.custom_10ms, 10 * PS_PER_US);     // 10 us > the task's 5 us
    EXPECT_EQ(s.fifo_1s, 0u);
}

engine::Task<> sleeper(Cpu& cpu, Tick until, Tick slack, Tick& woke) {
    co_await schedule_hrtimeout_range(cpu, until, slack);
    woke = cpu.now();
}

TEST(HrTimer, ASleepWithSlackEndsWithTheTickWhenTheTickFallsInsideTheRange) {
    // HZ = 100: the tick's hrtimer at 10 ms. A sleep to 9.98 ms with 50 us of slack ends at the
    // tick's interrupt (10 ms; the tick's callback first: 300 + 400 + its wakeup charge), a sleep
    // to 9.9 ms with the same slack at its own hard expiry, 9.95 ms.
    for (Tick until : {9980 * PS_PER_US, 9900 * PS_PER_US}) {
        TimerHarness h;
        Tick woke = 0;
        h.cpu.create_task("sleeper", SchedPolicy::NORMAL, 0, false, sleeper(h.cpu, until, 50 * PS_PER_US, woke));
        h.cpu.boot();
        h.sim.run(20 * PS_PER_MS);
        if (until == 9980 * PS_PER_US) {
            EXPECT_GE(woke, 10 * PS_PER_MS);
            EXPECT_LT(woke, 10 * PS_PER_MS + 20 * PS_PER_US);
        } else {
            EXPECT_GE(woke, 9950 * PS_PER_US);
            EXPECT_LT(woke, 9950 * PS_PER_US + 20 * PS_PER_US);
        }
    }
}

TEST(GuestTimer, EveryTimerInterruptOfAGuestFirstPaysItsDeliveryThroughTheHypervisor) {
    KernelCosts bare = testing::round_costs();
    KernelCosts guest = bare;
    guest.guest_timer_delivery = 60'000;
    const auto [b, b_virt] = run_timers(bare);
    const auto [g, g_virt] = run_timers(guest);
    ASSERT_EQ(b.at.size(), 2u);
    ASSERT_EQ(g.at.size(), 2u);
    // bare metal: the callback runs after irq_entry (300 ns); a guest adds the 60,000-cycle delivery
    EXPECT_EQ(b.at[0], engine::PS_PER_MS + 300 * engine::PS_PER_NS);
    EXPECT_EQ(g.at[0], engine::PS_PER_MS + (300 + 60'000) * engine::PS_PER_NS);
    EXPECT_EQ(g.at[1], 2 * engine::PS_PER_MS + (300 + 60'000) * engine::PS_PER_NS);
    EXPECT_EQ(b_virt, 0u);
    EXPECT_EQ(g_virt, 2u * 60'000u); // two timer interrupts
}

} // namespace
} // namespace kdsim::kernel
