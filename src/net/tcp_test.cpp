// The TCP bulk stream's ends (net/tcp.*) with zero costs, so the counts follow from the rules:
// at most the advertised window in flight, the writer at most sndbuf (twice the window) ahead of
// what was acknowledged, data sent from ACK processing in softirq context, and the receiver's
// ACK for every second segment advertising the receive buffer left unread.
#include "net/tcp.h"

#include "net/net_test_support.h"
#include "kernel/sched.h"
#include "kernel/softirq.h"

#include <gtest/gtest.h>

namespace kdsim::net {
namespace {

constexpr std::uint64_t MSS = TCP_MSS;

struct Harness {
    engine::Simulation sim{1};
    kernel::Cpu cpu{sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    testing::Wire wire;
    Stack stack{wire};
    kernel::TaskStruct* writer = nullptr;
    void run() {
        cpu.boot();
        sim.run(10 * engine::PS_PER_MS);
        cpu.finish();
    }
};

engine::Task<> write(TcpSource& src, Harness& h) { co_await src.send_loop(h.cpu, *h.writer, 5 * engine::PS_PER_MS); }

// An ACK arriving at 1 ms, delivered as NET_RX would (bottom halves off).
engine::Task<> ack_at_1ms(TcpSource& src, kernel::Cpu& cpu, std::uint64_t ack, std::uint64_t window) {
    co_await kernel::hrtimer_sleep_until(cpu, engine::PS_PER_MS);
    co_await kernel::local_bh_disable(cpu);
    Packet p;
    p.kind = FrameKind::TCP_ACK;
    p.ack = ack;
    p.window = window;
    co_await src.tcp_rcv(cpu, p);
    co_await kernel::local_bh_enable(cpu);
}

TEST(TcpSource, SendsAWindowThenAnAckOpensRoomForTwoMoreSegmentsSentFromSoftirq) {
    // Window 4 segments: the writer sends 4 (seq 0 .. 3 x MSS, 1514-byte frames), copies until
    // sndbuf (8 segments) is full and sleeps. The ACK of 2 segments with window 4 lets 2 more
    // leave from ACK processing (bottom halves off) and wakes the writer, which copies 2 more
    // into the freed send buffer; the window is full again: 6 segments in all.
    Harness h;
    TcpSource src(h.stack, TcpCosts{}, 4 * MSS);
    h.writer = &h.cpu.create_task("iperf3", kernel::SchedPolicy::NORMAL, 0, false, write(src, h));
    h.cpu.create_task("net_rx", kernel::SchedPolicy::FIFO, 50, true, ack_at_1ms(src, h.cpu, 2 * MSS, 4 * MSS));
    h.run();
    EXPECT_EQ(src.segments_sent(), 6u);
    EXPECT_EQ(src.segments_sent_in_bh(), 2u);
    EXPECT_EQ(src.bytes_acked(), 2 * MSS);
    ASSERT_EQ(h.wire.sent.size(), 6u);
    for (std::size_t i = 0; i < 6; ++i) {
        EXPECT_EQ(h.wire.sent[i].p.seq, i * MSS);
        EXPECT_EQ(h.wire.sent[i].p.len, TCP_FRAME);
        EXPECT_EQ(h.wire.sent[i].at, i < 4 ? 0 : engine::PS_PER_MS);
    }
}

engine::Task<> segments(TcpSink& sink, kernel::Cpu& cpu, int n) {
    co_await kernel::local_bh_disable(cpu);
    for (int i = 0; i < n; ++i) {
        Packet p;
        p.kind = FrameKind::TCP_DATA;
        p.seq = static_cast<std::uint64_t>(i) * MSS;
        p.payload = TCP_MSS;
        co_await sink.tcp_rcv(cpu, p);
    }
    co_await kernel::local_bh_enable(cpu);
}

TEST(TcpSink, AcksEverySecondSegmentAdvertisingTheUnreadRoom) {
    // 5 segments, nobody reading: ACKs after the 2nd and the 4th, for 2 and 4 segments, with
    // windows of rcvbuf minus what is queued; the 5th waits for its pair.
    Harness h;
    TcpSink sink(h.stack, TcpCosts{}, 64 * 1024);
    h.cpu.create_task("net_rx", kernel::SchedPolicy::FIFO, 50, true, segments(sink, h.cpu, 5));
    h.run();
    EXPECT_EQ(sink.segments(), 5u);
    EXPECT_EQ(sink.acks_sent(), 2u);
    ASSERT_EQ(h.wire.sent.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(h.wire.sent[i].p.kind, FrameKind::TCP_ACK);
        EXPECT_EQ(h.wire.sent[i].p.len, TCP_ACK_FRAME);
        EXPECT_EQ(h.wire.sent[i].p.ack, 2 * (i + 1) * MSS);
        EXPECT_EQ(h.wire.sent[i].p.window, 64 * 1024 - 2 * (i + 1) * MSS);
    }
}

} // namespace
} // namespace kdsim::net
