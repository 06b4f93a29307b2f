// The FEC of Linux 6.1 as kdsim models two of its facts (nic.cpp): the interrupt coalescing period
// the driver programs (fec_enet_us_to_itr_clock, fec_enet_itr_coal_set) and the NAPI poll's loop
// over IEVENT (fec_enet_rx_napi, [machine.nic] poll_loop). Every expected figure is worked out by
// hand in the test's comment.
#include "net/nic.h"

#include "net/net_test_support.h"

#include <gtest/gtest.h>

namespace kdsim::net {
namespace {

// ICTT = us * (rate / 64000) / 1000 in integers, & 0xffff, in units of 64 clock cycles.
TEST(FecItr, TheDefault1000UsOnTheImx8qxpAhbClockOf333MHzIsIctt5208Or999936Ns) {
    // 333,333,333 / 64,000 = 5,208 (5,208.3 truncated); 1,000 x 5,208 / 1,000 = 5,208 (fits 16 bits);
    // 5,208 x 64 = 333,312 cycles of 3 ns = 999,936,000.99994 ps -> 999,936,001 ps.
    EXPECT_EQ(fec_itr_period(1000, 333'333'333), 999'936'001u);
}

TEST(FecItr, TheTruncationsOfTheDriverShortenThePeriodOnA125MHzClock) {
    // 125,000,000 / 64,000 = 1,953 (1,953.125); 100 x 1,953 / 1,000 = 195 (195.3);
    // 195 x 64 = 12,480 cycles of 8 ns = 99.84 us, not 100.
    EXPECT_EQ(fec_itr_period(100, 125'000'000), 99'840'000u);
}

TEST(FecItr, AnIcttBeyondSixteenBitsWrapsAsFecItrIcttMasksIt) {
    // 20,000 x 5,208 / 1,000 = 104,160 > 0xffff: 104,160 - 65,536 = 38,624; 38,624 x 64 =
    // 2,471,936 cycles at 333,333,333 Hz = 7,415,808.0074 ns -> 7,415,808,007 ps, not 20 ms.
    EXPECT_EQ(fec_itr_period(20000, 333'333'333), 7'415'808'007u);
}

TEST(FecItr, AnIcttOfZeroLeavesTheCoalescingOff) {
    // rate 50 kHz: 50,000 / 64,000 = 0, so ICTT 0 and fec_enet_itr_coal_set writes RXIC0 = 0;
    // 0 us likewise.
    EXPECT_EQ(fec_itr_period(1000, 50'000), 0u);
    EXPECT_EQ(fec_itr_period(0, 333'333'333), 0u);
}

// The poll loop. Board B (CPU 1, the FEC driver, NAPI, rx_usecs 1 ms) sends one minimum frame at
// t = 0: fec_xmit 500 + the doorbell 80 cycles (1 GHz: 0.58 us), then 84 bytes on the 1 Gbit/s wire
// (0.672 us): its completion (TXF) comes at ~1.25 us and raises B's first interrupt at once. The
// poll's first pass finds the ring empty and reclaims the frame: tx_clean 50,000 + tx_skb_free 330
// cycles, until ~51.6 us. Meanwhile, at ~9.5 us (1 us latency + ~8.5 us of a 1,000-byte payload's
// frame on the wire), the frame A sent at t = 0 lands on B's ring. What happens to it at the
// end of the first pass is the poll_loop's.
constexpr Cycles TX_CLEAN = 50'000, MMIO_WRITE = 80, MMIO_READ = 140;

NetCosts board_costs() {
    NetCosts c;
    c.driver_rx = 1000;
    c.netif_receive_skb = 300;
    c.napi_poll = 100;
    c.mmio_posted_write = MMIO_WRITE;
    c.mmio_read = MMIO_READ;
    c.fec_xmit = 500;
    c.fec_irq = 130;
    c.tx_clean = TX_CLEAN;
    c.tx_skb_free = 330;
    return c;
}

struct Bench : testing::NicBench {
    devices::DmaPlatform dma{devices::DmaCosts{.coherent = true}};
    std::vector<engine::Tick> delivered;
    Bench(PollLoop loop, engine::Tick rx_usecs) : NicBench({}, {board_costs(), 41, 64}, engine::PS_PER_US, 100) {
        TxDmaConfig fec;
        fec.driver = NicDriver::FEC;
        nb.set_tx_dma(dma, fec, 32, 0.5);
        nb.set_rx_usecs(rx_usecs);
        nb.set_poll_loop(loop);
        nb.set_rx_handler([](kernel::Cpu& cpu, void* ctx, const Packet&) -> engine::Task<> {
            static_cast<Bench*>(ctx)->delivered.push_back(cpu.now());
            co_return;
        }, this);
        a.create_task("a-sender", kernel::SchedPolicy::NORMAL, 0, false, send(na, a, 1000));
        b.create_task("b-sender", kernel::SchedPolicy::NORMAL, 0, false, send(nb, b, 18));
        run(5 * engine::PS_PER_MS);
    }
    static engine::Task<> send(Nic& n, kernel::Cpu& cpu, std::uint32_t payload) {
        co_await n.xmit(cpu, transport_packet(FrameKind::UDP_DATA, payload, 28, 0, 0));
    }
};

constexpr engine::Tick US = engine::PS_PER_US;

TEST(FecPollLoop, PerFrameEventsKeepThePollGoingAndItTakesTheFrameWithoutASecondInterrupt) {
    // per-frame: the frame set RXF at ~9.5 us; the first pass's collect_events (~51.6 us) reads it
    // and a second pass takes the frame (delivered ~53 us); that pass's per-frame writel cleared
    // RXF and nothing else came, so the next collect_events ends the poll. One interrupt, two
    // passes; IEVENT read three times: the interrupt's and the two collect_events'.
    Bench t(PollLoop::PER_FRAME, 1000 * US);
    EXPECT_EQ(t.nb.stats().irqs, 1u);
    EXPECT_EQ(t.nb.stats().poll_passes, 2u);
    ASSERT_EQ(t.delivered.size(), 1u);
    EXPECT_GT(t.delivered[0], 51 * US);
    EXPECT_LT(t.delivered[0], 60 * US);
    EXPECT_EQ(t.nb.tx_dma_stats()->mmio_reads, 3u);
}

TEST(FecPollLoop, CoalescedEventsEndThePollAndTheFrameWaitsForTheNextInterruptAMillisecondOn) {
    // coalesced: at ~51.6 us the 1 ms since the interrupt (~1.25 us) has not run out, so IEVENT
    // shows nothing and the poll ends after one pass with the frame on the ring; the coalesced
    // interrupt comes at ~1,001.25 us and its poll takes it (one pass). Two interrupts, two passes
    // in all, IEVENT read four times (two interrupts, two collect_events).
    Bench t(PollLoop::COALESCED, 1000 * US);
    EXPECT_EQ(t.nb.stats().irqs, 2u);
    EXPECT_EQ(t.nb.stats().poll_passes, 2u);
    ASSERT_EQ(t.delivered.size(), 1u);
    EXPECT_GT(t.delivered[0], 1001 * US);
    EXPECT_LT(t.delivered[0], 1010 * US);
    EXPECT_EQ(t.nb.tx_dma_stats()->mmio_reads, 4u);
}

TEST(FecPollLoop, WithoutCoalescingTheCoalescedReadingIsThePerFrameOne) {
    // rx_usecs 0: nothing is held back, so COALESCED sees the RXF at ~51.6 us as PER_FRAME does.
    Bench t(PollLoop::COALESCED, 0);
    EXPECT_EQ(t.nb.stats().irqs, 1u);
    EXPECT_EQ(t.nb.stats().poll_passes, 2u);
    ASSERT_EQ(t.delivered.size(), 1u);
    EXPECT_LT(t.delivered[0], 60 * US);
}

TEST(FecPollLoop, WithoutTheLoopThePollMakesOnePassAndNeverReadsIevent) {
    // NONE (lan743x's poll): the frame waits for the coalesced interrupt as with COALESCED, but
    // no collect_events: IEVENT is read only by the two interrupts.
    Bench t(PollLoop::NONE, 1000 * US);
    EXPECT_EQ(t.nb.stats().irqs, 2u);
    EXPECT_EQ(t.nb.stats().poll_passes, 0u);
    ASSERT_EQ(t.delivered.size(), 1u);
    EXPECT_GT(t.delivered[0], 1001 * US);
    EXPECT_EQ(t.nb.tx_dma_stats()->mmio_reads, 2u);
}

} // namespace
} // namespace kdsim::net
