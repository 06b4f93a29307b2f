// swiotlb in the DMA API (devices/swiotlb.h, dma.h), every expected value worked out by hand from
// Linux 6.1's kernel/dma/swiotlb.c: slots of 2 KiB, a copy of the whole mapping at map whatever
// the direction, copies back at sync_for_cpu (the synced length) and unmap (the mapped length),
// the maintenance on the slots. The test platform (dma_test_support.h): 1 GHz CPU, map 100,
// unmap 80, sync 60 cycles; inner inv 10 / clean 12 / flush 14, outer inv 5 / clean 6 / flush 7
// per line, outer_sync 20, barrier 30; 64 B lines; the bounce copy 0.5 cycles per byte.
#include "devices/dma.h"
#include "devices/dma_test_support.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

namespace kdsim::devices {
namespace {

constexpr std::uint64_t POOL_AT = std::uint64_t{1} << 30;  // the pool's first physical byte: 1 GiB
constexpr std::uint64_t HIGH = std::uint64_t{5} << 30;     // a buffer at 5 GiB: beyond a 32-bit mask
constexpr double COPY = 0.5;                               // cycles per byte

// The harness with a pool of `bytes` and a device with a 32-bit mask.
struct SwHarness : Harness {
    explicit SwHarness(std::uint64_t bytes = IO_TLB_DEFAULT_SIZE, SwiotlbMode mode = SwiotlbMode::AUTO,
                       bool coherent = false)
        : Harness(round_dma_costs(coherent)), dev(dma.add_device("eth0", dma_bit_mask(32))) {
        dma.set_swiotlb(mode, std::make_unique<SwiotlbPool>(POOL_AT, bytes, 1), COPY);
    }
    DmaDevice& dev;
    DmaBuffer high(std::size_t size) {
        DmaBuffer b(dma, size, 64, &dev);
        b.set_phys(HIGH);
        return b;
    }
};

TEST(Swiotlb, PoolPlacementIsTheTopOfDramBelowTheLowLimit) {
    // 8 GiB from 0, limit 4 GiB: [4 GiB - 64 MiB, 4 GiB)
    EXPECT_EQ(swiotlb_pool_start(0, 8ULL << 30, 64ULL << 20, 4ULL << 30), (4ULL << 30) - (64ULL << 20));
    // 512 MiB at 256 MiB (an i.MX6): DRAM ends first, at 768 MiB
    EXPECT_EQ(swiotlb_pool_start(256ULL << 20, 512ULL << 20, 64ULL << 20, 4ULL << 30), (768ULL - 64) << 20);
    // a 16 MiB limit (a 24-bit zone) cannot hold 64 MiB
    EXPECT_FALSE(swiotlb_pool_start(0, 8ULL << 30, 64ULL << 20, 16ULL << 20).has_value());
}

TEST(Swiotlb, SlotsUsedAreTheSizeIn2KiBUnitsRoundedUp) {
    SwiotlbPool pool(POOL_AT, 256 * 1024, 1); // one segment of 128 slots
    EXPECT_EQ(pool.nslabs(), 128u);
    auto a = pool.find_slots(0, 1500);  // 1 slot
    auto b = pool.find_slots(0, 2049);  // 2 slots
    auto c = pool.find_slots(0, 1);     // 1 slot
    ASSERT_TRUE(a && b && c);
    EXPECT_EQ(*a, 0u);
    EXPECT_EQ(*b, 1u);
    EXPECT_EQ(*c, 3u);
    EXPECT_EQ(pool.used(), 4u);
    // a mapping of a page or more starts on a page (a stride of 2 slots): slot 4
    auto d = pool.find_slots(0, 4096);
    ASSERT_TRUE(d);
    EXPECT_EQ(*d, 4u);
    EXPECT_EQ(pool.used(), 6u);
    // released in any order, the segment is one free run of 128 again
    pool.release_slots(*b, 2049);
    pool.release_slots(*a, 1500);
    pool.release_slots(*d, 4096);
    pool.release_slots(*c, 1);
    EXPECT_EQ(pool.used(), 0u);
    EXPECT_EQ(pool.free_run(0), 128u);
    EXPECT_EQ(pool.free_run(127), 1u);
    EXPECT_EQ(pool.high_water(), 6u);
}

TEST(Swiotlb, AMappingNeverCrossesA128SlotSegment) {
    SwiotlbPool pool(POOL_AT, 2 * 256 * 1024, 1);
    ASSERT_TRUE(pool.find_slots(0, 127 * IO_TLB_SIZE)); // slots 0..126: one left in segment 0
    auto two = pool.find_slots(0, 2 * IO_TLB_SIZE);
    ASSERT_TRUE(two);
    EXPECT_EQ(*two, 128u); // not 127
    EXPECT_FALSE(pool.find_slots(0, 129 * IO_TLB_SIZE)); // larger than a segment: never
    EXPECT_EQ(pool.failures(), 1u);
}

TEST(Swiotlb, EachCpuSearchesItsOwnAreaFirst) {
    SwiotlbPool pool(POOL_AT, 4 * 256 * 1024, 3); // 3 CPUs -> 4 areas of 128 slots
    EXPECT_EQ(pool.nareas(), 4u);
    EXPECT_EQ(pool.find_slots(2, 100), 256u);
    EXPECT_EQ(pool.find_slots(0, 100), 0u);
}

TEST(Swiotlb, TheSlotAllocatorCountsEverySlotItTestsAndEveryEntryItWrites) {
    // One segment of 128 slots. Two 1-slot maps at slots 0 and 1: one probe each; each writes its
    // run twice (list/alloc_size, orig_addr) and merges nothing (slot 0 starts the segment, slot
    // 0 is used when slot 1 is taken): 2 probes, 4 writes.
    SwiotlbPool pool(POOL_AT, 256 * 1024, 1);
    auto a = pool.find_slots(0, 1500), b = pool.find_slots(0, 1500);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(pool.slot_probes(), 2u);
    EXPECT_EQ(pool.slot_writes(), 4u);
    // Releasing slot 0 (slot 1 still used): its own entry only. Releasing slot 1 then: its entry
    // and the merge of free slot 0 before it: 1 + 2 writes.
    pool.release_slots(*a, 1500);
    EXPECT_EQ(pool.slot_writes(), 5u);
    pool.release_slots(*b, 1500);
    EXPECT_EQ(pool.slot_writes(), 7u);
    EXPECT_EQ(pool.free_run(0), 128u);
}

TEST(Swiotlb, ReleasingInOrderWalksBackOverEveryFreeSlotBeforeTheRun) {
    // Slots 0..9 taken one by one (10 probes, 20 writes), then released in order: the k-th
    // release writes its slot and re-numbers the k free slots before it, k + 1 writes:
    // 1 + 2 + ... + 10 = 55.
    SwiotlbPool pool(POOL_AT, 256 * 1024, 1);
    std::vector<std::size_t> at;
    for (int i = 0; i < 10; ++i) at.push_back(*pool.find_slots(0, 100));
    EXPECT_EQ(pool.slot_probes(), 10u);
    EXPECT_EQ(pool.slot_writes(), 20u);
    for (std::size_t i : at) pool.release_slots(i, 100);
    EXPECT_EQ(pool.slot_writes(), 20u + 55u);
}

TEST(Swiotlb, TheSearchProbesEveryUsedSlotFromTheAreaIndex) {
    // Every slot of the segment taken (the area index wraps to 0), then slot 5 freed: the next
    // search tests slots 0..4 (used) and 5: 6 probes.
    SwiotlbPool pool(POOL_AT, 256 * 1024, 1);
    for (int i = 0; i < 128; ++i) ASSERT_TRUE(pool.find_slots(0, 100));
    pool.release_slots(5, 100);
    const std::uint64_t before = pool.slot_probes();
    EXPECT_EQ(pool.find_slots(0, 100), 5u);
    EXPECT_EQ(pool.slot_probes() - before, 6u);
}

TEST(Swiotlb, MapAndUnmapChargeTheSlotAllocatorFromItsFigures) {
    // A 3000-byte tx mapping (2 slots) on an empty pool, then its unmap, with and without the
    // allocator's figures (map call 40, unmap call 30, 3 per probe, 2 per write). Map: 40 + 1
    // probe x 3 + 4 writes (two loops over 2 slots, no merge) x 2 = 51 cycles more. Unmap: 30 +
    // 2 writes x 2 = 34 more (the slot after the run is free: no merge before it).
    auto run = [](bool figures, engine::Cycles& map, engine::Cycles& unmap) {
        DmaCosts c = round_dma_costs();
        if (figures) {
            c.swiotlb_map_call = 40;
            c.swiotlb_unmap_call = 30;
            c.swiotlb_slot_probe = 3;
            c.swiotlb_slot_write = 2;
        }
        Harness h(c);
        DmaDevice& dev = h.dma.add_device("eth0", dma_bit_mask(32));
        h.dma.set_swiotlb(SwiotlbMode::AUTO, std::make_unique<SwiotlbPool>(POOL_AT, IO_TLB_DEFAULT_SIZE, 1), COPY);
        DmaBuffer buf(h.dma, 3000, 64, &dev);
        buf.set_phys(HIGH);
        h.body = [&]() -> engine::Task<> {
            co_await h.timed(dma_map_single(h.cpu, buf, 3000, DMA_TO_DEVICE), map);
            co_await h.timed(dma_unmap_single(h.cpu, buf, 3000, DMA_TO_DEVICE), unmap);
        };
        h.run();
        return dev.swiotlb.slot_cycles;
    };
    engine::Cycles map0 = 0, unmap0 = 0, map1 = 0, unmap1 = 0;
    EXPECT_EQ(run(false, map0, unmap0), 0u);
    EXPECT_EQ(run(true, map1, unmap1), 51u + 34u);
    EXPECT_EQ(map1 - map0, 51u);
    EXPECT_EQ(unmap1 - unmap0, 34u);
}

TEST(Swiotlb, RxFromDeviceCopiesTheMappingInAtMapAndTheSyncedLengthBack) {
    SwHarness h;
    DmaBuffer buf = h.high(1536);
    engine::Cycles map_cyc = 0;
    bool stale = true;
    h.body = [&]() -> engine::Task<> {
        co_await h.timed(dma_map_single(h.cpu, buf, 1536, DMA_FROM_DEVICE), map_cyc);
        device_write(buf, 0, 1500, h.cpu.now());
        co_await dma_sync_single_for_cpu(h.cpu, buf, 0, 1500, DMA_FROM_DEVICE);
        stale = cpu_read(h.cpu, buf, 0, 1500);
        co_await dma_unmap_single_attrs(h.cpu, buf, 1536, DMA_FROM_DEVICE, DMA_ATTR_SKIP_CPU_SYNC);
    };
    h.run();
    const SwiotlbDeviceStats& s = h.dev.swiotlb;
    EXPECT_EQ(s.bounced_maps, 1u);
    EXPECT_EQ(s.copies_to_device, 1u); // 6.1 copies in at map even for DMA_FROM_DEVICE
    EXPECT_EQ(s.bytes_to_device, 1536u);
    EXPECT_EQ(s.copies_from_device, 1u); // the sync; the unmap skips its sync
    EXPECT_EQ(s.bytes_from_device, 1500u);
    EXPECT_EQ(s.copy_cycles, 768u + 750u); // 0.5 x (1536 + 1500)
    EXPECT_FALSE(stale);
    // map: 100 + inner invalidate of the slot's 24 lines (24 x 10 + 30) + outer (24 x 5 + 20) + the copy 768
    EXPECT_EQ(map_cyc, 100u + 270 + 140 + 768);
    EXPECT_EQ(h.dev.swiotlb.slots_in_use, 0u);
    EXPECT_EQ(h.dev.swiotlb.slots_high_water, 1u);
    EXPECT_EQ(h.dma.swiotlb()->used(), 0u);
    EXPECT_EQ(h.dma.stats().inner_inv, 24u + 23u); // map: 24 whole lines; sync of 1500 B: 23 + 1 partial
    EXPECT_EQ(buf.invalidations(0), 0u);           // the buffer's own lines are not maintained
}

// Runs `ops` on a buffer of `size` bytes beyond the device's mask; the device's statistics after.
SwiotlbDeviceStats bounced(std::size_t size, std::function<engine::Task<>(SwHarness&, DmaBuffer&)> ops) {
    SwHarness h;
    DmaBuffer buf = h.high(size);
    h.body = [&]() -> engine::Task<> { co_await ops(h, buf); };
    h.run();
    return h.dev.swiotlb;
}

TEST(Swiotlb, UnmapWithoutSkipCopiesTheWholeMappedLengthBack) {
    const SwiotlbDeviceStats s = bounced(1536, [](SwHarness& h, DmaBuffer& buf) -> engine::Task<> {
        co_await dma_map_single(h.cpu, buf, 1536, DMA_FROM_DEVICE);
        device_write(buf, 0, 60, h.cpu.now());
        co_await dma_unmap_single(h.cpu, buf, 1536, DMA_FROM_DEVICE);
    });
    EXPECT_EQ(s.copies_from_device, 1u);
    EXPECT_EQ(s.bytes_from_device, 1536u); // the mapping's size, not the 60 written
}

TEST(Swiotlb, TxToDeviceCopiesInAtMapAndNothingBackAtUnmap) {
    const SwiotlbDeviceStats s = bounced(3000, [](SwHarness& h, DmaBuffer& buf) -> engine::Task<> {
        co_await dma_map_single(h.cpu, buf, 3000, DMA_TO_DEVICE);
        device_read(buf, 0, 3000, h.cpu.now());
        co_await dma_unmap_single(h.cpu, buf, 3000, DMA_TO_DEVICE);
    });
    EXPECT_EQ(s.copies_to_device, 1u);
    EXPECT_EQ(s.bytes_to_device, 3000u);
    EXPECT_EQ(s.copies_from_device, 0u);
    EXPECT_EQ(s.slots_high_water, 2u); // ceil(3000 / 2048)
}

TEST(Swiotlb, BidirectionalSyncsCopyEachWay) {
    const SwiotlbDeviceStats s = bounced(2048, [](SwHarness& h, DmaBuffer& buf) -> engine::Task<> {
        co_await dma_map_single(h.cpu, buf, 2048, DMA_BIDIRECTIONAL);               // in: 2048
        co_await dma_sync_single_for_device(h.cpu, buf, 0, 512, DMA_BIDIRECTIONAL); // in: 512
        device_write(buf, 0, 512, h.cpu.now());
        co_await dma_sync_single_for_cpu(h.cpu, buf, 0, 512, DMA_BIDIRECTIONAL);    // back: 512
        co_await dma_unmap_single(h.cpu, buf, 2048, DMA_BIDIRECTIONAL);             // back: 2048
    });
    EXPECT_EQ(s.copies_to_device, 2u);
    EXPECT_EQ(s.bytes_to_device, 2048u + 512);
    EXPECT_EQ(s.copies_from_device, 2u);
    EXPECT_EQ(s.bytes_from_device, 512u + 2048);
}

TEST(Swiotlb, ABufferTheMaskReachesIsNeverBounced) {
    SwHarness h;
    DmaBuffer buf(h.dma, 1536, 64, &h.dev);
    buf.set_phys((std::uint64_t{4} << 30) - 1536); // its last byte is 0xffffffff: reached
    h.body = [&]() -> engine::Task<> {
        co_await dma_map_single(h.cpu, buf, 1536, DMA_FROM_DEVICE);
        EXPECT_FALSE(buf.bounced());
        device_write(buf, 0, 1500, h.cpu.now());
        co_await dma_unmap_single(h.cpu, buf, 1536, DMA_FROM_DEVICE);
    };
    h.run();
    EXPECT_EQ(h.dev.swiotlb.bounced_maps, 0u);
    EXPECT_EQ(h.dev.swiotlb.bytes_to_device + h.dev.swiotlb.bytes_from_device, 0u);
    EXPECT_EQ(h.dma.swiotlb()->high_water(), 0u);
    EXPECT_EQ(buf.invalidations(0), 2u); // its own lines: at map and at unmap
}

TEST(Swiotlb, ForceBouncesAReachableBuffer) {
    SwHarness h(IO_TLB_DEFAULT_SIZE, SwiotlbMode::FORCE);
    DmaBuffer buf(h.dma, 100, 64, &h.dev); // physical 0
    h.body = [&]() -> engine::Task<> {
        co_await dma_map_single(h.cpu, buf, 100, DMA_TO_DEVICE);
        co_await dma_unmap_single(h.cpu, buf, 100, DMA_TO_DEVICE);
    };
    h.run();
    EXPECT_EQ(h.dev.swiotlb.bounced_maps, 1u);
    EXPECT_EQ(h.dev.swiotlb.bytes_to_device, 100u);
}

TEST(Swiotlb, AFullPoolFailsTheMappingAndCountsIt) {
    SwHarness h(256 * 1024); // 128 slots
    std::vector<DmaBuffer> bufs;
    for (int i = 0; i < 129; ++i) bufs.push_back(h.high(2048));
    bool failed = false, retried = false;
    h.body = [&]() -> engine::Task<> {
        for (auto& b : bufs) co_await dma_map_single(h.cpu, b, 2048, DMA_FROM_DEVICE);
        failed = dma_mapping_error(bufs[128]) && !bufs[128].mapped();
        co_await dma_unmap_single(h.cpu, bufs[0], 2048, DMA_FROM_DEVICE);
        co_await dma_map_single(h.cpu, bufs[128], 2048, DMA_FROM_DEVICE);
        retried = !dma_mapping_error(bufs[128]) && bufs[128].mapped();
    };
    h.run();
    EXPECT_TRUE(failed);
    EXPECT_TRUE(retried);
    EXPECT_EQ(h.dev.swiotlb.map_failures, 1u);
    EXPECT_EQ(h.dma.swiotlb()->failures(), 1u);
    EXPECT_EQ(h.dev.swiotlb.bounced_maps, 129u); // 128, then the retry
    EXPECT_EQ(h.dev.swiotlb.slots_high_water, 128u);
}

TEST(Swiotlb, NoPoolAndAnUnreachableBufferFailsTheMapping) {
    Harness h;
    DmaDevice& dev = h.dma.add_device("eth0", dma_bit_mask(32));
    DmaBuffer buf(h.dma, 1536, 64, &dev);
    buf.set_phys(HIGH);
    h.body = [&]() -> engine::Task<> { co_await dma_map_single(h.cpu, buf, 1536, DMA_FROM_DEVICE); };
    h.run();
    EXPECT_TRUE(dma_mapping_error(buf));
    EXPECT_EQ(dev.swiotlb.map_failures, 1u);
}

TEST(Swiotlb, AMissingSyncForCpuOnABouncedBufferIsAStaleRead) {
    for (bool coherent : {false, true}) {
        SwHarness h(IO_TLB_DEFAULT_SIZE, SwiotlbMode::AUTO, coherent);
        DmaBuffer buf = h.high(1536);
        bool no_sync = false, short_sync = false, unmapped = true;
        h.body = [&]() -> engine::Task<> {
            co_await dma_map_single(h.cpu, buf, 1536, DMA_FROM_DEVICE);
            device_write(buf, 0, 1500, h.cpu.now());
            no_sync = cpu_read(h.cpu, buf, 0, 64); // nothing copied back yet
            co_await dma_sync_single_for_cpu(h.cpu, buf, 0, 128, DMA_FROM_DEVICE);
            short_sync = cpu_read(h.cpu, buf, 0, 1500); // lines 2.. not copied
            co_await dma_unmap_single(h.cpu, buf, 1536, DMA_FROM_DEVICE);
            unmapped = cpu_read(h.cpu, buf, 0, 1500); // the unmap copied everything back
        };
        h.run();
        EXPECT_TRUE(no_sync) << "coherent " << coherent;
        EXPECT_TRUE(short_sync) << "coherent " << coherent;
        EXPECT_FALSE(unmapped) << "coherent " << coherent;
        EXPECT_EQ(h.dma.findings().stale_reads, 2u);
    }
}

} // namespace
} // namespace kdsim::devices
