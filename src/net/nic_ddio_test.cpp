// A NIC without a modelled DMA API (no [machine.nic] rx_strategy, the x86 tunnel scenarios' case)
// on a coherent machine: the device's write of a received frame leaves the frame where the
// platform puts it, and the driver's first touch (eth_type_trans's 14 bytes) pays that level.
// With write-allocate into the LLC (Intel DDIO) the frame is an L3 hit; without it, a DRAM miss.
// Expected stalls by hand from this file's hierarchy: 1 GHz, 64-byte lines, L1 4, L2 12, L3 40
// cycles, DRAM 100 ns and 64 GB/s (a line holds the channel 1 ns). Every other cost of the receiving machine is zero, so its CPU's busy time is
// that one stall.
#include "net/nic.h"

#include "net/gro.h"
#include "net/link.h"
#include "net/napi.h"
#include "net/tcp.h"
#include "net/udp.h"
#include "mem/memory.h"

#include <gtest/gtest.h>

namespace kdsim::net {
namespace {

mem::MemoryConfig x86_like(bool ddio) {
    mem::MemoryConfig c;
    c.line = 64;
    c.levels = {{"l1d", 32 * 1024, 8, 4, false, mem::Replacement::LRU},
                {"l2", 256 * 1024, 8, 12, false, mem::Replacement::LRU},
                {"l3", 4 * 1024 * 1024, 16, 40, true, mem::Replacement::LRU}};
    c.dram_latency_ns = 100;
    c.dram_bandwidth = 64e9;
    c.copy_warm = 0.05;
    c.dma_coherent = true;
    c.dma_write_allocate = ddio;
    return c;
}

// A sender (CPU 0, no memory) and the receiver (CPU 1, on the hierarchy) over a 10 Gbit/s link.
struct Bench {
    Packet frame_;
    engine::Simulation sim{1};
    kernel::Cpu a{sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    kernel::Cpu b{sim, 1, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    Softnet sa{a}, sb{b};
    Nic na, nb;
    Link link;
    mem::MemorySystem m;
    std::size_t received = 0;
    explicit Bench(bool ddio, Packet frame = transport_packet(FrameKind::TCP_DATA, TCP_MSS, TCP_IP_HEADERS, 0, 0))
        : frame_(frame), na(sa, 40, NetCosts{}, "a.eth0"), nb(sb, 41, NetCosts{}, "b.eth0", 8),
          link(sim, 10'000'000'000, engine::PS_PER_US), m(x86_like(ddio), 2, 1'000'000'000) {
        link.attach(na, nb);
        nb.set_memory(m);
        nb.set_rx_handler([](kernel::Cpu&, void* ctx, const Packet&) -> engine::Task<> {
            ++static_cast<Bench*>(ctx)->received;
            co_return;
        }, this);
    }
    void run() {
        b.create_task("open", kernel::SchedPolicy::NORMAL, 0, true, nb.open());
        a.create_task("sender", kernel::SchedPolicy::NORMAL, 0, false, body());
        a.boot();
        b.boot();
        sim.run(engine::PS_PER_MS);
        a.finish();
        b.finish();
    }

private:
    engine::Task<> body() {
        co_await na.xmit(a, frame_); // by default a 1514-byte TCP segment
    }
};

TEST(NicDdio, WithWriteAllocateTheDriversFirstTouchOfADeviceWrittenFrameIsAnLlcHit) {
    Bench t(true);
    t.run();
    ASSERT_EQ(t.received, 1u);
    EXPECT_EQ(t.m.stats().dram_demand_lines, 0u);
    EXPECT_EQ(t.b.stats().busy_ticks, (40 - 4) * 1000u); // L3 - L1 cycles at 1 GHz
}

TEST(NicDdio, WithoutWriteAllocateTheSameTouchIsADramMissOnACoherentMachine) {
    Bench t(false);
    t.run();
    ASSERT_EQ(t.received, 1u);
    EXPECT_EQ(t.m.stats().dram_demand_lines, 1u);
    // The frame's 1518 bytes (with the FCS) went to DRAM as 24 lines, holding the channel for
    // 24 x 64 B / 64 GB/s = 24 ns; the driver, at no cost of its own, reads at that instant: its
    // miss waits those 24 ns, then 100 ns less the L1's 4 cycles, at 1 GHz.
    EXPECT_EQ(t.b.stats().busy_ticks, (24 + 100 - 4) * 1000u);
}

// A 60-byte UDP frame (pktgen's, 64 on the wire) through GRO: inet_gro_receive reads its headers,
// no further than the frame's end (before session 18 the read took a TCP header's 52 bytes from
// byte 14, i.e. up to byte 66, into line 1, which the device never wrote: a miss to DRAM). By
// hand: eth_type_trans's L3 hit on line 0 (40 - 4); GRO's read of bytes 14..60 finds line 0 in
// L1 (0): 36 cycles in all, no DRAM line.
TEST(NicDdio, GroReadsTheHeadersOfAShortFrameNoFurtherThanItsEnd) {
    Bench t(true, transport_packet(FrameKind::UDP_DATA, 18, UDP_IP_HEADERS, 0, 0));
    ASSERT_EQ(t.frame_.len, 60u);
    t.nb.set_gro(GroCosts{});
    t.run();
    ASSERT_EQ(t.received, 1u);
    EXPECT_EQ(t.m.stats().dram_demand_lines, 0u);
    EXPECT_EQ(t.b.stats().busy_ticks, (40 - 4) * 1000u);
}

} // namespace
} // namespace kdsim::net
