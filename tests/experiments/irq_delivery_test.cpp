// The NIC interrupt's flight ([irq] device_delivery of a profile, net/nic.cpp) on a whole run:
// E4's ARP ping-pong under DAIF masking (scenarios/e4/daif-built-out.toml), whose boards' profile
// has no such figure, run as shipped and with the figure set on both boards by hand. A round trip
// takes two NIC interrupts (the request's at the responder, the reply's at the requester) and
// nothing else waits on a device, so every round trip that no tick disturbs is exactly two
// flights longer: the median moves by 2 x the figure, to the picosecond. DRAM refresh is turned
// off (as seeds_test does): its collisions with a round trip depend on the round trip's phase
// against tREFI, which the longer round trip changes.
#include "helpers.h"

#include "report/report.h"

namespace kdsim::testing {
namespace {

const char* const E4 = "scenarios/e4/daif-built-out.toml";

// E4's run with both boards' device_delivery set to `ns` (nullopt: the profile's, none).
results::RunResults run_with_delivery(std::optional<std::uint64_t> ns) {
    system::ScenarioConfig cfg = scenario::load_scenario(ROOT / E4, scenario::LoadOptions{});
    for (auto& m : cfg.machines) {
        EXPECT_FALSE(m.profile.kernel.device_irq_delivery.has_value()) << m.name << ": the test assumes none shipped";
        if (ns) m.profile.kernel.device_irq_delivery = *ns;
        if (m.profile.memory) m.profile.memory->refresh_interval_ns = m.profile.memory->refresh_time_ns = 0;
    }
    system::System sys(cfg);
    return sys.run();
}

TEST(IrqDelivery, ZeroNanosecondsIsTheRunWithoutTheFigureByteForByte) {
    EXPECT_EQ(report::to_json_text(run_with_delivery(std::nullopt)), report::to_json_text(run_with_delivery(0)));
}

TEST(IrqDelivery, EachRoundTripOfTheArpPingPongIsTwoFlightsLonger) {
    const results::RunResults none = run_with_delivery(std::nullopt), late = run_with_delivery(1000);
    EXPECT_FALSE(late.failed);
    EXPECT_EQ(metric(late, "arping", "round_trips"), metric(none, "arping", "round_trips"));
    // 2 x 1000 ns = 2 us on the median, exactly (the results are in us, printed from ps).
    EXPECT_NEAR(metric(late, "arping", "rtt_p50_us") - metric(none, "arping", "rtt_p50_us"), 2.0, 1e-9);
    // The mean too, up to the ticks: the run is 10,000 x 2 us = 20 ms longer, 5-6 more 250 Hz ticks
    // on each board's CPU, each ~1 us of CPU (entry, timer_handler, tick, exit 1,480 cycles at
    // 1.5 GHz) that may land in a round trip: at most ~12 us over 10,000 round trips, 0.0012 us.
    EXPECT_NEAR(metric(late, "arping", "rtt_mean_us") - metric(none, "arping", "rtt_mean_us"), 2.0, 0.002);
}

} // namespace
} // namespace kdsim::testing
