// The qdisc layer by hand: fq's pacing gap, round robin with quantum, flow_limit, pfifo_fast's
// bands, the watchdog's expiry within its slack, and a TCP stream through a dropping fq.
#include "kernel/softirq.h"
#include "net/net_test_support.h"
#include "net/qdisc.h"
#include "net/sch_fq.h"

#include <gtest/gtest.h>

namespace kdsim::net {
namespace {

constexpr engine::Tick NS = engine::PS_PER_NS;

Packet frame(std::uint32_t flow, std::uint32_t len = 1514, std::uint8_t priority = 0) {
    Packet p = transport_packet(FrameKind::UDP_DATA, len - 42, 28, 0, flow);
    p.priority = priority;
    return p;
}

TEST(PfifoFast, ControlPriorityGoesFirstThenBestEffortThenBulk) {
    // prio2band: priority 2 (TC_PRIO_BULK) -> band 2, 0 -> band 1, 7 (TC_PRIO_CONTROL) -> band 0.
    PfifoFast q(10, QdiscCosts{});
    q.enqueue(frame(1, 100, 2), 0);
    q.enqueue(frame(2, 100, 0), 0);
    q.enqueue(frame(3, 100, 7), 0);
    q.enqueue(frame(4, 100, 0), 0);
    std::vector<std::uint32_t> order;
    Packet p;
    while (q.dequeue(0, p)) order.push_back(p.flow);
    EXPECT_EQ(order, (std::vector<std::uint32_t>{3, 2, 4, 1}));
}

TEST(PfifoFast, DropsPastTxqueuelenAndCountsIt) {
    PfifoFast q(2, QdiscCosts{});
    // the layer keeps qlen: it adds each accepted skb
    for (int i = 0; i < 3; ++i) {
        const Packet p = frame(1);
        if (q.enqueue(p, 0)) q.backlog_add(p);
    }
    EXPECT_EQ(q.qlen(), 2u);
    EXPECT_EQ(q.stats().drops, 1u);
}

// Dequeues everything ready at `now` (the layer's bookkeeping included).
std::vector<Packet> drain(Fq& q, engine::Tick now) {
    std::vector<Packet> out;
    Packet p;
    while (q.dequeue(now, p)) {
        q.backlog_sub(p);
        out.push_back(p);
    }
    return out;
}

void put(Fq& q, const Packet& p, engine::Tick now) {
    if (q.enqueue(p, now)) q.backlog_add(p);
}

TEST(Fq, BelowLowRateThresholdEveryPacketWaitsLenOverRate) {
    // maxrate 50,000 B/s (400 kbit/s, below the 550 kbit/s threshold): credit is zeroed after
    // each packet and the next waits len / rate = 1000 B / 50,000 B/s = 20 ms.
    FqConfig c;
    c.maxrate = 50000;
    Fq q(c, QdiscCosts{});
    for (int i = 0; i < 3; ++i) put(q, frame(1, 1000), 0);
    ASSERT_EQ(drain(q, 0).size(), 1u);
    EXPECT_EQ(q.next_wakeup(), 20 * engine::PS_PER_MS);
    EXPECT_TRUE(drain(q, 20 * engine::PS_PER_MS - 1).empty());
    ASSERT_EQ(drain(q, 20 * engine::PS_PER_MS).size(), 1u);
    EXPECT_EQ(q.next_wakeup(), 40 * engine::PS_PER_MS);
}

TEST(Fq, AboveTheThresholdAFlowSendsItsCreditThenWaitsMaxLenQuantumOverRate) {
    // maxrate 1.25 MB/s (10 Mbit/s), quantum 3028, initial quantum 15140: a new flow sends
    // 1514-byte packets while its credit stays positive: 15140 / 1514 = 10 packets (the tenth
    // brings it to 0). That tenth one sets time_next_packet = max(1514, 3028) / 1.25e6 s =
    // 2,422,400 ns after now. Over the run the flow then averages `rate`: 2 packets per 3028 B
    // of credit, one wait of 3028 / rate each.
    FqConfig c;
    c.maxrate = 1'250'000;
    Fq q(c, QdiscCosts{});
    for (int i = 0; i < 14; ++i) put(q, frame(1), 0);
    EXPECT_EQ(drain(q, 0).size(), 10u);
    EXPECT_EQ(q.next_wakeup(), 2'422'400 * NS);
    // at that time: the flow's credit (0) gets a quantum, then 2 packets, then the next wait
    EXPECT_EQ(drain(q, 2'422'400 * NS).size(), 2u);
    EXPECT_EQ(q.next_wakeup(), 2 * 2'422'400 * NS);
}

TEST(Fq, AnEdtTimestampIsHeldUntilItsTime) {
    Fq q(FqConfig{}, QdiscCosts{});
    Packet p = frame(1);
    p.tstamp = 5 * engine::PS_PER_US;
    put(q, p, 0);
    EXPECT_TRUE(drain(q, 0).empty());
    EXPECT_EQ(q.next_wakeup(), 5 * engine::PS_PER_US);
    EXPECT_EQ(q.fq_stats().throttled, 1u);
    EXPECT_EQ(drain(q, 5 * engine::PS_PER_US).size(), 1u);
}

TEST(Fq, FlowsTakeTurnsOfAQuantumAfterTheirInitialQuantum) {
    // quantum 3000, initial quantum 3000, 1000-byte packets, no pacing: flow 1 and flow 2 each
    // send 3 (credit 3000 -> 0), then each gets 3000 more in turn: 1 1 1 2 2 2 1 1 1 2 2 2.
    FqConfig c;
    c.quantum = 3000;
    c.initial_quantum = 3000;
    c.pacing = false;
    Fq q(c, QdiscCosts{});
    for (int i = 0; i < 6; ++i) put(q, frame(1, 1000), 0);
    for (int i = 0; i < 6; ++i) put(q, frame(2, 1000), 0);
    std::vector<std::uint32_t> order;
    for (const Packet& p : drain(q, 0)) order.push_back(p.flow);
    EXPECT_EQ(order, (std::vector<std::uint32_t>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}));
    EXPECT_EQ(q.fq_stats().flows, 3u); // the two sockets and the flow of skbs without one
}

TEST(Fq, TheFlowLimitDropsTheFlowsSkbButNotAnotherFlows) {
    FqConfig c;
    c.flow_limit = 3;
    Fq q(c, QdiscCosts{});
    for (int i = 0; i < 5; ++i) put(q, frame(1), 0);
    put(q, frame(2), 0);
    EXPECT_EQ(q.qlen(), 4u);
    EXPECT_EQ(q.stats().drops, 2u);
    EXPECT_EQ(q.fq_stats().flows_plimit, 2u);
}

TEST(Fq, ControlPrioritySkbsGoFirstThroughTheInternalFlow) {
    FqConfig c;
    c.pacing = false;
    Fq q(c, QdiscCosts{});
    put(q, frame(1), 0);
    put(q, frame(2, 100, 7), 0);
    const auto out = drain(q, 0);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].flow, 2u);
    EXPECT_EQ(q.fq_stats().highprio, 1u);
}

