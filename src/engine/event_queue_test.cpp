// Tests of the engine's event queue (event_queue.h): order by (time, sequence) against
// independent references (std::multimap, std::stable_sort) through every tuning and size.
#include "engine/event_queue.h"
#include "engine/frame_pool.h"
#include "engine/rng.h"
#include "engine/simulation.h"
#include "engine/task.h"
#include "engine/time.h"

#include <gtest/gtest.h>

#include <pthread.h>

#include <algorithm>
#include <array>
#include <coroutine>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kdsim::engine {
namespace {

// ---------------------------------------------------------------------------------------------
// EventQueue
// ---------------------------------------------------------------------------------------------

TEST(EventQueue, EventIs32Bytes) { EXPECT_EQ(sizeof(Event), 32u); }

TEST(EventQueue, PopsInTimeOrder) {
    EventQueue q;
    const std::array<Tick, 7> times{50, 10, 40, 20, 70, 30, 60};
    for (std::size_t i = 0; i < times.size(); ++i) q.push(times[i], nullptr, i);
    EXPECT_EQ(q.size(), 7u);
    for (Tick want : {10, 20, 30, 40, 50, 60, 70}) {
        ASSERT_FALSE(q.empty());
        EXPECT_EQ(q.top().time, want);
        EXPECT_EQ(q.pop().time, want);
    }
    EXPECT_TRUE(q.empty());
}

TEST(EventQueue, EqualTimesPopInInsertionOrder) {
    EventQueue q;
    for (std::uint64_t i = 0; i < 100; ++i) q.push(5, nullptr, i);
    for (std::uint64_t i = 0; i < 100; ++i) EXPECT_EQ(q.pop().arg, i);
}

TEST(EventQueue, InterleavedPushPopMatchesStableSortOfTimeThenSequence) {
    // Reference: the pending events kept in insertion order; the next one out is the first
    // element after a std::stable_sort by time alone, i.e. ordered by (time, insertion order).
    EventQueue q;
    std::vector<std::pair<Tick, std::uint64_t>> pending; // (time, id), in insertion order
    Rng rng(42, "interleaved");
    std::uint64_t next_id = 0;
    for (int op = 0; op < 6000; ++op) {
        if (pending.empty() || rng.below(100) < 55) {
            Tick t = rng.below(20); // few distinct times: ties everywhere
            q.push(t, nullptr, next_id);
            pending.emplace_back(t, next_id++);
        } else {
            auto sorted = pending;
            std::stable_sort(sorted.begin(), sorted.end(),
                             [](const auto& a, const auto& b) { return a.first < b.first; });
            Event ev = q.pop();
            ASSERT_EQ(ev.time, sorted.front().first) << "op " << op;
            ASSERT_EQ(ev.arg, sorted.front().second) << "op " << op;
            pending.erase(std::find(pending.begin(), pending.end(), sorted.front()));
        }
        ASSERT_EQ(q.size(), pending.size());
    }
}

// The reference queue: std::multimap keeps equal keys in insertion order, so begin() is exactly
// the (time, insertion sequence) minimum.
using Reference = std::multimap<Tick, std::uint64_t>;

// Whether `ev` is the reference's earliest event (time and id); removes that one from `ref`.
::testing::AssertionResult take_earliest(Reference& ref, const Event& ev) {
    if (ref.empty()) return ::testing::AssertionFailure() << "the reference is empty";
    const auto [t, id] = *ref.begin();
    ref.erase(ref.begin());
    if (ev.time == t && ev.arg == id) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "got (" << ev.time << ", #" << ev.arg << "), expected (" << t << ", #" << id << ")";
}

// An event queue and its reference, fed the same pushes (ids 0, 1, 2, ... in push order).
struct Checked {
    Checked(EventQueue::Tuning tuning, std::uint64_t seed, std::string_view stream) : q(tuning), rng(seed, stream) {}
    EventQueue q;
    Reference ref;
    Rng rng;
    std::uint64_t id = 0;
    void push(Tick t) {
        q.push(t, nullptr, id);
        ref.emplace(t, id++);
    }
};

TEST(EventQueue, RandomisedHundredThousandOpsMatchMultimapReference) {
    Checked c(EventQueue::Tuning{}, 7, "multimap");
    auto& [q, ref, rng, id] = c;
    for (int op = 0; op < 100'000; ++op) {
        // Bias towards pushes for the first half and pops for the second, so the heap grows
        // to thousands of entries and drains again.
        const std::uint64_t push_pct = op < 50'000 ? 60 : 40;
        if (ref.empty() || rng.below(100) < push_pct) {
            c.push(rng.below(1000));
        } else {
            ASSERT_EQ(q.top().time, ref.begin()->first);
            ASSERT_TRUE(take_earliest(ref, q.pop())) << "op " << op;
        }
        ASSERT_EQ(q.size(), ref.size());
    }
    while (!ref.empty()) ASSERT_TRUE(take_earliest(ref, q.pop()));
    EXPECT_TRUE(q.empty());
}

TEST(EventQueue, EveryHeapSizeUpTo300DrainsInOrder) {
    // Each size has its own shape of last, partly filled node; all must drain sorted.
    Rng rng(17, "sizes");
    for (std::size_t n = 1; n <= 300; ++n) {
        EventQueue q;
        std::vector<std::pair<Tick, std::uint64_t>> want;
        for (std::uint64_t i = 0; i < n; ++i) {
            Tick t = rng.below(50);
            q.push(t, nullptr, i);
            want.emplace_back(t, i);
        }
        std::stable_sort(want.begin(), want.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        for (const auto& [t, id] : want) {
            Event ev = q.pop();
            ASSERT_EQ(ev.time, t) << "n=" << n;
            ASSERT_EQ(ev.arg, id) << "n=" << n;
        }
        ASSERT_TRUE(q.empty());
    }
}

TEST(EventQueue, SequenceNumbersAreAssignedInPushOrder) {
    EventQueue q;
    q.push(9, nullptr, 0);
    q.push(3, nullptr, 0);
    q.push(6, nullptr, 0);
    // Popped by time: 3 (second push, seq 1), 6 (third, seq 2), 9 (first, seq 0).
    EXPECT_EQ(q.pop().seq, 1u);
    EXPECT_EQ(q.pop().seq, 2u);
    EXPECT_EQ(q.pop().seq, 0u);
}

// The two tiers (heap, buckets, overflow) and the moves between them. Small tunings force
// every transition (spill, year lay-out, return to heap-only) to happen often.
struct TieredCase {
    const char* name;
    EventQueue::Tuning tuning;
};
const std::array<TieredCase, 4> kTunings{{
    {"default", EventQueue::Tuning{}},
    {"one-per-bucket", EventQueue::Tuning{1, 4, 2}},
    {"two-per-bucket", EventQueue::Tuning{2, 8, 1}},
    {"wide-buckets", EventQueue::Tuning{64, 16, 4}},
}};

// A push time drawn from one of several shapes: dense ties, a uniform window ahead of `now`,
// rare far-future outliers, times before `now` (the queue itself allows them) and the extremes.
Tick mixed_time(Rng& rng, Tick now) {
    switch (rng.below(8)) {
    case 0: return now;                                   // at now: ties with pending events
    case 1: return now + rng.below(4);                    // dense ties
    case 2: return now + 1'000'000 + rng.below(20'000'000); // a hold-model window
    case 3: return now + rng.below(1'000'000'000'000ULL);   // up to a second ahead
    case 4: return now > 1000 ? now - rng.below(1000) : 0; // earlier than the last taken
    case 5: return rng.below(16) == 0 ? TICK_MAX : TICK_MAX - rng.below(3); // the far end
    case 6: return rng.below(16) == 0 ? 0 : now + rng.below(100);
    default: return now + rng.below(50'000'000);
    }
}

TEST(EventQueue, EveryTuningMatchesMultimapThroughGrowthDrainAndRegrowth) {
    for (const TieredCase& c : kTunings) {
        Checked checked(c.tuning, 11, c.name);
        auto& [q, ref, rng, id] = checked;
        Tick now = 0;
        // Three phases: grow to thousands pending, drain to empty, grow again.
        for (int op = 0; op < 60'000; ++op) {
            const int phase = op / 20'000;
            const std::uint64_t push_pct = phase == 1 ? 30 : 65;
            if (ref.empty() || rng.below(100) < push_pct) {
                checked.push(mixed_time(rng, now));
            } else {
                ASSERT_EQ(q.top().time, ref.begin()->first) << c.name << " op " << op;
                const Event ev = q.pop();
                ASSERT_TRUE(take_earliest(ref, ev)) << c.name << " op " << op;
                if (ev.time != TICK_MAX) now = ev.time;
            }
            ASSERT_EQ(q.size(), ref.size()) << c.name << " op " << op;
        }
        while (!ref.empty()) ASSERT_TRUE(take_earliest(ref, q.pop())) << c.name;
        EXPECT_TRUE(q.empty()) << c.name;
    }
}

TEST(EventQueue, TakeThenPushesThenFinishMatchesMultimapLikeTheRunLoop) {
    // The run loop's protocol: take the earliest (every other step as the loop does it: peek,
    // which refills from the far tier, then take_peeked), let its handler push 0-3 events at or
    // after its time, then finish. A push may replace the taken event at the heap's root. At the
    // end the queue is drained by peek and take_peeked until peek finds nothing.
    for (const TieredCase& c : kTunings) {
        Checked checked(c.tuning, 23, c.name);
        auto& [q, ref, rng, id] = checked;
        while (id < 3000) checked.push(rng.below(20'000'000));
        for (int step = 0; step < 40'000 && !ref.empty(); ++step) {
            Event ev;
            if (step % 2) {
                const Event* next = q.peek();
                ASSERT_NE(next, nullptr) << c.name << " step " << step;
                ASSERT_EQ(next->time, ref.begin()->first) << c.name << " step " << step;
                ev = q.take_peeked();
            } else {
                ev = q.take();
            }
            ASSERT_TRUE(take_earliest(ref, ev)) << c.name << " step " << step;
            // Fewer pushes than takes after step 20,000, so the population falls to a few and
            // the queue goes back to the heap alone.
            const std::uint64_t pushes = rng.below(step < 20'000 ? 3 : 2);
            for (std::uint64_t k = 0; k < pushes; ++k) checked.push(ev.time + (rng.below(4) == 0 ? 0 : rng.below(20'000'000)));
            q.finish_take();
            ASSERT_EQ(q.size(), ref.size()) << c.name << " step " << step;
        }
        while (const Event* next = q.peek()) {
            ASSERT_EQ(next->time, ref.begin()->first) << c.name;
            ASSERT_TRUE(take_earliest(ref, q.take_peeked())) << c.name;
            q.finish_take();
        }
        EXPECT_TRUE(ref.empty()) << c.name;
        EXPECT_TRUE(q.empty()) << c.name;
    }
}

TEST(EventQueue, TheTakenEventsNextBoundIsTheSecondLeastAndItsLeastChildStartsTheFirstPush) {
    // Ten events in the heap alone (a full root node: nine below the root). Times by id:
    // #0 100, #1 300, #2 200, #3 500, #4 200, #5 900, #6 800, #7 700, #8 600, #9 400.
    EventQueue q;
    const std::array<Tick, 10> times{100, 300, 200, 500, 200, 900, 800, 700, 600, 400};
    for (std::size_t i = 0; i < times.size(); ++i) q.push(times[i], nullptr, i);
    // Take #0; the second least is #2 (200, pushed before #4 at 200).
    EXPECT_EQ(q.take().arg, 0u);
    EXPECT_EQ(q.next_time_bound(), 200u);
    // The handler's push at 200 (#10) sorts after #2 and #4, which tie with it and were pushed first.
    q.push(200, nullptr, 10);
    q.finish_take();
    // Take #2; the second least is #4 (200). A push at 150 (#11) sorts before every child of
    // the root and takes the root's slot.
    EXPECT_EQ(q.take().arg, 2u);
    EXPECT_EQ(q.next_time_bound(), 200u);
    q.push(150, nullptr, 11);
    q.finish_take();
    // Take #11 and push at 1000 (#12), after every pending event, with the bound looked up first.
    EXPECT_EQ(q.take().arg, 11u);
    EXPECT_EQ(q.next_time_bound(), 200u);
    q.push(1000, nullptr, 12);
    q.finish_take();
    // Sorted by (time, push order): #4 200, #10 200, #1 300, #9 400, #3 500, #8 600, #7 700,
    // #6 800, #5 900, #12 1000.
    for (std::uint64_t want : {4u, 10u, 1u, 9u, 3u, 8u, 7u, 6u, 5u, 12u}) EXPECT_EQ(q.pop().arg, want);
    EXPECT_TRUE(q.empty());
}

TEST(EventQueue, ASmallSetIsASortedRunThatBecomesTheHeapAt129EventsAndTheRunAgainAt64) {
    // 129 events #i at ((7 i) mod 129) * 10 ps: the times 0, 10, ..., 1280 once each, in a
    // shuffled order (7 is prime to 129 = 3 * 43). Time 10 k belongs to #(37 k mod 129), since
    // 7 * 37 = 259 = 1 mod 129. The 129th push overflows the 128-event run, so the near tier
    // becomes the heap.
    const auto id = [](std::uint64_t k) { return 37 * k % 129; };
    EventQueue q;
    for (std::uint64_t i = 0; i < 129; ++i) q.push((7 * i % 129) * 10, nullptr, i);
    EXPECT_EQ(q.size(), 129u);
    // Take #0 (time 0); the next is #37 at 10. A push at 10 (#200) ties with #37 and sorts after it.
    EXPECT_EQ(q.take().arg, 0u);
    EXPECT_EQ(q.next_time_bound(), 10u);
    q.push(10, nullptr, 200);
    q.finish_take();
    // 65 pops (#37, #200, then k = 2..64) leave the times 650..1280 (64 events): the heap becomes
    // the run again.
    EXPECT_EQ(q.pop().arg, 37u);
    EXPECT_EQ(q.pop().arg, 200u);
    for (std::uint64_t k = 2; k <= 64; ++k) EXPECT_EQ(q.pop().arg, id(k)) << "k=" << k;
    EXPECT_EQ(q.size(), 64u);
    // Take k = 65 (#83: 37 * 65 = 2405 = 18 * 129 + 83, at 650); the next is k = 66 (#120 at 660).
    // Its handler pushes at 655 (#201, into the taken event's place), then at 1300 (#202, after
    // all) and at 660 (#203, after k = 66's #120).
    EXPECT_EQ(q.take().arg, 83u);
    EXPECT_EQ(q.next_time_bound(), 660u);
    q.push(655, nullptr, 201);
    q.push(1300, nullptr, 202);
    q.push(660, nullptr, 203);
    q.finish_take();
    EXPECT_EQ(q.size(), 66u);
    EXPECT_EQ(q.pop().arg, 201u);
    EXPECT_EQ(q.pop().arg, 120u);
    EXPECT_EQ(q.pop().arg, 203u);
    for (std::uint64_t k = 67; k <= 128; ++k) EXPECT_EQ(q.pop().arg, id(k)) << "k=" << k;
    EXPECT_EQ(q.pop().arg, 202u);
    EXPECT_TRUE(q.empty());
}

TEST(EventQueue, APushThatSortsAfterMoreThanEightEventsOfTheRunFindsItsPlaceToo) {
    // The run's insertion walks from the least event past the ones that sort before the pushed
    // one, up to eight, and places one that sorts after more by a binary search. 20 events #i
    // at 10 i ps pushed in time order: from #9 on, each sorts after more than eight. Then #20 at
    // 55 (after #0..#5: six), #21 at 190 (a tie with #19: after all 21), #22 at 0 (a tie with
    // #0: after it alone) and #23 at 105 (after #0..#10, #20 and #22: 13, before #11..#19, #21).
    EventQueue q;
    for (std::uint64_t i = 0; i < 20; ++i) q.push(10 * i, nullptr, i);
    q.push(55, nullptr, 20);
    q.push(190, nullptr, 21);
    q.push(0, nullptr, 22);
    q.push(105, nullptr, 23);
    EXPECT_EQ(q.size(), 24u);
    // #0, #22, #1..#5, #20, #6..#10, #23, #11..#19, #21.
    std::vector<std::uint64_t> want{0, 22, 1, 2, 3, 4, 5, 20, 6, 7, 8, 9, 10, 23};
    for (std::uint64_t k = 11; k <= 19; ++k) want.push_back(k);
    want.push_back(21);
    for (std::uint64_t w : want) EXPECT_EQ(q.pop().arg, w) << "want=" << w;
    EXPECT_TRUE(q.empty());
}

TEST(EventQueue, APushSortsAfterEveryTieAndAReservedNumberAmongThemWithTheWalkEndingAtTheNinthEventOrBefore) {
    // A push's number is the newest, so its walk compares times alone and passes every pending
    // event at its time; an event pushed with a number reserved earlier compares (time, seq). The
    // walk stops at the ninth event from the least end (one that sorts after more is placed by
    // the search) or at the run's end. Numbers: #r reserved first (seq 0), then #0..#9 pushed at
    // 50 ps (seqs 1..10, a run of ten ties).
    EventQueue q;
    const std::uint64_t r = q.reserve_seq();
    for (std::uint64_t i = 0; i < 10; ++i) q.push(50, nullptr, i);
    // #10 at 50: after all ten ties, placed by the search (it sorts after the ninth event from
    // the least end, #8). #11 at 40: before every event, at the least end (the walk passes none).
    // #12 at 50 with the reserved seq 0: after #11, before #0..#10 (the walk passes #11 alone).
    q.push(50, nullptr, 10);
    q.push(40, nullptr, 11);
    q.push_seq(50, nullptr, 12, r);
    // #13 at 60 into a run of 13: after every event (the search); #14 at 0: first.
    q.push(60, nullptr, 13);
    q.push(0, nullptr, 14);
    EXPECT_EQ(q.size(), 15u);
    std::vector<std::uint64_t> want{14, 11, 12, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13};
    for (std::uint64_t w : want) EXPECT_EQ(q.pop().arg, w) << "want=" << w;
    EXPECT_TRUE(q.empty());
    // A run of one: a push at the same time sorts after it, one at an earlier time before it
    // (the walk stops at the sentinel), and a push at TICK_MAX - 1 after both.
    q.push(7, nullptr, 0);
    q.push(7, nullptr, 1);
    q.push(TICK_MAX - 1, nullptr, 2);
    q.push(3, nullptr, 3);
    for (std::uint64_t w : {3u, 0u, 1u, 2u}) EXPECT_EQ(q.pop().arg, w) << "want=" << w;
    EXPECT_TRUE(q.empty());
}

TEST(EventQueue, APushIntoARunOfAtMostNineEventsFindsTheSentinelsBelowItForTheDeepTest) {
    // The deep test reads the event nine below the free slot, which in a run of n <= 9 events is
    // one of the sentinels below the run (TICK_MAX, never before a push): the walk places the
    // push. For n = 0 .. 10 events at 10, 20, .., 10 n ps: a push at 10 n + 5 (after all of
    // them: the walk passes all n, or the search for n = 10), one at 1 (the least end), that one taken
    // and its slot refilled by a push at 10 n + 7 (the held slot's walk passes n); pops in order.
    for (std::uint64_t n = 0; n <= 10; ++n) {
        EventQueue q;
        for (std::uint64_t i = 1; i <= n; ++i) q.push(10 * i, nullptr, i);
        q.push(10 * n + 5, nullptr, 100);
        q.push(1, nullptr, 0);
        EXPECT_EQ(q.take().arg, 0u) << n;
        q.push(10 * n + 7, nullptr, 101); // into the taken event's slot
        q.finish_take();
        EXPECT_EQ(q.size(), n + 2) << n;
        for (std::uint64_t i = 1; i <= n; ++i) EXPECT_EQ(q.pop().arg, i) << n;
        EXPECT_EQ(q.pop().arg, 100u) << n;
        EXPECT_EQ(q.pop().arg, 101u) << n;
        EXPECT_TRUE(q.empty()) << n;
    }
}

TEST(EventQueue, PushesAfterTheTakenEventsBoundWasLookedUpMatchMultimapAtEverySize) {
    // The run loop asks for the next bound (Simulation::run_inline) before its handler's first
    // push, which then starts its sift-down below the root. Every heap size from 1 to 300 (the
    // heap alone: spill_at above it), ties everywhere; the bound must be the reference's second
    // least time exactly, and every take the reference's least. Then the tunings with buckets,
    // where the bound is a lower bound.
    for (const TieredCase& c : {TieredCase{"heap-only", EventQueue::Tuning{6, 1u << 20, 1u << 20}}, kTunings[0], kTunings[1],
                                kTunings[3]}) {
        const bool heap_only = std::string_view(c.name) == "heap-only";
        Checked checked(c.tuning, 31, c.name);
        auto& [q, ref, rng, id] = checked;
        for (int step = 0; step < 60'000; ++step) {
            // The population climbs to about 300 and falls back to a few, three times over.
            const int phase = (step / 10'000) % 2;
            if (ref.empty()) checked.push(rng.below(64));
            const Event ev = q.take();
            ASSERT_TRUE(take_earliest(ref, ev)) << c.name << " step " << step;
            if (rng.below(4) != 0) {
                const Tick bound = q.next_time_bound();
                const Tick second = ref.empty() ? TICK_MAX : ref.begin()->first;
                if (heap_only) ASSERT_EQ(bound, second) << c.name << " step " << step;
                else ASSERT_LE(bound, second) << c.name << " step " << step;
            }
            const std::uint64_t pushes = phase == 0 ? rng.below(2) + (ref.size() < 300 ? 1 : 0) : rng.below(2);
            for (std::uint64_t k = 0; k < pushes; ++k) checked.push(ev.time + rng.below(rng.below(2) ? 4 : 64));
            q.finish_take();
            ASSERT_EQ(q.size(), ref.size()) << c.name << " step " << step;
        }
        while (!ref.empty()) ASSERT_TRUE(take_earliest(ref, q.pop())) << c.name;
    }
}

TEST(EventQueue, BucketsOfEveryFillWithTiedTimesMoveToTheNearTierInTimeThenSequenceOrder) {
    // A bucket of up to 8 events is sorted by rank (padded with sentinels), a larger one by
    // insertion. Times on a coarse grid give buckets full of ties; the aimed fills (3 to 24 a
    // bucket) give every bucket size from 1 past the 8-event rank sort and the 32-event run.
    for (const std::size_t per_bucket : {3u, 5u, 8u, 12u, 24u}) {
        Checked checked(EventQueue::Tuning{per_bucket, 16, 4}, 29, "ranked");
        auto& [q, ref, rng, id] = checked;
        while (id < 2000) checked.push(rng.below(400) * 1000);
        for (int step = 0; step < 30'000 && !ref.empty(); ++step) {
            const Event ev = q.take();
            ASSERT_TRUE(take_earliest(ref, ev)) << "per_bucket " << per_bucket << " step " << step;
            const std::uint64_t pushes = rng.below(step < 15'000 ? 3 : 2);
            for (std::uint64_t k = 0; k < pushes; ++k) checked.push(ev.time + rng.below(400) * 1000);
            q.finish_take();
        }
        while (!ref.empty()) ASSERT_TRUE(take_earliest(ref, q.pop())) << "per_bucket " << per_bucket;
    }
}

TEST(EventQueue, ExtremeTimesZeroToTickMaxInOneYearDrainInOrder) {
    // A year spanning 0 .. TICK_MAX needs the widest bucket (2^63 ps) and a saturated end.
    EventQueue q(EventQueue::Tuning{1, 4, 1});
    const std::array<Tick, 9> times{TICK_MAX, 0, TICK_MAX - 1, Tick{1} << 63, 5, TICK_MAX, (Tick{1} << 63) - 1, 0, 42};
    for (std::size_t i = 0; i < times.size(); ++i) q.push(times[i], nullptr, i);
    // Sorted by (time, insertion): 0 (#1), 0 (#7), 5 (#4), 42 (#8), 2^63-1 (#6), 2^63 (#3),
    // TICK_MAX-1 (#2), TICK_MAX (#0), TICK_MAX (#5).
    const std::array<std::uint64_t, 9> want{1, 7, 4, 8, 6, 3, 2, 0, 5};
    for (std::uint64_t w : want) EXPECT_EQ(q.pop().arg, w);
    EXPECT_TRUE(q.empty());
}

TEST(EventQueue, HundredThousandPendingHoldEventsTakeAtMost64BytesEach) {
    // Issue 6's memory goal for the engine. 100,000 hold timers, each rescheduled 1-20 us
    // ahead, run until the layout is in its steady state; then all storage (heap array, chunk
    // pool, bucket table) is divided by the pending count.
    EventQueue q;
    Rng rng(1, "hold");
    constexpr std::size_t N = 100'000;
    for (std::size_t i = 0; i < N; ++i) q.push(PS_PER_US + rng.below(19 * PS_PER_US), nullptr, i);
    for (int i = 0; i < 1'000'000; ++i) {
        const Event ev = q.take();
        q.push(ev.time + PS_PER_US + rng.below(19 * PS_PER_US), nullptr, ev.arg);
        q.finish_take();
    }
    ASSERT_EQ(q.size(), N);
    EXPECT_LE(q.storage_bytes(), 64 * N);
    EXPECT_GE(q.storage_bytes(), sizeof(Event) * N); // every pending event is stored somewhere
}

TEST(EventQueue, FourThousandNinetyNineEventsFillTwoSlabsOfChunksAndPopInTimeOrder) {
    // 4,099 events (a prime) at the times (7 i mod 4099) * 10 ps for the event i: the default
    // tuning spills them from the run and the heap over the buckets and the overflow, whose
    // chunks of 8 events need at least 4,099 / 8 > 512 chunks, so more than two slabs of 256
    // (the chunk allocation's out-of-line path). The k-th event out is at k * 10 ps and is the
    // event i with 7 i = k (mod 4099), i = 2928 k mod 4099 (7 * 2928 = 5 * 4099 + 1).
    EventQueue q;
    constexpr std::uint64_t N = 4099;
    for (std::uint64_t i = 0; i < N; ++i) q.push(Tick(7 * i % N) * 10, nullptr, i);
    ASSERT_EQ(q.size(), N);
    EXPECT_GE(q.storage_bytes(), 2 * 256 * 8 * sizeof(Event)); // two slabs' events at least
    for (std::uint64_t k = 0; k < N; ++k) {
        const Event ev = q.pop();
        ASSERT_EQ(ev.time, Tick(k * 10)) << "pop " << k;
        ASSERT_EQ(ev.arg, 2928 * k % N) << "pop " << k;
    }
    EXPECT_TRUE(q.empty());
}

TEST(HeapEventQueue, MatchesEventQueueOrderOnTheSameOperations) {
    // The single-heap set kept as the benchmarks' control gives the same order.
    HeapEventQueue h;
    EventQueue q(EventQueue::Tuning{2, 8, 1});
    Rng rng(5, "control");
    Tick now = 0;
    for (int op = 0; op < 20'000; ++op) {
        if (q.empty() || rng.below(100) < 55) {
            const Tick t = mixed_time(rng, now);
            h.push(t, nullptr, static_cast<std::uint64_t>(op));
            q.push(t, nullptr, static_cast<std::uint64_t>(op));
        } else {
            const Event a = h.pop(), b = q.pop();
            ASSERT_EQ(a.time, b.time);
            ASSERT_EQ(a.arg, b.arg);
            ASSERT_EQ(a.seq, b.seq);
            if (a.time != TICK_MAX) now = a.time;
        }
    }
}

} // namespace
} // namespace kdsim::engine
