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

// Datagrams first .. first + count - 1 arrive at once, as NET_RX would deliver them.
engine::Task<> deliver(UdpSink& sink, kernel::Cpu& cpu, std::uint64_t first, std::uint64_t count) {
    co_await kernel::local_bh_disable(cpu);
    for (std::uint64_t seq = first; seq < first + count; ++seq) {
        Packet p;
        p.kind = FrameKind::UDP_DATA;
        p.payload = 1000;
        p.seq = seq;
        co_await sink.tcp_rcv(cpu, p);
    }
    co_await kernel::local_bh_enable(cpu);
}

engine::Task<> two_bursts(UdpSink& sink, kernel::Cpu& cpu) {
    co_await deliver(sink, cpu, 0, 5);
    co_await kernel::hrtimer_sleep_until(cpu, engine::PS_PER_MS);
    co_await deliver(sink, cpu, 5, 2);
}

TEST(UdpSink, MissingDatagramsAreTheGapsInTheSequenceNumbersReadAsIperf3CountsThem) {
    // rcvbuf 2500: of the first burst 0..4, datagrams 0 and 1 are queued and 2, 3, 4 dropped; the
    // reader reads 0 and 1. Nothing is missing yet: a drop at the tail is not seen until a later
    // datagram is read. The second burst (5, 6, at 1 ms) is read whole: highest read 6, 4 read,
    // so 6 + 1 - 4 = 3 missing of 7.
    Harness h;
    UdpSink sink(h.stack, UdpCosts{}, NetCosts{}, 0.0, 2500, 0);
    kernel::TaskStruct* self = nullptr;
    h.cpu.create_task("net_rx", kernel::SchedPolicy::FIFO, 50, true, two_bursts(sink, h.cpu));
    self = &h.cpu.create_task("reader", kernel::SchedPolicy::NORMAL, 0, false, reader(sink, h.cpu, self));
    h.cpu.boot();
    h.sim.run(engine::PS_PER_MS / 2);
    EXPECT_EQ(sink.rcvbuf_drops(), 3u);
    EXPECT_EQ(sink.datagrams_missing(), 0u);
    h.sim.run(2 * engine::PS_PER_MS);
    h.cpu.finish();
    EXPECT_EQ(sink.bytes_read(), 4000u);
    EXPECT_EQ(sink.datagrams_missing(), 3u);
    EXPECT_EQ(sink.datagrams_expected(), 7u);
}

// Two CPUs of one sched_domain (zero costs) and the recording device; from 2.5 ms a SCHED_FIFO
// task spins on CPU 0 for good. The iperf3 -u sender of the first test (1000-byte datagrams at
// 8 Mbit/s: one per 1 ms, due at 0..9 ms before the 9.5 ms stop) starts on CPU 0.
struct TwoCpus {
    explicit TwoCpus(bool movable) {
        rd.span = {&c0, &c1};
        c0.set_root_domain(&rd, sim.rng("c0"));
        c1.set_root_domain(&rd, sim.rng("c1"));
        self = &c0.create_task("iperf3", kernel::SchedPolicy::NORMAL, 0, false, send_as(src, c0, self, 9'500 * engine::PS_PER_US));
        if (movable) {
            self->cpus_allowed = {&c0, &c1};
            self->recent_used_cpu = &c0;
        }
        c0.create_task("hog", kernel::SchedPolicy::FIFO, 50, true, hog(c0));
        c0.boot();
        c1.boot();
    }
    static engine::Task<> send_as(UdpSource& src, kernel::Cpu& cpu, kernel::TaskStruct*& self, engine::Tick stop) {
        co_await src.send_loop(cpu, stop, self);
    }
    static engine::Task<> hog(kernel::Cpu& cpu) {
        co_await kernel::hrtimer_sleep_until(cpu, 2'500 * engine::PS_PER_US);
        for (;;) co_await cpu.exec(1000, kernel::Cat::OTHER);
    }
    engine::Simulation sim{1};
    kernel::Cpu c0{sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    kernel::Cpu c1{sim, 1, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    kernel::RootDomain rd;
    testing::Wire wire;
    Stack stack{wire};
    UdpSource src{stack, UdpCosts{}, NetCosts{}, 0.0, 1000, 8'000'000, 0};
    kernel::TaskStruct* self = nullptr;
};

TEST(UdpMovable, APacedSenderWhoseCpuAFifoTaskTakesIsWokenOnTheIdleCpuAndSendsEveryDatagramOnTime) {
    // The sender sleeps in its pacing timer between datagrams. The timer of 3 ms fires on CPU 0,
    // which the hog holds: select_task_rq finds CPU 0 and the previous CPU (0) busy and places
    // the sender on idle CPU 1, once; its later timers are armed and fire there. With zero costs
    // every datagram still leaves at its due time, 0..9 ms.
    TwoCpus x(true);
    x.sim.run(20 * engine::PS_PER_MS);
    EXPECT_EQ(x.self->cpu, &x.c1);
    EXPECT_EQ(x.self->nr_migrations, 1u);
    ASSERT_EQ(x.wire.sent.size(), 10u);
    for (std::size_t i = 0; i < 10; ++i) {
        EXPECT_EQ(x.wire.sent[i].p.seq, i);
        EXPECT_EQ(x.wire.sent[i].at, i * engine::PS_PER_MS);
    }
}

TEST(UdpMovable, APinnedPacedSenderWhoseCpuAFifoTaskTakesNeverMovesAndSendsNothingMore) {
    // Without cpus_allowed the sender woken at 3 ms waits on CPU 0 behind the hog for good: the
    // datagrams of 0, 1 and 2 ms are all that leave.
    TwoCpus x(false);
    x.sim.run(20 * engine::PS_PER_MS);
    EXPECT_EQ(x.self->cpu, &x.c0);
    EXPECT_EQ(x.self->nr_migrations, 0u);
    EXPECT_EQ(x.wire.sent.size(), 3u);
}

} // namespace
} // namespace kdsim::net