// A driver that takes every skb and records when.
struct Recorder final : TxDriver {
    std::vector<engine::Tick> at;
    std::size_t tx_room() const override { return 1000; }
    void skb_free(kernel::Cpu&, const Packet&) override {}
    engine::Task<> hard_start_xmit(kernel::Cpu& cpu, const Packet&) override {
        at.push_back(cpu.now());
        co_return;
    }
};

engine::Task<> send(TxQueue& q, kernel::Cpu& cpu, std::vector<Packet> ps) {
    for (const Packet& p : ps) {
        co_await kernel::local_bh_disable(cpu);
        co_await q.dev_xmit_skb(cpu, p);
        co_await kernel::local_bh_enable(cpu);
    }
}

TEST(TxQueue, TheWatchdogSendsAPacedPacketWithinTheTimerSlackOfItsTime) {
    // Two skbs with EDT stamps 100 us and 300 us: each leaves at its time, no earlier, and no
    // later than the 10 us slack (an otherwise idle CPU: the timer fires at soft + slack at most).
    engine::Simulation sim{1};
    kernel::Cpu cpu{sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    NetTx net_tx(cpu, 0);
    TxQueue q(std::make_unique<Fq>(FqConfig{}, QdiscCosts{}), 0);
    Recorder drv;
    q.attach(drv, {&net_tx});
    Packet a = frame(1), b = frame(1);
    a.tstamp = 100 * engine::PS_PER_US;
    b.tstamp = 300 * engine::PS_PER_US;
    cpu.create_task("sender", kernel::SchedPolicy::NORMAL, 0, false, send(q, cpu, {a, b}));
    cpu.boot();
    sim.run(engine::PS_PER_MS);
    cpu.finish();
    ASSERT_EQ(drv.at.size(), 2u);
    EXPECT_GE(drv.at[0], a.tstamp);
    EXPECT_LE(drv.at[0], a.tstamp + 10 * engine::PS_PER_US);
    EXPECT_GE(drv.at[1], b.tstamp);
    EXPECT_LE(drv.at[1], b.tstamp + 10 * engine::PS_PER_US);
    EXPECT_EQ(q.qdisc().stats().packets, 2u);
}

TEST(TxQueue, AStoppedQueueHoldsTheSkbsUntilTheDriverWakesIt) {
    engine::Simulation sim{1};
    kernel::Cpu cpu{sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    NetTx net_tx(cpu, 0);
    TxQueue q(std::make_unique<PfifoFast>(1000, QdiscCosts{}), 0);
    Recorder drv;
    q.attach(drv, {&net_tx});
    q.netif_tx_stop_queue();
    cpu.create_task("sender", kernel::SchedPolicy::NORMAL, 0, false, send(q, cpu, {frame(1), frame(1), frame(1)}));
    cpu.boot();
    sim.run(engine::PS_PER_US);
    EXPECT_TRUE(drv.at.empty());
    EXPECT_EQ(q.qdisc().qlen(), 3u);
    // the tx completion interrupt wakes the queue: NET_TX sends all three
    cpu.hrtimer_start(2 * engine::PS_PER_US, [](kernel::Cpu& c, void* ctx, engine::Tick) -> Cycles {
        static_cast<TxQueue*>(ctx)->netif_tx_wake_queue(c);
        return 0;
    }, &q);
    sim.run(10 * engine::PS_PER_US);
    cpu.finish();
    EXPECT_EQ(drv.at.size(), 3u);
    EXPECT_EQ(q.qdisc().qlen(), 0u);
    EXPECT_GE(drv.at.front(), 2 * engine::PS_PER_US);
}

// A Pair whose sender NIC has `q` in front of a 16-frame ring, and one TCP stream over it
// that writes `bytes` at once (window and sndbuf `bytes`, the receiver's buffer `rcvbuf`).
struct QdiscStream {
    testing::Pair p{256, 16};
    NetTx net_tx{p.a, 0};
    TcpSource src;
    TcpSink sink;
    kernel::TaskStruct* w = nullptr;
    kernel::TaskStruct* r = nullptr;
    QdiscStream(std::unique_ptr<Qdisc> q, std::uint64_t window, std::uint64_t bytes, std::uint64_t rcvbuf)
        : src(p.stack_a, TcpCosts{}, window, TCP_MSS, 0, bytes), sink(p.stack_b, TcpCosts{}, rcvbuf, 0) {
        p.na.set_txq(std::make_unique<TxQueue>(std::move(q), 0));
        p.stack_a.attach_txq(p.na, {&net_tx});
        w = &p.a.create_task("iperf3-c", kernel::SchedPolicy::NORMAL, 0, false, testing::writer(src, p.a, &w, 1));
        r = &p.b.create_task("iperf3-s", kernel::SchedPolicy::NORMAL, 0, false, testing::reader(sink, p.b, &r));
        p.run(2 * engine::PS_PER_S);
    }
    const QdiscStats& qstats() const { return p.na.txq()->qdisc().stats(); }
};

TEST(TcpUnderFq, EveryByteIsDeliveredOnceThoughTheFlowLimitDropsSkbs) {
    // fq with flow_limit 2 on the sender's NIC and a 16-frame ring: TCP's skbs beyond two
    // queued are dropped (NET_XMIT_DROP), left unsent and sent again later; the socket is
    // SK_PACING_FQ. 200 segments are written; all arrive, in order, once.
    FqConfig c;
    c.flow_limit = 2;
    QdiscStream s(std::make_unique<Fq>(c, QdiscCosts{}), 100 * TCP_MSS, 200 * TCP_MSS, 256 * TCP_MSS);
    EXPECT_GT(s.src.stats().qdisc_drops, 0u);
    EXPECT_EQ(s.qstats().drops, s.src.stats().qdisc_drops);
    EXPECT_EQ(s.sink.bytes_read(), 200 * TCP_MSS);
    EXPECT_EQ(s.src.bytes_acked(), 200 * TCP_MSS);
    EXPECT_EQ(s.sink.stats().duplicate_segments, 0u);
    EXPECT_EQ(s.p.findings.kept().size(), 0u);
}

TEST(TcpUnderPfifoFast, TsqKeepsTheSocketsBytesBelowItWithinTcpLimitOutputBytes) {
    // pfifo_fast in front of a 16-frame ring; 4 MiB written at once with a 4 MiB window, so
    // without TSQ the qdisc would take what cwnd allows, up to its 1000 skbs. The socket is
    // SK_PACING_NONE: TSQ's limit is at most tcp_limit_output_bytes, and sk_wmem_alloc passes
    // it by at most the skb that crossed it. Each skb (no GSO on this device) is one segment of
    // truesize 1448 + 896 = 2344 bytes, so at most floor((1048576 + 2344) / 2344) = 448 skbs
    // are below the socket, the ring's included: the qdisc never holds more.
    constexpr std::uint64_t BYTES = 2896 * TCP_MSS; // 4 MiB of segments
    QdiscStream s(std::make_unique<PfifoFast>(1000, QdiscCosts{}), BYTES, BYTES, 2 * BYTES);
    EXPECT_GT(s.src.stats().tsq_throttled, 0u);
    EXPECT_GT(s.qstats().qlen_hw, 0u);
    EXPECT_LE(s.qstats().qlen_hw, 448u);
    EXPECT_EQ(s.qstats().drops, 0u);
    EXPECT_EQ(s.sink.bytes_read(), BYTES);
    EXPECT_EQ(s.p.findings.kept().size(), 0u);
}

} // namespace
} // namespace kdsim::net
