// GRO (net/gro.*) against counts worked out by hand from tcp_gro_receive's and skb_gro_receive's
// rules: full 1448-byte segments of one flow merge while the IP datagram stays under 64 KiB
// (20 + 32 header bytes + n x 1448 < 65536: n <= 45); a segment that does not continue the held
// skb sends it up and is held itself; a short segment is merged and ends it. Costs are round
// (receive 4 per IP packet + 6 per TCP segment = 10, merge 3, complete 100 cycles at 1 GHz) so
// times follow from the counts.
#include "net/gro.h"

#include "kernel/sched.h"
#include "kernel/softirq.h"
#include "net/net_test_support.h"
#include "net/tcp.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace kdsim::net {
namespace {

constexpr std::uint32_t MSS = TCP_MSS; // 1448

struct Up {
    Packet p;
    engine::Tick at;
    std::vector<std::uint64_t> frames; // each segment's frame address, as the stack gets it
};

struct Harness {
    engine::Simulation sim{1};
    kernel::Cpu cpu{sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    std::vector<Up> up;
    Gro gro{GroCosts{4, 6, 3, 100}, &Harness::deliver, this};

    static engine::Task<> deliver(kernel::Cpu& cpu, void* ctx, const Packet& p) {
        auto& h = *static_cast<Harness*>(ctx);
        Up u{p, cpu.now(), {}};
        if (p.frag_data) u.frames.assign(p.frag_data, p.frag_data + p.gso_segs);
        u.p.frag_data = nullptr;
        h.up.push_back(u);
        co_return;
    }
    void run(engine::Task<> body) {
        cpu.create_task("net_rx", kernel::SchedPolicy::FIFO, 50, true, std::move(body));
        cpu.boot();
        sim.run(100 * engine::PS_PER_MS);
        cpu.finish();
    }
};

Packet segment(std::uint32_t flow, std::uint64_t seq, std::uint32_t payload = MSS) {
    Packet p = transport_packet(FrameKind::TCP_DATA, payload, TCP_IP_HEADERS, seq, flow);
    p.data = 0x100000 + seq; // a distinct rx buffer per segment
    return p;
}

// The segments given, in one poll (bottom halves off, as in NET_RX), then the end of the poll's
// napi_gro_flush when `flush`.
engine::Task<> poll(Harness& h, std::vector<Packet> pkts, bool flush = true) {
    co_await kernel::local_bh_disable(h.cpu);
    for (const Packet& p : pkts) co_await h.gro.napi_gro_receive(h.cpu, p);
    if (flush) co_await h.gro.napi_gro_flush(h.cpu, false);
    co_await kernel::local_bh_enable(h.cpu);
}

// A harness that ran `pkts` through GRO in one poll (see poll()).
std::unique_ptr<Harness> through_gro(std::vector<Packet> pkts, bool flush = true) {
    auto h = std::make_unique<Harness>();
    h->run(poll(*h, std::move(pkts), flush));
    return h;
}

std::vector<Packet> in_order(std::uint32_t flow, std::size_t n, std::uint64_t from = 0) {
    std::vector<Packet> v;
    for (std::size_t i = 0; i < n; ++i) v.push_back(segment(flow, (from + i) * MSS));
    return v;
}

TEST(Gro, EightInOrderSegmentsOfOneFlowInOnePollGoUpAsOneSkbOf11584Bytes) {
    // 8 x 1448 = 11,584 payload bytes; the frame length adds 52 header bytes and 14 of Ethernet:
    // 11,650. Cycles: 8 receives x 10 + 7 merges x 3 + one completion 100 = 201 -> 201 ns.
    const auto hp = through_gro(in_order(0, 8));
    Harness& h = *hp;
    ASSERT_EQ(h.up.size(), 1u);
    EXPECT_EQ(h.up[0].p.seq, 0u);
    EXPECT_EQ(h.up[0].p.payload, 11584u);
    EXPECT_EQ(h.up[0].p.len, 11650u);
    EXPECT_EQ(h.up[0].p.gso_segs, 8u);
    EXPECT_EQ(h.up[0].p.gso_size, MSS);
    EXPECT_EQ(h.up[0].at, 201 * engine::PS_PER_NS);
    ASSERT_EQ(h.up[0].frames.size(), 8u);
    EXPECT_EQ(h.up[0].frames[7], 0x100000u + 7 * MSS);
    EXPECT_EQ(h.gro.stats().merged, 7u);
    EXPECT_EQ(h.gro.stats().skbs_up, 1u);
    EXPECT_EQ(h.gro.stats().segs_up, 8u);
}

TEST(Gro, AnOutOfOrderSegmentSendsTheHeldSkbUpAndIsHeldItself) {
    // Segments 0, 1, 2, then 4 (3 is missing): 4 does not continue 0..2, whose skb (4,344 bytes)
    // goes up when 4 arrives; 4 is held and goes up alone at the flush, as a plain frame.
    const auto hp = through_gro({segment(0, 0), segment(0, MSS), segment(0, 2 * MSS), segment(0, 4 * MSS)});
    Harness& h = *hp;
    ASSERT_EQ(h.up.size(), 2u);
    EXPECT_EQ(h.up[0].p.payload, 3 * MSS);
    EXPECT_EQ(h.up[0].p.gso_segs, 3u);
    EXPECT_EQ(h.up[0].at, (4 * 10 + 2 * 3 + 100) * engine::PS_PER_NS); // before the 4th segment's hold
    EXPECT_EQ(h.up[1].p.seq, 4 * MSS);
    EXPECT_EQ(h.up[1].p.payload, MSS);
    EXPECT_EQ(h.up[1].p.gso_segs, 1u); // one segment: no napi_gro_complete, no gso fields
    EXPECT_EQ(h.up[1].p.frag_data, nullptr);
}

TEST(Gro, AShortSegmentIsMergedAndEndsTheSkbAtOnce) {
    // 1448 + 1448 + 500 = 3,396 bytes in 3 segments, up without waiting for the flush.
    const auto hp = through_gro({segment(0, 0), segment(0, MSS), segment(0, 2 * MSS, 500)}, false);
    Harness& h = *hp;
    ASSERT_EQ(h.up.size(), 1u);
    EXPECT_EQ(h.up[0].p.payload, 3396u);
    EXPECT_EQ(h.up[0].p.gso_segs, 3u);
    EXPECT_TRUE(h.gro.empty());
}

TEST(Gro, AMergedSkbStopsBelow64KiBAt45FullSegments) {
    // 52 + 45 x 1448 = 65,212 < 65,536, but 65,212 + 1448 = 66,660 is not: the 46th segment
    // sends the 45-segment skb (65,160 bytes) up and starts the next.
    const auto hp = through_gro(in_order(0, 46));
    Harness& h = *hp;
    ASSERT_EQ(h.up.size(), 2u);
    EXPECT_EQ(h.up[0].p.gso_segs, 45u);
    EXPECT_EQ(h.up[0].p.payload, 65160u);
    EXPECT_EQ(h.up[1].p.seq, 45 * MSS);
    EXPECT_EQ(h.up[1].p.gso_segs, 1u);
}

TEST(Gro, ANinthFlowSendsTheOldestHeldSkbUp) {
    // MAX_GRO_SKBS = 8: one segment of each of flows 0..8; flow 8's arrival completes flow 0's
    // skb; the flush then sends 1..8 up oldest first.
    Harness h;
    std::vector<Packet> v;
    for (std::uint32_t f = 0; f < 9; ++f) v.push_back(segment(f, 0));
    h.run(poll(h, v));
    ASSERT_EQ(h.up.size(), 9u);
    for (std::uint32_t f = 0; f < 9; ++f) EXPECT_EQ(h.up[f].p.flow, f);
    EXPECT_EQ(h.up[0].at, 9 * 10 * engine::PS_PER_NS);
}

TEST(Gro, PureAcksAndUdpDatagramsGoUpAtOnceAndTwoFlowsMergeApart) {
    Harness h;
    Packet ack{};
    ack.kind = FrameKind::TCP_ACK;
    ack.flow = 0;
    const Packet udp = transport_packet(FrameKind::UDP_DATA, 1472, 28, 0, 1);
    h.run(poll(h, {segment(2, 0), segment(3, 0), ack, udp, segment(2, MSS), segment(3, MSS)}));
    ASSERT_EQ(h.up.size(), 4u);
    EXPECT_EQ(h.up[0].p.kind, FrameKind::TCP_ACK);
    EXPECT_EQ(h.up[1].p.kind, FrameKind::UDP_DATA);
    EXPECT_EQ(h.up[2].p.flow, 2u); // held first, flushed first
    EXPECT_EQ(h.up[2].p.gso_segs, 2u);
    EXPECT_EQ(h.up[3].p.flow, 3u);
    EXPECT_EQ(h.up[3].p.gso_segs, 2u);
}

engine::Task<> two_polls(Harness& h) {
    // a full-weight poll in jiffy 0 holds a segment; __napi_poll's flush of old skbs keeps it
    // (held this jiffy); in jiffy 1 the same flush sends it up
    co_await kernel::local_bh_disable(h.cpu);
    co_await h.gro.napi_gro_receive(h.cpu, segment(0, 0));
    co_await h.gro.napi_gro_flush(h.cpu, true);
    co_await kernel::local_bh_enable(h.cpu);
    EXPECT_TRUE(h.up.empty());
    co_await kernel::hrtimer_sleep_until(h.cpu, h.cpu.tick_period());
    co_await kernel::local_bh_disable(h.cpu);
    co_await h.gro.napi_gro_flush(h.cpu, true);
    co_await kernel::local_bh_enable(h.cpu);
}

TEST(Gro, AFlushOfOldSkbsKeepsThoseHeldThisJiffy) {
    Harness h;
    h.run(two_polls(h));
    ASSERT_EQ(h.up.size(), 1u);
    EXPECT_EQ(h.up[0].at, h.cpu.tick_period());
}

// A GSO skb from virtio-net (GUEST_TSO4) of n whole segments: NAPI_GRO_CB(skb)->count = n.
Packet gso_from_virtio(std::uint32_t flow, std::uint64_t seq, std::uint32_t segs, std::uint32_t short_by = 0) {
    Packet p = segment(flow, seq, segs * MSS - short_by);
    p.gso_size = MSS;
    p.gso_segs = segs;
    return p;
}

// 20 + 20 whole segments of gso_size 1448: 52 + 40 x 1448 = 57,972 < 65,536, so the second is
// appended (one merge) and the skb of 40 segments goes up at the flush.
TEST(Gro, TwoWholeGsoSkbsOfOneFlowMergeIntoOneSkbOfTheirSegments) {
    auto h = through_gro({gso_from_virtio(1, 0, 20), gso_from_virtio(1, 20 * MSS, 20)});
    ASSERT_EQ(h->up.size(), 1u);
    EXPECT_EQ(h->up[0].p.gso_segs, 40u);
    EXPECT_EQ(h->up[0].p.payload, 40 * MSS);
    EXPECT_EQ(h->gro.stats().merged, 20u);
    EXPECT_EQ(h->gro.stats().segs_up, 40u);
}

// A GSO skb that is not whole segments (its last one short) is flushed at once (tcp_gro_receive:
// flush = len != count * gso_size); a held skb of the flow is merged with it and goes up too.
TEST(Gro, AGsoSkbWithAShortLastSegmentEndsItsSkb) {
    auto alone = through_gro({gso_from_virtio(1, 0, 10, 100)}, false);
    ASSERT_EQ(alone->up.size(), 1u);
    EXPECT_EQ(alone->up[0].p.gso_segs, 10u);
    EXPECT_TRUE(alone->gro.empty());
    auto merged = through_gro({gso_from_virtio(1, 0, 10), gso_from_virtio(1, 10 * MSS, 5, 100)}, false);
    ASSERT_EQ(merged->up.size(), 1u);
    EXPECT_EQ(merged->up[0].p.gso_segs, 15u);
    EXPECT_EQ(merged->up[0].p.payload, 15 * MSS - 100);
    EXPECT_TRUE(merged->gro.empty());
}

// 30 + 30 segments: 52 + 60 x 1448 = 86,932 >= 65,536: no room (-E2BIG), the first goes up and
// the second is held.
TEST(Gro, TwoGsoSkbsBeyond64KiBDoNotMerge) {
    auto h = through_gro({gso_from_virtio(1, 0, 30), gso_from_virtio(1, 30 * MSS, 30)}, false);
    ASSERT_EQ(h->up.size(), 1u);
    EXPECT_EQ(h->up[0].p.gso_segs, 30u);
    EXPECT_FALSE(h->gro.empty());
    EXPECT_EQ(h->gro.stats().merged, 0u);
}

// dev_gro_receive (after gro_receive's cost) holds at once, with no Task, exactly the segments
// napi_gro_receive's path would hold with no await: a full segment of a flow nothing is held for,
// with a slot free (HELD). A pure ACK is not GRO's: NORMAL, no Task, nothing held or counted (the
// caller passes it up). A full segment that continues the held skb: MERGED, no Task, nothing
// merged until the caller's skb_gro_receive. A short continuing segment (merged, then the skb
// completed), one that does not continue it (a gap), a GSO skb that is not whole segments (passed
// up) and a ninth flow (the oldest completed first) get the Task (REST).
TEST(Gro, DevGroReceiveHoldsANewFlowsSegmentAtOnceAndLeavesEveryOtherPathToATask) {
    auto h = std::make_unique<Harness>();
    auto verdict = [&](const Packet& p) {
        const Gro::Verdict v = h->gro.dev_gro_receive(h->cpu, p);
        EXPECT_EQ(v.rest.valid(), v.kind == Gro::Verdict::REST);
        return v.kind;
    };
    EXPECT_EQ(verdict(segment(1, 0)), Gro::Verdict::HELD);
    EXPECT_FALSE(h->gro.empty());
    EXPECT_EQ(h->gro.stats().held, 1u);
    EXPECT_EQ(verdict(segment(1, MSS)), Gro::Verdict::MERGED);
    EXPECT_EQ(h->gro.stats().merged, 0u);
    h->gro.skb_gro_receive(segment(1, MSS)); // held: seq 0, 2 x 1448 bytes
    EXPECT_EQ(h->gro.stats().merged, 1u);
    EXPECT_EQ(verdict(segment(1, 2 * MSS, 100)), Gro::Verdict::REST); // short: ends the skb
    EXPECT_EQ(verdict(segment(1, 3 * MSS)), Gro::Verdict::REST);      // a gap of 1448 bytes
    EXPECT_EQ(verdict(segment(1, MSS)), Gro::Verdict::REST);          // already merged
    EXPECT_EQ(h->gro.stats().merged, 1u);
    Packet ack = transport_packet(FrameKind::TCP_ACK, 0, TCP_IP_HEADERS, 0, 1);
    EXPECT_EQ(verdict(ack), Gro::Verdict::NORMAL);
    EXPECT_EQ(h->gro.stats().held, 1u);
    EXPECT_EQ(verdict(gso_from_virtio(2, 0, 10, 100)), Gro::Verdict::REST);
    for (std::uint32_t flow = 2; flow <= Gro::MAX_GRO_SKBS; ++flow)
        EXPECT_EQ(verdict(segment(flow, 0)), Gro::Verdict::HELD) << flow;
    EXPECT_EQ(verdict(segment(Gro::MAX_GRO_SKBS + 1, 0)), Gro::Verdict::REST);
    EXPECT_EQ(h->gro.stats().held, Gro::MAX_GRO_SKBS);
}

// flush_take, the flush's steps for a driver's poll: the oldest held skb first whatever its slot
// (a flow held after a take reuses slot 0 and comes last), none of those held this jiffy with
// flush_old, and a held skb of several segments as napi_gro_flush passes it up (gso_segs, and its
// segments' frames until the next take).
TEST(Gro, FlushTakeGivesTheOldestHeldSkbFirstWithItsSegmentsFrames) {
    auto h = std::make_unique<Harness>();
    const Packet gso = gso_from_virtio(7, 0, 3); // frames at 0x100000 + k x 1448
    for (const Packet& p : {segment(3, 0), gso, segment(5, 0)})
        ASSERT_EQ(h->gro.dev_gro_receive(h->cpu, p).kind, Gro::Verdict::HELD); // slots 0, 1, 2
    EXPECT_EQ(h->gro.flush_take(0, true), nullptr); // all held in jiffy 0
    const Packet* skb = h->gro.flush_take(1, true);
    ASSERT_NE(skb, nullptr);
    EXPECT_EQ(skb->flow, 3u);
    ASSERT_EQ(h->gro.dev_gro_receive(h->cpu, segment(9, 0)).kind, Gro::Verdict::HELD); // slot 0 again
    skb = h->gro.flush_take(0, false);
    ASSERT_NE(skb, nullptr);
    EXPECT_EQ(skb->flow, 7u);
    EXPECT_EQ(skb->gso_segs, 3u);
    EXPECT_EQ(skb->gso_size, MSS);
    ASSERT_NE(skb->frag_data, nullptr);
    EXPECT_EQ(skb->frag_data[0], 0x100000u);
    EXPECT_EQ(skb->frag_data[2], 0x100000u + 2 * MSS);
    skb = h->gro.flush_take(0, false);
    ASSERT_NE(skb, nullptr);
    EXPECT_EQ(skb->flow, 5u);
    EXPECT_EQ(skb->gso_segs, 1u);
    skb = h->gro.flush_take(0, false);
    ASSERT_NE(skb, nullptr);
    EXPECT_EQ(skb->flow, 9u);
    EXPECT_EQ(h->gro.flush_take(0, false), nullptr);
    EXPECT_TRUE(h->gro.empty());
    EXPECT_EQ(h->gro.stats().skbs_up, 4u);
    EXPECT_EQ(h->gro.stats().segs_up, 6u);
}

// flush_take gives the skb in place, in the slot it was held in (no copy): it and its segments'
// frames stay as taken while later takes free other slots, until a hold takes its slot (the lowest
// free one), and that hold starts a fresh skb (one segment, no frame list) over it.
TEST(Gro, AFlushedSkbLiesInItsFreedSlotUntilAHoldTakesThatSlot) {
    auto h = std::make_unique<Harness>();
    for (const Packet& p : {gso_from_virtio(7, 0, 3), segment(5, 0)}) // slots 0, 1
        ASSERT_EQ(h->gro.dev_gro_receive(h->cpu, p).kind, Gro::Verdict::HELD);
    const Packet* first = h->gro.flush_take(0, false);
    ASSERT_NE(first, nullptr);
    const Packet* second = h->gro.flush_take(0, false);
    ASSERT_NE(second, nullptr);
    EXPECT_NE(first, second);
    EXPECT_EQ(second->flow, 5u);
    EXPECT_EQ(second->frag_data, nullptr);
    EXPECT_EQ(first->flow, 7u); // unchanged by the second take
    EXPECT_EQ(first->gso_segs, 3u);
    EXPECT_EQ(first->gso_size, MSS);
    ASSERT_NE(first->frag_data, nullptr);
    EXPECT_EQ(first->frag_data[1], 0x100000u + MSS);
    EXPECT_EQ(first->frag_data[2], 0x100000u + 2 * MSS);
    EXPECT_TRUE(h->gro.empty());
    ASSERT_EQ(h->gro.dev_gro_receive(h->cpu, segment(9, 0)).kind, Gro::Verdict::HELD); // slot 0
    EXPECT_EQ(first->flow, 9u); // the slot's new skb
    const Packet* third = h->gro.flush_take(0, false);
    EXPECT_EQ(third, first);
    EXPECT_EQ(third->gso_segs, 1u);
    EXPECT_EQ(third->frag_data, nullptr);
    EXPECT_EQ(third->payload, MSS);
    EXPECT_EQ(h->gro.stats().skbs_up, 3u);
    EXPECT_EQ(h->gro.stats().segs_up, 5u);
}

} // namespace
} // namespace kdsim::net
