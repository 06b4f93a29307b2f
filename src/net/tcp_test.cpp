// The TCP bulk stream's ends (net/tcp.*) with zero costs, so the counts follow from the rules.
// Single-socket tests drive one end by hand; the loss tests join two machines by real NICs on a
// 1 Gbit/s link (a 1514-byte frame takes (1514 + 24) * 8 / 1e9 s = 12.304 us on the wire) and
// drop frames on the wire, at the rx ring, in the link's queue or at the receiving socket.
#include "net/tcp.h"

#include "net/link.h"
#include "net/napi.h"
#include "net/net_test_support.h"
#include "net/nic.h"
#include "kernel/sched.h"
#include "kernel/softirq.h"

#include <gtest/gtest.h>

#include <functional>
#include <tuple>

namespace kdsim::net {
namespace {

constexpr std::uint64_t MSS = TCP_MSS;

struct Harness {
    engine::Simulation sim{1};
    kernel::Cpu cpu{sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    testing::Wire wire;
    Stack stack{wire};
    kernel::TaskStruct* writer = nullptr;
    void run(engine::Tick until = 10 * engine::PS_PER_MS) {
        cpu.boot();
        sim.run(until);
        cpu.finish();
    }
};

// The ACK of bytes below `ack`, advertising `window` bytes.
Packet ack_packet(std::uint64_t ack, std::uint64_t window) {
    Packet p;
    p.kind = FrameKind::TCP_ACK;
    p.ack = ack;
    p.window = window;
    return p;
}

// The n-th full segment of the stream.
Packet data_segment(std::uint64_t n) {
    Packet p;
    p.kind = FrameKind::TCP_DATA;
    p.seq = n * MSS;
    p.payload = TCP_MSS;
    return p;
}

engine::Task<> write(TcpSource& src, Harness& h) { co_await src.send_loop(h.cpu, *h.writer, 5 * engine::PS_PER_MS); }

// An ACK arriving at 1 ms, delivered as NET_RX would (bottom halves off).
engine::Task<> ack_at_1ms(TcpSource& src, kernel::Cpu& cpu, std::uint64_t ack, std::uint64_t window) {
    co_await kernel::hrtimer_sleep_until(cpu, engine::PS_PER_MS);
    co_await kernel::local_bh_disable(cpu);
    co_await src.tcp_rcv(cpu, ack_packet(ack, window));
    co_await kernel::local_bh_enable(cpu);
}

TEST(TcpSource, SendsAWindowThenAnAckOpensRoomForTwoMoreSegmentsSentFromSoftirq) {
    // Window 4 segments (below the initial cwnd of 10): the writer sends 4 (seq 0 .. 3 x MSS,
    // 1514-byte frames), copies until sndbuf (8 segments) is full and sleeps. The ACK of 2
    // segments with window 4 lets 2 more leave from ACK processing (bottom halves off) and wakes
    // the writer, which copies 2 more into the freed send buffer; the window is full again: 6
    // segments in all.
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

TEST(TcpSource, TheInitialCwndOfTenLimitsTheFirstFlight) {
    // A 64-segment window, but cwnd starts at TCP_INIT_CWND = 10: 10 segments leave at t = 0.
    Harness h;
    TcpSource src(h.stack, TcpCosts{}, 64 * MSS);
    h.writer = &h.cpu.create_task("iperf3", kernel::SchedPolicy::NORMAL, 0, false, write(src, h));
    h.run();
    EXPECT_EQ(src.segments_sent(), 10u);
    EXPECT_EQ(src.cwnd(), 10u);
}

engine::Task<> segments(TcpSink& sink, kernel::Cpu& cpu, std::vector<std::uint64_t> seqs) {
    co_await kernel::local_bh_disable(cpu);
    for (std::uint64_t s : seqs) co_await sink.tcp_rcv(cpu, data_segment(s));
    co_await kernel::local_bh_enable(cpu);
}

TEST(TcpSink, QuickAcksTheFirstSegmentsThenAcksEverySecondAndTheDelayedAckTimerTheOddOne) {
    // rcvbuf 8 segments: the quick-ack quota is min(8 MSS / (2 MSS), 16) = 4, so segments 1..4
    // are ACKed one by one; then 5+6 share an ACK; the 7th waits for the delayed-ACK timer,
    // TCP_ATO_MIN = 40 ms after it arrived (on a jiffy boundary: HZ 250, 4 ms). Windows are
    // rcvbuf minus what is queued (nobody reads).
    Harness h;
    TcpSink sink(h.stack, TcpCosts{}, 8 * MSS);
    h.cpu.create_task("net_rx", kernel::SchedPolicy::FIFO, 50, true, segments(sink, h.cpu, {0, 1, 2, 3, 4, 5, 6}));
    h.run(100 * engine::PS_PER_MS);
    EXPECT_EQ(sink.segments(), 7u);
    ASSERT_EQ(h.wire.sent.size(), 6u);
    const std::uint64_t acked[] = {1, 2, 3, 4, 6, 7};
    for (std::size_t i = 0; i < 6; ++i) {
        EXPECT_EQ(h.wire.sent[i].p.kind, FrameKind::TCP_ACK);
        EXPECT_EQ(h.wire.sent[i].p.ack, acked[i] * MSS);
        EXPECT_EQ(h.wire.sent[i].p.window, 8 * MSS - acked[i] * MSS);
        EXPECT_EQ(h.wire.sent[i].at, i < 5 ? 0 : 40 * engine::PS_PER_MS);
    }
    EXPECT_EQ(sink.stats().delayed_acks, 1u);
}

TEST(TcpSink, OutOfOrderSegmentsAreAckedAtOnceWithSackBlocksMostRecentFirst) {
    // Segments 0, 2, 4, then 3, then 1 (quick-ack quota 16 after the first). ACKs:
    //  0 -> ack 1;  2 -> ack 1, SACK [2,3);  4 -> ack 1, SACK [4,5) [2,3);
    //  3 -> ack 1, SACK [2,5) (3 joins both blocks);  1 fills the hole -> ack 5, no SACK.
    Harness h;
    TcpSink sink(h.stack, TcpCosts{}, 64 * MSS);
    h.cpu.create_task("net_rx", kernel::SchedPolicy::FIFO, 50, true, segments(sink, h.cpu, {0, 2, 4, 3, 1}));
    h.run();
    ASSERT_EQ(h.wire.sent.size(), 5u);
    auto ack = [&](std::size_t i) { return h.wire.sent[i].p; };
    EXPECT_EQ(ack(0).ack, 1 * MSS);
    EXPECT_EQ(ack(0).sacks, 0);
    EXPECT_EQ(ack(1).ack, 1 * MSS);
    ASSERT_EQ(ack(1).sacks, 1);
    EXPECT_EQ(ack(1).sack[0].start, 1 * MSS); // offsets from the ACK: [2, 3) - 1
    EXPECT_EQ(ack(1).sack[0].end, 2 * MSS);
    ASSERT_EQ(ack(2).sacks, 2);
    EXPECT_EQ(ack(2).sack[0].start, 3 * MSS);
    EXPECT_EQ(ack(2).sack[1].start, 1 * MSS);
    ASSERT_EQ(ack(3).sacks, 1);
    EXPECT_EQ(ack(3).sack[0].start, 1 * MSS);
    EXPECT_EQ(ack(3).sack[0].end, 4 * MSS);
    EXPECT_EQ(ack(4).ack, 5 * MSS);
    EXPECT_EQ(ack(4).sacks, 0);
    EXPECT_EQ(sink.stats().ofo_segments, 3u);
    EXPECT_EQ(sink.rcv_nxt(), 5 * MSS);
}

// Segment n arriving at `at` on `cpu`, delivered as NET_RX would (bottom halves off).
engine::Task<> segment_at(TcpSink& sink, kernel::Cpu& cpu, engine::Tick at, std::uint64_t n) {
    if (at) co_await kernel::hrtimer_sleep_until(cpu, at);
    co_await kernel::local_bh_disable(cpu);
    co_await sink.tcp_rcv(cpu, data_segment(n));
    co_await kernel::local_bh_enable(cpu);
}

TEST(TcpSink, AnAckBuiltWhileTheSinksAckSkbIsInFlightGoesInASkbOfItsOwn) {
    // Two 1 GHz CPUs receive for one sink; sending an ACK costs 1,000 cycles (1 us), the rest
    // nothing. Segment 0 on CPU 0 at 0: its ACK (ack 1 MSS, window 64 - 1 MSS) is built at 0
    // in the sink's ACK skb and leaves at 1 us. Segment 1 on CPU 1 at 0.5 us (a quick ACK
    // too: quota min(64 / 2, 16) = 16): its ACK (ack 2 MSS, window 64 - 2 MSS) is built while
    // the first is in flight, so in a skb of its own, and leaves at 1.5 us. Had it been built
    // in the same skb, the first ACK would leave with its fields.
    engine::Simulation sim{1};
    kernel::Cpu cpu0{sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    kernel::Cpu cpu1{sim, 1, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    testing::Wire wire;
    Stack stack{wire};
    TcpCosts costs{};
    costs.tcp_ack_send = 1'000;
    TcpSink sink(stack, costs, 64 * MSS);
    cpu0.create_task("net_rx0", kernel::SchedPolicy::FIFO, 50, true, segment_at(sink, cpu0, 0, 0));
    cpu1.create_task("net_rx1", kernel::SchedPolicy::FIFO, 50, true, segment_at(sink, cpu1, 500 * engine::PS_PER_NS, 1));
    cpu0.boot();
    cpu1.boot();
    sim.run(10 * engine::PS_PER_US);
    cpu0.finish();
    cpu1.finish();
    ASSERT_EQ(wire.sent.size(), 2u);
    EXPECT_EQ(wire.sent[0].at, 1 * engine::PS_PER_US);
    EXPECT_EQ(wire.sent[0].p.ack, 1 * MSS);
    EXPECT_EQ(wire.sent[0].p.window, 63 * MSS);
    EXPECT_EQ(wire.sent[1].at, 1'500 * engine::PS_PER_NS);
    EXPECT_EQ(wire.sent[1].p.ack, 2 * MSS);
    EXPECT_EQ(wire.sent[1].p.window, 62 * MSS);
    EXPECT_EQ(sink.acks_sent(), 2u);
}

TEST(TcpSink, AnAckAfterOneWithSackBlocksCarriesNoneOfThem) {
    // Segments 0, 2, 3, then 1 (one skb at a time, each ACKed at once): the third ACK carries
    // SACK [2, 4) (len 66 + 2 + 8 = 76), the fourth fills the hole (ack 4 MSS): no block, len 66,
    // and its unused block slots are zero, as in a new skb.
    Harness h;
    TcpSink sink(h.stack, TcpCosts{}, 64 * MSS);
    h.cpu.create_task("net_rx", kernel::SchedPolicy::FIFO, 50, true, segments(sink, h.cpu, {0, 2, 3, 1}));
    h.run();
    ASSERT_EQ(h.wire.sent.size(), 4u);
    const Packet& third = h.wire.sent[2].p;
    ASSERT_EQ(third.sacks, 1);
    EXPECT_EQ(third.len, 76u);
    EXPECT_EQ(third.sack[0].start, 1 * MSS);
    EXPECT_EQ(third.sack[0].end, 3 * MSS);
    const Packet& fourth = h.wire.sent[3].p;
    EXPECT_EQ(fourth.ack, 4 * MSS);
    EXPECT_EQ(fourth.sacks, 0);
    EXPECT_EQ(fourth.len, 66u);
    for (const SackBlock& b : fourth.sack) {
        EXPECT_EQ(b.start, 0u);
        EXPECT_EQ(b.end, 0u);
    }
}

using testing::Pair;
using testing::reader;
using testing::writer;

struct Stream {
    TcpSource src;
    TcpSink sink;
    kernel::TaskStruct* w = nullptr;
    kernel::TaskStruct* r = nullptr;
    Stream(Pair& p, std::uint64_t window, std::uint64_t rcvbuf, CongestionAlgorithm cc, engine::Tick stop,
           TcpCosts rx_costs = TcpCosts{})
        : src(p.stack_a, TcpCosts{}, window, TCP_MSS, 0, 0, cc), sink(p.stack_b, rx_costs, rcvbuf, 0) {
        w = &p.a.create_task("iperf3-c", kernel::SchedPolicy::NORMAL, 0, false, writer(src, p.a, &w, stop));
        r = &p.b.create_task("iperf3-s", kernel::SchedPolicy::NORMAL, 0, false, reader(sink, p.b, &r));
    }
};

// The writer stops at 1 ps: at t = 0 it fills sndbuf (twice the window) and never writes
// again, so exactly 2 x window bytes are to be delivered.
constexpr engine::Tick STOP_AT_ONCE = 1;

void expect_single_drop_recovered(CongestionAlgorithm cc, std::uint32_t expected_ssthresh) {
    // 40 segments (window 20, sndbuf 40). Segment 5's first transmission is lost on the wire.
    // cwnd starts at 10; the receiver quick-acks each of segments 0..4 (quota 16), each ACK
    // grows cwnd by one in slow start: cwnd 15. Segments 6, 7, 8 arrive out of order: three
    // duplicate ACKs SACKing them; at the third, 3 segments are SACKed above segment 5 (RFC
    // 6675 IsLost), so recovery starts with ssthresh from cwnd 15 and segment 5 is
    // retransmitted once; no timeout.
    Pair p;
    bool dropped = false;
    p.lose = [&](const Packet& f) {
        if (f.kind == FrameKind::TCP_DATA && f.seq == 5 * MSS && !dropped) return dropped = true;
        return false;
    };
    Stream s(p, 20 * MSS, 64 * MSS, cc, STOP_AT_ONCE);
    p.run(engine::PS_PER_S);
    EXPECT_TRUE(dropped);
    EXPECT_EQ(s.src.stats().recoveries, 1u);
    EXPECT_EQ(s.src.stats().retransmits, 1u);
    EXPECT_EQ(s.src.stats().fast_retransmits, 1u);
    EXPECT_EQ(s.src.stats().rto, 0u);
    EXPECT_GE(s.src.stats().dupacks, 3u);
    EXPECT_EQ(s.src.segments_sent(), 41u);
    EXPECT_EQ(s.src.ssthresh(), expected_ssthresh);
    EXPECT_EQ(s.sink.bytes_read(), 40 * MSS);
    EXPECT_EQ(s.src.bytes_acked(), 40 * MSS);
    EXPECT_EQ(p.findings.kept().size(), 0u);
}

TEST(TcpLoss, OneDropIsFastRetransmittedAfterThreeDupacksAndCubicSetsSsthreshToCwndTimes717Over1024) {
    // CUBIC: ssthresh = max(15 * 717 / 1024, 2) = 10755 / 1024 = 10 (integer division).
    expect_single_drop_recovered(CongestionAlgorithm::CUBIC, 10);
}

TEST(TcpLoss, RenoHalvesCwndAtTheFastRetransmit) {
    // Reno: ssthresh = max(15 / 2, 2) = 7.
    expect_single_drop_recovered(CongestionAlgorithm::RENO, 7);
}

TEST(TcpLoss, RtoBacksOffExponentiallyAndTheConnectionIsAbortedWithALostDataFinding) {
    // Every data frame is lost, so there is never an RTT sample: RTO = TCP_TIMEOUT_INIT = 1 s,
    // doubling at each timeout up to TCP_RTO_MAX = 120 s. Segment 0 (sent at t = 0) is
    // retransmitted at 1, 1+2 = 3, 7, 15, 31, 63, 127 s, then 120 s apart: 247, 367, 487, 607,
    // 727, 847 s. tcp_retries2 = 15 allows (2^10 - 1) x 0.2 s + (15 - 9) x 120 s = 924.6 s
    // after the first retransmission (1 s): the timeout at 967 s finds 966 s >= 924.6 s and
    // aborts the connection; its unacknowledged data is lost, and says so.
    Pair p;
    struct SegmentZeroSent final : FrameTap { // when the sender's NIC puts segment 0 on the wire
        std::vector<engine::Tick> head;
        void frame(Dir dir, engine::Tick now, const Packet& f) override {
            if (dir == Dir::TX && f.kind == FrameKind::TCP_DATA && f.seq == 0) head.push_back(now);
        }
    } sent;
    p.na.set_tap(&sent);
    p.lose = [](const Packet& f) { return f.kind == FrameKind::TCP_DATA; };
    Stream s(p, 20 * MSS, 64 * MSS, CongestionAlgorithm::CUBIC, STOP_AT_ONCE);
    p.run(1000 * engine::PS_PER_S);
    const std::vector<engine::Tick>& head = sent.head;
    const double expected_s[] = {0, 1, 3, 7, 15, 31, 63, 127, 247, 367, 487, 607, 727, 847};
    ASSERT_EQ(head.size(), std::size(expected_s));
    for (std::size_t i = 0; i < head.size(); ++i) EXPECT_EQ(head[i], static_cast<engine::Tick>(expected_s[i] * 1e12)) << i;
    EXPECT_EQ(s.src.stats().rto, 13u);
    EXPECT_TRUE(s.src.aborted());
    ASSERT_EQ(p.findings.count(stats::FindingKind::LOST_DATA), 1u);
    EXPECT_EQ(p.findings.kept()[0].where, "tcp_write_timeout");
    EXPECT_EQ(s.sink.bytes_read(), 0u);
}

void expect_conserved(Pair& p, Stream& s, engine::Tick until) {
    p.run(until);
    EXPECT_GT(s.src.stats().retransmits, 0u);
    EXPECT_EQ(s.sink.bytes_read(), s.src.bytes_written()); // every byte, in order, once
    EXPECT_EQ(s.src.bytes_acked(), s.src.bytes_written());
    EXPECT_EQ(p.findings.kept().size(), 0u);
}

TEST(TcpLoss, DropsAtTheRxRingAreRecoveredAndEveryByteIsReadOnce) {
    // The receiver spends 20 us per segment (tcp_v4_rcv) while the wire brings one per 12.3 us,
    // and its ring has 8 slots: the ring overflows. The writer writes for 20 ms; by 2 s
    // everything written has been read.
    Pair p(8);
    TcpCosts slow;
    slow.tcp_v4_rcv = 20'000;
    Stream s(p, 256 * MSS, 512 * MSS, CongestionAlgorithm::CUBIC, 20 * engine::PS_PER_MS, slow);
    expect_conserved(p, s, 2 * engine::PS_PER_S);
    EXPECT_GT(p.nb.stats().rx_dropped, 0u);
}

TEST(TcpLoss, DropsInTheLinksQueueAreRecoveredAndEveryByteIsReadOnce) {
    // A 4-frame queue on the wire: a cwnd-sized burst from the sender overflows it.
    Pair p(256, 4);
    Stream s(p, 256 * MSS, 512 * MSS, CongestionAlgorithm::CUBIC, 20 * engine::PS_PER_MS);
    expect_conserved(p, s, 2 * engine::PS_PER_S);
    EXPECT_GT(p.na.stats().tx_dropped, 0u);
}

TEST(TcpLoss, DropsAtTheReceivingSocketAreRecoveredAndEveryByteIsReadOnce) {
    // The sender assumes a 64-segment window until the first ACK; the receiver has room for 4
    // and copies slowly (50 cycles per byte: 72 us per segment, 12.3 us between arrivals): the first flight of 10 overflows the socket.
    Pair p;
    TcpCosts slow;
    slow.copy_to_user_cold = 50;
    Stream s(p, 64 * MSS, 4 * MSS, CongestionAlgorithm::CUBIC, 20 * engine::PS_PER_MS, slow);
    expect_conserved(p, s, 2 * engine::PS_PER_S);
    EXPECT_GT(s.sink.stats().window_drops, 0u);
}

TEST(TcpLoss, LossesOnTheWireEveryHundredthFrameAreRecoveredAndEveryByteIsReadOnce) {
    Pair p;
    std::uint64_t n = 0;
    p.lose = [&](const Packet& f) { return f.kind == FrameKind::TCP_DATA && ++n % 100 == 0; };
    Stream s(p, 256 * MSS, 512 * MSS, CongestionAlgorithm::CUBIC, 50 * engine::PS_PER_MS);
    expect_conserved(p, s, 2 * engine::PS_PER_S);
}

TEST(TcpBuffers, AnAutotunedSendBufferStartsAtTwiceTheInitialCwndOfSkbs) {
    // tcp_sndbuf_expand: 2 x max(cwnd 10, TCP_INIT_CWND, reordering 3 + 1) skbs of 4096 bytes of
    // truesize = 81920 bytes, of which 1448 / 4096 is data: 2 x 10 x 1448 = 28960 bytes.
    Harness h;
    TcpSource src(h.stack, TcpCosts{}, 64 * MSS);
    src.autotune({4096, 16384, 4194304}, 65536);
    EXPECT_EQ(src.sndbuf(), 2u * 10 * 1448);
}

TEST(TcpBuffers, ASecondAutotuneSizesTheSendBufferAgainForTheSameCwnd) {
    // The second autotune's wmem[1] 4096 gives max(4096 x 1448 / 4096, MSS) = 1448 bytes; its
    // tcp_init_buffer_space sizes it again for the same 10 skbs: 2 x 10 x 1448 = 28960 bytes (the
    // segments held from the first call do not skip it).
    Harness h;
    TcpSource src(h.stack, TcpCosts{}, 64 * MSS);
    src.autotune({4096, 16384, 4194304}, 65536);
    src.autotune({4096, 4096, 4194304}, 65536);
    EXPECT_EQ(src.sndbuf(), 2u * 10 * 1448);
}

TEST(TcpBuffers, AutotuningGrowsBothBuffersWithinTheirMaximaAndEveryByteIsReadOnce) {
    // Default tcp_rmem / tcp_wmem: the receive buffer starts at 131072 and grows with what the
    // reader copies per RTT, never past 6291456; the send buffer follows cwnd.
    Pair p;
    Stream s(p, 64 * MSS, 64 * MSS, CongestionAlgorithm::CUBIC, 50 * engine::PS_PER_MS);
    s.src.autotune({4096, 16384, 4194304}, 131072 / 2);
    s.sink.autotune({4096, 131072, 6291456});
    p.run(engine::PS_PER_S);
    EXPECT_GT(s.sink.rcvbuf(), 131072u);
    EXPECT_LE(s.sink.rcvbuf(), 6291456u);
    EXPECT_GT(s.src.sndbuf(), 2u * 10 * 1448);
    EXPECT_EQ(s.sink.bytes_read(), s.src.bytes_written());
    EXPECT_EQ(p.findings.kept().size(), 0u);
}

// ---- movable iperf3 tasks (issue 14): the loops follow their task's CPU --------------------
// Machines A and B have two CPUs each, of one sched_domain per machine (a0, a1 and b0, b1, each
// machine its own last-level cache); each NIC interrupts its machine's first CPU, joined on a
// 1 Gbit/s link with 10 us latency. Both copies cost 1 cycle per byte at 1 GHz
// (copy_from_user, copy_to_user_cold: 1,448 cycles per segment), every other figure 0. PREEMPT
// voluntary, HZ 250 (the defaults). The writer (on a0) writes until 10 ms; the reader starts on
// b0. From 1 ms a SCHED_FIFO task "hog" spins for good on a0 (or b0) in 1,000-cycle execs.
struct TwoByTwo {
    enum class Hog { SENDER, RECEIVER };
    struct Opt {
        Hog hog = Hog::SENDER;
        bool writer_movable = false; // cpus_allowed {a0, a1}; else none (pinned to a0)
        bool reader_movable = false; // cpus_allowed {b0, b1}
    };
    explicit TwoByTwo(Opt o)
        : src(stack_a, copies(), 64 * MSS, TCP_MSS, 0, 0, CongestionAlgorithm::CUBIC), sink(stack_b, copies(), 128 * MSS, 0) {
        link.attach(na, nb);
        for (kernel::Cpu* c : {&a0, &a1, &b0, &b1}) c->set_findings(&findings);
        b0.set_sd_llc_id(1);
        b1.set_sd_llc_id(1);
        rda.span = {&a0, &a1};
        rdb.span = {&b0, &b1};
        a0.set_root_domain(&rda, sim.rng("a0"));
        a1.set_root_domain(&rda, sim.rng("a1"));
        b0.set_root_domain(&rdb, sim.rng("b0"));
        b1.set_root_domain(&rdb, sim.rng("b1"));
        w = &a0.create_task("iperf3-c", kernel::SchedPolicy::NORMAL, 0, false, testing::writer(src, a0, &w, 10 * engine::PS_PER_MS));
        r = &b0.create_task("iperf3-s", kernel::SchedPolicy::NORMAL, 0, false, testing::reader(sink, b0, &r));
        w->in_user = r->in_user = true;
        if (o.writer_movable) {
            w->cpus_allowed = {&a0, &a1};
            w->recent_used_cpu = &a0;
        }
        if (o.reader_movable) {
            r->cpus_allowed = {&b0, &b1};
            r->recent_used_cpu = &b0;
        }
        kernel::Cpu& hog_cpu = o.hog == Hog::SENDER ? a0 : b0;
        hog_cpu.create_task("hog", kernel::SchedPolicy::FIFO, 50, true, spin_from_1ms(hog_cpu));
        for (kernel::Cpu* c : {&a0, &a1, &b0, &b1}) c->boot();
    }
    static TcpCosts copies() {
        TcpCosts c;
        c.copy_from_user = 1;
        c.copy_to_user_cold = 1;
        return c;
    }
    static engine::Task<> spin_from_1ms(kernel::Cpu& cpu) {
        co_await kernel::hrtimer_sleep_until(cpu, engine::PS_PER_MS);
        for (;;) co_await cpu.exec(1000, kernel::Cat::OTHER);
    }
    void run(engine::Tick until) { sim.run(until); }
    // The cycles the tasks of `c` spent copying (tcp_sendmsg's or tcp_recvmsg's copy).
    static kernel::Cycles task_copy(const kernel::Cpu& c) {
        return c.stats().cycles[static_cast<std::size_t>(kernel::CtxKind::TASK)][static_cast<std::size_t>(kernel::Cat::COPY)];
    }
    engine::Simulation sim{1};
    kernel::Cpu a0{sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    kernel::Cpu a1{sim, 1, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    kernel::Cpu b0{sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    kernel::Cpu b1{sim, 1, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    kernel::RootDomain rda, rdb;
    stats::Findings findings;
    Softnet sa{a0}, sb{b0};
    Nic na{sa, 40, NetCosts{}, "a.eth0"}, nb{sb, 40, NetCosts{}, "b.eth0"};
    Link link{sim, 1'000'000'000, 10 * engine::PS_PER_US, 1000};
    Stack stack_a{na}, stack_b{nb};
    TcpSource src;
    TcpSink sink;
    kernel::TaskStruct* w = nullptr;
    kernel::TaskStruct* r = nullptr;
};

// The link carries one 1514-byte frame per (1514 + 24) x 8 ns = 12.304 us: 1448 payload bytes, so
// in 8 ms at least 8 ms / 12.304 us = 650 full segments' worth; half of that is the claim's floor.
constexpr std::uint64_t HALF_THE_LINK_IN_8MS = 650 / 2 * MSS;

TEST(TcpMovable, AWriterWhoseCpuAFifoTaskTakesMovesToTheIdleCpuAtItsNextWakeUpAndKeepsSending) {
    // The writer sleeps in sk_stream_wait_memory most of the time (its copies take 1.448 us per
    // segment, the wire 12.3 us). From 1 ms the FIFO hog owns a0; the next ACK's NET_RX on a0 wakes
    // the writer: select_task_rq finds a0 busy and its previous CPU a0 too, so select_idle_cpu's
    // scan places it on a1 (one migration, no load balance). Every later wake-up comes from a0's
    // softirq with a0 busy: wake_affine keeps the previous CPU a1, idle. So it writes on a1 until
    // 10 ms; by 30 ms every written byte has been read once.
    TwoByTwo x({.writer_movable = true});
    x.run(engine::PS_PER_MS);
    EXPECT_EQ(x.w->cpu, &x.a0);
    const std::uint64_t before = x.src.bytes_written();
    x.run(30 * engine::PS_PER_MS);
    EXPECT_EQ(x.w->cpu, &x.a1);
    EXPECT_EQ(x.w->nr_migrations, 1u);
    EXPECT_EQ(x.w->nr_balance_moves, 0u);
    EXPECT_GT(x.src.bytes_written() - before, HALF_THE_LINK_IN_8MS);
    // each segment copied once, on the CPU the writer ran on: a1 has the copies after the move
    EXPECT_EQ(TwoByTwo::task_copy(x.a0) + TwoByTwo::task_copy(x.a1), x.src.bytes_written());
    EXPECT_GE(TwoByTwo::task_copy(x.a1), x.src.bytes_written() - before);
    EXPECT_EQ(x.sink.bytes_read(), x.src.bytes_written());
    EXPECT_EQ(x.src.bytes_acked(), x.src.bytes_written());
    EXPECT_EQ(x.findings.kept().size(), 0u);
}

TEST(TcpMovable, APinnedWriterWhoseCpuAFifoTaskTakesNeverMovesAndStopsSending) {
    // The same without cpus_allowed: the writer waits on a0 behind the hog for good; the bytes it
    // wrote before 1 ms are all it writes, and they are read.
    TwoByTwo x({});
    x.run(engine::PS_PER_MS);
    const std::uint64_t before = x.src.bytes_written();
    x.run(30 * engine::PS_PER_MS);
    EXPECT_EQ(x.w->cpu, &x.a0);
    EXPECT_EQ(x.w->nr_migrations, 0u);
    EXPECT_EQ(x.src.bytes_written(), before);
    EXPECT_EQ(TwoByTwo::task_copy(x.a1), 0u);
    EXPECT_EQ(x.sink.bytes_read(), x.src.bytes_written());
    EXPECT_EQ(x.findings.kept().size(), 0u);
}

TEST(TcpMovable, AReaderWhoseCpuAFifoTaskTakesMovesToTheIdleCpuAndReadsEveryByteOnce) {
    // The reader blocks for data; from 1 ms the hog owns b0, where NET_RX wakes the reader: b0 busy,
    // its previous CPU b0 busy, so it is placed on b1 and stays there (later wake-ups find b1, its
    // previous CPU, idle). Its copies after the move are charged to b1; every byte read once.
    TwoByTwo x({.hog = TwoByTwo::Hog::RECEIVER, .reader_movable = true});
    x.run(engine::PS_PER_MS);
    EXPECT_EQ(x.r->cpu, &x.b0);
    const std::uint64_t before = x.sink.bytes_read();
    x.run(30 * engine::PS_PER_MS);
    EXPECT_EQ(x.r->cpu, &x.b1);
    EXPECT_EQ(x.r->nr_migrations, 1u);
    EXPECT_GT(x.sink.bytes_read() - before, HALF_THE_LINK_IN_8MS);
    EXPECT_EQ(TwoByTwo::task_copy(x.b0) + TwoByTwo::task_copy(x.b1), x.sink.bytes_read());
    EXPECT_GE(TwoByTwo::task_copy(x.b1), x.sink.bytes_read() - before);
    EXPECT_EQ(x.sink.bytes_read(), x.src.bytes_written());
    EXPECT_EQ(x.findings.kept().size(), 0u);
}

TEST(TcpMovable, APinnedReaderWhoseCpuAFifoTaskTakesNeverMovesAndNothingMoreIsRead) {
    // Without cpus_allowed the reader waits on b0 behind the hog: nothing is read after 1 ms, so
    // the receive window closes and the writer stops too; nothing is lost (no finding).
    TwoByTwo x({.hog = TwoByTwo::Hog::RECEIVER});
    x.run(engine::PS_PER_MS);
    const std::uint64_t before = x.sink.bytes_read();
    x.run(30 * engine::PS_PER_MS);
    EXPECT_EQ(x.r->cpu, &x.b0);
    EXPECT_EQ(x.r->nr_migrations, 0u);
    EXPECT_EQ(x.sink.bytes_read(), before);
    EXPECT_EQ(TwoByTwo::task_copy(x.b1), 0u);
    EXPECT_EQ(x.findings.kept().size(), 0u);
}

TEST(TcpMovable, TheSameRunTwiceGivesTheSameCountsAndPlacements) {
    auto run = [] {
        TwoByTwo x({.writer_movable = true});
        x.run(30 * engine::PS_PER_MS);
        return std::tuple{x.src.bytes_written(), x.sink.bytes_read(), x.w->cpu->id(), x.w->nr_migrations,
                          TwoByTwo::task_copy(x.a0), TwoByTwo::task_copy(x.a1), x.a1.stats().busy_ticks,
                          x.a0.stats().context_switches};
    };
    EXPECT_EQ(run(), run());
}

} // namespace
} // namespace kdsim::net

namespace kdsim::net {
namespace {

// sk_pacing_rate by hand: 10 segments of 1448 bytes at 200% in 1 ms are 28,960 bytes per ms,
// 28,960,000 bytes/s (64-bit products); 100,000 segments at 200% are 289,600,000 bytes, whose
// 289,600,000 x 1e12 overflows 64 bits, so in 128 bits: / 7 us = 2.896e14 / 7 = 41,371,428,571,428
// (.57 dropped); 2^32 - 1 segments of 2^32 - 1 bytes overflow at the first product: at 120% over
// 1 s, (2^32 - 1)^2 = 2^64 - 2^33 + 1 = 18,446,744,065,119,617,025, x 1.2 =
// 22,136,092,878,143,540,430 bytes/s, more than 64 bits hold, so the result is that less 2^64,
// 3,689,348,804,433,988,814 (as the 128-bit expression's cast gives).
TEST(TcpPacingRate, SixtyFourAndOneHundredTwentyEightBitPathsGiveTheFormulasFloor) {
    EXPECT_EQ(tcp_pacing_rate(10, 1448, 200, engine::PS_PER_MS), 28'960'000u);
    EXPECT_EQ(tcp_pacing_rate(100'000, 1448, 200, 7 * engine::PS_PER_US), 41'371'428'571'428u);
    EXPECT_EQ(tcp_pacing_rate(0xffffffffULL, 0xffffffffULL, 120, engine::PS_PER_S), 3'689'348'804'433'988'814u);
    // 120% of 3 segments of 1000 bytes over 3 ps: 3,600 bytes, 3,600e12 / 3 = 1.2e15
    EXPECT_EQ(tcp_pacing_rate(3, 1000, 120, 3), 1'200'000'000'000'000u);
}

// tcp_tso_autosize's goal in whole segments, by hand, MSS 1448: 65,536 bytes are 45 segments, as
// many as 65,535 - 320 bytes hold (45.04); half a window of 725,592 bytes is 501 segments, of
// 32,768 bytes 22 (22.6); 2,000 bytes are 1 segment, raised to tcp_min_tso_segs' 2; half a window
// under one segment bounds the goal to 1.
TEST(TcpTsoSegs, BytesPerMssBetweenTwoAndWhatGsoAndHalfTheWindowHold) {
    EXPECT_EQ(tcp_tso_segs(65'536, 1448, 725'592), 45u);
    EXPECT_EQ(tcp_tso_segs(65'536, 1448, 32'768), 22u);
    EXPECT_EQ(tcp_tso_segs(2'000, 1448, 0), 2u);
    EXPECT_EQ(tcp_tso_segs(0, 1448, 1'000), 1u);
    EXPECT_EQ(tcp_tso_segs(30 * 1448 + 1447, 1448, 0), 30u);
}

// The 64-bit path's bound: floor(2^64 / 1e12) = 18,446,744; x 100 = 1,844,674,400; over
// 1448 x 200 = 289,600 that is 6,369 segments (6,369 x 289,600 / 100 = 18,444,624 fits, 6,370's
// 18,447,520 does not), over 1448 x 120 = 173,760 it is 10,616.
// srtt_max by hand: 10 segments at 200% are 28,960 bytes, x 1e12 = 2.896e16, which over a rate of
// 28,960,000 bytes/s is 1e9 ps (1 ms): the rate there is exactly 28,960,000, 1 ps later below it.
// At the E5 run's figures (839 segments at 120%, the ceiling 45 x 1448 x 1024 = 66,723,840 bytes/s):
// 1,457,846 (1,457,846.4 floored) x 1e12 / 66,723,840 = 21,848,952,338 ps (21.8 ms).
TEST(TcpPacingRate, SrttMaxIsTheLargestSrttWhoseRateReachesTheBound) {
    EXPECT_EQ(tcp_pacing_segs_max(1448, 200), 6'369u);
    EXPECT_EQ(tcp_pacing_segs_max(1448, 120), 10'616u);
    EXPECT_EQ(tcp_pacing_srtt_max(10, 1448, 200, 28'960'000), engine::PS_PER_MS);
    EXPECT_EQ(tcp_pacing_rate(10, 1448, 200, engine::PS_PER_MS), 28'960'000u);
    EXPECT_EQ(tcp_pacing_rate(10, 1448, 200, engine::PS_PER_MS + 1), 28'959'999u);
    const engine::Tick e5 = tcp_pacing_srtt_max(839, 1448, 120, 45 * 1448 * 1024);
    EXPECT_EQ(e5, 21'848'952'338u);
    EXPECT_EQ(tcp_pacing_rate(839, 1448, 120, e5), 66'723'840u);
    EXPECT_EQ(tcp_pacing_rate(839, 1448, 120, e5 + 1), 66'723'839u);
}

// What TcpSource's held size goal relies on: for a goal at its ceiling, every srtt in
// [1, srtt_max] and segs in [segs, segs_max] gives tcp_tso_autosize's full computation (the pacing
// bytes plus gso_max_size >> (srtt in 512 us units)) the same ceiling.
TEST(TcpTsoSegs, TheCeilingHoldsForSmallerSrttAndMoreSegments) {
    const auto autosize = [](std::uint64_t segs, engine::Tick srtt, std::uint64_t ratio, std::uint64_t half_wnd) {
        std::uint64_t bytes = tcp_pacing_rate(segs, 1448, ratio, srtt) >> 10;
        const std::uint64_t r = static_cast<std::uint64_t>(engine::to_us(srtt)) >> 9;
        if (r < 32) bytes += 65'536 >> r;
        return tcp_tso_segs(std::min<std::uint64_t>(bytes, 65'536), 1448, half_wnd);
    };
    for (const std::uint64_t ratio : {120u, 200u}) {
        for (const std::uint64_t half_wnd : {0u, 32'768u, 725'592u}) {
            const std::uint32_t ceiling = tcp_tso_segs(65'536, 1448, half_wnd);
            const std::uint64_t segs_max = tcp_pacing_segs_max(1448, ratio);
            for (const std::uint64_t segs : {10u, 100u, 839u, 6'000u}) {
                const engine::Tick srtt_max = tcp_pacing_srtt_max(segs, 1448, ratio, std::uint64_t{ceiling} * 1448 << 10);
                for (const engine::Tick srtt : {engine::Tick{1}, srtt_max / 3, srtt_max / 2, srtt_max - 1, srtt_max})
                    for (std::uint64_t more = segs; more <= segs_max; more += (segs_max - segs) / 7 + 1)
                        EXPECT_EQ(autosize(more, srtt, ratio, half_wnd), ceiling) << segs << " " << srtt << " " << more;
            }
        }
    }
}

// MaybeTask (what tcp_write_xmit returns): awaiting an empty one goes on at once; awaiting one
// that holds a Task runs that Task to its end first, and an exception it threw reaches the awaiter
// with the Task's frame freed once (an aggregate MaybeTask was freed twice: GCC 12).
engine::Task<> record(std::vector<int>& order, int n) {
    order.push_back(n);
    co_return;
}
engine::Task<> awaits_maybe_tasks(std::vector<int>& order) {
    order.push_back(1);
    co_await MaybeTask{};
    order.push_back(2);
    co_await MaybeTask{record(order, 3)};
    order.push_back(4);
}
engine::Task<> throws() {
    throw std::runtime_error("in the Task");
    co_return;
}
engine::Task<> catches(bool& caught) {
    try {
        co_await MaybeTask{throws()};
    } catch (const std::runtime_error&) {
        caught = true;
    }
}

TEST(MaybeTask, AnEmptyOneGoesOnAtOnceAndOneWithATaskRunsItFirst) {
    std::vector<int> order;
    engine::Task<> t = awaits_maybe_tasks(order);
    t.handle().resume(); // nothing suspends: the root runs to its end
    EXPECT_TRUE(t.done());
    EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
    bool caught = false;
    engine::Task<> c = catches(caught);
    c.handle().resume();
    EXPECT_TRUE(c.done());
    EXPECT_TRUE(caught);
}

} // namespace
} // namespace kdsim::net
