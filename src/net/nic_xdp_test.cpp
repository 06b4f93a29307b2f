// An XDP program on the driver's receive path ([machine.nic] xdp, nic.cpp rx_xdp_drop), every
// expected figure worked out by hand from this file's own costs: per NAPI poll 300; per frame the
// program's run 48 and, on XDP_DROP, the driver's drop work 110 and two DMA sync calls of 12 (for
// the CPU before the program, for the device when the page goes back); on XDP_PASS the program's
// 48 before the usual path (driver 1000, netif_receive_skb 300). The kernel's own costs are zero.
#include "net/nic.h"

#include "net/net_test_support.h"

#include <gtest/gtest.h>

namespace kdsim::net {
namespace {

constexpr Cycles NAPI_POLL = 300, DRIVER_RX = 1000, NETIF_RECEIVE_SKB = 300, XDP_PROG = 48, XDP_DROP = 110,
                 SYNC_CALL = 12;

NetCosts board_costs() {
    NetCosts c;
    c.napi_poll = NAPI_POLL;
    c.driver_rx = DRIVER_RX;
    c.netif_receive_skb = NETIF_RECEIVE_SKB;
    c.xdp_prog_run = XDP_PROG;
    c.xdp_drop = XDP_DROP;
    return c;
}

// The board's 16-descriptor ring takes a burst of 8 frames at one poll.
struct Bench : testing::BurstBench {
    devices::DmaPlatform dma{devices::DmaCosts{.coherent = true, .map_call = 25, .unmap_call = 15, .sync_call = SYNC_CALL}};
    std::size_t delivered = 0;
    Bench(XdpAction xdp, bool rx_dma)
        : BurstBench({board_costs(), 41, 16}, engine::PS_PER_US) { // 16 x map 25 = 400 ns: mapped before the first frame
        rx_dma_ = rx_dma;
        if (rx_dma) nb.set_rx_dma(dma, RxDmaConfig{.strategy = RxStrategy::PARTIAL_SYNC, .buffer_size = 2048}, 64);
        nb.set_xdp(xdp);
        nb.set_rx_handler([](kernel::Cpu&, void* ctx, const Packet&) -> engine::Task<> {
            ++static_cast<Bench*>(ctx)->delivered;
            co_return;
        }, this);
    }
    void run(std::size_t frames) {
        if (rx_dma_) b.create_task("open", kernel::SchedPolicy::NORMAL, 0, true, nb.open()); // the ring mapped
        run_burst(frames);
    }

private:
    bool rx_dma_ = false;
};

TEST(NicXdp, DroppedFramesCostTheProgramTheDropAndTwoSyncsAndReachNoStack) {
    // one poll (8 < 64): 300 + 8 x (48 + 110 + 2 x 12) = 1,756 cycles; no unmap, map or new buffer
    Bench t(XdpAction::DROP, true);
    t.run(8);
    EXPECT_EQ(t.nb.stats().polls, 1u);
    EXPECT_EQ(t.softirq(), NAPI_POLL + 8 * (XDP_PROG + XDP_DROP + 2 * SYNC_CALL));
    EXPECT_EQ(t.nb.stats().xdp_drop, 8u);
    EXPECT_EQ(t.nb.stats().rx_frames, 8u);
    EXPECT_EQ(t.nb.stats().xdp_pass, 0u);
    EXPECT_EQ(t.delivered, 0u);
}

TEST(NicXdp, WithoutTheDmaApiADropCostsTheProgramAndTheDropAlone) {
    // 300 + 8 x (48 + 110) = 1,564 cycles
    Bench t(XdpAction::DROP, false);
    t.run(8);
    EXPECT_EQ(t.softirq(), NAPI_POLL + 8 * (XDP_PROG + XDP_DROP));
    EXPECT_EQ(t.delivered, 0u);
}

TEST(NicXdp, PassedFramesCostTheProgramOnTopOfTheUsualPath) {
    // 300 + 8 x (48 + 1000 + 300) = 11,084 cycles, and every frame reaches the stack
    Bench with(XdpAction::PASS, false), without(XdpAction::NONE, false);
    with.run(8);
    without.run(8);
    EXPECT_EQ(with.softirq(), NAPI_POLL + 8 * (XDP_PROG + DRIVER_RX + NETIF_RECEIVE_SKB));
    EXPECT_EQ(with.softirq() - without.softirq(), 8 * XDP_PROG);
    EXPECT_EQ(with.delivered, 8u);
    EXPECT_EQ(with.nb.stats().xdp_pass, 8u);
}

} // namespace
} // namespace kdsim::net
