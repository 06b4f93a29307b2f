// KernelTextFetch::make against values worked by hand: the Cortex-A9's L1I (32 KB, 4 ways of
// 32 B lines: 256 sets, random replacement) with a next-line prefetch of 1 fetches through a
// KernelTextFetchA9, any other L1I through a KernelTextFetch, each with the same results.
#include "system/kernel_text.h"

#include <gtest/gtest.h>

namespace kdsim::system {
namespace {

// One function of IRQ_ENTER's, 96 bytes at address 0: lines 0-2. A miss costs 30 - 4 = 26 cycles.
mem::MemoryConfig config(mem::Replacement r, std::uint32_t prefetch) {
    mem::MemoryConfig c;
    c.line = 32;
    c.levels = {{"l1d", 32 * 1024, 4, 4, false, mem::Replacement::RANDOM}, {"l2", 1024 * 1024, 16, 30, true, mem::Replacement::RANDOM}};
    c.l1i.size = 32 * 1024;
    c.l1i.ways = 4;
    c.l1i.replacement = r;
    c.l1i.prefetch = prefetch;
    c.l1i.executed = 1;
    c.l1i.align = 32;
    c.l1i.functions = {{std::string(kernel::text_functions(kernel::Text::IRQ_ENTER).front()), 96}};
    return c;
}

constexpr engine::Cycles MISS = 26;

TEST(KernelTextFetch, TheCortexA9sL1iWithAPrefetchOf1FetchesThroughItsOwnClass) {
    const auto t = KernelTextFetch::make(config(mem::Replacement::RANDOM, 1), 2);
    EXPECT_NE(dynamic_cast<KernelTextFetchA9*>(t.get()), nullptr);
    EXPECT_EQ(t->lines(kernel::Text::IRQ_ENTER), 3u);
    // 0 a demand miss (its prefetch requests 1), 1 prefetched, 2 a demand miss: 2 stalls.
    EXPECT_EQ(t->fetch(0, kernel::Text::IRQ_ENTER), 2 * MISS);
    EXPECT_EQ(t->fetch(0, kernel::Text::IRQ_ENTER), 0u); // known whole: 3 hits
    EXPECT_EQ(t->fetch(1, kernel::Text::IRQ_ENTER), 2 * MISS); // CPU 1's own L1I
    EXPECT_EQ(t->fetch(1, kernel::Text::NONE), 0u);            // no lines
    const mem::ICacheStats& s = t->icache().stats();
    EXPECT_EQ(s.misses, 6u);
    EXPECT_EQ(s.prefetched, 2u);
    EXPECT_EQ(s.hits, 3u);
    EXPECT_EQ(s.stall_cycles, 4 * MISS);
}

TEST(KernelTextFetch, AnyOtherL1iFetchesThroughThePlainClass) {
    for (const auto& [r, prefetch] : {std::pair{mem::Replacement::RANDOM, 0u}, std::pair{mem::Replacement::LRU, 1u}}) {
        const auto t = KernelTextFetch::make(config(r, prefetch), 1);
        EXPECT_EQ(dynamic_cast<KernelTextFetchA9*>(t.get()), nullptr) << prefetch;
        // no prefetch: 3 demand misses; a prefetch of 1: 2 (as above)
        EXPECT_EQ(t->fetch(0, kernel::Text::IRQ_ENTER), (prefetch ? 2 : 3) * MISS) << prefetch;
        EXPECT_EQ(t->fetch(0, kernel::Text::IRQ_ENTER), 0u) << prefetch;
        EXPECT_EQ(t->icache().stats().hits, 3u) << prefetch;
    }
}

} // namespace
} // namespace kdsim::system
