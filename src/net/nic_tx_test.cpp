// The transmit side through the DMA API (nic_tx.cpp), with every expected figure worked out by
// hand from this file's own costs: 32-byte lines, map 100, unmap 90, a clean of one line 30 inner +
// 18 outer, barrier 20, outer sync 40, a bounce copy at 0.5 cycles per byte.
#include "net/nic.h"
#include "engine/frame_pool.h"

#include "net/net_test_support.h"
#include "net/page_placement.h"
#include "mem/memory.h"

#include <gtest/gtest.h>

namespace kdsim::net {
namespace {

constexpr std::uint32_t LINE = 32;

devices::DmaCosts dma_costs(bool coherent) {
    return {.coherent = coherent, .map_call = 100, .unmap_call = 90, .inner_clean_line = 30, .outer_clean_line = 18,
            .outer_sync = 40, .barrier = 20};
}

NetCosts net_costs() {
    NetCosts c;
    c.driver_xmit = 540;
    c.tso_hdr = 200;
    c.tso_data = 110;
    c.tx_clean = 245;
    c.tx_skb_free = 330;
    c.fec_xmit = 500;
    c.fec_irq = 130;
    c.mmio_posted_write = 80;
    c.mmio_read = 140;
    return c;
}

// One board (CPU 0) sending to a peer (CPU 1) over a 1 Gbit/s link.
struct TxBench : testing::NicBench {
    devices::DmaPlatform dma;
    TxBench(bool coherent, TxDmaConfig cfg, bool sg = false, TsoKind tso = TsoKind::NONE)
        : NicBench({net_costs()}, {}, engine::PS_PER_US), dma(dma_costs(coherent)) {
        na.set_sg(sg, 0.5);
        na.set_tso(tso);
        na.set_tx_dma(dma, cfg, LINE, 0.5);
    }
    // A task on the board hands `frames` to ndo_start_xmit, then the run goes on long enough for
    // every frame to leave and its completion to be handled.
    void send(std::vector<Packet> frames) {
        frames_ = std::move(frames);
        a.create_task("sender", kernel::SchedPolicy::NORMAL, 0, false, body());
        run(5 * engine::PS_PER_MS);
    }

private:
    std::vector<Packet> frames_;
    engine::Task<> body() {
        for (const Packet& p : frames_) co_await na.xmit(a, p);
    }
};

Packet tcp_frame() { return transport_packet(FrameKind::TCP_DATA, TCP_MSS, TCP_IP_HEADERS, 0, 0); } // 1514 B

TxDmaConfig fec(std::size_t align = 16) {
    TxDmaConfig c;
    c.driver = NicDriver::FEC;
    c.tx_align = align;
    return c;
}

TEST(NicTx, A1514ByteFrameAtAnUnalignedAddressIsBouncedWholeAndItsBounceBufferCleanedIn48Lines) {
    // A linear TCP skb's data lies at 14 mod 16 (MAX_TCP_HEADER - 66): tx_align 16 bounces all
    // 1514 bytes into an aligned 2 KiB bounce buffer, whose clean covers ceil(1514 / 32) = 48
    // lines, inner and outer: 100 + 48 x 30 + 20 + 48 x 18 + 40 = 2464 cycles.
    TxBench t(false, fec());
    ASSERT_EQ(tcp_frame().len, 1514u);
    t.send({tcp_frame()});
    const TxDmaStats& s = *t.na.tx_dma_stats();
    EXPECT_EQ(s.bounced, 1u);
    EXPECT_EQ(s.bounce_bytes, 1514u);
    EXPECT_EQ(s.mapped_bytes, 1514u);
    const devices::DmaStats& d = t.dma.stats();
    EXPECT_EQ(d.maps, 1u);
    EXPECT_EQ(d.inner_clean, 48u);
    EXPECT_EQ(d.outer_clean, 48u);
    EXPECT_EQ(d.inner_inv, 0u); // DMA_TO_DEVICE: nothing invalidated, at map or at unmap
    // map 2464 + the unmap at completion 90 (DMA_TO_DEVICE: no line work on arm32)
    EXPECT_EQ(d.cycles, 2464u + 90u);
}

TEST(NicTx, WithoutTxAlignTheFrameIsMappedInPlaceOverTheLinesItTouches) {
    // No bounce: the frame's 1514 bytes from offset 14 of a line-aligned head touch bytes
    // [14, 1528): lines 0..47, 48 lines.
    TxDmaConfig c;
    TxBench t(false, c);
    t.send({tcp_frame()});
    EXPECT_EQ(t.na.tx_dma_stats()->bounced, 0u);
    EXPECT_EQ(t.dma.stats().inner_clean, 48u);
    EXPECT_EQ(t.dma.stats().maps, 1u);
}

TEST(NicTx, CompletionUnmapsEveryMappingAndFreesEverySkb) {
    TxBench t(false, fec());
    t.send(std::vector<Packet>(10, tcp_frame()));
    const TxDmaStats& s = *t.na.tx_dma_stats();
    EXPECT_EQ(t.na.stats().tx_frames, 10u);
    EXPECT_EQ(s.descriptors, 10u);
    EXPECT_EQ(s.reclaimed, 10u);
    EXPECT_EQ(s.skbs_freed, 10u);
    EXPECT_EQ(t.dma.stats().maps, 10u);
    EXPECT_EQ(t.dma.stats().unmaps, 10u);
    EXPECT_GE(t.na.stats().irqs, 1u);
}

TEST(NicTx, ACoherentPlatformPaysTheCallsAndNoLineMaintenance) {
    TxBench t(true, fec(0));
    t.send(std::vector<Packet>(3, tcp_frame()));
    const devices::DmaStats& d = t.dma.stats();
    EXPECT_EQ(d.inner_clean + d.outer_clean + d.inner_inv + d.outer_inv, 0u);
    EXPECT_EQ(d.cycles, 3u * (100 + 90));
}

TEST(NicTx, FecSoftwareTsoMapsEachSegmentsDataAndBouncesOnlyTheChunksOffTheSixteenByteGrid) {
    // A GSO skb of 3 x 1448 bytes from the start of the page-frag stream: headers in the coherent
    // tso_hdrs (3 descriptors, no mapping), data at offsets 0, 1448 (8 mod 16: bounced), 2896.
    TxBench t(false, fec(), true, TsoKind::FEC_SOFTWARE);
    Packet p = transport_packet(FrameKind::TCP_DATA, 3 * TCP_MSS, TCP_IP_HEADERS, 0, 0);
    p.gso_segs = 3;
    p.gso_size = TCP_MSS;
    t.send({p});
    const TxDmaStats& s = *t.na.tx_dma_stats();
    EXPECT_EQ(t.na.stats().tx_frames, 3u);
    EXPECT_EQ(s.descriptors, 6u);
    EXPECT_EQ(s.bounced, 1u);
    EXPECT_EQ(s.bounce_bytes, TCP_MSS);
    EXPECT_EQ(t.dma.stats().maps, 3u);
    EXPECT_EQ(s.reclaimed, 6u);
    EXPECT_EQ(t.dma.stats().unmaps, 3u);
    EXPECT_EQ(s.skbs_freed, 1u);
}

TEST(NicTx, TheFecRingsTheDoorbellAndItsInterruptReadsIeventOnce) {
    // One frame: the doorbell (1 write); its completion's interrupt: IEVENT read, IEVENT ack and
    // IMASK mask (1 read, 2 writes); the poll's end: IMASK unmask (1 write). Nothing left pending,
    // so no ERR006358 read.
    TxBench t(false, fec());
    t.send({tcp_frame()});
    EXPECT_EQ(t.na.stats().irqs, 1u);
    EXPECT_EQ(t.na.tx_dma_stats()->mmio_writes, 4u);
    EXPECT_EQ(t.na.tx_dma_stats()->mmio_reads, 1u);
}

// A tap that notes when each transmitted frame reaches the wire and how many coroutine frames
// are live then.
struct LiveTap final : FrameTap {
    std::vector<engine::Tick> at;
    std::vector<std::size_t> live;
    void frame(Dir dir, engine::Tick now, const Packet&) override {
        if (dir != Dir::TX) return;
        at.push_back(now);
        live.push_back(engine::FramePool::live_frames());
    }
};

// What one dev_queue_xmit of an skb saw: when its frame reached the wire, the coroutine frames
// live then and the sender's own before the call, its result and when it returned.
struct XmitOnce {
    std::vector<engine::Tick> at;
    std::vector<std::size_t> live;
    std::size_t own = 0;
    bool sent = false;
    engine::Tick done = 0;
};

// A task sends one skb by dev_queue_xmit on a NIC without a qdisc, after an exec of `before`
// cycles when it is non-zero: the stack's part (100 cycles) and the driver's (200), the kernel's
// costs zero.
XmitOnce xmit_once(Cycles before) {
    NetCosts c{};
    c.dev_queue_xmit = 100;
    c.driver_xmit = 200;
    testing::NicBench t({c}, {}, engine::PS_PER_US);
    LiveTap tap;
    t.na.set_tap(&tap);
    Stack stack(t.na);
    XmitOnce r;
    auto body = [&]() -> engine::Task<> {
        if (before) co_await t.a.exec(before, kernel::Cat::OTHER);
        r.own = engine::FramePool::live_frames();
        r.sent = co_await stack.dev_queue_xmit(t.a, tcp_frame());
        r.done = t.a.now();
    };
    t.a.create_task("sender", kernel::SchedPolicy::NORMAL, 0, false, body());
    t.run(engine::PS_PER_MS);
    r.at = tap.at;
    r.live = tap.live;
    return r;
}

// The frame on the wire at 300 ns and the skb sent. Live frames are counted from the sending
// task's own. Without the DMA API the Nic's steps run in the sender's frame (XmitRun) until an
// await must suspend: the task's first run comes from the boot's dispatch, which takes no exec in
// place, so the stack's exec suspends and the rest runs in one frame of its own (xmit_rest), live
// when the frame reaches the wire.
TEST(NicTx, DevQueueXmitWithoutAQdiscRunsTheStacksPartInTheNicsOneFrame) {
    const XmitOnce r = xmit_once(0);
    ASSERT_EQ(r.at.size(), 1u);
    EXPECT_EQ(r.at[0], 300 * engine::PS_PER_NS);
    EXPECT_EQ(r.live[0], r.own + 1);
    EXPECT_TRUE(r.sent);
    EXPECT_EQ(r.done, 300 * engine::PS_PER_NS);
}

// The same after an exec of 1,000 cycles: the task now runs from the completion loop, which
// takes each exec in place when nothing comes before its end (nothing does: the next event is
// the frame's arrival), so every await of the stack's and the driver's part is done in place
// and no coroutine frame is made for them: the sender's own frames alone are live when the
// frame reaches the wire at 1,000 + 100 + 200 = 1,300 ns.
TEST(NicTx, DevQueueXmitWhoseAwaitsAreAllDoneInPlaceMakesNoCoroutineFrame) {
    const XmitOnce r = xmit_once(1000);
    ASSERT_EQ(r.at.size(), 1u);
    EXPECT_EQ(r.at[0], 1300 * engine::PS_PER_NS);
    EXPECT_EQ(r.live[0], r.own);
    EXPECT_TRUE(r.sent);
    EXPECT_EQ(r.done, 1300 * engine::PS_PER_NS);
}

// The stack builds a Nic's steps awaiter itself (NetDevice::noqueue_steps) while its transmit
// awaits no Task; set_tx_dma turns that off (tx_map is a Task: start_xmit<true>'s frame), and
// dev_queue_xmit still sends the skb through the DMA API: one linear frame without SG, one
// descriptor, sent.
TEST(NicTx, ANicTransmitsAsStepsInItsCallersFrameUntilItsTransmitUsesTheDmaApi) {
    testing::NicBench plain({}, {}, engine::PS_PER_US);
    EXPECT_NE(plain.na.noqueue_steps(), nullptr);
    TxBench t(false, fec());
    EXPECT_EQ(t.na.noqueue_steps(), nullptr);
    Stack stack(t.na);
    bool sent = false;
    auto body = [&]() -> engine::Task<> { sent = co_await stack.dev_queue_xmit(t.a, tcp_frame()); };
    t.a.create_task("sender", kernel::SchedPolicy::NORMAL, 0, false, body());
    t.run(5 * engine::PS_PER_MS);
    EXPECT_TRUE(sent);
    EXPECT_EQ(t.na.tx_dma_stats()->descriptors, 1u);
    EXPECT_EQ(t.na.stats().tx_frames, 1u);
}

TEST(NicTx, TheBoardCpuPaysEveryTransmitAndCompletionCostByHand) {
    // Board CPU cycles for one frame, FEC, no memory hierarchy: fec_xmit 500 + bounce 1514 x 0.5 =
    // 757 + map 2464 + doorbell 80; irq: fec_irq 130 + read 140 + 2 x 80; poll: napi_poll 0 +
    // tx_clean 245 + unmap 90 + tx_skb_free 330 + unmask 80. The kernel's own costs are zero here.
    TxBench t(false, fec());
    t.send({tcp_frame()});
    const Cycles expect = 500 + 757 + 2464 + 80 + 130 + 140 + 160 + 245 + 90 + 330 + 80;
    EXPECT_EQ(t.a.stats().busy_ticks, expect * 1000); // 1 GHz: 1000 ps per cycle
}

TEST(NicTx, OnTheMemoryHierarchyTheCleanWritesBackTheBounceBuffersDirtyLinesAndTheDeviceReadsThem) {
    // The bounce memcpy leaves the 48 lines of the bounce buffer dirty in the CPU's caches; the
    // map's clean writes each back to DRAM (48 write-backs, nothing evicted in so small a run);
    // then the device's DMA reads the 1514 bytes from memory.
    TxBench t(false, fec());
    mem::MemorySystem m(testing::small_memory(), 2, 1'000'000'000);
    t.na.set_memory(m);
    t.send({tcp_frame()});
    EXPECT_EQ(t.dma.stats().inner_clean, 48u);
    EXPECT_EQ(m.stats().writebacks, 48u);
    EXPECT_EQ(m.stats().dma_read_bytes, 1514u);
    EXPECT_EQ(t.na.tx_dma_stats()->skbs_freed, 1u);
}

TEST(NicTx, UnderSwiotlbForceATxFrameIsCopiedIntoOneSlotAndNothingComesBack) {
    // A coherent platform with swiotlb=force: the frame's mapping covers bytes [0, 14 + 1514) of its
    // line-aligned head, 1528 bytes: one 2 KiB slot, one copy in of 1528 bytes at 0.5 cycles per
    // byte = 764 cycles; DMA_TO_DEVICE copies nothing back at unmap.
    TxDmaConfig c;
    TxBench t(true, c);
    devices::DmaDevice& dev = t.dma.add_device("eth0", ~std::uint64_t{0});
    t.dma.set_swiotlb(devices::SwiotlbMode::FORCE, std::make_unique<devices::SwiotlbPool>(0, 256 * 1024, 2), 0.5);
    Nic& n = t.na;
    n.set_dma_device(dev, nullptr, 0);
    n.set_tx_dma(t.dma, c, LINE, 0.5);
    t.send({tcp_frame()});
    EXPECT_EQ(dev.swiotlb.bounced_maps, 1u);
    EXPECT_EQ(dev.swiotlb.bytes_to_device, 1528u);
    EXPECT_EQ(dev.swiotlb.copy_cycles, 764u);
    EXPECT_EQ(dev.swiotlb.copies_from_device, 0u);
    EXPECT_EQ(t.dma.swiotlb()->used(), 0u); // the completion freed the slot
    EXPECT_EQ(t.na.stats().tx_frames, 1u);
}

TEST(NicTx, AFullSwiotlbPoolDropsTheSkbUnmapsWhatItHadMappedAndNeverCrashes) {
    // Hardware TSO: a 44-segment skb maps its 66-byte head (1 slot) and 63,712 bytes of page
    // fragments in 32 KiB chunks (16 slots each, page-aligned): 33+ slots an skb, so a pool of 128
    // slots holds three skbs in flight and the fourth, sent before any has left, cannot be mapped.
    TxDmaConfig c;
    TxBench t(true, c, true, TsoKind::HARDWARE);
    devices::DmaDevice& dev = t.dma.add_device("eth0", ~std::uint64_t{0});
    t.dma.set_swiotlb(devices::SwiotlbMode::FORCE, std::make_unique<devices::SwiotlbPool>(0, 256 * 1024, 2), 0.5);
    t.na.set_dma_device(dev, nullptr, 0);
    t.na.set_tx_dma(t.dma, c, LINE, 0.5);
    Packet p = transport_packet(FrameKind::TCP_DATA, 44 * TCP_MSS, TCP_IP_HEADERS, 0, 0);
    p.gso_segs = 44;
    p.gso_size = TCP_MSS;
    t.send(std::vector<Packet>(6, p));
    EXPECT_GE(dev.swiotlb.map_failures, 1u);
    EXPECT_EQ(t.dma.swiotlb()->failures(), dev.swiotlb.map_failures);
    EXPECT_LT(t.na.stats().tx_frames, 6u * 44);          // the dropped skbs' segments never left
    EXPECT_EQ(t.na.stats().tx_frames % 44, 0u);          // whole skbs only
    EXPECT_EQ(t.dma.stats().maps - dev.swiotlb.map_failures, t.dma.stats().unmaps); // every mapping undone
    EXPECT_EQ(t.dma.swiotlb()->used(), 0u);
    EXPECT_LE(t.dma.swiotlb()->high_water(), 128u);
}

// The 3.0 FEC ([machine.nic] tx_map_len): every tx buffer mapped for FEC_ENET_TX_FRSIZE.
constexpr std::size_t FEC_ENET_TX_FRSIZE = 2048;
TxDmaConfig fec_3_0(std::size_t align) {
    TxDmaConfig c = fec(align);
    c.map_len = FEC_ENET_TX_FRSIZE;
    return c;
}

TEST(NicTxMapLen, The30FecCleansTheWhole2KiBBounceBufferNotTheFramesLength) {
    // The 1514-byte TCP frame (at 14 mod 16) is bounced into an aligned 2 KiB bounce buffer, then
    // mapped for FEC_ENET_TX_FRSIZE: 2048 / 32 = 64 lines cleaned, inner and outer, against 48 for the
    // frame's length: 100 + 64 x 30 + 20 + 64 x 18 + 40 = 3232 cycles, + the unmap's 90.
    TxBench t(false, fec_3_0(16));
    t.send({tcp_frame()});
    const devices::DmaStats& d = t.dma.stats();
    EXPECT_EQ(t.na.tx_dma_stats()->bounce_bytes, 1514u);
    EXPECT_EQ(t.na.tx_dma_stats()->mapped_bytes, FEC_ENET_TX_FRSIZE);
    EXPECT_EQ(d.inner_clean, 64u);
    EXPECT_EQ(d.outer_clean, 64u);
    EXPECT_EQ(d.cycles, 3232u + 90u);
}

TEST(NicTxMapLen, A2KiBMappingThatStartsOffALineBoundaryTouches65Lines) {
    // No bounce (tx_align 0): a UDP frame's skb->data lies at 2 mod 16 of a line-aligned head, so
    // [2, 2050) spans lines 0..64: 65 lines, inner and outer.
    TxBench t(false, fec_3_0(0));
    t.send({transport_packet(FrameKind::UDP_DATA, 1470, 42, 0, 0)});
    EXPECT_EQ(t.na.tx_dma_stats()->bounced, 0u);
    EXPECT_EQ(t.dma.stats().inner_clean, 65u);
    EXPECT_EQ(t.dma.stats().outer_clean, 65u);
}

} // namespace
} // namespace kdsim::net

namespace kdsim::net {
namespace {

// ---- the skb's own data (Packet::data != 0: its sender on the memory hierarchy) ---------------

constexpr std::uint64_t FRAG = TSO_FRAG_PAGE; // 32 KiB

// A 44-segment GSO skb whose payload starts at `payload` (the frame convention: data = payload - 66).
Packet tso_skb(mem::Addr payload) {
    Packet p = transport_packet(FrameKind::TCP_DATA, 44 * TCP_MSS, TCP_IP_HEADERS, 0, 0); // 63,712 bytes
    p.gso_segs = 44;
    p.gso_size = TCP_MSS;
    p.data = payload ? payload - TCP_IP_HEADERS - ETH_HEADER : 0;
    return p;
}

TEST(NicTxOwnData, ATsoSkbMapsExactlyThePageFragLinesItsSenderWroteCutAtItsPagesAndCleansExactlyThoseDirtyLines) {
    // The sender's ring: three 32 KiB pages from a page-aligned base. Its copy wrote the 63,712
    // payload bytes from offset 30,000 (= 937 x 32 + 16): lines 937 .. 2928 of the ring, 1992 lines
    // write-allocated, dirty. The driver maps the 66-byte head (in the NIC's head region, at 14 of
    // a line-aligned slot: bytes [14, 80), 3 lines, written there) and the payload cut at the
    // ring's page ends: [30000, 32768) (lines 937..1023: 87), [32768, 65536) (1024 lines),
    // [65536, 93712) (lines 2048..2928: 881): 4 descriptors, 3 + 87 + 1024 + 881 = 1995 lines
    // cleaned, inner and outer, each dirty: 1995 write-backs. Nothing else is written: 1992 + 3
    // write-allocates in all (none in the NIC's stand-in TX_DATA).
    TxBench t(false, TxDmaConfig{}, true, TsoKind::HARDWARE);
    mem::MemorySystem m(testing::small_memory(), 2, 1'000'000'000);
    t.na.set_memory(m);
    PagePlacement pages;
    const mem::Addr ring = m.alloc(3 * FRAG, 4096);
    pages.add(ring, 3 * FRAG, FRAG);
    t.na.set_page_placement(&pages);
    (void)m.write(0, 0, ring + 30000, 44 * TCP_MSS); // the sender's copy
    ASSERT_EQ(m.stats().dram_write_allocates, 1992u);
    t.send({tso_skb(ring + 30000)});
    const TxDmaStats& s = *t.na.tx_dma_stats();
    EXPECT_EQ(s.descriptors, 4u);
    EXPECT_EQ(s.bounced, 0u);
    EXPECT_EQ(s.mapped_bytes, 66u + 44 * TCP_MSS);
    EXPECT_EQ(t.dma.stats().maps, 4u);
    EXPECT_EQ(t.dma.stats().inner_clean, 1995u);
    EXPECT_EQ(t.dma.stats().outer_clean, 1995u);
    EXPECT_EQ(m.stats().writebacks, 1995u);
    EXPECT_EQ(m.stats().dram_write_allocates, 1992u + 3);
    EXPECT_EQ(t.na.stats().tx_frames, 44u);
}

TEST(NicTxOwnData, ASkbWithoutAnAddressStillLiesInTheNicsStandInRegionWrittenThereForFree) {
    // The old path, pinned: data = 0, the payload in TX_DATA from its start: [0, 32768) and
    // [32768, 63712), 1024 + 967 = 1991 lines (63,712 = 1991 x 32), and the head's 3: 3 + 1991 =
    // 1994 lines written there (write-allocates), cleaned and written back; 3 descriptors.
    TxBench t(false, TxDmaConfig{}, true, TsoKind::HARDWARE);
    mem::MemorySystem m(testing::small_memory(), 2, 1'000'000'000);
    t.na.set_memory(m);
    t.send({tso_skb(0)});
    EXPECT_EQ(t.na.tx_dma_stats()->descriptors, 3u);
    EXPECT_EQ(t.dma.stats().inner_clean, 1994u);
    EXPECT_EQ(m.stats().dram_write_allocates, 1994u);
    EXPECT_EQ(m.stats().writebacks, 1994u);
}

TEST(NicTxOwnData, TheSoftwareTsoBouncesThePageFragPiecesOffTheSixteenByteGridReadingThemFromTheSendersRing) {
    // The FEC's software TSO over a 3-segment skb whose payload starts at offset 0 of the ring:
    // segments at 0, 1448 (8 mod 16: bounced) and 2896, each one piece of the first page; the
    // bounce copy reads the sender's lines, so the ring's lines are never written by the driver:
    // only the bounce buffer's 1448 bytes (46 lines: 1448 / 32 = 45.25) are write-allocated.
    TxBench t(false, fec(), true, TsoKind::FEC_SOFTWARE);
    mem::MemorySystem m(testing::small_memory(), 2, 1'000'000'000);
    t.na.set_memory(m);
    PagePlacement pages;
    const mem::Addr ring = m.alloc(FRAG, 4096);
    pages.add(ring, FRAG, FRAG);
    t.na.set_page_placement(&pages);
    (void)m.write(0, 0, ring, 3 * TCP_MSS); // 4344 bytes: 135.75 -> 136 lines
    ASSERT_EQ(m.stats().dram_write_allocates, 136u);
    Packet p = transport_packet(FrameKind::TCP_DATA, 3 * TCP_MSS, TCP_IP_HEADERS, 0, 0);
    p.gso_segs = 3;
    p.gso_size = TCP_MSS;
    p.data = ring - TCP_IP_HEADERS - ETH_HEADER;
    t.send({p});
    const TxDmaStats& s = *t.na.tx_dma_stats();
    EXPECT_EQ(s.descriptors, 6u); // 3 headers in tso_hdrs, 3 data pieces
    EXPECT_EQ(s.bounced, 1u);
    EXPECT_EQ(s.bounce_bytes, TCP_MSS);
    EXPECT_EQ(m.stats().dram_write_allocates, 136u + 46);
}

TEST(PagePlacement, PagesAreCutAtTheUnitFromTheRegionsBaseAndOtherAddressesLieInFourKiBPages) {
    PagePlacement pp;
    pp.add(0x10000, 3 * FRAG, FRAG);
    const PagePlacement::Page a = pp.page_of(0x10000 + FRAG + 5);
    EXPECT_EQ(a.start, 0x10000 + FRAG);
    EXPECT_EQ(a.size, FRAG);
    EXPECT_EQ(pp.page_of(0x10000 + 3 * FRAG).size, 4096u); // past the region
    EXPECT_EQ(pp.page_of(0x5123).start, 0x5000u);
    // a DRAM of exactly one 32 KiB page: every page placed at its base, the offset kept
    const devices::DramLayout one{0x4000'0000, FRAG};
    EXPECT_EQ(pp.phys(one, 0x10000 + FRAG + 5), 0x4000'0000u + 5);
    // two pages of a larger DRAM: each whole and unit-aligned, both inside DRAM
    const devices::DramLayout big{0, 8ull << 30};
    for (std::uint64_t n = 0; n < 3; ++n) {
        const std::uint64_t ph = pp.phys(big, 0x10000 + n * FRAG);
        EXPECT_EQ(ph % FRAG, 0u);
        EXPECT_LT(ph + FRAG - 1, 8ull << 30);
        EXPECT_EQ(pp.phys(big, 0x10000 + n * FRAG + FRAG - 1), ph + FRAG - 1);
    }
}

// A coherent board with `dram` and a 32-bit-mask NIC under swiotlb (auto): `frames` linear
// frames, frame i at offset 2 of its own 2 KiB head of a registered ring.
struct MaskBench {
    TxBench t{true, TxDmaConfig{}};
    mem::MemorySystem m{testing::small_memory(), 2, 1'000'000'000};
    PagePlacement pages;
    devices::DramLayout dram;
    devices::DmaDevice* dev = nullptr;
    mem::Addr heads = 0;
    explicit MaskBench(devices::DramLayout d) : dram(d) {
        dev = &t.dma.add_device("eth0", devices::dma_bit_mask(32));
        t.dma.set_swiotlb(devices::SwiotlbMode::AUTO, std::make_unique<devices::SwiotlbPool>(0, 256 * 1024, 2), 0.5);
        t.na.set_dma_device(*dev, &dram, 0);
        t.na.set_tx_dma(t.dma, TxDmaConfig{}, LINE, 0.5);
        t.na.set_memory(m);
        heads = m.alloc(16 * 2048, 4096);
        pages.add(heads, 16 * 2048, 2048);
        t.na.set_page_placement(&pages);
    }
    void send(std::size_t frames) {
        std::vector<Packet> v;
        for (std::size_t i = 0; i < frames; ++i) {
            Packet p = transport_packet(FrameKind::UDP_DATA, 1470, 28, i, 0);
            p.data = heads + i * 2048 + 2;
            v.push_back(p);
        }
        t.send(v);
    }
};

TEST(NicTxOwnData, A32BitMaskBouncesEveryOwnBufferWhenDramLiesAboveFourGiBAndNoneWhenBelow) {
    // DRAM [4 GiB, 8 GiB): every head lies beyond the mask, each mapping (from its line: 2 + the 1512-byte frame
    // bytes) takes slots and is copied in; DRAM [0, 4 GiB): none does.
    MaskBench above(devices::DramLayout{4ull << 30, 4ull << 30});
    above.send(4);
    EXPECT_EQ(above.dev->swiotlb.bounced_maps, 4u);
    EXPECT_EQ(above.dev->swiotlb.bytes_to_device, 4u * 1514); // each mapping from its head's line: 2 + 1512 bytes
    MaskBench below(devices::DramLayout{0, 4ull << 30});
    below.send(4);
    EXPECT_EQ(below.dev->swiotlb.bounced_maps, 0u);
    EXPECT_EQ(below.t.na.stats().tx_frames, 4u);
}

TEST(NicTxOwnData, A32BitMaskBouncesExactlyTheHeadsThePageAllocatorPlacedAboveFourGiB) {
    // 8 GiB from 0: each 2 KiB head placed on its own; those whose mapping [phys, phys + 2 + 1512)
    // ends above 4 GiB - 1 bounce, the others are mapped in place.
    MaskBench b(devices::DramLayout{0, 8ull << 30});
    std::uint64_t above = 0;
    for (std::size_t i = 0; i < 16; ++i)
        above += b.pages.phys(b.dram, b.heads + i * 2048) + 1514 - 1 > 0xFFFF'FFFFull;
    ASSERT_GT(above, 0u); // the placement spreads them: some on each side
    ASSERT_LT(above, 16u);
    b.send(16);
    EXPECT_EQ(b.dev->swiotlb.bounced_maps, above);
    EXPECT_EQ(b.t.na.stats().tx_frames, 16u);
}


TEST(NicTxOwnData, TheSoftwareTsoCutsASegmentThatCrossesTheSendersPageIntoTwoDataDescriptors) {
    // 3 segments from 1000 bytes before the ring's second page: the first crosses it ([-1000, 0)
    // and [0, 448) of page 2), the other two lie in page 2: 3 headers + 4 data descriptors, where a
    // payload from a page's first byte would take 3.
    TxBench t(false, fec(0), true, TsoKind::FEC_SOFTWARE);
    mem::MemorySystem m(testing::small_memory(), 2, 1'000'000'000);
    t.na.set_memory(m);
    PagePlacement pages;
    const mem::Addr ring = m.alloc(2 * FRAG, 4096);
    pages.add(ring, 2 * FRAG, FRAG);
    t.na.set_page_placement(&pages);
    Packet p = transport_packet(FrameKind::TCP_DATA, 3 * TCP_MSS, TCP_IP_HEADERS, 0, 0);
    p.gso_segs = 3;
    p.gso_size = TCP_MSS;
    p.data = ring + FRAG - 1000 - TCP_IP_HEADERS - ETH_HEADER;
    t.send({p});
    EXPECT_EQ(t.na.tx_dma_stats()->descriptors, 7u);
    EXPECT_EQ(t.dma.stats().maps, 4u);
    EXPECT_EQ(t.na.stats().tx_frames, 3u);
}

// The sender on another CPU than the NIC's interrupt and NAPI poll: tx completions reclaim
// descriptors off the ring's head while a later ndo_start_xmit waits in its mappings. The device
// must still read exactly each skb's own descriptors: 20 frames of 1514 bytes, each read once.
TEST(NicTx, AReclaimOnTheIrqCpuWhileTheSenderMapsOnAnotherCpuLeavesTheDeviceReadingEachFrameOnce) {
    TxBench t(false, fec());
    kernel::Cpu sender{t.sim, 2, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    mem::MemorySystem m(testing::small_memory(), 3, 1'000'000'000);
    t.na.set_memory(m);
    constexpr std::size_t N = 20;
    auto body = [](Nic& nic, kernel::Cpu& cpu) -> engine::Task<> {
        for (std::size_t i = 0; i < N; ++i) co_await nic.xmit(cpu, tcp_frame());
    };
    sender.create_task("sender", kernel::SchedPolicy::NORMAL, 0, false, body(t.na, sender));
    t.a.boot();
    t.b.boot();
    sender.boot();
    t.sim.run(5 * engine::PS_PER_MS);
    t.a.finish();
    t.b.finish();
    sender.finish();
    EXPECT_GT(t.na.stats().irqs, 1u); // completions came while the sender was still mapping
    EXPECT_EQ(t.na.tx_dma_stats()->skbs_freed, N);
    EXPECT_EQ(m.stats().dma_read_bytes, N * 1514u);
}

} // namespace
} // namespace kdsim::net
