// The UDP stream's two ends (net/udp.*): iperf3 -u's pacing (datagram n due at
// n x length x 8 / bitrate) and the receive buffer (udp_queue_rcv_skb drops a datagram that
// would take the queued bytes over sk_rcvbuf), with zero kernel costs so that only the rules
// decide the counts.
#include "net/udp.h"

#include "net/net_test_support.h"
#include "kernel/sched.h"
#include "kernel/softirq.h"

#include <gtest/gtest.h>

namespace kdsim::net {
namespace {

struct Harness {
    engine::Simulation sim{1};
    kernel::Cpu cpu{sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    testing::Wire wire;
    Stack stack{wire};
    void run(engine::Tick until) {
        cpu.boot();
        sim.run(until);
        cpu.finish();
    }
};

engine::Task<> send(UdpSource& src, kernel::Cpu& cpu, engine::Tick stop) { co_await src.send_loop(cpu, stop); }

TEST(UdpSource, PacesOneDatagramPerLengthTimesEightOverTheBitrate) {
    // 1000-byte datagrams at 8 Mbit/s: one per 1 ms, due at 0, 1, ..., 9 ms before the 9.5 ms
    // stop: 10 frames of 1000 + 28 (IP, UDP) + 14 (Ethernet) bytes, each leaving at its due time.
    Harness h;
    UdpSource src(h.stack, UdpCosts{}, NetCosts{}, 0.0, 1000, 8'000'000, 0);
    h.cpu.create_task("iperf3", kernel::SchedPolicy::NORMAL, 0, false, send(src, h.cpu, 9'500 * engine::PS_PER_US));
    h.run(20 * engine::PS_PER_MS);
    EXPECT_EQ(src.datagrams(), 10u);
    ASSERT_EQ(h.wire.sent.size(), 10u);
    for (std::size_t i = 0; i < 10; ++i) {
        EXPECT_EQ(h.wire.sent[i].p.len, 1042u);
        EXPECT_EQ(h.wire.sent[i].p.seq, i);
        EXPECT_EQ(h.wire.sent[i].at, i * engine::PS_PER_MS);
    }
}

engine::Task<> arrive(UdpSink& sink, kernel::Cpu& cpu, int n) {
    co_await kernel::local_bh_disable(cpu); // as NET_RX would deliver them
    for (int i = 0; i < n; ++i) {
        Packet p;
        p.kind = FrameKind::UDP_DATA;
        p.payload = 1000;
        co_await sink.tcp_rcv(cpu, p);
    }
    co_await kernel::local_bh_enable(cpu);
}

engine::Task<> reader(UdpSink& sink, kernel::Cpu& cpu, kernel::TaskStruct*& self) {
    co_await sink.read_loop(cpu, *self);
}

TEST(UdpSink, DropsWhatWouldTakeTheQueueOverRcvbufAndTheReaderGetsTheRest) {
    // rcvbuf 2500: 1000 and 2000 bytes queued, the third (3000 > 2500) and later dropped while
    // nobody reads (the reader, SCHED_NORMAL, runs after the SCHED_FIFO arrivals).
    Harness h;
    UdpSink sink(h.stack, UdpCosts{}, NetCosts{}, 0.0, 2500, 0);
    kernel::TaskStruct* self = nullptr;
    h.cpu.create_task("net_rx", kernel::SchedPolicy::FIFO, 50, true, arrive(sink, h.cpu, 5));
    self = &h.cpu.create_task("reader", kernel::SchedPolicy::NORMAL, 0, false, reader(sink, h.cpu, self));
    h.run(engine::PS_PER_MS);
    EXPECT_EQ(sink.datagrams(), 2u);
    EXPECT_EQ(sink.rcvbuf_drops(), 3u);
    EXPECT_EQ(sink.bytes_read(), 2000u);
}

} // namespace
} // namespace kdsim::net
