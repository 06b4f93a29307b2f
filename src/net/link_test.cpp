// The link's sender queue (net/link.h): what it holds, and what leaves it.
#include "net/link.h"

#include "net/napi.h"
#include "net/nic.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace kdsim::net {
namespace {

// Two NICs on a 1 Gbit/s link with a 1 ms latency and a 10-frame queue per direction. A 1514-byte
// frame takes (1514 + 24) x 8 bits / 1 Gbit/s = 12.304 us to serialise.
struct Ends {
    engine::Simulation sim{1};
    kernel::Cpu a{sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    kernel::Cpu b{sim, 1, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    Softnet sa{a}, sb{b};
    Nic na{sa, 40, NetCosts{}, "a.eth0"}, nb{sb, 40, NetCosts{}, "b.eth0"};
    Link link{sim, 1'000'000'000, engine::PS_PER_MS, 10};
    Ends() { link.attach(na, nb); }
    // Frames of 1514 bytes `na` hands the link now, until it refuses one: how many it took.
    int fill() {
        Packet p = transport_packet(FrameKind::TCP_DATA, 1448, 52, 0, 0);
        int n = 0;
        while (n < 100 && link.transmit(na, p)) ++n;
        return n;
    }
};

TEST(Link, AFrameThatHasLeftTheSenderTakesNoQueueRoomWhileItPropagates) {
    // At t = 0 ten frames fill the queue. By 10 x 12.304 = 123.04 us all ten have been serialised;
    // they are on the wire until 1 ms + 12.304 us at the earliest, and the queue takes ten more.
    Ends e;
    EXPECT_EQ(e.fill(), 10);
    e.sim.run(123'040'000); // ps
    EXPECT_EQ(e.fill(), 10);
    EXPECT_EQ(e.link.frames(), 20u);
}

TEST(Link, AFrameBeingSerialisedStillTakesQueueRoom) {
    // One ps before the tenth frame's end (123.04 us) it is still being serialised: one frame room.
    Ends e;
    EXPECT_EQ(e.fill(), 10);
    e.sim.run(123'040'000 - 1);
    EXPECT_EQ(e.fill(), 9);
}

TEST(Link, AFramesWireTimeIsItsBitsOverTheRateRoundedDown) {
    // (len, at least 60, + 24) x 8 bits x 10^12 ps / rate, rounded down: at 7 Gbit/s a 1500-byte
    // frame is 12,192 bits, 1,741,714.28 ps -> 1,741,714; a 10-byte frame counts as 60: 672 bits,
    // 96,000 ps. At 999,999,937 bit/s (coprime to 10^12) 12,192 bits take 12,192,000.77 ps ->
    // 12,192,000; a 3,000,000-byte frame (24,000,192 bits, past the 18,446,744 bits whose product
    // with 10^12 fits in 64 bits) 24,000,193,512.19 ps -> 24,000,193,512.
    engine::Simulation sim{1};
    Link fast{sim, 7'000'000'000, 0};
    Link odd{sim, 999'999'937, 0};
    Packet p;
    p.len = 1500;
    EXPECT_EQ(fast.wire_time(p), 1'741'714u);
    EXPECT_EQ(odd.wire_time(p), 12'192'000u);
    p.len = 10;
    EXPECT_EQ(fast.wire_time(p), 96'000u);
    p.len = 3'000'000;
    EXPECT_EQ(odd.wire_time(p), 24'000'193'512u);
}

// Arrivals and other events at the same tick, logged in the order the engine hands them out. The
// link's loss hook sees every frame as it arrives and discards it (the receiving NIC's CPU is not
// booted here), so each arrival also shows that a lost frame leaves the next one's arrival in
// place; a frame is logged by its seq, another event by its tag (100 and up).
struct Log {
    std::vector<std::pair<engine::Tick, std::uint64_t>> seen;
    engine::Simulation* sim = nullptr;
    static bool observe(const Packet& p, void* ctx) {
        auto* log = static_cast<Log*>(ctx);
        log->seen.emplace_back(log->sim->now(), p.seq);
        return true;
    }
};
struct Probe final : engine::EventTarget {
    Log* log;
    engine::Simulation* sim;
    void on_event(std::uint64_t tag) override { log->seen.emplace_back(sim->now(), tag); }
};

constexpr engine::Tick FRAME = 12'304'000;      // ps: one 1514-byte frame's serialisation
constexpr engine::Tick LATENCY = engine::PS_PER_MS;

TEST(Link, AnArrivalSortsAmongEventsAtItsTickAsIfScheduledWhenItsFrameWasSent) {
    // Frame 0 sent at 0 arrives at 1 ms + 12.304 us; frame 1, sent next, waits for the wire and
    // arrives 12.304 us later. Events at those ticks scheduled before a frame's send come before
    // its arrival, those scheduled after it come after: 0, 100 at the first tick; 101, 1, 102 at
    // the second (frame 1's arrival ranks where its send was, between 101 and 102, although only
    // frame 0's arrival is pending until frame 0 has arrived).
    Ends e;
    Log log;
    log.sim = &e.sim;
    e.link.set_loss(&Log::observe, &log);
    Probe probe;
    probe.log = &log;
    probe.sim = &e.sim;
    e.link.transmit(e.na, transport_packet(FrameKind::TCP_DATA, 1448, 52, 0, 0));
    e.sim.schedule_at(LATENCY + FRAME, &probe, 100);
    e.sim.schedule_at(LATENCY + 2 * FRAME, &probe, 101);
    e.link.transmit(e.na, transport_packet(FrameKind::TCP_DATA, 1448, 52, 1, 0));
    e.sim.schedule_at(LATENCY + 2 * FRAME, &probe, 102);
    e.sim.run(LATENCY + 3 * FRAME);
    const std::vector<std::pair<engine::Tick, std::uint64_t>> want{
        {LATENCY + FRAME, 0}, {LATENCY + FRAME, 100}, {LATENCY + 2 * FRAME, 101}, {LATENCY + 2 * FRAME, 1},
        {LATENCY + 2 * FRAME, 102}};
    EXPECT_EQ(log.seen, want);
    EXPECT_EQ(e.link.frames_lost(), 2u);
}

TEST(Link, FramesBeyondTheRingArriveInOrderEachAheadOfEventsScheduledAfterItsSend) {
    // Ten frames at 0, ten more at 123.04 us (the first ten have left the sender, so the ring of
    // sixteen, the queue of ten rounded up to a power of two, grows to hold twenty in flight). The wire is busy without a gap, so frame i arrives at
    // 1 ms + (i + 1) x 12.304 us; an event scheduled at each of those ticks after all the sends
    // comes right after its frame.
    Ends e;
    Log log;
    log.sim = &e.sim;
    e.link.set_loss(&Log::observe, &log);
    Probe probe;
    probe.log = &log;
    probe.sim = &e.sim;
    for (std::uint64_t i = 0; i < 10; ++i)
        ASSERT_TRUE(e.link.transmit(e.na, transport_packet(FrameKind::TCP_DATA, 1448, 52, i, 0)));
    e.sim.run(10 * FRAME);
    for (std::uint64_t i = 10; i < 20; ++i)
        ASSERT_TRUE(e.link.transmit(e.na, transport_packet(FrameKind::TCP_DATA, 1448, 52, i, 0)));
    for (std::uint64_t i = 0; i < 20; ++i) e.sim.schedule_at(LATENCY + (i + 1) * FRAME, &probe, 100 + i);
    e.sim.run(LATENCY + 21 * FRAME);
    std::vector<std::pair<engine::Tick, std::uint64_t>> want;
    for (std::uint64_t i = 0; i < 20; ++i) {
        want.emplace_back(LATENCY + (i + 1) * FRAME, i);
        want.emplace_back(LATENCY + (i + 1) * FRAME, 100 + i);
    }
    EXPECT_EQ(log.seen, want);
    EXPECT_EQ(e.link.frames_lost(), 20u);
}

TEST(Link, EachFrameIsSerialisedForItsOwnLengthWhenLengthsAlternate) {
    // Back to back at 0 on one direction: 1514 bytes (12.304 us), a 66-byte ACK ((66 + 24) x 8 =
    // 720 bits, 0.72 us), another ACK, a 1514 again, a 0-byte frame (counted as 60: 672 bits,
    // 0.672 us) and an ACK. Each arrives 1 ms after the wire has carried it and those before it:
    // at 12.304, 13.024, 13.744, 26.048, 26.72 and 27.44 us past 1 ms.
    Ends e;
    Log log;
    log.sim = &e.sim;
    e.link.set_loss(&Log::observe, &log);
    const std::uint32_t lens[] = {1514, 66, 66, 1514, 0, 66};
    for (std::uint64_t i = 0; i < 6; ++i) {
        Packet p;
        p.len = lens[i];
        p.seq = i;
        ASSERT_TRUE(e.link.transmit(e.na, p));
    }
    e.sim.run(LATENCY + 3 * FRAME);
    const std::vector<std::pair<engine::Tick, std::uint64_t>> want{
        {LATENCY + 12'304'000, 0}, {LATENCY + 13'024'000, 1}, {LATENCY + 13'744'000, 2},
        {LATENCY + 26'048'000, 3}, {LATENCY + 26'720'000, 4}, {LATENCY + 27'440'000, 5}};
    EXPECT_EQ(log.seen, want);
}

// What arrives, whole (the frames a transmit_segment built in the queue).
struct Arrivals {
    std::vector<std::pair<engine::Tick, Packet>> seen;
    engine::Simulation* sim = nullptr;
    static bool observe(const Packet& p, void* ctx) {
        auto* a = static_cast<Arrivals*>(ctx);
        a->seen.emplace_back(a->sim->now(), p);
        return true;
    }
};

TEST(Link, ASegmentIsBuiltInTheQueueAsSkbSegmentWouldCutIt) {
    // A GSO skb of 3,000 payload bytes in segments of 1,448 (66 header bytes, seq 1,000, data at
    // 0x10000): 1,514, 1,514 and 66 + 104 = 170 bytes, seq 1,000, 2,448 and 3,896, data 0x10000,
    // + 1,448 and + 2,896, each a plain frame. Then a plain 66-byte ACK (gso_segs 1) as it is.
    // Serialised back to back: 12.304, 12.304, (170 + 24) x 8 = 1,552 bits 1.552 us, 0.72 us: they
    // arrive at 12.304, 24.608, 26.16 and 26.88 us past 1 ms. With the queue full (ten frames) the
    // next segment is dropped: nullptr.
    Ends e;
    Arrivals got;
    got.sim = &e.sim;
    e.link.set_loss(&Arrivals::observe, &got);
    Packet skb = transport_packet(FrameKind::TCP_DATA, 3000, 52, 1000, 0);
    skb.gso_segs = 3;
    skb.gso_size = 1448;
    skb.data = 0x10000;
    for (std::uint32_t i = 0; i < 3; ++i) {
        const Packet* f = e.link.transmit_segment(e.na, skb, i, 0);
        ASSERT_NE(f, nullptr);
        EXPECT_EQ(f->len, i < 2 ? 1514u : 170u);
        EXPECT_EQ(f->seq, 1000u + i * 1448);
    }
    Packet ack = transport_packet(FrameKind::TCP_ACK, 0, 52, 7, 0);
    ASSERT_NE(e.link.transmit_segment(e.na, ack, 0, 0), nullptr);
    e.sim.run(LATENCY + 3 * FRAME);
    ASSERT_EQ(got.seen.size(), 4u);
    const engine::Tick at[] = {12'304'000, 24'608'000, 26'160'000, 26'880'000};
    const std::uint32_t len[] = {1514, 1514, 170, 66}, payload[] = {1448, 1448, 104, 0};
    const std::uint64_t seq[] = {1000, 2448, 3896, 7}, data[] = {0x10000, 0x10000 + 1448, 0x10000 + 2896, 0};
    for (std::size_t i = 0; i < 4; ++i) {
        const auto& [t, f] = got.seen[i];
        EXPECT_EQ(t, LATENCY + at[i]) << i;
        EXPECT_EQ(f.len, len[i]) << i;
        EXPECT_EQ(f.payload, payload[i]) << i;
        EXPECT_EQ(f.seq, seq[i]) << i;
        EXPECT_EQ(f.data, data[i]) << i;
        EXPECT_EQ(f.gso_segs, 1u) << i;
        EXPECT_EQ(f.gso_size, 0u) << i;
        EXPECT_EQ(f.kind, i < 3 ? FrameKind::TCP_DATA : FrameKind::TCP_ACK) << i;
    }
    EXPECT_EQ(e.fill(), 10);
    EXPECT_EQ(e.link.transmit_segment(e.na, skb, 0, 0), nullptr);
}

} // namespace
} // namespace kdsim::net
