// The rx interrupt's flight (net/nic.cpp raise_rx_irq, [irq] device_delivery of a profile): the
// device raises its interrupt when a frame lands in the ring, and the handler runs the delivery
// latency later (plus the [variation] jitter's draw, when there is one); with no latency it runs
// the instant the frame lands, as before the figure existed. All costs are zero here, so the
// handler (Nic::rx_irq, which counts stats().irqs) starts at the delivery instant itself.
#include "net/nic.h"

#include "engine/simulation.h"
#include "net/napi.h"
#include "net/stack.h"

#include <gtest/gtest.h>

namespace kdsim::net {
namespace {

constexpr engine::Tick LANDS = 5 * engine::PS_PER_US; // the frame reaches the ring at 5 us

struct Rx : engine::EventTarget {
    engine::Simulation sim{1};
    kernel::Cpu cpu{sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    Softnet softnet{cpu};
    Nic nic{softnet, 40, NetCosts{}, "eth0"};
    Stack stack{nic};
    Rx() {
        cpu.boot();
        sim.schedule_at(LANDS, this, 0);
    }
    void on_event(std::uint64_t) override { nic.receive_from_wire(transport_packet(FrameKind::UDP_DATA, 100, 28, 0, 0)); }
    // The handler's runs by `t`.
    std::uint64_t irqs_by(engine::Tick t) {
        sim.run(t);
        return nic.stats().irqs;
    }
};

TEST(NicIrqDelivery, WithoutALatencyTheHandlerRunsTheInstantTheFrameLands) {
    Rx r;
    EXPECT_EQ(r.irqs_by(LANDS - 1), 0u);
    EXPECT_EQ(r.irqs_by(LANDS), 1u);
    r.cpu.finish();
}

TEST(NicIrqDelivery, WithALatencyTheHandlerRunsExactlyThatLongAfterTheFrameLands) {
    // 400 ns = 400,000 ps: not at 5 us + 399,999 ps, at 5 us + 400,000 ps.
    Rx r;
    r.nic.set_irq_delivery(400 * engine::PS_PER_NS);
    EXPECT_EQ(r.irqs_by(LANDS + 400 * engine::PS_PER_NS - 1), 0u);
    EXPECT_EQ(r.irqs_by(LANDS + 400 * engine::PS_PER_NS), 1u);
    r.cpu.finish();
}

TEST(NicIrqDelivery, TheJitterComesOnTopOfTheLatency) {
    // Latency 400 ns, jitter 0..100 ns: never before 5.4 us, always by 5.5 us.
    Rx r;
    r.nic.set_irq_delivery(400 * engine::PS_PER_NS);
    r.nic.set_irq_delivery_jitter(100 * engine::PS_PER_NS, r.sim.rng("test"));
    EXPECT_EQ(r.irqs_by(LANDS + 400 * engine::PS_PER_NS - 1), 0u);
    EXPECT_EQ(r.irqs_by(LANDS + 500 * engine::PS_PER_NS), 1u);
    r.cpu.finish();
}

} // namespace
} // namespace kdsim::net
