// The FEC's receive before NAPI ([machine.nic] rx_mode = "netif_rx", nic.cpp fec_enet_interrupt,
// fec_enet_rx, netif_rx; net/backlog.h), every expected figure worked out by hand from this
// file's own costs: per frame the driver's 1000 and one register write of 80 in the hard
// interrupt, then netif_rx 200; per pass of the handler's IEVENT loop 100 + a read of 140 and a
// write of 80; per frame in NET_RX process_backlog 90 and netif_receive_skb 300. The kernel's own
// costs (interrupt entry, masking, softirq rounds) are all zero, and the rx buffers are not
// modelled through the DMA API, so the board's CPU spends exactly these.
#include "net/nic.h"

#include "net/backlog.h"
#include "net/net_test_support.h"

#include <gtest/gtest.h>

namespace kdsim::net {
namespace {

constexpr Cycles DRIVER_RX = 1000, MMIO_WRITE = 80, MMIO_READ = 140, NETIF_RX = 200, IRQ_LOOP = 100,
                 PROCESS_BACKLOG = 90, NETIF_RECEIVE_SKB = 300;

NetCosts board_costs() {
    NetCosts c;
    c.driver_rx = DRIVER_RX;
    c.netif_receive_skb = NETIF_RECEIVE_SKB;
    c.netif_rx = NETIF_RX;
    c.process_backlog = PROCESS_BACKLOG;
    c.fec_irq_loop = IRQ_LOOP;
    c.mmio_posted_write = MMIO_WRITE;
    c.mmio_read = MMIO_READ;
    c.fec_xmit = 500;
    c.fec_irq = 130;
    c.tx_clean = 245;
    c.tx_skb_free = 330;
    return c;
}

devices::DmaCosts coherent() { return {.coherent = true}; }

struct Delivered {
    kernel::CtxKind ctx;
    engine::Tick at;
};

// A sender (CPU 0) and the board (CPU 1, the FEC of Linux 3.0 in netif_rx mode) over a 1 Gbit/s
// link. The board's interrupt reaches its CPU `delivery` after the device raises it, so a burst
// sent at once is all on the ring when the handler starts.
struct Bench : testing::NicBench {
    devices::DmaPlatform dma{coherent()};
    Backlog backlog{sb, PROCESS_BACKLOG};
    std::vector<Delivered> delivered;
    // netif_rx_first: set_netif_rx before set_tx_dma (whose handler for NAPI must not replace it)
    Bench(engine::Tick delivery, std::size_t ring, std::size_t link_queue, bool netif_rx_first = false)
        : NicBench({}, {board_costs(), 41, ring}, engine::PS_PER_US, link_queue) {
        TxDmaConfig fec;
        fec.driver = NicDriver::FEC;
        if (netif_rx_first) nb.set_netif_rx(backlog);
        nb.set_tx_dma(dma, fec, 32, 0.5);
        if (!netif_rx_first) nb.set_netif_rx(backlog);
        nb.set_irq_delivery(delivery);
        nb.set_rx_handler([](kernel::Cpu& cpu, void* ctx, const Packet&) -> engine::Task<> {
            static_cast<Bench*>(ctx)->delivered.push_back({cpu.ctx_kind(), cpu.now()});
            co_return;
        }, this);
    }
    void run(std::size_t frames, std::uint32_t payload) {
        frames_ = frames;
        payload_ = payload;
        a.create_task("sender", kernel::SchedPolicy::NORMAL, 0, false, body());
        NicBench::run(20 * engine::PS_PER_MS);
    }
    Cycles cycles(kernel::CtxKind k) const { return NicBench::cycles(b, k); }

private:
    std::size_t frames_ = 0;
    std::uint32_t payload_ = 0;
    engine::Task<> body() {
        for (std::size_t i = 0; i < frames_; ++i)
            co_await na.xmit(a, transport_packet(FrameKind::UDP_DATA, payload_, 28, i, 0));
    }
};

TEST(NicNetifRx, ABurstOfEightOnTheRingCostsTheHardirqEightFramesOfDriverWorkAndTwoLoopPasses) {
    // 8 frames of 1042 bytes leave at 1 Gbit/s within ~70 us; the interrupt arrives 200 us after
    // the first, with all 8 on the ring. Pass 1 reads RXF: 100 + 140 + 80, then fec_enet_rx walks
    // the 8 (each 1000 + writel(0, R_DES_ACTIVE) 80 + netif_rx 200); pass 2 reads IEVENT empty:
    // 100 + 140 + 80. Hardirq: 2 x 320 + 8 x 1280 = 10,880 cycles, one interrupt, two passes.
    Bench t(200 * engine::PS_PER_US, 256, 1000);
    t.run(8, 1000);
    EXPECT_EQ(t.nb.stats().irqs, 1u);
    EXPECT_EQ(t.nb.stats().irq_loops, 2u);
    EXPECT_EQ(t.cycles(kernel::CtxKind::HARDIRQ), 2 * (IRQ_LOOP + MMIO_READ + MMIO_WRITE) + 8 * (DRIVER_RX + MMIO_WRITE + NETIF_RX));
    EXPECT_EQ(t.nb.tx_dma_stats()->mmio_reads, 2u);
}

TEST(NicNetifRx, SetBeforeTheTxDmaTheHandlerIsStillTheNetifRxOne) {
    // the burst above, set_netif_rx called first: the same hardirq work and stack path
    Bench t(200 * engine::PS_PER_US, 256, 1000, true);
    t.run(8, 1000);
    EXPECT_EQ(t.nb.stats().irqs, 1u);
    EXPECT_EQ(t.nb.stats().irq_loops, 2u);
    EXPECT_EQ(t.cycles(kernel::CtxKind::HARDIRQ), 2 * (IRQ_LOOP + MMIO_READ + MMIO_WRITE) + 8 * (DRIVER_RX + MMIO_WRITE + NETIF_RX));
    EXPECT_EQ(t.nb.stats().polls, 0u);
    EXPECT_EQ(t.sb.stats().processed, 8u);
}

TEST(NicNetifRx, TheStackRunsFromProcessBacklogInNetRxAfterTheHandlerReturns) {
    // Every frame is delivered in softirq context, after the hard interrupt has queued all 8:
    // NET_RX costs 8 x (process_backlog 90 + netif_receive_skb 300) = 3,120 cycles, and one
    // backlog poll takes them all (8 < weight 64).
    Bench t(200 * engine::PS_PER_US, 256, 1000);
    t.run(8, 1000);
    ASSERT_EQ(t.delivered.size(), 8u);
    for (const Delivered& d : t.delivered) EXPECT_EQ(d.ctx, kernel::CtxKind::SOFTIRQ);
    EXPECT_EQ(t.cycles(kernel::CtxKind::SOFTIRQ), 8 * (PROCESS_BACKLOG + NETIF_RECEIVE_SKB));
    EXPECT_EQ(t.sb.stats().polls, 1u);
    EXPECT_EQ(t.sb.stats().processed, 8u);
    EXPECT_EQ(t.nb.stats().polls, 0u); // the device has no NAPI instance of its own
}

TEST(NicNetifRx, OneFrameAtATimeTakesOneInterruptWithTwoPassesEach) {
    // With no delivery delay each frame's interrupt comes at once and the handler (2 x 320 + 1,280
    // = 1,920 cycles, ~1.9 us) ends before the next frame (~8.5 us later at 1 Gbit/s): 5 frames,
    // 5 interrupts, 10 passes.
    Bench t(0, 256, 1000);
    t.run(5, 1000);
    EXPECT_EQ(t.nb.stats().irqs, 5u);
    EXPECT_EQ(t.nb.stats().irq_loops, 10u);
    EXPECT_EQ(t.delivered.size(), 5u);
}

TEST(NicNetifRx, TheBacklogTakesNetdevMaxBacklogPlusOneFramesOfAHardirqBurstAndDropsTheRest) {
    // 1,100 minimum frames (~0.7 us each on the wire: ~740 us) are all on a 2,048-descriptor ring
    // when the interrupt arrives 2 ms after the first. fec_enet_rx walks them in one pass, with
    // interrupts off, so NET_RX cannot run: enqueue_to_backlog takes a frame while the queue holds
    // <= 1000 (1,001 frames) and drops the other 99, counted in sd->dropped and the device's
    // rx_dropped. Conservation: received = delivered + dropped.
    Bench t(2 * engine::PS_PER_MS, 2048, 2000);
    t.run(1100, 18);
    const NicStats& s = t.nb.stats();
    EXPECT_EQ(s.rx_frames, 1100u);
    EXPECT_EQ(s.irqs, 1u);
    EXPECT_EQ(t.backlog.dropped(), 1100u - (Backlog::NETDEV_MAX_BACKLOG + 1));
    EXPECT_EQ(s.rx_backlog_dropped, 99u);
    EXPECT_EQ(s.rx_dropped, 99u);
    EXPECT_EQ(t.delivered.size(), Backlog::NETDEV_MAX_BACKLOG + 1);
    EXPECT_EQ(s.rx_frames, t.delivered.size() + s.rx_backlog_dropped);
}

TEST(NicNetifRx, ABurstFasterThanTheHandlerKeepsItInItsLoopAndNetRxRunsOnlyAfterTheBurst) {
    // Receive livelock: 3,000 minimum frames back to back arrive one every 672 ns (84 bytes on the
    // wire at 1 Gbit/s); the handler takes 1,280 cycles (1.28 us) per frame, so the ring is never
    // empty during the burst and its first fec_enet_rx walks until the burst has ended: one
    // interrupt, and not one frame reaches the stack before the last one has arrived
    // (3,000 x 672 ns = 2.016 ms). The ring (256) drops what the handler cannot take; the backlog
    // keeps 1,001 of what it takes; every frame is received, dropped on the ring or dropped on the
    // backlog.
    constexpr std::size_t N = 3000;
    Bench t(0, 256, N);
    t.run(N, 18);
    const NicStats& s = t.nb.stats();
    EXPECT_EQ(s.irqs, 1u);
    ASSERT_EQ(t.delivered.size(), Backlog::NETDEV_MAX_BACKLOG + 1);
    EXPECT_GT(t.delivered.front().at, static_cast<engine::Tick>(N) * 672 * engine::PS_PER_NS);
    EXPECT_GT(s.rx_backlog_dropped, 0u);
    const std::uint64_t ring_dropped = s.rx_dropped - s.rx_backlog_dropped;
    EXPECT_GT(ring_dropped, 0u);
    EXPECT_EQ(N, t.delivered.size() + s.rx_backlog_dropped + ring_dropped);
}

} // namespace
} // namespace kdsim::net
