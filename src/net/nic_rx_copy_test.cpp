// The receive copy of the FEC before rx_copybreak ([machine.nic] rx_copy, nic.cpp), every expected
// figure worked out by hand from this file's own costs: 32-byte lines, map 100, unmap 90, an
// invalidate of one line 25 inner + 15 outer, a clean 30 inner + 18 outer, barrier 20, outer sync
// 40, the new skb's allocation 370, the copy 0.5 cycles per byte. The receiving machine's other
// costs are all zero, so its CPU's busy time is the DMA API's, the allocations' and the copies'.
#include "net/nic.h"

#include "net/net_test_support.h"
#include "mem/memory.h"

#include <gtest/gtest.h>

namespace kdsim::net {
namespace {

constexpr std::uint32_t LINE = 32;
constexpr std::size_t FRSIZE = 2048; // FEC_ENET_RX_FRSIZE
constexpr std::size_t RING = 8;

devices::DmaCosts dma_costs() {
    return {.coherent = false, .map_call = 100, .unmap_call = 90, .inner_inv_line = 25, .inner_clean_line = 30,
            .outer_inv_line = 15, .outer_clean_line = 18, .outer_sync = 40, .barrier = 20};
}

// A sender (CPU 0, no DMA API) and the board (CPU 1) receiving over a 1 Gbit/s link into a ring
// of RING 2 KiB buffers under full-sync, with or without the copy.
struct RxBench : testing::NicBench {
    devices::DmaPlatform dma{dma_costs()};
    std::vector<Packet> received;
    explicit RxBench(bool copy) : NicBench({}, {.vector = 41, .ring = RING}, engine::PS_PER_US) {
        RxDmaConfig c;
        c.strategy = RxStrategy::FULL_SYNC;
        c.buffer_size = FRSIZE;
        c.copy = copy;
        nb.set_rx_dma(dma, c, LINE);
        nb.set_rx_buffer_alloc_cost(370);
        nb.set_rx_copy_cost(0.5);
        nb.set_rx_handler([](kernel::Cpu&, void* ctx, const Packet& p) -> engine::Task<> {
            static_cast<RxBench*>(ctx)->received.push_back(p);
            co_return;
        }, this);
    }
    void run(std::vector<Packet> frames) {
        frames_ = std::move(frames);
        b.create_task("open", kernel::SchedPolicy::NORMAL, 0, true, nb.open());
        a.create_task("sender", kernel::SchedPolicy::NORMAL, 0, false, body());
        NicBench::run(5 * engine::PS_PER_MS);
    }

private:
    std::vector<Packet> frames_;
    engine::Task<> body() {
        co_await a.exec(100'000, kernel::Cat::DRIVER); // 100 us: after the board's open has mapped the ring
        for (const Packet& p : frames_) co_await na.xmit(a, p);
    }
};

Packet tcp_frame() { return transport_packet(FrameKind::TCP_DATA, TCP_MSS, TCP_IP_HEADERS, 0, 0); } // 1514 B
Packet tcp_ack() { return transport_packet(FrameKind::TCP_ACK, 0, TCP_IP_HEADERS, 0, 0); }          // 66 B

// A 2 KiB buffer's map (DMA_FROM_DEVICE: invalidate): 100 + 64 x 25 + 20 + 64 x 15 + 40 = 2720;
// its unmap: 90 + the same 2620 = 2710.
constexpr Cycles MAP_2K = 100 + 64 * 25 + 20 + 64 * 15 + 40;
constexpr Cycles UNMAP_2K = 90 + 64 * 25 + 20 + 64 * 15 + 40;

TEST(NicRxCopy, PerFrameTheDmaApiInvalidatesTheWhole2KiBBufferTwiceWhateverTheFramesLength) {
    // 3 full frames and 2 ACKs: each unmapped and mapped again over 2048 / 32 = 64 lines, inner and
    // outer, after the open's 8 maps: 8 + 5 maps, 5 unmaps, (8 + 2 x 5) x 64 lines invalidated.
    RxBench t(true);
    t.run({tcp_frame(), tcp_ack(), tcp_frame(), tcp_ack(), tcp_frame()});
    ASSERT_EQ(t.received.size(), 5u);
    const devices::DmaStats& d = t.dma.stats();
    EXPECT_EQ(d.maps, RING + 5);
    EXPECT_EQ(d.unmaps, 5u);
    EXPECT_EQ(d.inner_inv, (RING + 2 * 5) * 64);
    EXPECT_EQ(d.outer_inv, (RING + 2 * 5) * 64);
    EXPECT_EQ(d.cycles, RING * MAP_2K + 5 * (UNMAP_2K + MAP_2K));
}

TEST(NicRxCopy, TheCopyTouchesTheFrameLessItsFcsAndEveryFrameIsCopiedOnce) {
    // pkt_len (cbd_datlen) counts the FCS; skb_copy_to_linear_data copies pkt_len - 4 bytes: the
    // frame, 1514 or 66 bytes. Conservation: copied = received = delivered, in frames and bytes.
    RxBench t(true);
    t.run({tcp_frame(), tcp_ack(), tcp_frame()});
    const NicStats& s = t.nb.stats();
    EXPECT_EQ(s.rx_copied, 3u);
    EXPECT_EQ(s.rx_copy_bytes, 1514u + 66u + 1514u);
    EXPECT_EQ(s.rx_copied, s.rx_frames);
    EXPECT_EQ(s.rx_copy_bytes, s.rx_bytes);
    EXPECT_EQ(t.received.size(), s.rx_frames);
}

TEST(NicRxCopy, TheBoardsCpuPaysTheMapsTheAllocationAndHalfACyclePerCopiedByte) {
    // open: 8 x 2720; per frame: unmap 2710 + netdev_alloc_skb 370 + copy + map 2720, the copy
    // 1514 x 0.5 = 757 or 66 x 0.5 = 33. Every other cost of the board is zero.
    RxBench t(true);
    t.run({tcp_frame(), tcp_ack()});
    const Cycles expect = RING * MAP_2K + (UNMAP_2K + 370 + 757 + MAP_2K) + (UNMAP_2K + 370 + 33 + MAP_2K);
    EXPECT_EQ(t.b.stats().busy_ticks, expect * 1000); // 1 GHz: 1000 ps per cycle
}

TEST(NicRxCopy, WithoutTheCopyTheSameFrameCostsOnlyTheRefillsAllocationAndTheMaps) {
    // full-sync alone: the refill allocates a new buffer (370) and maps it; no copy. The copy's
    // whole difference is its 757 cycles for a 1514-byte frame.
    RxBench t(false);
    t.run({tcp_frame()});
    EXPECT_EQ(t.nb.stats().rx_copied, 0u);
    EXPECT_EQ(t.b.stats().busy_ticks, (RING * MAP_2K + UNMAP_2K + 370 + MAP_2K) * 1000);
}

TEST(NicRxCopy, OnTheMemoryHierarchyTheCopyReadsTheColdFrameFromDramAndTheStackReadsTheNewSkb) {
    // The device wrote the frame to DRAM and the unmap dropped its lines: the copy's read of
    // bytes [0, 1514) misses 48 lines, all from DRAM; its write to the new skb at NET_IP_ALIGN,
    // bytes [2, 1516) of a line-aligned block, allocates 48 lines. eth_type_trans then reads the
    // skb (in L1): no further DRAM read. The ring buffer is the driver's for life: the same
    // address is mapped again, and the skb lies elsewhere.
    RxBench t(true);
    mem::MemorySystem m(testing::small_memory(), 2, 1'000'000'000);
    t.nb.set_memory(m);
    t.run({tcp_frame()});
    ASSERT_EQ(t.received.size(), 1u);
    EXPECT_EQ(m.stats().dram_demand_lines, 48u);
    EXPECT_EQ(m.stats().dram_write_allocates, 48u);
    EXPECT_EQ(t.received[0].data % LINE, 2u); // skb->data at NET_IP_ALIGN into its block
}

} // namespace
} // namespace kdsim::net
