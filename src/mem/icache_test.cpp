// The L1 instruction cache and the kernel text layout against values worked by hand: a 32 KB
// 4-way L1I of 64 B lines has 32768 / (4 x 64) = 128 sets; a line's set is its number mod 128.
// A miss costs 26 cycles (e.g. an L2 of 30 cycles beyond an L1 of 4).
#include "mem/icache.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace kdsim::mem {
namespace {

L1iConfig l1i(Replacement r = Replacement::LRU, std::uint32_t prefetch = 0) {
    L1iConfig c;
    c.size = 32 * 1024;
    c.ways = 4;
    c.replacement = r;
    c.prefetch = prefetch;
    c.executed = 1;
    c.align = 64;
    return c;
}

constexpr std::uint32_t MISS = 26;

// A path of `bytes` of code starting at line `first`.
CodeSpan path(Line first, std::uint64_t bytes) { return CodeSpan{first, static_cast<std::uint32_t>(bytes / 64)}; }

TEST(InstructionCache, A40KBPathOnA32KB4WayLruL1iMissesEveryLineTheSecondTimeToo) {
    // 640 lines over 128 sets: 5 per set, one more than the ways; LRU evicts each line just
    // before it is needed again (cyclic access), so the second run misses all 640.
    InstructionCache ic(l1i(), 64, MISS, 1);
    EXPECT_EQ(ic.fetch(0, path(0, 40 * 1024)), 640u * MISS);
    EXPECT_EQ(ic.fetch(0, path(0, 40 * 1024)), 640u * MISS);
    EXPECT_EQ(ic.stats().misses, 1280u);
    EXPECT_EQ(ic.stats().hits, 0u);
}

TEST(InstructionCache, A16KBPathHitsEveryLineWhenItRunsBackToBack) {
    // 256 lines, 2 per set: the second run (a NAPI poll's next frame) finds them all.
    InstructionCache ic(l1i(), 64, MISS, 1);
    EXPECT_EQ(ic.fetch(0, path(0, 16 * 1024)), 256u * MISS);
    EXPECT_EQ(ic.fetch(0, path(0, 16 * 1024)), 0u);
    EXPECT_EQ(ic.stats().hits, 256u);
}

TEST(InstructionCache, APathInterleavedWithA20KBPathMissesWhatTheOtherEvicted) {
    // A: 16 KB at lines 0..255 (sets 0-127 twice). B: 20 KB at lines 256..575: sets 0-127 twice
    // and sets 0-63 a third time. In sets 0-63, A's 2 lines + B's 3 exceed the 4 ways: B's third
    // line evicts A's least recent line there (lines 0..63); in sets 64-127 all four fit.
    InstructionCache ic(l1i(), 64, MISS, 1);
    const CodeSpan a = path(0, 16 * 1024), b = path(256, 20 * 1024);
    ic.fetch(0, a);
    ic.fetch(0, b);
    int gone = 0;
    for (Line l = 0; l < 256; ++l) gone += !ic.holds(0, l);
    EXPECT_EQ(gone, 64);
    for (Line l = 0; l < 64; ++l) EXPECT_FALSE(ic.holds(0, l)) << l;
    // A again: in sets 0-63 line s misses and, filled, evicts the set's LRU line, A's own s + 128,
    // which then misses too: 2 x 64 misses; sets 64-127 hit.
    EXPECT_EQ(ic.fetch(0, a), 128u * MISS);
    // Without B between them, A's next run hits.
    EXPECT_EQ(ic.fetch(0, a), 0u);
}

TEST(InstructionCache, EachCpuHasItsOwnL1i) {
    InstructionCache ic(l1i(), 64, MISS, 2);
    ic.fetch(0, path(0, 4096));
    EXPECT_EQ(ic.fetch(1, path(0, 4096)), 64u * MISS); // CPU 1 fetches the same code cold
    EXPECT_EQ(ic.fetch(0, path(0, 4096)), 0u);
}

TEST(InstructionCache, NextLinePrefetchHidesTheLineAfterEachDemandMiss) {
    // 5 cold sequential lines with the next line requested on each demand miss: lines 0, 2, 4
    // are demand misses, 1 and 3 arrive with them.
    InstructionCache ic(l1i(Replacement::LRU, 1), 64, MISS, 1);
    EXPECT_EQ(ic.fetch(0, CodeSpan{0, 5}), 3u * MISS);
    EXPECT_EQ(ic.stats().misses, 5u);
    EXPECT_EQ(ic.stats().prefetched, 2u);
    // A hit between two missing lines ends the covered run: 10 hit; 11 is a demand miss, 12 is
    // covered; 13 is a demand miss.
    ic.fetch(0, CodeSpan{10, 1});
    EXPECT_EQ(ic.fetch(0, CodeSpan{10, 4}), 2u * MISS);
}

TEST(InstructionCache, SpansOfOneFetchAddUp) {
    InstructionCache ic(l1i(), 64, MISS, 1);
    const std::vector<CodeSpan> spans = {{0, 3}, {100, 2}};
    EXPECT_EQ(ic.fetch(0, spans), 5u * MISS);
    EXPECT_EQ(ic.fetch(0, spans), 0u);
}

TEST(InstructionCache, AGroupFetchGivesWhatTheSameSpansFetchedDirectlyGiveUnderEveryReplacement) {
    // Three groups sharing lines (B's span overlaps A's, C holds a line twice), on a small 1 KB
    // 2-way cache (8 sets) where they evict each other: fetch_group must stall, hit and miss
    // exactly as fetch of the same spans on a second cache fed the same sequence. Random
    // replacement also on 4 ways (4 sets), the Cortex-A9's L1I ways, which its walk takes as a
    // constant.
    const std::vector<std::vector<CodeSpan>> groups = {{{0, 6}}, {{4, 9}, {40, 3}}, {{20, 2}, {21, 5}}};
    // The Cortex-A9's 256 sets too (its walk takes the set mask as a constant): 64 KB of 64 B lines
    // x 4 ways, with groups whose lines 256 apart share sets (up to seven lines in a set; lines
    // 130-133, 386-388 and 642-643 in sets that a mask of 127 would take for sets 2-5).
    const std::vector<std::vector<CodeSpan>> wide = {{{0, 6}, {256, 4}, {512, 3}, {130, 4}},
                                                     {{4, 9}, {768, 3}, {1024, 2}, {386, 3}, {40, 3}},
                                                     {{20, 2}, {1280, 5}, {1301, 5}, {21, 5}, {642, 2}}};
    struct Shape {
        Replacement r;
        std::uint32_t ways;
        std::uint64_t size;
    };
    const Shape shapes[] = {{Replacement::LRU, 2, 1024},    {Replacement::ROUND_ROBIN, 2, 1024},
                            {Replacement::RANDOM, 2, 1024}, {Replacement::RANDOM, 4, 1024},
                            {Replacement::RANDOM, 4, 65536}};
    for (const auto& [r, ways, size] : shapes) {
        L1iConfig c = l1i(r, 1);
        c.size = size;
        c.ways = ways;
        const auto& gs = size == 65536 ? wide : groups;
        InstructionCache grouped(c, 64, MISS, 2), direct(c, 64, MISS, 2);
        grouped.set_groups(gs);
        const std::uint32_t seq[] = {0, 0, 1, 0, 2, 2, 1, 1, 0, 2, 0, 0, 1, 2, 2, 2, 0, 1, 0, 0};
        for (int cpu = 0; cpu < 2; ++cpu)
            for (std::uint32_t g : seq)
                EXPECT_EQ(grouped.fetch_group(cpu, g), direct.fetch(cpu, gs[g]))
                    << static_cast<int>(r) << " " << ways << " " << size;
        EXPECT_EQ(grouped.stats().hits, direct.stats().hits);
        EXPECT_EQ(grouped.stats().misses, direct.stats().misses);
        EXPECT_EQ(grouped.stats().prefetched, direct.stats().prefetched); // next-line prefetch of 1
        EXPECT_EQ(grouped.stats().stall_cycles, direct.stats().stall_cycles);
        EXPECT_GT(grouped.stats().prefetched, 0u);
        EXPECT_GT(grouped.stats().misses, 0u);
        EXPECT_GT(grouped.stats().hits, 0u);
    }
}

TEST(InstructionCache, AGroupStaysKnownWholeUntilAFillEvictsOneOfItsLines) {
    // A 1 KB 2-way round-robin L1I of 64 B lines: 8 sets, line l in set l mod 8. A = lines 0-2
    // (sets 0-2), B = lines 8 and 16 (both set 0), C = line 3 (set 3).
    L1iConfig c = l1i(Replacement::ROUND_ROBIN);
    c.size = 1024;
    c.ways = 2;
    InstructionCache ic(c, 64, MISS, 1);
    ic.set_groups({{{0, 3}}, {{8, 1}, {16, 1}}, {{3, 1}}});
    EXPECT_FALSE(ic.group_resident(0, 0)); // nothing known before a fetch
    EXPECT_EQ(ic.fetch_group(0, 0), 3u * MISS); // cold: 3 misses into empty ways
    EXPECT_TRUE(ic.group_resident(0, 0));
    EXPECT_EQ(ic.fetch_group(0, 2), MISS); // line 3 into set 3's empty way: evicts nothing
    EXPECT_TRUE(ic.group_resident(0, 0));
    EXPECT_EQ(ic.fetch_group(0, 0), 0u); // still whole: 3 hits
    EXPECT_EQ(ic.stats().hits, 3u);
    // B: line 8 takes set 0's empty way 1; line 16 finds set 0 full and evicts way 0 (round
    // robin's first victim), A's line 0.
    EXPECT_EQ(ic.fetch_group(0, 1), 2u * MISS);
    EXPECT_FALSE(ic.group_resident(0, 0));
    EXPECT_TRUE(ic.group_resident(0, 1));
    EXPECT_FALSE(ic.holds(0, 0));
    // A again: line 0 misses and evicts way 1 (line 8, B's); lines 1-2 hit.
    EXPECT_EQ(ic.fetch_group(0, 0), MISS);
    EXPECT_TRUE(ic.group_resident(0, 0));
    EXPECT_FALSE(ic.group_resident(0, 1));
    EXPECT_EQ(ic.stats().hits, 3u + 2u);
    EXPECT_EQ(ic.stats().misses, 3u + 1u + 2u + 1u);
}

TEST(InstructionCache, AGroupThatEvictsItsOwnLinesInA2WaySetIsNeverKnownWhole) {
    // Lines 0, 8 and 16 all map to set 0 of a 2-way 8-set round-robin L1I: the third fill evicts
    // the first (way 0), so the group is never whole after its fetch and every fetch walks it:
    // on the second run line 0 evicts way 1 (8), 8 evicts way 0 (16), 16 evicts way 1 (0).
    L1iConfig c = l1i(Replacement::ROUND_ROBIN);
    c.size = 1024;
    c.ways = 2;
    InstructionCache ic(c, 64, MISS, 1);
    ic.set_groups({{{0, 1}, {8, 1}, {16, 1}}});
    for (int run = 0; run < 3; ++run) {
        EXPECT_EQ(ic.fetch_group(0, 0), 3u * MISS) << run;
        EXPECT_FALSE(ic.group_resident(0, 0)) << run;
    }
    EXPECT_EQ(ic.stats().hits, 0u);
    EXPECT_EQ(ic.stats().misses, 9u);
}

TEST(InstructionCache, ASpanAcrossA64LineWordOfAbsenceBitsMissesOnlyItsAbsentLines) {
    // Random replacement (a hit is presence alone, so the absence bits are walked). Lines
    // 60..69 straddle the first and second 64-bit words of absence bits. Fetch 62 and 65 alone
    // first (2 misses), then 60..69: 8 misses (60, 61, 63, 64, 66..69), 2 hits. A 32 KB 4-way
    // L1I has 128 sets: no two of these lines share a set, nothing is evicted. (The third group,
    // line 0, never fetched, starts the bits' range at line 0.)
    InstructionCache ic(l1i(Replacement::RANDOM), 64, MISS, 1);
    ic.set_groups({{{60, 10}}, {{62, 1}, {65, 1}}, {{0, 1}}});
    EXPECT_EQ(ic.fetch_group(0, 1), 2u * MISS);
    EXPECT_EQ(ic.fetch_group(0, 0), 8u * MISS);
    EXPECT_EQ(ic.stats().hits, 2u);
    EXPECT_EQ(ic.stats().misses, 10u);
    EXPECT_TRUE(ic.group_resident(0, 0));
    EXPECT_TRUE(ic.group_resident(0, 1));
    EXPECT_EQ(ic.fetch_group(0, 0), 0u);
    EXPECT_EQ(ic.stats().hits, 12u);
}

TEST(InstructionCache, RandomDrawsRunOnFromAGroupFetchToASpanFetchAndBack) {
    // Two sets of 2 ways (256 B of 64 B lines), random replacement: the even lines 0, 2, 4, 6
    // and 200 all map to set 0. The LFSR from 0xACE1 gives 0xE270, 0x7138, 0x389C, 0x1C4E,
    // 0x0E27, 0xB313, 0xED89, 0xC2C4, 0x6162, so the draws pick ways 0, 0, 0, 0, 1, 1, 1, 0, 0
    // (the low bit). The group's fetches take the group walk (the cache's arrays and LFSR in
    // locals); the fetch of spans between them, with line 200 outside the absence bits, takes
    // the walk over the cache itself, so the draws must run on from one path to the other and
    // back.
    L1iConfig c = l1i(Replacement::RANDOM);
    c.size = 256;
    c.ways = 2;
    InstructionCache ic(c, 64, MISS, 1);
    ic.set_groups({{{0, 1}, {2, 1}, {4, 1}, {6, 1}}});
    // 0, 2 into the empty ways 0, 1; 4: draw 1 (way 0) evicts 0; 6: draw 2 (way 0) evicts 4.
    EXPECT_EQ(ic.fetch_group(0, 0), 4u * MISS);
    EXPECT_FALSE(ic.group_resident(0, 0)); // line 0 was evicted
    EXPECT_TRUE(ic.holds(0, 6));
    EXPECT_TRUE(ic.holds(0, 2));
    // 0: draw 3 (way 0) evicts 6; 200: draw 4 (way 0) evicts 0; 4: draw 5 (way 1) evicts 2.
    const std::vector<CodeSpan> spans = {{0, 1}, {200, 1}, {4, 1}};
    EXPECT_EQ(ic.fetch(0, spans), 3u * MISS);
    EXPECT_TRUE(ic.holds(0, 200));
    EXPECT_TRUE(ic.holds(0, 4));
    EXPECT_FALSE(ic.holds(0, 0));
    EXPECT_FALSE(ic.holds(0, 2));
    EXPECT_FALSE(ic.holds(0, 6));
    // 0: draw 6 (way 1) evicts 4; 2: draw 7 (way 1) evicts 0; 4: draw 8 (way 0) evicts 200;
    // 6: draw 9 (way 0) evicts 4.
    EXPECT_EQ(ic.fetch_group(0, 0), 4u * MISS);
    EXPECT_TRUE(ic.holds(0, 6));
    EXPECT_TRUE(ic.holds(0, 2));
    EXPECT_FALSE(ic.holds(0, 200));
    EXPECT_EQ(ic.stats().misses, 4u + 3u + 4u);
    EXPECT_EQ(ic.stats().hits, 0u);
}

TEST(InstructionCache, ARandomGroupFetchRefillsALaterLineOfItsWordThatAFillEvictedButNotAnEarlierOne) {
    // Two sets of 2 ways (256 B of 64 B lines), random replacement, no prefetch: line l in set
    // l mod 2. The LFSR's first draws pick ways 0, 0 (0xE270, 0x7138: the low bit). X = lines 2
    // and 4 (set 0) fill set 0's empty ways 0 and 1. Then Y = lines 0-4, one word of presence
    // bits: 2 and 4 present, so 0, 1, 3 missing. 0 finds set 0 full: draw 1, way 0, evicts 2, a
    // line of Y's word above 0, which must be filled in its turn; 1 takes set 1's empty way 0; 2
    // finds set 0 full: draw 2, way 0, evicts 0, below 2, not fetched again; 3 takes set 1's way
    // 1; 4 hits. 4 misses, 1 hit; 0 left absent.
    L1iConfig c = l1i(Replacement::RANDOM);
    c.size = 256;
    c.ways = 2;
    InstructionCache ic(c, 64, MISS, 1);
    ic.set_groups({{{2, 1}, {4, 1}}, {{0, 5}}});
    EXPECT_EQ(ic.fetch_group(0, 0), 2u * MISS);
    EXPECT_EQ(ic.fetch_group(0, 1), 4u * MISS);
    EXPECT_EQ(ic.stats().misses, 2u + 4u);
    EXPECT_EQ(ic.stats().hits, 1u);
    EXPECT_FALSE(ic.holds(0, 0));
    for (Line l : {1, 2, 3, 4}) EXPECT_TRUE(ic.holds(0, l)) << l;
    EXPECT_FALSE(ic.group_resident(0, 1)); // its line 0 left
    EXPECT_FALSE(ic.group_resident(0, 0)); // its line 2 left (and came back)
}

TEST(InstructionCache, ARandomGroupFetchStartsEachSpansPrefetchAfreshEvenWhereItsFirstWordIsAllPresent) {
    // A 32 KB 4-way random L1I (128 sets: nothing evicted), next-line prefetch of 1. G0 = line 63
    // (the last line of the first word of absence bits); G1 = line 64, then lines 63-65. G0: 63
    // misses. G1: 64 misses on demand (its fill requests 65 with it); the second span's first
    // word (63) is all present and 64 hits, but 65 is its own span's first miss, so it stalls
    // too: the prefetch of 64's miss counts for 64's span alone. 2 stalls, none prefetched.
    InstructionCache ic(l1i(Replacement::RANDOM, 1), 64, MISS, 1);
    ic.set_groups({{{63, 1}}, {{64, 1}, {63, 3}}});
    EXPECT_EQ(ic.fetch_group(0, 0), MISS);
    EXPECT_EQ(ic.fetch_group(0, 1), 2u * MISS);
    EXPECT_EQ(ic.stats().prefetched, 0u);
    EXPECT_EQ(ic.stats().misses, 3u);
    EXPECT_EQ(ic.stats().hits, 2u); // 63 and 64 in G1's second span
    EXPECT_TRUE(ic.group_resident(0, 1));
}

TEST(InstructionCache, TheCortexA9sWalkRefillsAVictimOfALaterWordButNotOfAnEarlierOne) {
    // The Cortex-A9's L1I: 32 KB, 4 ways of 32 B lines, 256 sets (line l in set l mod 256),
    // random replacement, next-line prefetch of 1. Lines 0, 256, 512, 768, 1024 share set 0 and
    // lie in five different words of absence bits (64 lines each); 64 lines of one word are in
    // 64 different sets, so no fill evicts a line of its own word. The LFSR's draws from 0xACE1
    // pick ways 0, 0, 0, 2 (0xE270, 0x7138, 0x389C, 0x1C4E).
    L1iConfig c = l1i(Replacement::RANDOM, 1);
    InstructionCache ic(c, 32, MISS, 1);
    ic.set_groups({{{256, 1}, {0, 1}, {512, 1}, {768, 1}}, {{1024, 2}, {256, 2}}});
    // G0: 256, 0, 512, 768 into set 0's empty ways 0-3, each its span's demand miss.
    EXPECT_EQ(ic.fetch_group(0, 0), 4u * MISS);
    // G1's first span: 1024 draws way 0 and evicts 256 (a line of G1's later word), 1025 fills
    // set 1 (prefetched). Its second span (the prefetch cover starts anew): 256, missing again,
    // draws way 0 and evicts 1024 (G1's earlier word: not fetched again), 257 fills set 1
    // (prefetched). 4 misses, 2 stalls.
    EXPECT_EQ(ic.fetch_group(0, 1), 2u * MISS);
    EXPECT_EQ(ic.stats().misses, 8u);
    EXPECT_EQ(ic.stats().prefetched, 2u);
    EXPECT_EQ(ic.stats().hits, 0u);
    EXPECT_FALSE(ic.holds(0, 1024));
    for (Line l : {0, 256, 257, 512, 768, 1025}) EXPECT_TRUE(ic.holds(0, l)) << l;
    EXPECT_FALSE(ic.group_resident(0, 0)); // its 256 left (and came back)
    EXPECT_FALSE(ic.group_resident(0, 1)); // its 1024 left
    // G0 again: every line present, 4 hits and no walk next time.
    EXPECT_EQ(ic.fetch_group(0, 0), 0u);
    EXPECT_TRUE(ic.group_resident(0, 0));
    // G1 again: 1024 draws way 0 and evicts 256; 1025 hits; 256 draws way 2 and evicts 512; 257
    // hits. 2 misses, each its span's first: 2 stalls.
    EXPECT_EQ(ic.fetch_group(0, 1), 2u * MISS);
    EXPECT_EQ(ic.stats().misses, 10u);
    EXPECT_EQ(ic.stats().prefetched, 2u);
    EXPECT_EQ(ic.stats().hits, 4u + 2u);
    EXPECT_FALSE(ic.holds(0, 512));
    for (Line l : {0, 256, 257, 768, 1024, 1025}) EXPECT_TRUE(ic.holds(0, l)) << l;
    EXPECT_FALSE(ic.group_resident(0, 0));
    EXPECT_FALSE(ic.group_resident(0, 1)); // its 256 left (and came back)
}

TEST(InstructionCache, TheCortexA9sWalkDrawsForAFullSetAndTakesAnEmptyWayInTheSameWord) {
    // The Cortex-A9's L1I (256 sets of 4 ways, 32 B lines), a next-line prefetch of 1. Lines 256,
    // 512, 768 and 1024 fetched before set_groups fill set 0's ways 0-3 (4 stalls): set_groups
    // knows set 0 full and set 1 empty. G0 = lines 0 and 1 (one word; sets 0 and 1), G1 = 256,
    // 512, 768, 1024 (four words). The LFSR's draws from 0xACE1 pick ways 0, 0, 0, 2, 3, 3
    // (0xE270, 0x7138, 0x389C, 0x1C4E, 0x0E27, 0xB313); a fill into a set with an empty way draws
    // nothing.
    InstructionCache ic(l1i(Replacement::RANDOM, 1), 32, MISS, 1);
    for (Line l : {256, 512, 768, 1024}) EXPECT_EQ(ic.fetch(0, CodeSpan{l, 1}), MISS);
    ic.set_groups({{{0, 2}}, {{256, 1}, {512, 1}, {768, 1}, {1024, 1}}});
    // G0: 0 draws way 0 (evicting 256), a demand miss; 1 takes set 1's empty way 0, prefetched.
    EXPECT_EQ(ic.fetch_group(0, 0), MISS);
    EXPECT_FALSE(ic.holds(0, 256));
    // G1: 256 draws way 0 (evicting 0); 512, 768, 1024 hit.
    EXPECT_EQ(ic.fetch_group(0, 1), MISS);
    EXPECT_FALSE(ic.holds(0, 0));
    // G0: 0 draws way 0 (evicting 256); 1 hits.
    EXPECT_EQ(ic.fetch_group(0, 0), MISS);
    // G1: 256 draws way 2 (evicting 768, a later word's); 512 hits; 768 draws way 3 (evicting
    // 1024, a later word's); 1024 draws way 3 (evicting 768: an earlier word's, not fetched
    // again). 3 misses, each its span's first: 3 stalls.
    EXPECT_EQ(ic.fetch_group(0, 1), 3u * MISS);
    for (Line l : {0, 1, 256, 512, 1024}) EXPECT_TRUE(ic.holds(0, l)) << l;
    EXPECT_FALSE(ic.holds(0, 768));
    EXPECT_EQ(ic.stats().misses, 4u + 2u + 1u + 1u + 3u);
    EXPECT_EQ(ic.stats().prefetched, 1u);
    EXPECT_EQ(ic.stats().hits, 3u + 1u + 1u);
    EXPECT_EQ(ic.stats().stall_cycles, 10u * MISS);
}

TEST(InstructionCache, TheCortexA9sWalkEndsAtItsGroupsLastWordEvenWhereThatWordIsAllPresent) {
    // The Cortex-A9's L1I (256 sets of 4 ways, 32 B lines), a next-line prefetch of 1, two CPUs.
    // G0 = lines 0 and 64 (words 0 and 1; sets 0 and 64), G1 = line 128 (word 2), G2 = 256, 512,
    // 768, 1024 (set 0; words 4, 8, 12, 16). The walk of a group stops after its last word (a
    // sentinel entry whose word is all ones) and takes the group's line count from there: here
    // G0's last word is all present, and G1's lines, listed next, are not filled.
    InstructionCache ic(l1i(Replacement::RANDOM, 1), 32, MISS, 2);
    ic.set_groups({{{0, 1}, {64, 1}}, {{128, 1}}, {{256, 1}, {512, 1}, {768, 1}, {1024, 1}}});
    // G0: 0 and 64 into empty ways, each its span's demand miss.
    EXPECT_EQ(ic.fetch_group(0, 0), 2u * MISS);
    // G2: 256, 512, 768 into set 0's ways 1-3; 1024 draws way 0 (0xE270) and evicts 0.
    EXPECT_EQ(ic.fetch_group(0, 2), 4u * MISS);
    EXPECT_FALSE(ic.holds(0, 0));
    EXPECT_FALSE(ic.group_resident(0, 0));
    // G0: 0 draws way 0 (0x7138) and evicts 1024; 64 hits (G0's last word: all present).
    EXPECT_EQ(ic.fetch_group(0, 0), MISS);
    EXPECT_FALSE(ic.holds(0, 128));
    EXPECT_FALSE(ic.holds(0, 1024));
    EXPECT_TRUE(ic.group_resident(0, 0));
    EXPECT_EQ(ic.stats().misses, 2u + 4u + 1u);
    EXPECT_EQ(ic.stats().hits, 1u);
    EXPECT_EQ(ic.stats().prefetched, 0u);
    EXPECT_EQ(ic.stats().stall_cycles, 7u * MISS);
    // CPU 1 (its bits and sentinel after CPU 0's): G1's 128 into an empty way; then G0's two.
    EXPECT_EQ(ic.fetch_group(1, 1), MISS);
    EXPECT_EQ(ic.fetch_group(1, 0), 2u * MISS);
    EXPECT_FALSE(ic.holds(1, 256));
    EXPECT_EQ(ic.stats().misses, 7u + 3u);
    EXPECT_EQ(ic.stats().hits, 1u);
}

TEST(InstructionCache, TheCortexA9sWalkLeavesTheBitsAloneForAVictimOutsideTheirRange) {
    // The Cortex-A9's L1I (256 sets of 4 ways, 32 B lines), two CPUs, no prefetch. G0 = lines 0,
    // 256, 512, 768 (set 0), G1 and G2 = line 192 (set 192): the bits cover lines 0-768, 13 words
    // a CPU, CPU 1's after CPU 0's. Line 1024 (set 0), outside the range, fetched on CPU 0 before
    // or after set_groups, takes set 0's way 0; G0's 0, 256, 512 take ways 1-3 and 768 draws way 0
    // (0xE270) and evicts 1024. Taken as a line of the range, 1024's bit would be bit 0 of word
    // 16 from CPU 0's first: CPU 1's word 3, line 192's, which CPU 1's G2 would then miss.
    const L1iConfig c = l1i(Replacement::RANDOM);
    for (const bool before : {true, false}) {
        InstructionCache ic(c, 32, MISS, 2);
        const std::vector<std::vector<CodeSpan>> groups = {{{0, 1}, {256, 1}, {512, 1}, {768, 1}}, {{192, 1}}, {{192, 1}}};
        if (before) ic.fetch(0, CodeSpan{1024, 1});
        ic.set_groups(groups);
        EXPECT_EQ(ic.fetch_group(1, 1), MISS) << before;
        if (!before) ic.fetch(0, CodeSpan{1024, 1});
        EXPECT_EQ(ic.fetch_group(0, 0), 4u * MISS) << before;
        EXPECT_FALSE(ic.holds(0, 1024)) << before;
        EXPECT_TRUE(ic.group_resident(0, 0)) << before;
        EXPECT_EQ(ic.fetch_group(1, 2), 0u) << before; // 192 present on CPU 1: a hit
        EXPECT_EQ(ic.stats().misses, 1u + 1u + 4u) << before;
        EXPECT_EQ(ic.stats().hits, 1u) << before;
    }
}

TEST(InstructionCache, AGroupOfNoLinesIsKnownWholeFromTheStartWhereAHitIsPresenceAlone) {
    InstructionCache random(l1i(Replacement::RANDOM), 64, MISS, 2);
    random.set_groups({{}, {{0, 2}}});
    EXPECT_TRUE(random.group_resident(1, 0));
    EXPECT_FALSE(random.group_resident(1, 1));
    EXPECT_EQ(random.fetch_group(1, 0), 0u);
    EXPECT_EQ(random.fetch_group(1, 1), 2u * MISS);
    EXPECT_EQ(random.stats().hits, 0u);
    InstructionCache lru(l1i(Replacement::LRU), 64, MISS, 1);
    lru.set_groups({{}, {{0, 2}}});
    EXPECT_FALSE(lru.group_resident(0, 0));
    EXPECT_EQ(lru.fetch_group(0, 0), 0u);
}

TEST(InstructionCache, AnLruGroupFetchStampsEachHitInTheWayItsLineWasFilledIn) {
    // A 1 KB 2-way LRU L1I of 64 B lines: 8 sets; lines 0, 8, 16, 24 all in set 0. Each hit of a
    // group fetch stamps its line in the way it was filled in, whichever path filled it: 0 before
    // set_groups, 8 by a span fetch, 16 and 0 again by group fetches; the least recently used
    // line of the set is each miss's victim.
    L1iConfig c = l1i(Replacement::LRU);
    c.size = 1024;
    c.ways = 2;
    InstructionCache ic(c, 64, MISS, 1);
    EXPECT_EQ(ic.fetch(0, CodeSpan{0, 1}), MISS); // way 0
    ic.set_groups({{{0, 1}}, {{8, 1}}, {{16, 1}}, {{24, 1}}});
    EXPECT_EQ(ic.fetch(0, CodeSpan{8, 1}), MISS); // way 1
    EXPECT_EQ(ic.fetch_group(0, 0), 0u);          // 0 used, then 8: 0 the least recent
    EXPECT_EQ(ic.fetch_group(0, 1), 0u);
    EXPECT_EQ(ic.fetch_group(0, 2), MISS); // 16 takes 0's way 0
    EXPECT_FALSE(ic.holds(0, 0));
    EXPECT_TRUE(ic.holds(0, 8));
    EXPECT_EQ(ic.fetch_group(0, 2), 0u);   // 16 used after 8: 8 the least recent
    EXPECT_EQ(ic.fetch_group(0, 0), MISS); // 0 takes 8's way 1
    EXPECT_FALSE(ic.holds(0, 8));
    EXPECT_TRUE(ic.holds(0, 16));
    EXPECT_EQ(ic.fetch_group(0, 0), 0u);   // 0 used again, in way 1
    EXPECT_EQ(ic.fetch_group(0, 3), MISS); // 24 takes 16's way 0
    EXPECT_FALSE(ic.holds(0, 16));
    EXPECT_TRUE(ic.holds(0, 0));
    EXPECT_TRUE(ic.holds(0, 24));
    EXPECT_EQ(ic.stats().misses, 5u);
    EXPECT_EQ(ic.stats().hits, 4u);
}

TEST(InstructionCache, RejectsAGroupOf2To30LinesOrMore) {
    // A walk counts its misses in 30 bits: two spans of 2^29 lines are one line too many.
    InstructionCache ic(l1i(Replacement::RANDOM), 64, MISS, 1);
    const CodeSpan half{0, std::uint32_t{1} << 29};
    EXPECT_THROW(ic.set_groups({{half, half}}), std::invalid_argument);
}

TEST(InstructionCache, RejectsAGroupLineAtOrAbove2To32Less1LessThePrefetch) {
    // A walk's lines and its prefetch cover (a demand miss's line + 1 + prefetch) are 32-bit: with
    // a prefetch of 1, line 2^32 - 2 would request up to 2^32. (No group at 2^32 - 3 is tried: its
    // absence bits would take 512 MB.)
    InstructionCache one(l1i(Replacement::RANDOM, 1), 32, MISS, 1);
    EXPECT_THROW(one.set_groups({{{(Line{1} << 32) - 2, 1}}}), std::invalid_argument);
    InstructionCache none(l1i(Replacement::RANDOM, 0), 32, MISS, 1);
    EXPECT_THROW(none.set_groups({{{0, 1}}, {{(Line{1} << 32) - 1, 1}}}), std::invalid_argument);
}

TEST(InstructionCache, TheCortexA9sWalkCarriesAPrefetchOfTwoAcrossAWordOfAbsenceBits) {
    // The Cortex-A9's L1I (256 sets of 4 ways, 32 B lines: nothing evicted here), a next-line
    // prefetch of 2. G0 = lines 62-67: 62, 63 in the first word of absence bits, 64-67 in the
    // second. 62 misses on demand and requests 63 and 64; 63 and 64 (the next word: the same
    // span's cover) are prefetched; 65 is a demand miss (requesting 66 and 67), 66 and 67 are
    // prefetched. G1 = line 100, then lines 99-102: 100 misses on demand (requesting 101, 102);
    // in the second span (its cover anew) 99 is a demand miss (requesting 100, 101), 100 hits,
    // 101 is prefetched, 102 is a demand miss. 10 misses, 5 of them stalls, 5 prefetched.
    InstructionCache ic(l1i(Replacement::RANDOM, 2), 32, MISS, 1);
    ic.set_groups({{{62, 6}}, {{100, 1}, {99, 4}}});
    EXPECT_EQ(ic.fetch_group(0, 0), 2u * MISS);
    EXPECT_EQ(ic.stats().prefetched, 4u);
    EXPECT_EQ(ic.fetch_group(0, 1), 3u * MISS);
    EXPECT_EQ(ic.stats().misses, 6u + 4u);
    EXPECT_EQ(ic.stats().prefetched, 4u + 1u);
    EXPECT_EQ(ic.stats().hits, 1u);
    EXPECT_EQ(ic.stats().stall_cycles, 5u * MISS);
    EXPECT_EQ(ic.fetch_group(0, 0), 0u); // whole: 6 hits
    EXPECT_EQ(ic.stats().hits, 7u);
}

TEST(InstructionCache, ASpanOutOfThePreviousSpansPrefetchReachInItsWordIsWalkedAsItsOwn) {
    // set_groups joins a span's first word to the entry before it in the same word where the span
    // lies above that entry's lines by more than the prefetch reaches. The Cortex-A9's L1I (256
    // sets: nothing evicted here), a next-line prefetch of 1. G0 = 10-12, 14-15 (joined: 14 >=
    // 12 + 1 + 1), 13 (below: its own entry). 10 demand (requesting 11), 11 prefetched, 12 demand
    // (requesting 13), 14 demand, 15 prefetched; 13, its span's first miss, demand: 6 misses, 4
    // stalls. G1 = 30-32, 33 (within 32's reach: not joined): 30 demand, 31 prefetched, 32
    // demand (requesting 33); 33, its own span's first miss, demand: 4 misses, 3 stalls (2 had 33
    // been taken as requested by 32).
    InstructionCache ic(l1i(Replacement::RANDOM, 1), 32, MISS, 1);
    ic.set_groups({{{10, 3}, {14, 2}, {13, 1}}, {{30, 3}, {33, 1}}});
    EXPECT_EQ(ic.fetch_group(0, 0), 4u * MISS);
    EXPECT_EQ(ic.stats().prefetched, 2u);
    EXPECT_EQ(ic.fetch_group(0, 1), 3u * MISS);
    EXPECT_EQ(ic.stats().misses, 6u + 4u);
    EXPECT_EQ(ic.stats().prefetched, 2u + 1u);
    // The same against fetch of the spans, where lines evict each other (a 1 KB 2-way cache of 8
    // sets, and 4 ways of 256 sets with lines 256 apart): spans of a word ascending out of reach,
    // within reach, adjacent and descending.
    const std::vector<std::vector<CodeSpan>> groups = {{{0, 2}, {5, 2}, {3, 1}, {9, 1}},
                                                       {{1, 3}, {8, 2}, {11, 3}, {6, 1}},
                                                       {{16, 2}, {20, 3}, {24, 1}, {40, 2}},
                                                       {{256, 2}, {259, 3}, {2, 1}, {512, 1}, {515, 2}}};
    for (const std::uint64_t size : {std::uint64_t{1024}, std::uint64_t{65536}}) {
        L1iConfig c = l1i(Replacement::RANDOM, 1);
        c.size = size;
        c.ways = size == 1024 ? 2 : 4;
        InstructionCache grouped(c, 64, MISS, 1), direct(c, 64, MISS, 1);
        grouped.set_groups(groups);
        for (std::uint32_t g : {0u, 1u, 2u, 3u, 0u, 3u, 1u, 1u, 2u, 0u, 3u, 3u, 0u, 2u})
            EXPECT_EQ(grouped.fetch_group(0, g), direct.fetch(0, groups[g])) << size;
        EXPECT_EQ(grouped.stats().hits, direct.stats().hits) << size;
        EXPECT_EQ(grouped.stats().misses, direct.stats().misses) << size;
        EXPECT_EQ(grouped.stats().prefetched, direct.stats().prefetched) << size;
    }
}

TEST(InstructionCache, UnderLruNoGroupIsKnownWholeSinceEachHitReordersItsSet) {
    InstructionCache ic(l1i(Replacement::LRU), 64, MISS, 1);
    ic.set_groups({{{0, 4}}});
    ic.fetch_group(0, 0);
    EXPECT_FALSE(ic.group_resident(0, 0));
    EXPECT_EQ(ic.fetch_group(0, 0), 0u);
    EXPECT_EQ(ic.stats().hits, 4u);
}

TEST(KernelText, FunctionsFollowEachOtherAlignedAndRunTheirExecutedFraction) {
    // f: 100 B at 0; g: 0 B (inlined); h: 300 B at 112 (100 rounded up to 16); k: 64 B at 416.
    const std::vector<KernelFunction> fns = {{"f", 100}, {"g", 0}, {"h", 300}, {"k", 64}};
    KernelText t(fns, 64, 16);
    EXPECT_TRUE(t.has("g"));
    EXPECT_FALSE(t.has("absent"));
    EXPECT_EQ(t.bytes("h"), 300u);
    // f whole: bytes 0..99 = lines 0-1.
    EXPECT_EQ(t.executed("f", 1.0).first, 0u);
    EXPECT_EQ(t.executed("f", 1.0).lines, 2u);
    // h at half: 150 B from 112 = bytes 112..261 = lines 1-4.
    EXPECT_EQ(t.executed("h", 0.5).first, 1u);
    EXPECT_EQ(t.executed("h", 0.5).lines, 4u);
    // k: bytes 416..479 = lines 6-7 (it straddles a line boundary).
    EXPECT_EQ(t.executed("k", 1.0).first, 6u);
    EXPECT_EQ(t.executed("k", 1.0).lines, 2u);
    // No code: none fetched.
    EXPECT_EQ(t.executed("g", 1.0).lines, 0u);
    EXPECT_EQ(t.executed("absent", 1.0).lines, 0u);
}

TEST(InstructionCache, RejectsAnAssociativityThatDoesNotDivideTheSize) {
    L1iConfig c = l1i();
    c.ways = 3;
    EXPECT_THROW(InstructionCache(c, 64, MISS, 1), std::invalid_argument);
}

} // namespace
} // namespace kdsim::mem
