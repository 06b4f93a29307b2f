// GSO and TSO (net/stack.cpp, net/nic.cpp, net/tcp.cpp) against counts worked out by hand: a GSO
// skb of P payload bytes with gso_size 1448 is ceil(P / 1448) frames, all of 1448 bytes but the
// last (P mod 1448); a device without TSO gets them from skb_gso_segment, one with TSO gets the
// skb; the TCP sender's skbs hold what cwnd, the window and its size goal allow.
#include "net/net_test_support.h"
#include "kernel/sched.h"
#include "kernel/softirq.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace kdsim::net {
namespace {

constexpr std::uint32_t MSS = TCP_MSS;

// A device that records what ndo_start_xmit gets, with or without TSO.
class Dev final : public NetDevice {
public:
    Dev(TsoKind tso, Cycles gso_segment) : NetDevice("dev"), tso_(tso) {
        costs_.dev_queue_xmit = 100;
        costs_.gso_segment = gso_segment;
        set_gso(true);
    }
    engine::Task<> xmit(kernel::Cpu& cpu, const Packet& p) override {
        sent.push_back(p);
        at.push_back(cpu.now());
        co_return;
    }
    const NetCosts& costs() const override { return costs_; }
    TsoKind tso() const override { return tso_; }
    std::vector<Packet> sent;
    std::vector<engine::Tick> at;

private:
    NetCosts costs_{};
    TsoKind tso_;
};

struct One {
    engine::Simulation sim{1};
    kernel::Cpu cpu{sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    void run(engine::Task<> body) {
        cpu.create_task("t", kernel::SchedPolicy::NORMAL, 0, false, std::move(body));
        cpu.boot();
        sim.run(10 * engine::PS_PER_MS);
        cpu.finish();
    }
};

// A GSO skb of 64 KiB of payload: 65,536 = 45 x 1448 + 376, so 46 segments.
Packet gso_64k() {
    Packet p = transport_packet(FrameKind::TCP_DATA, 65536, TCP_IP_HEADERS, 0, 0);
    p.gso_size = MSS;
    p.gso_segs = 46;
    return p;
}

engine::Task<> send(Stack& s, kernel::Cpu& cpu, Packet p) { co_await s.dev_queue_xmit(cpu, p); }

// What a device with `tso` gets from dev_queue_xmit of the 64 KiB GSO skb (gso_segment 7 cycles).
std::unique_ptr<Dev> xmit_64k(TsoKind tso) {
    One h;
    auto dev = std::make_unique<Dev>(tso, 7);
    Stack stack(*dev);
    h.run(send(stack, h.cpu, gso_64k()));
    return dev;
}

TEST(Gso, A64KiBSendWithoutTsoIs45WireFramesOf1448BytesAndOneOf376) {
    // skb_gso_segment makes 46 segments (46 x 7 cycles) after dev_queue_xmit's 100: the driver
    // gets them all at 100 + 322 = 422 ns. Frames: 1448 + 66 = 1514 bytes; 376 + 66 = 442.
    const auto d = xmit_64k(TsoKind::NONE);
    const Dev& dev = *d;
    ASSERT_EQ(dev.sent.size(), 46u);
    std::uint64_t bytes = 0;
    for (std::size_t i = 0; i < 45; ++i) {
        EXPECT_EQ(dev.sent[i].seq, i * MSS);
        EXPECT_EQ(dev.sent[i].payload, MSS);
        EXPECT_EQ(dev.sent[i].len, 1514u);
        EXPECT_EQ(dev.sent[i].gso_segs, 1u);
        bytes += dev.sent[i].payload;
    }
    EXPECT_EQ(dev.sent[45].seq, 65160u);
    EXPECT_EQ(dev.sent[45].payload, 376u);
    EXPECT_EQ(dev.sent[45].len, 442u);
    EXPECT_EQ(bytes + dev.sent[45].payload, 65536u);
    EXPECT_EQ(dev.at[0], 422 * engine::PS_PER_NS);
}

TEST(Gso, ADeviceWithTsoGetsTheWholeSkbUnsegmented) {
    const auto d = xmit_64k(TsoKind::HARDWARE);
    const Dev& dev = *d;
    ASSERT_EQ(dev.sent.size(), 1u);
    EXPECT_EQ(dev.sent[0].payload, 65536u);
    EXPECT_EQ(dev.sent[0].gso_segs, 46u);
    EXPECT_EQ(dev.at[0], 100 * engine::PS_PER_NS); // no segmentation cost
}

engine::Task<> write(TcpSource& src, kernel::Cpu& cpu, kernel::TaskStruct** self) {
    co_await src.send_loop(cpu, **self, engine::PS_PER_MS); // fills the send buffer, then sleeps
}

TEST(Gso, TheFirstFlightIsOneSkbOfTenSegmentsAndWithGsoOffTenSkbs) {
    // Window 64 segments, sndbuf 128: cwnd 10 lets 10 segments out (no ACK comes back). With
    // GSO the size goal is min(45 (64 KiB less MAX_TCP_HEADER), half the window = 32) = 32
    // segments: the writer has copied 32 when it first pushes, and cwnd cuts the skb to 10.
    // Without GSO: 10 skbs of one segment.
    for (bool gso : {true, false}) {
        One h;
        Dev dev(TsoKind::HARDWARE, 7);
        dev.set_gso(gso);
        Stack stack(dev);
        TcpSource src(stack, TcpCosts{}, 64 * MSS);
        kernel::TaskStruct* w = nullptr;
        w = &h.cpu.create_task("iperf3", kernel::SchedPolicy::NORMAL, 0, false, write(src, h.cpu, &w));
        h.cpu.boot();
        h.sim.run(engine::PS_PER_MS);
        h.cpu.finish();
        EXPECT_EQ(src.segments_sent(), 10u);
        ASSERT_EQ(dev.sent.size(), gso ? 1u : 10u) << "gso " << gso;
        EXPECT_EQ(dev.sent[0].payload, gso ? 10 * MSS : MSS);
        EXPECT_EQ(dev.sent[0].gso_segs, gso ? 10u : 1u);
        EXPECT_EQ(src.stats().skbs, gso ? 1u : 10u);
    }
}

using testing::Pair;
using testing::reader;

engine::Task<> write_once(TcpSource& src, kernel::Cpu& cpu, kernel::TaskStruct** self) {
    co_await src.send_loop(cpu, **self, 1); // fill the send buffer at t = 0, then stop
}

TEST(Gso, TsoFramesMergedByGroDeliverEveryByteOnceInFewerSkbsThanSegments) {
    // 40 segments (window 20, sndbuf 40) through hardware TSO and the receiver's GRO, whose NIC
    // moderates its interrupt to one per 100 us (~8 frames of 12.3 us): the wire carries exactly
    // 40 data frames (nothing is lost), the reader gets 40 x 1448 bytes in order, and both ends
    // handled fewer skbs than segments.
    Pair p;
    p.na.set_gso(true);
    p.na.set_tso(TsoKind::HARDWARE);
    p.nb.set_gro(GroCosts{});
    p.nb.set_rx_usecs(100 * engine::PS_PER_US);
    TcpSource src(p.stack_a, TcpCosts{}, 20 * MSS);
    TcpSink sink(p.stack_b, TcpCosts{}, 20 * MSS);
    kernel::TaskStruct *w = nullptr, *r = nullptr;
    w = &p.a.create_task("iperf3-c", kernel::SchedPolicy::NORMAL, 0, false, write_once(src, p.a, &w));
    r = &p.b.create_task("iperf3-s", kernel::SchedPolicy::NORMAL, 0, false, reader(sink, p.b, &r));
    p.run(50 * engine::PS_PER_MS);
    EXPECT_EQ(sink.bytes_read(), 40u * MSS);
    EXPECT_EQ(src.bytes_acked(), 40u * MSS);
    EXPECT_EQ(src.segments_sent(), 40u);
    EXPECT_EQ(p.na.stats().tx_frames, 40u);
    EXPECT_EQ(sink.segments(), 40u);
    EXPECT_LT(src.stats().skbs, 40u);
    ASSERT_NE(p.nb.gro(), nullptr);
    EXPECT_EQ(p.nb.gro()->stats().segs_up, 40u);
    EXPECT_LT(p.nb.gro()->stats().skbs_up, 40u);
    EXPECT_TRUE(p.findings.kept().empty());
}

} // namespace
} // namespace kdsim::net
