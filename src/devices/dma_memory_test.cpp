// The DMA API acting on a memory hierarchy (devices/dma.h with DmaPlatform::set_memory): the
// device's writes go to DRAM, the maintenance drops and cleans the hierarchy's lines, and the
// stale-read bits keep catching a short sync. A 1 GHz CPU (1 cycle = 1 ns) and a hierarchy
// written here with round figures, so every expected stall is worked out by hand:
//   64 B lines; L1 32 KB 4-way, load-to-use 4 cycles; L2 256 KB 8-way, 20 cycles, shared;
//   DRAM load-to-use 100 ns (a demand miss stalls 100 - 4 = 96 ns beyond an L1 hit);
//   DRAM bandwidth 6.4e9 B/s: one 64 B line = 10 ns on the channel;
//   one stream tracker that follows a stream after 2 consecutive line misses.
#include "devices/dma.h"
#include "devices/dma_test_support.h"

#include <gtest/gtest.h>

namespace kdsim::devices {
namespace {

mem::MemoryConfig round_memory(bool coherent = false) {
    mem::MemoryConfig c;
    c.line = 64;
    c.levels = {mem::CacheLevelConfig{"l1d", 32 * 1024, 4, 4, false, mem::Replacement::LRU},
                mem::CacheLevelConfig{"l2", 256 * 1024, 8, 20, true, mem::Replacement::LRU}};
    c.dram_latency_ns = 100;
    c.dram_bandwidth = 6.4e9;
    c.prefetch_streams = 1;
    c.prefetch_trigger = 2;
    c.dma_coherent = coherent;
    return c;
}

// The test CPU and DMA platform (dma_test_support.h) with the hierarchy above attached.
struct MemHarness : Harness {
    explicit MemHarness(bool coherent = false)
        : Harness(round_dma_costs(coherent)), memory(round_memory(coherent), 1, 1'000'000'000) {
        dma.set_memory(&memory);
    }
    mem::MemorySystem memory;
    engine::Cycles read(mem::Addr a, std::size_t len) { return memory.read(0, cpu.now(), a, len); }
};

TEST(DmaMemory, AReceivedFrameIsReadFromDramTwoDemandMissesThenTheStream) {
    MemHarness h;
    DmaBuffer buf(h.dma, 1536, 64);
    buf.set_addr(h.memory.alloc(1536));
    engine::Cycles stall = 0;
    h.body = [&]() -> engine::Task<> {
        co_await dma_map_single(h.cpu, buf, 1536, DMA_FROM_DEVICE);
        device_write(buf, 0, 1500, h.cpu.now()); // lines 0..23: the channel is busy 24 x 10 = 240 ns
        // sync 60 + outer (23 x 5 + 7 + 20) + inner (23 x 10 + 14 + 30) = 476 ns: the channel is free again
        co_await dma_sync_single_for_cpu(h.cpu, buf, 0, 1500, DMA_FROM_DEVICE);
        stall = h.read(buf.addr(), 1500);
        co_await dma_unmap_single_attrs(h.cpu, buf, 1536, DMA_FROM_DEVICE, DMA_ATTR_SKIP_CPU_SYNC);
    };
    h.run();
    // lines 0 and 1: demand misses, 96 each; lines 2..23 follow the stream: 22 x 10 ns = 220
    EXPECT_EQ(stall, 2u * 96 + 22 * 10);
    EXPECT_EQ(h.memory.stats().dram_demand_lines, 2u);
    EXPECT_EQ(h.memory.stats().dram_stream_lines, 22u);
    EXPECT_EQ(h.memory.stats().dma_write_bytes, 1500u);
}

TEST(DmaMemory, TheDmaApisInvalidateDropsALineTheCpuHadSoItsNextReadMissesAgain) {
    MemHarness h;
    DmaBuffer buf(h.dma, 256, 64);
    buf.set_addr(h.memory.alloc(256));
    engine::Cycles first = 0, again = 0, after_map = 0;
    h.body = [&]() -> engine::Task<> {
        first = h.read(buf.addr(), 64);
        again = h.read(buf.addr(), 64);
        co_await dma_map_single(h.cpu, buf, 256, DMA_FROM_DEVICE); // invalidates lines 0..3
        after_map = h.read(buf.addr(), 64);
    };
    h.run();
    EXPECT_EQ(first, 96u);     // a demand miss: 100 ns - 4 cycles
    EXPECT_EQ(again, 0u);      // an L1 hit
    EXPECT_EQ(after_map, 96u); // dropped from L1 and L2: DRAM again
    EXPECT_EQ(h.memory.stats().invalidated_lines, 1u); // the one line that was cached
}

TEST(DmaMemory, ASyncForTheCpuCleansItsPartialEndLinesAndDropsEveryLineOfItsRange) {
    // 256 B = lines 0..3 of 64 B, all four dirty in L1. A sync for the CPU of [40, 190): the
    // partial lines 0 (40..63) and 2 (128..189) are cleaned+invalidated (written back first),
    // line 1 is invalidated (its dirty data dropped, as v7_dma_inv_range and the PL310's
    // l2c210_inv_range do); line 3 lies outside the range and stays, dirty.
    MemHarness h;
    DmaBuffer buf(h.dma, 256, 64);
    buf.set_addr(h.memory.alloc(256));
    h.body = [&]() -> engine::Task<> {
        co_await dma_map_single(h.cpu, buf, 256, DMA_FROM_DEVICE, DMA_ATTR_SKIP_CPU_SYNC);
        h.memory.write(0, h.cpu.now(), buf.addr(), 256);
        co_await dma_sync_single_for_cpu(h.cpu, buf, 40, 150, DMA_FROM_DEVICE);
    };
    h.run();
    EXPECT_EQ(h.memory.stats().writebacks, 2u);        // lines 0 and 2
    EXPECT_EQ(h.memory.stats().invalidated_lines, 3u); // lines 0, 1 and 2
    for (int l = 0; l < 3; ++l) EXPECT_EQ(h.memory.level_of(0, buf.addr() + 64 * l), -1) << "line " << l;
    EXPECT_EQ(h.memory.level_of(0, buf.addr() + 192), 0);
    EXPECT_TRUE(h.memory.dirty_anywhere(buf.addr() + 192));
    const DmaStats& st = h.dma.stats();
    EXPECT_EQ(st.inner_flush, 2u);
    EXPECT_EQ(st.inner_inv, 1u);
    EXPECT_EQ(st.outer_flush, 2u);
    EXPECT_EQ(st.outer_inv, 1u);
    EXPECT_EQ(st.barriers, 1u); // the map skipped its maintenance
    EXPECT_EQ(st.outer_syncs, 1u);
    for (std::size_t l = 0; l < 4; ++l) {
        EXPECT_EQ(buf.invalidations(l), l < 3 ? 1u : 0u) << "line " << l;
        EXPECT_EQ(buf.cleans(l), l == 0 || l == 2 ? 1u : 0u) << "line " << l;
    }
}

TEST(DmaMemory, MappingForTransmitCleansTheCpusDirtyLinesBeforeTheDeviceReadsThem) {
    MemHarness h;
    DmaBuffer buf(h.dma, 256, 64);
    buf.set_addr(h.memory.alloc(256));
    bool dirty_before = false, dirty_after = true;
    int level_after = -1;
    h.body = [&]() -> engine::Task<> {
        h.memory.write(0, h.cpu.now(), buf.addr(), 128); // the driver builds a 128 B frame: 2 dirty lines
        dirty_before = h.memory.dirty_anywhere(buf.addr()) && h.memory.dirty_anywhere(buf.addr() + 64);
        co_await dma_map_single(h.cpu, buf, 128, DMA_TO_DEVICE); // clean: both lines written back
        dirty_after = h.memory.dirty_anywhere(buf.addr()) || h.memory.dirty_anywhere(buf.addr() + 64);
        level_after = h.memory.level_of(0, buf.addr());
        device_read(buf, 0, 128, h.cpu.now());
        co_await dma_unmap_single(h.cpu, buf, 128, DMA_TO_DEVICE);
    };
    h.run();
    EXPECT_TRUE(dirty_before);
    EXPECT_FALSE(dirty_after);
    EXPECT_EQ(level_after, 0); // a clean keeps the line, clean, in L1
    EXPECT_EQ(h.memory.stats().writebacks, 2u);
    EXPECT_EQ(h.memory.stats().dma_read_bytes, 128u);
}

TEST(DmaMemory, ACoherentDevicesWriteSnoopsTheLineOutOfTheCpusCaches) {
    MemHarness h(true);
    DmaBuffer buf(h.dma, 256, 64);
    buf.set_addr(h.memory.alloc(256));
    int before = -1, after = 0;
    h.body = [&]() -> engine::Task<> {
        h.read(buf.addr(), 64);
        before = h.memory.level_of(0, buf.addr());
        co_await dma_map_single(h.cpu, buf, 256, DMA_FROM_DEVICE); // coherent: no maintenance
        device_write(buf, 0, 64, h.cpu.now());
        after = h.memory.level_of(0, buf.addr());
    };
    h.run();
    EXPECT_EQ(before, 0);
    EXPECT_EQ(after, -1);
    EXPECT_EQ(h.memory.stats().invalidated_lines, 0u); // the snoop, not the DMA API, dropped it
}

TEST(DmaMemory, AShortSyncIsStillCaughtWhenTheBuffersLinesLiveInTheHierarchy) {
    MemHarness h;
    DmaBuffer buf(h.dma, 2048, 64);
    buf.set_addr(h.memory.alloc(2048));
    bool stale = false;
    h.body = [&]() -> engine::Task<> {
        co_await dma_map_single(h.cpu, buf, 2048, DMA_FROM_DEVICE);
        device_write(buf, 0, 1518, h.cpu.now());
        co_await dma_sync_single_for_cpu(h.cpu, buf, 0, 256, DMA_FROM_DEVICE); // the bug: 256 B only
        h.read(buf.addr(), 1518);
        stale = cpu_read(h.cpu, buf, 0, 1518);
        co_await dma_unmap_single_attrs(h.cpu, buf, 2048, DMA_FROM_DEVICE, DMA_ATTR_SKIP_CPU_SYNC);
    };
    h.run();
    EXPECT_TRUE(stale);
    ASSERT_EQ(h.dma.findings().reports.size(), 1u);
    EXPECT_EQ(h.dma.findings().reports[0].first, 256u); // the first byte past the sync
    EXPECT_EQ(h.dma.findings().reports[0].end, 1518u);
}

TEST(DmaMemory, ABufferCannotMoveWhileMapped) {
    MemHarness h;
    DmaBuffer buf(h.dma, 256, 64);
    h.body = [&]() -> engine::Task<> {
        co_await dma_map_single(h.cpu, buf, 256, DMA_FROM_DEVICE);
        EXPECT_THROW(buf.set_addr(h.memory.alloc(256)), std::logic_error);
        co_await dma_unmap_single(h.cpu, buf, 256, DMA_FROM_DEVICE);
        buf.set_addr(4096);
    };
    h.run();
    EXPECT_EQ(buf.addr(), 4096u);
}

} // namespace
} // namespace kdsim::devices
