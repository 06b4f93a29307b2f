// The timer interrupt of a guest: the profile's guest_timer_delivery is paid at the start of every
// timer interrupt, before the expired timers' callbacks, on a 1 GHz clock (1 cycle = 1 ns).
#include "kernel/cpu.h"
#include "kernel/cpu_test_support.h"

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
