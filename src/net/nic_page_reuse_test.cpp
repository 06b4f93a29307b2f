// The page-reuse receive strategy (RxStrategy::PAGE_REUSE, nic.cpp fec_enet_rx): igb's and
// mlx5e's recycled pages. Every expected figure by hand from this file's own costs: per NAPI poll
// 300; per frame the driver's 1000 and netif_receive_skb's 300, and the DMA API's calls on a
// coherent platform (map 25, unmap 15, sync 12 each; no line work); a new rx buffer costs 170.
#include "net/nic.h"

#include "net/net_test_support.h"

#include <gtest/gtest.h>

namespace kdsim::net {
namespace {

constexpr Cycles NAPI_POLL = 300, DRIVER_RX = 1000, NETIF_RECEIVE_SKB = 300, MAP = 25, UNMAP = 15, SYNC = 12,
                 NEW_BUFFER = 170;

NetCosts board_costs() {
    NetCosts c;
    c.napi_poll = NAPI_POLL;
    c.driver_rx = DRIVER_RX;
    c.netif_receive_skb = NETIF_RECEIVE_SKB;
    return c;
}

// The board's 16-descriptor ring, mapped at open, takes a burst of 8 frames at one poll.
struct Bench : testing::BurstBench {
    devices::DmaPlatform dma{devices::DmaCosts{.coherent = true, .map_call = MAP, .unmap_call = UNMAP, .sync_call = SYNC}};
    explicit Bench(RxStrategy s) : BurstBench({board_costs(), 41, 16}, engine::PS_PER_US) {
        nb.set_rx_dma(dma, RxDmaConfig{.strategy = s, .buffer_size = 2048}, 64);
        nb.set_rx_buffer_alloc_cost(NEW_BUFFER);
    }
    void run(std::size_t frames) {
        b.create_task("open", kernel::SchedPolicy::NORMAL, 0, true, nb.open()); // 16 maps: the ring
        run_burst(frames);
    }
};

TEST(NicPageReuse, AFrameCostsTwoSyncsAndNeitherANewBufferNorAMapping) {
    // one poll of 8 frames: 300 + 8 x (1000 + 12 for the CPU + 12 for the device + 300) = 10,892
    Bench t(RxStrategy::PAGE_REUSE);
    t.run(8);
    EXPECT_EQ(t.nb.stats().polls, 1u);
    EXPECT_EQ(t.nb.stats().rx_frames, 8u);
    EXPECT_EQ(t.softirq(), NAPI_POLL + 8 * (DRIVER_RX + 2 * SYNC + NETIF_RECEIVE_SKB));
    EXPECT_EQ(t.dma.stats().maps, 16u); // the ring's, at open: none per frame
    EXPECT_EQ(t.dma.stats().unmaps, 0u);
    EXPECT_EQ(t.dma.stats().syncs_for_cpu, 8u);
    EXPECT_EQ(t.dma.stats().syncs_for_device, 8u);
}

TEST(NicPageReuse, PartialSyncUnmapsAllocatesAndMapsANewBufferPerFrame) {
    // lan743x's path for the same frames: 300 + 8 x (1000 + 12 + 15 + 170 + 25 + 300) = 12,476
    Bench t(RxStrategy::PARTIAL_SYNC);
    t.run(8);
    EXPECT_EQ(t.softirq(), NAPI_POLL + 8 * (DRIVER_RX + SYNC + UNMAP + NEW_BUFFER + MAP + NETIF_RECEIVE_SKB));
    EXPECT_EQ(t.dma.stats().maps, 16u + 8u);
    EXPECT_EQ(t.dma.stats().unmaps, 8u);
    EXPECT_EQ(t.dma.stats().syncs_for_device, 0u);
}

} // namespace
} // namespace kdsim::net
