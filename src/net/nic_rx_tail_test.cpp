// The rx tail register's posted writes (Nic::set_rx_tail_batch, nic.cpp rx_refilled/rx_tail_write):
// igb_alloc_rx_buffers writes the tail once per IGB_RX_BUFFER_WRITE (16) cleaned buffers and once
// at the end of igb_clean_rx_irq for the rest; lan743x once per 8 descriptors; mlx5e writes no rx
// register. Every expected figure by hand from this file's costs: per NAPI poll 300; per frame the
// driver's 1000 and netif_receive_skb's 300; per tail write 100.
#include "net/nic.h"

#include "net/net_test_support.h"

#include <gtest/gtest.h>

namespace kdsim::net {
namespace {

constexpr Cycles NAPI_POLL = 300, DRIVER_RX = 1000, NETIF_RECEIVE_SKB = 300, TAIL_WRITE = 100;

NetCosts board_costs(bool mmio) {
    NetCosts c;
    c.napi_poll = NAPI_POLL;
    c.driver_rx = DRIVER_RX;
    c.netif_receive_skb = NETIF_RECEIVE_SKB;
    if (mmio) c.mmio_posted_write = TAIL_WRITE;
    return c;
}

// The board's 64-descriptor ring takes a burst of 40 small frames (27 us on the wire) at one poll.
struct Bench : testing::BurstBench {
    Bench(bool mmio, std::size_t batch) : BurstBench({board_costs(mmio), 41, 64}, engine::PS_PER_US) {
        nb.set_rx_tail_batch(batch);
    }
    void run(std::size_t frames) { run_burst(frames); }
};

constexpr Cycles POLL_OF_40 = NAPI_POLL + 40 * (DRIVER_RX + NETIF_RECEIVE_SKB); // 52,300

TEST(NicRxTail, IgbWritesTheTailPerSixteenRefillsAndOnceMoreForTheRestAtThePollsEnd) {
    // 40 descriptors: writes after the 16th and the 32nd, and one for the last 8: 3 x 100
    Bench t(true, 16);
    t.run(40);
    ASSERT_EQ(t.nb.stats().polls, 1u);
    ASSERT_EQ(t.nb.stats().rx_frames, 40u);
    EXPECT_EQ(t.nb.stats().rx_tail_writes, 3u);
    EXPECT_EQ(t.softirq(), POLL_OF_40 + 3 * TAIL_WRITE);
}

TEST(NicRxTail, ABatchThatDividesThePollLeavesNoWriteForTheEnd) {
    // lan743x's 8: writes after the 8th, 16th, 24th, 32nd and 40th descriptor, nothing left over
    Bench t(true, 8);
    t.run(40);
    EXPECT_EQ(t.nb.stats().rx_tail_writes, 5u);
    EXPECT_EQ(t.softirq(), POLL_OF_40 + 5 * TAIL_WRITE);
}

TEST(NicRxTail, ADriverThatRingsNoRxRegisterAndAProfileWithoutTheFigureChargeNothing) {
    Bench none(true, 0); // mlx5e: the doorbell record is in memory
    none.run(40);
    EXPECT_EQ(none.nb.stats().rx_tail_writes, 0u);
    EXPECT_EQ(none.softirq(), POLL_OF_40);
    Bench no_figure(false, 16); // no [net] mmio_posted_write: the driver_rx figure holds the write
    no_figure.run(40);
    EXPECT_EQ(no_figure.nb.stats().rx_tail_writes, 0u);
    EXPECT_EQ(no_figure.softirq(), POLL_OF_40);
}

} // namespace
} // namespace kdsim::net
