// A FEC behind a SoC port slower than its line (devices/dma_port.h, nic_pcie.cpp's FIFO, nic.cpp's
// store-and-forward transmit), and the rx FIFO's frames that wait for a free descriptor. Expected times by hand: a port of 5.875e7 bytes/s (470 Mbit/s)
// carries a received 1514-byte frame with its FCS (1518 bytes) in ceil(1518e12 / 5.875e7) =
// 25,838,298 ps and a transmitted one (1514 bytes) in ceil(1514e12 / 5.875e7) = 25,770,213 ps; the
// 1 Gbit/s wire takes (1514 + 24) x 8 bits = 12,304,000 ps per frame. All CPU costs are zero.
#include "net/nic.h"

#include "engine/simulation.h"
#include "net/link.h"
#include "net/napi.h"
#include "net/net_test_support.h"

#include <gtest/gtest.h>

namespace kdsim::net {
namespace {

constexpr std::uint64_t PORT = 58'750'000;       // bytes/s
constexpr engine::Tick RX_WRITE = 25'838'298;    // 1518 bytes through the port
constexpr engine::Tick TX_FETCH = 25'770'213;    // 1514 bytes through the port
constexpr engine::Tick WIRE = 12'304'000;        // a 1514-byte frame at 1 Gbit/s

Packet full_frame() { return transport_packet(FrameKind::UDP_DATA, 1472, 28, 0, 0); } // 1514 bytes

// NicBench's a.eth0 receiving `frames` frames, one every `gap` (the wire's pace when gap = WIRE),
// behind the port or the PCIe link below as each test puts it; the link is there for its queue,
// the most its partner b.eth0 holds when paused. The PCIe link (an igb port, cm4-multi-nic-clock):
// one lane at 5e8 transfers/s, 8b/8b coding, no TLP, descriptor or DLLP bytes, so 62.5e6 bytes/s
// and a 1514-byte frame's write is exactly 24.224 us.
struct RxBench : testing::NicBench, engine::EventTarget {
    devices::DmaPort port{PORT};
    devices::PcieLink pcie{devices::PcieCosts{.transfer_rate = 5e8, .lanes = 1, .encoded_bits = 8, .data_bits = 8,
                                              .max_payload = 4096, .tlp_overhead = 0, .dllp_bytes = 0,
                                              .rx_descriptor_bytes = 0, .rx_dllps_per_frame = 0}};
    RxBench(std::size_t frames, engine::Tick gap, std::size_t ring = 256) : NicBench({.ring = ring}, {}, 0) {
        for (std::size_t k = 0; k < frames; ++k) sim.schedule_at(k * gap, this, 0);
    }
    void on_event(std::uint64_t) override { na.receive_from_wire(full_frame()); }
};

constexpr engine::Tick PCIE_WRITE = 24'224'000;

TEST(NicDmaPort, AFrameWaitsInTheFifoForThePortAndOverrunsItWhenTheWireIsFaster) {
    // Ten frames at the wire's pace into a 4096-byte FIFO (two 1514-byte frames at most). Frame k
    // arrives at k x 12.304 us; the port finishes its j-th accepted frame at j x 25.838 us. Frames
    // 0, 1 are taken; 2 (24.608 us) finds 0 and 1 still there: dropped; 3 (36.912) finds 0 gone;
    // 4 (49.216) is before 1 leaves (51.677): dropped; and so on every other frame: 6 taken
    // (0, 1, 3, 5, 7, 9), 4 overruns.
    RxBench b(10, WIRE);
    b.na.set_dma_port(b.port, 4096);
    b.run(engine::PS_PER_MS);
    EXPECT_EQ(b.na.rx_fifo_dropped(), 4u);
    EXPECT_EQ(b.na.stats().rx_dropped, 4u);
    EXPECT_EQ(b.port.bytes(), 6u * 1518);
    EXPECT_EQ(b.port.busy(), 6 * RX_WRITE);
    EXPECT_EQ(b.na.stats().rx_frames, 6u);
}

TEST(NicDmaPort, FramesSlowerThanThePortAreAllTaken) {
    RxBench b(10, 30 * engine::PS_PER_US); // one every 30 us > 25.838 us
    b.na.set_dma_port(b.port, 4096);
    b.run(engine::PS_PER_MS);
    EXPECT_EQ(b.na.rx_fifo_dropped(), 0u);
    EXPECT_EQ(b.na.stats().rx_frames, 10u);
}

TEST(NicDmaPort, WithPauseNoFrameIsOverrunAndThePortNeverIdlesWhileFramesWait) {
    // The same ten frames as above: frame k (k >= 2) comes in when frame k - 2's write is done, at
    // (k - 1) x 25.838 us, later than its arrival at k x 12.304 us, so 8 frames are held; at 110.736
    // us (frame 9's arrival) frames 2..5 are in, 6..9 held: 4 at most. The port writes all ten
    // back to back: busy 10 x 25.838 us.
    RxBench b(10, WIRE);
    b.na.set_dma_port(b.port, 4096);
    b.na.set_rx_pause(true);
    b.run(engine::PS_PER_MS);
    EXPECT_EQ(b.na.rx_fifo_dropped(), 0u);
    EXPECT_EQ(b.na.rx_pause_held(), 8u);
    EXPECT_EQ(b.na.rx_pause_held_max(), 4u);
    EXPECT_EQ(b.na.stats().rx_frames, 10u);
    EXPECT_EQ(b.port.busy(), 10 * RX_WRITE);
}

TEST(NicDmaPort, BehindPcieAFullFifoOverrunsWithoutPause) {
    // Frame k arrives at k x 12.304 us; the link writes one in 24.224 us; the FIFO holds two.
    // Frames 0, 1 taken (done 24.224, 48.448); 2 (24.608) finds 0 gone: taken (done 72.672); 3
    // (36.912) finds 1 and 2: dropped; 4 (49.216): 1 gone, taken (96.896); 5 (61.520): dropped; 6
    // (73.824): taken (121.120); 7 (86.128): dropped; 8 (98.432): taken; 9 (110.736): dropped.
    // 6 taken, 4 overruns.
    RxBench b(10, WIRE);
    b.na.set_pcie(b.pcie, 4096);
    b.run(engine::PS_PER_MS);
    EXPECT_EQ(b.na.rx_fifo_dropped(), 4u);
    EXPECT_EQ(b.na.stats().rx_frames, 6u);
    EXPECT_EQ(b.pcie.busy(), 6 * PCIE_WRITE);
}

TEST(NicDmaPort, BehindPcieWithPauseEveryFrameComesInAndTheLinkWritesThemBackToBack) {
    // Frame k >= 2 comes in at the later of its arrival and frame k - 2's write: frame 2 (24.608)
    // after frame 0's (24.224): at once; frames 3..9 wait (e.g. 3 arrives at 36.912, frame 1's
    // write ends at 48.448): 7 held; at 110.736 us frames 6..9 wait: 4 at most. All ten written
    // back to back from 0: busy 10 x 24.224 us.
    RxBench b(10, WIRE);
    b.na.set_pcie(b.pcie, 4096);
    b.na.set_rx_pause(true);
    b.run(engine::PS_PER_MS);
    EXPECT_EQ(b.na.rx_fifo_dropped(), 0u);
    EXPECT_EQ(b.na.rx_pause_held(), 7u);
    EXPECT_EQ(b.na.rx_pause_held_max(), 4u);
    EXPECT_EQ(b.na.stats().rx_frames, 10u);
    EXPECT_EQ(b.pcie.busy(), 10 * PCIE_WRITE);
}

// A frame that finds no free rx descriptor waits in the FIFO (the FEC's uDMA stops at a descriptor
// it does not own; igb without DROP_EN). Eight frames at the wire's pace into a ring of 2 with a
// 1 ms interrupt moderation and a 4096-byte FIFO (two frames), the SoC's MAC keeping up with its
// line (no port: a frame with a descriptor is written at once). Frame 0 (t = 0) raises the first
// interrupt and is taken at once (no CPU cost); the next interrupt may come at 1 ms. Frames 1, 2
// fill the ring; 3, 4 wait in the FIFO for a descriptor; 5, 6, 7 find it full.
TEST(NicRxFifo, AFrameWithoutAFreeDescriptorWaitsInTheFifoAndTheDriversRefillsLetItIn) {
    // Without pause 5, 6, 7 overrun. At 1 ms the poll takes 1 and 2, and each descriptor it hands
    // back lets 3, then 4 in, which the same poll takes: 5 frames in all.
    RxBench b(8, WIRE, 2);
    b.na.set_rx_usecs(engine::PS_PER_MS);
    b.na.set_rx_fifo(4096);
    b.run(3 * engine::PS_PER_MS);
    EXPECT_EQ(b.na.stats().rx_frames, 5u);
    EXPECT_EQ(b.na.rx_no_desc_held(), 2u);
    EXPECT_EQ(b.na.rx_no_desc_held_max(), 2u);
    EXPECT_EQ(b.na.rx_fifo_dropped(), 3u);
    EXPECT_EQ(b.na.stats().rx_dropped, 3u);
}

TEST(NicRxFifo, WithoutAFifoAFrameWithoutAFreeDescriptorIsDropped) {
    // The same frames into the same ring: 3..7 find no descriptor.
    RxBench b(8, WIRE, 2);
    b.na.set_rx_usecs(engine::PS_PER_MS);
    b.run(3 * engine::PS_PER_MS);
    EXPECT_EQ(b.na.stats().rx_frames, 3u);
    EXPECT_EQ(b.na.stats().rx_dropped, 5u);
}

TEST(NicRxFifo, WithPauseTheHeldFramesComeInAtTheWiresPaceOnceTheFifoHasRoom) {
    // 5, 6, 7 are held at the partner. At 1 ms the poll takes 1 (3 written, 5 comes into the FIFO
    // at once: the partner has sent nothing for a wire time), 2 (4 written; 6 may come in one
    // wire time after 5, at 1 ms + 12.304 us), 3, 4, 5: the ring is empty and the poll ends
    // before 6 comes in. 6 (1 ms + 12.304 us) and 7 (1 ms + 24.608 us) are written into free
    // descriptors and wait for the next interrupt, at 2 ms.
    for (const engine::Tick until : {2 * engine::PS_PER_MS - 1, 2 * engine::PS_PER_MS + 1}) {
        RxBench b(8, WIRE, 2);
        b.na.set_rx_usecs(engine::PS_PER_MS);
        b.na.set_rx_fifo(4096);
        b.na.set_rx_pause(true);
        b.run(until);
        EXPECT_EQ(b.na.stats().rx_frames, until < 2 * engine::PS_PER_MS ? 6u : 8u);
        EXPECT_EQ(b.na.rx_pause_held(), 3u);
        EXPECT_EQ(b.na.rx_pause_held_max(), 3u);
        EXPECT_EQ(b.na.rx_no_desc_held(), 3u); // 3, 4 and 5
        EXPECT_EQ(b.na.rx_fifo_dropped(), 0u);
        EXPECT_EQ(b.na.stats().rx_dropped, 0u);
    }
}

TEST(NicRxFifo, BehindPcieWithoutPauseAFrameWithoutAFreeDescriptorIsDroppedAsIgbsDropEnDoes) {
    // igb_configure_srrctl sets SRRCTL.DROP_EN with several queues and rx flow control off. Frame
    // 0's write ends at 24.224 us and the poll takes it; 1 and 2 take the two descriptors for
    // their writes (done 48.448, 72.672 us); 3..7 find none: dropped, though the FIFO has room.
    RxBench b(8, WIRE, 2);
    b.na.set_rx_usecs(engine::PS_PER_MS);
    b.na.set_pcie(b.pcie, 1 << 20);
    b.run(3 * engine::PS_PER_MS);
    EXPECT_EQ(b.na.stats().rx_frames, 3u);
    EXPECT_EQ(b.na.stats().rx_dropped, 5u);
    EXPECT_EQ(b.na.rx_fifo_dropped(), 0u);
    EXPECT_EQ(b.na.rx_no_desc_held(), 0u);
}

// A FEC (a.eth0) sending to b.eth0 over NicBench's 1 Gbit/s link, with or without the port; its
// DMA free and coherent.
NetCosts fec_costs() {
    NetCosts c;
    c.tx_clean = c.tx_skb_free = c.fec_xmit = c.fec_irq = c.mmio_posted_write = c.mmio_read = 0;
    return c;
}

devices::DmaCosts coherent_free() {
    devices::DmaCosts c;
    c.coherent = true;
    return c;
}

struct TxBench : testing::NicBench {
    devices::DmaPlatform dma{coherent_free()};
    devices::DmaPort port{PORT};
    explicit TxBench(bool behind_port) : NicBench({.costs = fec_costs()}, {}, 0) {
        TxDmaConfig c;
        c.driver = NicDriver::FEC;
        na.set_tx_dma(dma, c, 32, 0);
        if (behind_port) na.set_dma_port(port, 4096);
    }
    // Two frames handed to ndo_start_xmit at time 0; returns when the second has left the wire.
    engine::Tick send_two() {
        a.create_task("sender", kernel::SchedPolicy::NORMAL, 0, false, body());
        run(engine::PS_PER_MS);
        return link.departs(na);
    }

private:
    engine::Task<> body() {
        co_await na.xmit(a, full_frame());
        co_await na.xmit(a, full_frame());
    }
};

TEST(NicDmaPort, WithoutThePortTwoFramesLeaveBackToBackAtTheWiresPace) {
    TxBench t(false);
    EXPECT_EQ(t.send_two(), 2 * WIRE);
}

TEST(NicDmaPort, BehindThePortAFrameGoesOnTheWireOnlyOnceFetchedWhole) {
    // Frame 1 fetched at 25.770 us, on the wire to 38.074; frame 2 fetched at 51.540 us (the port
    // serves the fetches one after the other), on the wire to 63.844 us.
    TxBench t(true);
    EXPECT_EQ(t.send_two(), 2 * TX_FETCH + WIRE);
    EXPECT_EQ(t.port.bytes(), 2u * 1514);
    EXPECT_EQ(t.nb.stats().rx_frames, 2u);
}

} // namespace
} // namespace kdsim::net
