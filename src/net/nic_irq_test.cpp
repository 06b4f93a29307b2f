// The rx interrupt's flight (net/nic.cpp raise_rx_irq, [irq] device_delivery of a profile): the
// device raises its interrupt when a frame lands in the ring, and the handler runs the delivery
// latency later (plus the [variation] jitter's draw, when there is one); with no latency it runs
// the instant the frame lands, as before the figure existed. All costs are zero here, so the
// handler (Nic::rx_irq, which counts stats().irqs) starts at the delivery instant itself.
#include "net/nic.h"

#include "devices/dma.h"
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

// The handler's steps (Nic::rx_irq<FEC>, the form set_tx_dma registers for its driver), at 1 GHz:
// driver_rx_irq 200 cycles, or the FEC's fec_irq 130 and its register step (2 posted writes of 80
// and a read of 140: 300), then napi_schedule's local_irq_save 7 and local_irq_restore 11. Every
// other cost is 0, so the frame reaches the stack when its poll has taken it: at 5 us + 218 ns
// without the FEC (its handler has no register step); with it at 5 us + 130 + 300 + 7 + 11 ns, plus
// the poll's two writes for the descriptor (160 ns): 5 us + 608 ns. The poll's end writes IMASK.
struct RxSteps : engine::EventTarget {
    engine::Simulation sim{1};
    kernel::Cpu cpu{sim, 0, engine::Clock(1'000'000'000), costs(), kernel::KernelConfig{}};
    Softnet softnet{cpu};
    Nic nic{softnet, 40, net_costs(), "eth0"};
    devices::DmaPlatform dma{devices::DmaCosts{.coherent = true}};
    engine::Tick delivered = 0;
    explicit RxSteps(std::optional<NicDriver> tx_driver) {
        if (tx_driver) {
            TxDmaConfig cfg;
            cfg.driver = *tx_driver;
            nic.set_tx_dma(dma, cfg, 32, 0.5);
        }
        nic.set_rx_handler([](kernel::Cpu& c, void* ctx, const Packet&) -> engine::Task<> {
            static_cast<RxSteps*>(ctx)->delivered = c.now();
            co_return;
        }, this);
        cpu.boot();
        sim.schedule_at(LANDS, this, 0);
        sim.run(LANDS + engine::PS_PER_MS);
        cpu.finish();
    }
    static kernel::KernelCosts costs() {
        kernel::KernelCosts k;
        k.local_irq_save = 7;
        k.local_irq_restore = 11;
        return k;
    }
    static NetCosts net_costs() {
        NetCosts n;
        n.driver_rx_irq = 200;
        n.fec_irq = 130;
        n.mmio_posted_write = 80;
        n.mmio_read = 140;
        return n;
    }
    void on_event(std::uint64_t) override { nic.receive_from_wire(transport_packet(FrameKind::UDP_DATA, 100, 28, 0, 0)); }
};

TEST(NicIrqSteps, AHandlerWithoutTheFecsRegisterStepTakesItsExecsAloneAndTheFecsTakesItsRegistersBetween) {
    const RxSteps plain(std::nullopt);
    EXPECT_EQ(plain.delivered, LANDS + 218 * engine::PS_PER_NS);
    EXPECT_EQ(plain.nic.stats().irqs, 1u);
    const RxSteps lan(NicDriver::LAN743X);
    EXPECT_EQ(lan.delivered, LANDS + 218 * engine::PS_PER_NS);
    EXPECT_EQ(lan.nic.tx_dma_stats()->mmio_reads, 0u);
    const RxSteps fec(NicDriver::FEC);
    EXPECT_EQ(fec.delivered, LANDS + 608 * engine::PS_PER_NS);
    EXPECT_EQ(fec.nic.stats().irqs, 1u);
    EXPECT_EQ(fec.nic.tx_dma_stats()->mmio_reads, 1u);
    EXPECT_EQ(fec.nic.tx_dma_stats()->mmio_writes, 5u); // the handler's 2, the descriptor's 2, IMASK
}

} // namespace
} // namespace kdsim::net
