// The locally built skb on the memory hierarchy (issue 12's sender side, WireGuard and the veth
// pair): the lines each step touches, counted by the hierarchy's stats and derived by hand, and
// the path without a hierarchy pinned to the profile's per-byte formula.
//
// The hierarchy of these tests: 64-byte lines, a private 8 KiB 8-way L1 (latency 4) and a shared
// 64 KiB 8-way L2 (latency 20), no prefetcher, one fill buffer; nothing here comes near a
// capacity, so no line is evicted and each count is "distinct lines touched".
#include "mem/memory.h"
#include "net/net_test_support.h"
#include "net/skb_slab.h"
#include "net/stack.h"
#include "net/tcp.h"
#include "net/udp.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kdsim::net {
namespace {

constexpr double COPY_WARM = 0.5; // [memory].copy of these tests, cycles per byte
constexpr std::uint32_t MSS = TCP_MSS; // 1448 bytes: 22 whole lines and 40 bytes, so 23 lines when aligned

mem::MemoryConfig config() {
    mem::MemoryConfig c;
    c.line = 64;
    c.levels = {mem::CacheLevelConfig{"l1d", 8 * 1024, 8, 4, false, mem::Replacement::LRU},
                mem::CacheLevelConfig{"l2", 64 * 1024, 8, 20, true, mem::Replacement::LRU}};
    c.dram_latency_ns = 100;
    c.dram_bandwidth = 4e9;
    c.fill_buffers = 1;
    c.copy_warm = COPY_WARM;
    return c;
}

struct TwoCpus {
    engine::Simulation sim{1};
    kernel::Cpu c0{sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    kernel::Cpu c1{sim, 1, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    mem::MemorySystem memory{config(), 2, 1'000'000'000};
    testing::Wire wire;
    Stack stack{wire};
    TwoCpus() { stack.set_memory(&memory, COPY_WARM); }
};

TEST(PerByte, RoundsHalfAwayFromZeroAsLlroundDoes) {
    EXPECT_EQ(per_byte(0.5, 0), 0u);
    EXPECT_EQ(per_byte(0.5, 1), 1u);    // 0.5
    EXPECT_EQ(per_byte(0.5, 3), 2u);    // 1.5
    EXPECT_EQ(per_byte(0.5, 5), 3u);    // 2.5
    EXPECT_EQ(per_byte(0.25, 1), 0u);   // 0.25
    EXPECT_EQ(per_byte(0.75, 1), 1u);   // 0.75
    EXPECT_EQ(per_byte(0x1.fffffffffffffp-2, 1), 0u); // the double just below 0.5
    EXPECT_EQ(per_byte(0.5, (std::uint64_t{1} << 53) - 1), std::uint64_t{1} << 52); // 2^52 - 0.5
    EXPECT_EQ(per_byte(1.0, std::uint64_t{1} << 53), std::uint64_t{1} << 53);       // past 2^52: llround
    EXPECT_EQ(per_byte(-0.5, 1), static_cast<Cycles>(std::llround(-0.5)));          // negative: llround
    for (std::uint64_t n = 0; n < 5000; ++n)
        for (const double cpb : {0.1, 0.3, 0.5, 1.0 / 3, 0.7, 1.5, 2.125, 3.7, 12.34})
            EXPECT_EQ(per_byte(cpb, n), static_cast<Cycles>(std::llround(cpb * static_cast<double>(n)))) << cpb << " x " << n;
}

TEST(SkbSlab, HandsOutTheObjectFreedLastFirstAndIgnoresAddressesOutsideItAndDoubleFrees) {
    TwoCpus t;
    SkbSlab slab(t.memory, 4096, 3);
    const mem::Addr a = slab.alloc(), b = slab.alloc();
    EXPECT_EQ(b, a + 4096);
    slab.free(b + 100); // any address inside the object
    slab.free(a + 4095);
    slab.free(a + 10);          // already free: nothing
    slab.free(a + 3 * 4096);    // past the region: nothing
    EXPECT_EQ(slab.live(), 0u);
    EXPECT_EQ(slab.alloc(), a); // LIFO: a was freed last
    EXPECT_EQ(slab.alloc(), b);
    EXPECT_EQ(slab.alloc(), a + 2 * 4096); // the never-used third
    EXPECT_EQ(slab.alloc(), a);            // none free: the ring's next, from the first
    EXPECT_EQ(slab.alloc(), b);
}

TEST(DatapathMemory, WithoutAHierarchyTheWritersCopyIsTheProfilesFigurePerByteAndNothingElse) {
    testing::Wire wire;
    Stack stack(wire);
    engine::Simulation sim{1};
    kernel::Cpu cpu{sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    UserBuffer ub;
    // 0.2 x 1448 = 289.6 -> 290 cycles (rounded to the nearest), whatever the address
    EXPECT_EQ(stack.copy_from_user(cpu, ub, 0, MSS, 0.2), 290u);
    EXPECT_EQ(stack.copy_from_user(cpu, ub, 0x10000, MSS, 0.2), 290u);
    EXPECT_EQ(stack.touch(cpu, 0x10000, MSS, MSS), 0u);
    EXPECT_EQ(ub.base, 0u); // nothing placed in memory
}

// The writer's loop over one CPU at 1 GHz with a 4-segment window and an 8-segment send buffer
// (the first test of tcp_test.cpp): 4 segments leave, each right after its copy.
struct Writer {
    engine::Simulation sim{1};
    kernel::Cpu cpu{sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    testing::Wire wire;
    Stack stack{wire};
    kernel::TaskStruct* self = nullptr;
};
engine::Task<> write_for(TcpSource& src, Writer& w) { co_await src.send_loop(w.cpu, *w.self, 5 * engine::PS_PER_MS); }

TEST(DatapathMemory, WithoutAHierarchyEachSegmentLeavesAfterCopyFromUserPerByteAndCarriesNoAddress) {
    // copy_from_user 0.5 cycles/byte: 0.5 x 1448 = 724 cycles = 724 ns per segment; every other
    // cost 0, so segment i leaves at (i + 1) x 724 ns.
    Writer w;
    TcpCosts costs{};
    costs.copy_from_user = 0.5;
    TcpSource src(w.stack, costs, 4 * MSS);
    w.self = &w.cpu.create_task("iperf3", kernel::SchedPolicy::NORMAL, 0, false, write_for(src, w));
    w.cpu.boot();
    w.sim.run(10 * engine::PS_PER_MS);
    w.cpu.finish();
    ASSERT_EQ(w.wire.sent.size(), 4u);
    for (std::size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(w.wire.sent[i].at, (i + 1) * 724 * engine::PS_PER_NS);
        EXPECT_EQ(w.wire.sent[i].p.data, 0u);
    }
}

TEST(DatapathMemory, OnAHierarchyTheWriterReadsItsBufferAndWritesEachSegmentAfterTheLastInThePageFragRing) {
    // 8 segments copied (the send buffer), 8 x 1448 = 11584 bytes = exactly 181 lines, from the
    // user buffer's start to the ring's (both line-aligned): each line of either is missed once
    // (a line two copies share is in L1 for the second): 181 demand reads from DRAM, 181
    // write-allocates. The 4 segments sent carry their payload's address less the 66 header
    // bytes, one MSS apart.
    Writer w;
    mem::MemorySystem memory(config(), 1, 1'000'000'000);
    w.stack.set_memory(&memory, COPY_WARM);
    TcpSource src(w.stack, TcpCosts{}, 4 * MSS);
    w.self = &w.cpu.create_task("iperf3", kernel::SchedPolicy::NORMAL, 0, false, write_for(src, w));
    w.cpu.boot();
    w.sim.run(10 * engine::PS_PER_MS);
    w.cpu.finish();
    EXPECT_EQ(src.bytes_written(), 8u * MSS);
    EXPECT_EQ(memory.stats().dram_demand_lines, 181u);
    EXPECT_EQ(memory.stats().dram_write_allocates, 181u);
    ASSERT_EQ(w.wire.sent.size(), 4u);
    const mem::Addr first = w.wire.sent[0].p.data;
    EXPECT_NE(first, 0u);
    EXPECT_EQ((first + ETH_HEADER + TCP_IP_HEADERS) % 64, 0u); // the payload starts the ring's first line
    for (std::size_t i = 1; i < 4; ++i) EXPECT_EQ(w.wire.sent[i].p.data, first + i * MSS);
}

TEST(DatapathMemory, AnSkbWrittenByTheSenderPulledEncryptedAndReadByThePeersCpuTouchesTheLinesDerivedByHand) {
    TwoCpus t;
    SkbSlab slab(t.memory, 4096, 16);
    const mem::MemoryStats& s = t.memory.stats();
    const mem::Addr frag = t.memory.alloc(32 * 1024, 4096); // a page frag of the sender's
    UserBuffer writer, reader;

    // 1. tcp_sendmsg on CPU 0: 23 lines of the writer's buffer read from DRAM (missing L1 and L2),
    //    23 lines of the page frag write-allocated.
    const Cycles c1 = t.stack.copy_from_user(t.c0, writer, frag, MSS, 0.2);
    EXPECT_EQ(s.levels[0].misses, 46u);
    EXPECT_EQ(s.levels[1].misses, 46u);
    EXPECT_EQ(s.dram_demand_lines, 23u);
    EXPECT_EQ(s.dram_write_allocates, 23u);
    EXPECT_EQ(c1, per_byte(COPY_WARM, MSS) + s.stall_cycles); // 724 + the stalls, not 0.2 per byte

    // 2. wg_xmit's skb_segment on CPU 1 (from NET_RX, an ACK releasing the data): the segment's
    //    payload copied into a slab head (at 320, line-aligned): the 23 frag lines miss CPU 1's L1
    //    and hit the shared L2 (filled by CPU 0's stores); the 23 head lines are write-allocated.
    const mem::Addr head = slab.alloc() + 320;
    const Cycles stalls_before = s.stall_cycles;
    const Cycles c2 = t.stack.kernel_copy(t.c1, frag, head, MSS);
    EXPECT_EQ(s.levels[0].misses, 46u + 46u);
    EXPECT_EQ(s.levels[1].hits, 23u);
    EXPECT_EQ(s.levels[1].misses, 46u + 23u);
    EXPECT_EQ(s.dram_demand_lines, 23u);
    EXPECT_EQ(s.dram_write_allocates, 46u);
    EXPECT_EQ(s.peer_hits, 0u);
    EXPECT_EQ(c2, per_byte(COPY_WARM, MSS) + (s.stall_cycles - stalls_before));

    // 3. chacha20poly1305_encrypt_sg_inplace on CPU 1: the padded plaintext (1456 bytes: 23
    //    lines) read and written, the tag behind it (1472 bytes: still 23 lines): 46 L1 hits, no stall.
    const std::uint64_t l1_hits = s.levels[0].hits;
    EXPECT_EQ(t.stack.touch(t.c1, head, 1456, 1456 + 16), 0u);
    EXPECT_EQ(s.levels[0].hits, l1_hits + 46);
    EXPECT_EQ(s.levels[0].misses, 92u);

    // 4. The veth hands the same buffer to the peer; its reader on CPU 0 copies the payload to
    //    user space: the 23 head lines miss CPU 0's L1 and hit the shared L2 (CPU 1's stores filled
    //    it); the reader's 23 buffer lines are write-allocated.
    const Cycles c4 = t.stack.copy_to_user(t.c0, QueuedSkb{MSS, head}, reader, 0.55);
    EXPECT_EQ(s.levels[0].misses, 92u + 46u);
    EXPECT_EQ(s.levels[1].hits, 46u);
    EXPECT_EQ(s.levels[1].misses, 69u + 23u);
    EXPECT_EQ(s.dram_demand_lines, 23u);
    EXPECT_EQ(s.dram_write_allocates, 69u);
    EXPECT_GT(c4, per_byte(COPY_WARM, MSS)); // the L2 hits stall

    // 5. consume_skb gives the head back: the next pull gets the same lines.
    t.stack.set_skb_slab(&slab);
    t.stack.skb_data_free(head + 500);
    EXPECT_EQ(slab.alloc() + 320, head);
}


TEST(DatapathMemory, TheReadersBufferIsPlacedAtItsFirstCopyAndFilledRoundRobin) {
    // Without a hierarchy, or for an skb without an address, copy_to_user is the cold figure per
    // byte (0.55 x 1448 = 796.4 -> 796) and places nothing.
    testing::Wire wire;
    Stack bare{wire};
    TwoCpus t;
    UserBuffer ub;
    EXPECT_EQ(bare.copy_to_user(t.c0, QueuedSkb{MSS, 4096}, ub, 0.55), 796u);
    EXPECT_EQ(t.stack.copy_to_user(t.c0, QueuedSkb{MSS, 0}, ub, 0.55), 796u);
    EXPECT_EQ(ub.base, 0u);
    // On the hierarchy: the 128 KiB buffer placed at the first copy, each copy at the next bytes;
    // 90 copies fill 130,320 bytes, so the 91st (to 131,768 > 131,072) starts again at 0.
    const mem::Addr src = t.memory.alloc(MSS);
    (void)t.stack.copy_to_user(t.c0, QueuedSkb{MSS, src}, ub, 0.55);
    const mem::Addr base = ub.base;
    EXPECT_NE(base, 0u);
    EXPECT_EQ(ub.off, std::size_t{MSS});
    for (int i = 1; i < 90; ++i) (void)t.stack.copy_to_user(t.c0, QueuedSkb{MSS, src}, ub, 0.55);
    EXPECT_EQ(ub.off, 130'320u);
    (void)t.stack.copy_to_user(t.c0, QueuedSkb{MSS, src}, ub, 0.55);
    EXPECT_EQ(ub.off, std::size_t{MSS});
    EXPECT_EQ(ub.base, base);
}

TEST(DatapathMemory, ACopysSourceStreamsUnderItsLoopAndAnInPlaceCiphersUnderItsCycles) {
    // The source: 23 lines CPU 0 read (its L1 and the shared L2); CPU 1 finds each in L2, 16
    // cycles beyond an L1 hit, in order: ready at 16, 32, .. 368.
    TwoCpus t;
    const mem::Addr src = t.memory.alloc(MSS), dst = t.memory.alloc(MSS);
    (void)t.memory.write(1, 0, dst, MSS); // the destination in CPU 1's L1: its stores hit
    (void)t.memory.read(0, 0, src, MSS);
    // skb_copy_bits on CPU 1: the loop's 0.5 x 1448 = 724 cycles over the 23 lines (31.5 a line,
    // more than 16) consume them: only the first line's 16 is left (368 without the overlap)
    EXPECT_EQ(t.stack.kernel_copy(t.c1, src, dst, MSS), per_byte(COPY_WARM, MSS) + 16);

    // an in-place cipher over lines in L2 alone: 23 x 16 = 368 with no compute given, 16 under
    // 23 x 40 cycles of it
    TwoCpus u;
    const mem::Addr a = u.memory.alloc(MSS), b = u.memory.alloc(MSS);
    (void)u.memory.read(0, 0, a, MSS);
    (void)u.memory.read(0, 0, b, MSS);
    EXPECT_EQ(u.stack.touch(u.c1, a, MSS, MSS), 368u);
    EXPECT_EQ(u.stack.touch(u.c1, b, MSS, MSS, 23 * 40), 16u);
}


// ---- the UDP sender (udp_sendmsg -> ip_make_skb -> getfrag) ----------------------------------

engine::Task<> send_udp(UdpSource& src, kernel::Cpu& cpu, engine::Tick stop) { co_await src.send_loop(cpu, stop); }

TEST(DatapathMemory, ACopysLoopCyclesFollowEachLengthChangeAndANewCopyFigure) {
    // Source and destination in CPU 1's L1: no stall, each copy costs its loop alone, rounded
    // half away from zero (kernel_copy keeps the last length's figure: it must follow a change).
    TwoCpus t;
    const mem::Addr src = t.memory.alloc(MSS), dst = t.memory.alloc(MSS);
    (void)t.memory.write(1, 0, dst, MSS);
    (void)t.memory.read(1, 0, src, MSS);
    EXPECT_EQ(t.stack.kernel_copy(t.c1, src, dst, 3), 2u);     // 0.5 x 3 = 1.5
    EXPECT_EQ(t.stack.kernel_copy(t.c1, src, dst, 3), 2u);
    EXPECT_EQ(t.stack.kernel_copy(t.c1, src, dst, MSS), 724u); // 0.5 x 1448
    EXPECT_EQ(t.stack.kernel_copy(t.c1, src, dst, 1), 1u);     // 0.5
    EXPECT_EQ(t.stack.kernel_copy(t.c1, src, dst, 3), 2u);
    t.stack.set_memory(&t.memory, 1.25); // a new [memory].copy: the same length, its own figure
    EXPECT_EQ(t.stack.kernel_copy(t.c1, src, dst, 3), 4u);     // 1.25 x 3 = 3.75
    EXPECT_EQ(t.stack.kernel_copy(t.c1, src, dst, MSS), 1810u); // 1.25 x 1448
}

TEST(DatapathMemory, WithoutAHierarchyEachDatagramCostsCopyFromUserPerByteAndCarriesNoAddress) {
    // 1000-byte datagrams at 8 Mbit/s (one due per ms), copy_from_user 0.5 cycles/byte: 500
    // cycles = 500 ns after each is due it leaves; every other cost 0.
    Writer w;
    UdpSource src(w.stack, UdpCosts{}, NetCosts{}, 0.5, 1000, 8'000'000, 0);
    w.cpu.create_task("iperf3", kernel::SchedPolicy::NORMAL, 0, false, send_udp(src, w.cpu, 2'500 * engine::PS_PER_US));
    w.cpu.boot();
    w.sim.run(10 * engine::PS_PER_MS);
    w.cpu.finish();
    ASSERT_EQ(w.wire.sent.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(w.wire.sent[i].at, i * engine::PS_PER_MS + 500 * engine::PS_PER_NS);
        EXPECT_EQ(w.wire.sent[i].p.data, 0u);
    }
}

TEST(DatapathMemory, TheUdpSendersHeadIsTheKmallocClassOfItsDatagramAndItsRingWhatTheSendBufferHolds) {
    // 16 + 15 + 28 + 1470 + 320 = 1849 -> kmalloc-2k, 212,992 / 2048 = 104 heads; a 9K jumbo
    // datagram: 16 + 15 + 28 + 8972 + 320 = 9351 -> 16 KiB (kmalloc_large's order-2 pages), 13 heads.
    EXPECT_EQ(UdpSource::head_size(1470), 2048u);
    EXPECT_EQ(UdpSource::head_ring(1470), 104u);
    EXPECT_EQ(UdpSource::head_size(8972), 16384u);
    EXPECT_EQ(UdpSource::head_ring(8972), 13u);
}

TEST(DatapathMemory, OnAHierarchyTheUdpSenderReadsItsBufferAndWritesEachDatagramBehindItsHeadersInANewHead) {
    // Two 1470-byte datagrams (one due per ms). The first reads user bytes [0, 1470): lines 0..22,
    // 23 demand misses; the second [1470, 2940): lines 22..45, line 22 still in L1: 23 more. Each
    // payload goes behind hh_len (16) and the 28 header bytes of a 2 KiB head: bytes [44, 1514),
    // lines 0..23, 24 write-allocates per head; the headers' write [2, 44) then hits line 0. The
    // frame starts 2 bytes into its head, the second head 2 KiB after the first.
    Writer w;
    mem::MemorySystem memory(config(), 1, 1'000'000'000);
    w.stack.set_memory(&memory, COPY_WARM);
    PagePlacement pages;
    w.stack.set_page_placement(&pages);
    UdpSource src(w.stack, UdpCosts{}, NetCosts{}, 0.5, 1470, 11'760'000, 0);
    w.cpu.create_task("iperf3", kernel::SchedPolicy::NORMAL, 0, false, send_udp(src, w.cpu, 1'500 * engine::PS_PER_US));
    w.cpu.boot();
    w.sim.run(10 * engine::PS_PER_MS);
    w.cpu.finish();
    ASSERT_EQ(w.wire.sent.size(), 2u);
    EXPECT_EQ(memory.stats().dram_demand_lines, 46u);
    EXPECT_EQ(memory.stats().dram_write_allocates, 48u);
    const mem::Addr first = w.wire.sent[0].p.data;
    EXPECT_EQ(first % 2048, 2u);
    EXPECT_EQ(w.wire.sent[1].p.data, first + 2048);
    // the heads are registered as 2 KiB physically contiguous pieces for a driver's mapping
    EXPECT_EQ(pages.page_of(first).start, first - 2);
    EXPECT_EQ(pages.page_of(first).size, 2048u);
    // the first datagram left after its copy: 0.5 x 1470 = 735 cycles plus its stalls (1 GHz)
    EXPECT_GT(w.wire.sent[0].at, 735 * engine::PS_PER_NS);
}

TEST(DatapathMemory, TheUdpSendersHeadsCycleThroughTheRingTheSendBufferHolds) {
    // At 1 Gbit/s a 1470-byte datagram is due every 11.76 us: more than 104 in 2 ms, and the
    // 105th takes the first head again.
    Writer w;
    mem::MemorySystem memory(config(), 1, 1'000'000'000);
    w.stack.set_memory(&memory, COPY_WARM);
    UdpSource src(w.stack, UdpCosts{}, NetCosts{}, 0.5, 1470, 1'000'000'000, 0);
    w.cpu.create_task("iperf3", kernel::SchedPolicy::NORMAL, 0, false, send_udp(src, w.cpu, 2 * engine::PS_PER_MS));
    w.cpu.boot();
    w.sim.run(10 * engine::PS_PER_MS);
    w.cpu.finish();
    ASSERT_GT(w.wire.sent.size(), 105u);
    EXPECT_EQ(w.wire.sent[104].p.data, w.wire.sent[0].p.data);
    EXPECT_EQ(w.wire.sent[103].p.data, w.wire.sent[0].p.data + 103 * 2048);
}

} // namespace
} // namespace kdsim::net
