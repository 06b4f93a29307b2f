// The DMA API on a 1 GHz test CPU (1 cycle = 1 ns) with round costs, so that every expected time
// is a sum worked out by hand in the test. Line size 32 B unless stated.
#include "devices/dma.h"
#include "devices/dma_test_support.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

namespace kdsim::devices {
namespace {

using engine::PS_PER_NS;
using kernel::Cat;
using kernel::Cpu;

// Per line of the buffer, how often it was invalidated, then after a "/" how often it was
// cleaned: "11111110/00000010".
std::string maintenance(const DmaBuffer& b) {
    std::string inv, clean;
    for (std::size_t i = 0; i < b.lines(); ++i) {
        inv += std::to_string(b.invalidations(i));
        clean += std::to_string(b.cleans(i));
    }
    return inv + "/" + clean;
}

std::string maintenance(const char* inv, const char* clean) { return std::string(inv) + "/" + clean; }

// ---------------------------------------------------------------------------------------------
// Semantics per direction and attribute. Buffer of 256 B = 8 lines, mapping of 200 B: lines 0-5
// whole, line 6 partial (192..199), line 7 outside. An invalidate clean+invalidates the partial
// line 6 (counts as both); a clean covers lines 0-6.
struct SemanticsRow {
    const char* name;
    DmaDataDirection dir;
    unsigned long map_attrs, unmap_attrs;
    const char* inv_after_map;
    const char* clean_after_map;
    const char* inv_after_unmap;   // cumulative
    const char* clean_after_unmap; // cumulative
};

const SemanticsRow SEMANTICS[] = {
    // FROM_DEVICE: invalidate at map and again at unmap (speculative fills).
    {"from_device", DMA_FROM_DEVICE, 0, 0, "11111110", "00000010", "22222220", "00000020"},
    // TO_DEVICE: clean at map, nothing at unmap.
    {"to_device", DMA_TO_DEVICE, 0, 0, "00000000", "11111110", "00000000", "11111110"},
    // BIDIRECTIONAL: clean at map, invalidate at unmap.
    {"bidirectional", DMA_BIDIRECTIONAL, 0, 0, "00000000", "11111110", "11111110", "11111120"},
    // SKIP_CPU_SYNC on unmap: only the map's maintenance happens.
    {"from_device_skip_unmap", DMA_FROM_DEVICE, 0, DMA_ATTR_SKIP_CPU_SYNC, "11111110", "00000010", "11111110",
     "00000010"},
    {"bidirectional_skip_unmap", DMA_BIDIRECTIONAL, 0, DMA_ATTR_SKIP_CPU_SYNC, "00000000", "11111110", "00000000",
     "11111110"},
    // SKIP_CPU_SYNC on map too: no maintenance at all.
    {"from_device_skip_both", DMA_FROM_DEVICE, DMA_ATTR_SKIP_CPU_SYNC, DMA_ATTR_SKIP_CPU_SYNC, "00000000",
     "00000000", "00000000", "00000000"},
};

TEST(DmaSemantics, LinesMaintainedAtMapAndUnmapPerDirectionAndAttribute) {
    for (const auto& row : SEMANTICS) {
        SCOPED_TRACE(row.name);
        Harness h;
        DmaBuffer buf(h.dma, 256, 32);
        std::string after_map;
        h.body = [&]() -> engine::Task<> {
            co_await dma_map_single(h.cpu, buf, 200, row.dir, row.map_attrs);
            after_map = maintenance(buf);
            co_await dma_unmap_single_attrs(h.cpu, buf, 200, row.dir, row.unmap_attrs);
        };
        h.run();
        EXPECT_EQ(after_map, maintenance(row.inv_after_map, row.clean_after_map));
        EXPECT_EQ(maintenance(buf), maintenance(row.inv_after_unmap, row.clean_after_unmap));
        EXPECT_FALSE(buf.mapped());
    }
}

struct SyncRow {
    const char* name;
    DmaDataDirection dir;
    std::size_t offset, len;
    bool for_cpu;
    const char* inv;
    const char* clean;
};

const SyncRow SYNCS[] = {
    // [40, 90): partial line 1 and partial line 2 are clean+invalidated, no whole line between.
    {"for_cpu_unaligned", DMA_FROM_DEVICE, 40, 50, true, "01100000", "01100000"},
    // [32, 128): lines 1-3 invalidated.
    {"for_cpu_aligned", DMA_FROM_DEVICE, 32, 96, true, "01110000", "00000000"},
    // [40, 50) inside line 1: the kernel's loop clean+invalidates it twice.
    {"for_cpu_inside_one_line", DMA_FROM_DEVICE, 40, 10, true, "02000000", "02000000"},
    // BIDIRECTIONAL for the CPU: invalidate, like FROM_DEVICE.
    {"for_cpu_bidirectional", DMA_BIDIRECTIONAL, 0, 64, true, "11000000", "00000000"},
    // TO_DEVICE for the CPU: nothing.
    {"for_cpu_to_device", DMA_TO_DEVICE, 0, 256, true, "00000000", "00000000"},
    // For the device: TO_DEVICE cleans from the line holding the first byte, [40, 90) = lines 1-2.
    {"for_device_to_device", DMA_TO_DEVICE, 40, 50, false, "00000000", "01100000"},
    // For the device, FROM_DEVICE: invalidate (as at map).
    {"for_device_from_device", DMA_FROM_DEVICE, 64, 64, false, "00110000", "00000000"},
};

TEST(DmaSemantics, SyncMaintainsTheWholeLinesCoveringItsRange) {
    for (const auto& row : SYNCS) {
        SCOPED_TRACE(row.name);
        Harness h;
        DmaBuffer buf(h.dma, 256, 32);
        h.body = [&]() -> engine::Task<> {
            co_await dma_map_single(h.cpu, buf, 256, row.dir, DMA_ATTR_SKIP_CPU_SYNC);
            if (row.for_cpu)
                co_await dma_sync_single_for_cpu(h.cpu, buf, row.offset, row.len, row.dir);
            else
                co_await dma_sync_single_for_device(h.cpu, buf, row.offset, row.len, row.dir);
        };
        h.run();
        EXPECT_EQ(maintenance(buf), maintenance(row.inv, row.clean));
        EXPECT_TRUE(buf.mapped());
    }
}

TEST(DmaSemantics, OverlappingMaintenanceUpToTheBuffersLastLineAddsUpPerLine) {
    // 256 B = 8 lines of 32 B, FROM_DEVICE. The map invalidates lines 0-7. A sync for the CPU of
    // [40, 100) clean+invalidates the partial lines 1 (40..63) and 3 (96..99) and invalidates
    // line 2; one of [200, 256) clean+invalidates the partial line 6 and invalidates line 7, the
    // buffer's last. The unmap invalidates lines 0-7 again.
    Harness h;
    DmaBuffer buf(h.dma, 256, 32);
    std::string before_unmap;
    h.body = [&]() -> engine::Task<> {
        co_await dma_map_single(h.cpu, buf, 256, DMA_FROM_DEVICE);
        co_await dma_sync_single_for_cpu(h.cpu, buf, 40, 60, DMA_FROM_DEVICE);
        co_await dma_sync_single_for_cpu(h.cpu, buf, 200, 56, DMA_FROM_DEVICE);
        before_unmap = maintenance(buf);
        co_await dma_unmap_single(h.cpu, buf, 256, DMA_FROM_DEVICE);
    };
    h.run();
    EXPECT_EQ(before_unmap, maintenance("12221122", "01010010"));
    EXPECT_EQ(maintenance(buf), maintenance("23332233", "01010010"));
}

// A per-line reference of the kernel's loops (arch/arm/mm/cache-v7.S), one line at a time:
// v7_dma_inv_range clean+invalidates a partial first and a partial last line, then invalidates
// each whole line between; v7_dma_clean_range cleans from the line holding `start` while below
// `end`, at least once. Lines past the buffer's end are not counted (the clean loop's minimum
// iteration at the end of a buffer).
struct LineReference {
    std::vector<unsigned> inv, clean;
    std::vector<bool> wrote;
    std::uint64_t inner_inv = 0, inner_flush = 0, inner_clean = 0;

    explicit LineReference(std::size_t lines) : inv(lines), clean(lines), wrote(lines) {}
    void invalidate(std::size_t start, std::size_t end, std::size_t line) {
        auto one = [&](std::size_t i, bool flush) {
            ++(flush ? inner_flush : inner_inv);
            if (i >= inv.size()) return;
            ++inv[i];
            if (flush) ++clean[i];
            wrote[i] = false;
        };
        if (start % line) {
            start -= start % line;
            one(start / line, true);
            start += line;
        }
        if (end % line) {
            end -= end % line;
            one(end / line, true);
        }
        for (; start < end; start += line) one(start / line, false);
    }
    void clean_lines(std::size_t start, std::size_t end, std::size_t line) {
        start -= start % line;
        do {
            ++inner_clean;
            if (start / line < clean.size()) ++clean[start / line];
            start += line;
        } while (start < end);
    }
};

TEST(DmaSemantics, RandomSyncsMaintainTheSameLinesAsTheKernelsLineByLineLoops) {
    // Buffers of 1 to ~300 lines of 32 B (bitmaps over several 64-bit words), random device
    // writes and syncs of random ranges, directions and sides, empty ranges and ranges ending at
    // the buffer's end included. The walkers hand the maintenance runs of lines; the counters,
    // the device-written bits and the line counts must be those of the loops above.
    std::mt19937_64 rng(17);
    auto pick = [&rng](std::size_t lo, std::size_t hi) { return std::uniform_int_distribution<std::size_t>(lo, hi)(rng); };
    for (int trial = 0; trial < 40; ++trial) {
        SCOPED_TRACE(trial);
        Harness h;
        const std::size_t size = pick(1, 9600);
        DmaBuffer buf(h.dma, size, 32);
        const DmaDataDirection dir = trial % 3 == 0 ? DMA_FROM_DEVICE : trial % 3 == 1 ? DMA_TO_DEVICE : DMA_BIDIRECTIONAL;
        LineReference ref(buf.lines());
        h.body = [&]() -> engine::Task<> {
            co_await dma_map_single(h.cpu, buf, size, dir, DMA_ATTR_SKIP_CPU_SYNC);
            for (int op = 0; op < 30; ++op) {
                const std::size_t off = pick(0, size), len = pick(0, size - off);
                if (dir != DMA_TO_DEVICE && len > 0) {
                    device_write(buf, off, len, h.cpu.now());
                    for (std::size_t i = off / 32; i <= (off + len - 1) / 32; ++i) ref.wrote[i] = true;
                }
                const std::size_t s = pick(0, size), n = pick(0, size - s);
                if (pick(0, 1)) {
                    co_await dma_sync_single_for_cpu(h.cpu, buf, s, n, dir);
                    if (dir != DMA_TO_DEVICE) ref.invalidate(s, s + n, 32);
                } else {
                    co_await dma_sync_single_for_device(h.cpu, buf, s, n, dir);
                    if (dir == DMA_FROM_DEVICE) ref.invalidate(s, s + n, 32);
                    else ref.clean_lines(s, s + n, 32);
                }
            }
        };
        h.run();
        for (std::size_t i = 0; i < buf.lines(); ++i) {
            ASSERT_EQ(buf.invalidations(i), ref.inv[i]) << "line " << i;
            ASSERT_EQ(buf.cleans(i), ref.clean[i]) << "line " << i;
            ASSERT_EQ(buf.device_wrote(i), ref.wrote[i]) << "line " << i;
        }
        EXPECT_EQ(h.dma.stats().inner_inv, ref.inner_inv);
        EXPECT_EQ(h.dma.stats().inner_flush, ref.inner_flush);
        EXPECT_EQ(h.dma.stats().inner_clean, ref.inner_clean);
    }
}

TEST(DmaSemantics, MisuseIsAnError) {
    Harness h;
    DmaBuffer buf(h.dma, 256, 32);
    EXPECT_THROW(device_write(buf, 0, 10, h.cpu.now()), std::logic_error); // not mapped
    h.body = [&]() -> engine::Task<> {
        co_await dma_map_single(h.cpu, buf, 128, DMA_FROM_DEVICE);
        EXPECT_THROW(device_write(buf, 100, 64, h.cpu.now()), std::logic_error); // beyond the mapping
        bool threw = false;
        try {
            co_await dma_sync_single_for_cpu(h.cpu, buf, 0, 129, DMA_FROM_DEVICE);
        } catch (const std::logic_error&) {
            threw = true;
        }
        EXPECT_TRUE(threw);
        co_await dma_unmap_single(h.cpu, buf, 128, DMA_FROM_DEVICE);
    };
    h.run();
}

TEST(DmaSemantics, EachMisuseNamesItsCallTheBufferAndWhatWasWrong) {
    // A 256 B buffer; the mapping checks in their order: not mapped, then the range against the
    // mapping's 128 B, then the direction.
    Harness h;
    DmaBuffer buf(h.dma, 256, 32);
    const std::string id = std::to_string(buf.id());
    auto message = [](auto&& f) -> std::string {
        try {
            f();
        } catch (const std::logic_error& e) {
            return e.what();
        }
        return "no error";
    };
    EXPECT_EQ(message([&] { cpu_read(h.cpu, buf, 200, 100); }),
              "cpu_read: range [200, +100) outside DMA buffer " + id + " of 256 bytes");
    EXPECT_EQ(message([&] { device_write(buf, 0, 10, h.cpu.now()); }),
              "device_write: DMA buffer " + id + " is not mapped for the device to write [0, +10)");
    std::vector<std::string> sync_errors;
    h.body = [&]() -> engine::Task<> {
        auto sync = [&](std::size_t offset, std::size_t len, DmaDataDirection dir) -> engine::Task<> {
            try {
                co_await dma_sync_single_for_cpu(h.cpu, buf, offset, len, dir);
                sync_errors.push_back("no error");
            } catch (const std::logic_error& e) {
                sync_errors.push_back(e.what());
            }
        };
        co_await sync(0, 64, DMA_FROM_DEVICE);
        co_await dma_map_single(h.cpu, buf, 128, DMA_FROM_DEVICE);
        co_await sync(0, 129, DMA_FROM_DEVICE);
        co_await sync(0, 64, DMA_TO_DEVICE);
        co_await sync(0, 128, DMA_FROM_DEVICE);
        EXPECT_EQ(message([&] { device_write(buf, 100, 64, h.cpu.now()); }),
                  "device_write: DMA buffer " + id + " is not mapped for the device to write [100, +64)");
        co_await dma_unmap_single(h.cpu, buf, 128, DMA_FROM_DEVICE);
    };
    h.run();
    const std::vector<std::string> expected = {
        "dma_sync_single_for_cpu: DMA buffer " + id + " is not mapped",
        "dma_sync_single_for_cpu: range [0, +129) outside the mapping of DMA buffer " + id + " (128 bytes)",
        "dma_sync_single_for_cpu: direction DMA_TO_DEVICE differs from the mapping's DMA_FROM_DEVICE",
        "no error",
    };
    EXPECT_EQ(sync_errors, expected);
}

// ---------------------------------------------------------------------------------------------
// Costs, by hand. Costs: calls map 100, unmap 80, sync 60; inner inv 10, clean 12, flush 14;
// outer inv 5, clean 6, flush 7, outer sync 20; dsb 30.

struct CostRow {
    const char* name;
    std::size_t offset, len;
    engine::Cycles expected;
};

const CostRow SYNC_COSTS[] = {
    // 1536 B aligned = 48 whole lines: inner 48*10 + dsb 30 = 510; outer 48*5 + sync 20 = 260;
    // call 60 -> 830.
    {"1536_aligned", 0, 1536, 830},
    // 1518 B from 0 = 47 whole lines + a partial 48th (1504..1517): inner 47*10 + 14 + 30 = 514;
    // outer 47*5 + 7 + 20 = 262; call 60 -> 836.
    {"1518_at_0", 0, 1518, 836},
    // 1518 B from 20 = [20, 1538): one more line (49: 0..48), both ends partial: inner 47*10 +
    // 2*14 + 30 = 528; outer 47*5 + 2*7 + 20 = 269; call 60 -> 857.
    {"1518_at_20", 20, 1518, 857},
    // 10 B inside one line [40, 50): two clean+invalidates of line 1: inner 2*14 + 30 = 58;
    // outer 2*7 + 20 = 34; call 60 -> 152.
    {"10_inside_a_line", 40, 10, 152},
};

TEST(DmaCost, SyncForCpuFromDeviceByHand) {
    for (const auto& row : SYNC_COSTS) {
        SCOPED_TRACE(row.name);
        Harness h;
        DmaBuffer buf(h.dma, 9216, 32);
        engine::Cycles took = 0;
        h.body = [&]() -> engine::Task<> {
            co_await dma_map_single(h.cpu, buf, 9216, DMA_FROM_DEVICE, DMA_ATTR_SKIP_CPU_SYNC); // 100
            co_await h.timed(dma_sync_single_for_cpu(h.cpu, buf, row.offset, row.len, DMA_FROM_DEVICE), took);
        };
        h.run();
        EXPECT_EQ(took, row.expected);
        EXPECT_EQ(h.dma.stats().cycles, 100 + row.expected);
        EXPECT_EQ(h.dma.stats().syncs_for_cpu, 1u);
        EXPECT_EQ(h.cpu.stats().cycles[static_cast<std::size_t>(kernel::CtxKind::TASK)]
                                      [static_cast<std::size_t>(Cat::CACHE_MAINT)],
                  100 + row.expected);
        EXPECT_EQ(row.expected, 60 + dma_maintenance_cycles(round_dma_costs(), 32, row.offset, row.len,
                                                            DMA_FROM_DEVICE, false));
    }
}

TEST(DmaCall, TheCallDoesTheWorkAndTheAwaitSpendsItsCycles) {
    // A DMA API call is no coroutine of its own on the common path: calling it checks, counts and
    // does the maintenance at once; awaiting it spends the cycles. 1 GHz: 1 cycle = 1 ns.
    // Map of 256 B FROM_DEVICE = 8 whole lines: inner 8*10 + 30 = 110, outer 8*5 + 20 = 60, call
    // 100 -> 270. A sync for the CPU of [0, 64) = 2 lines: inner 2*10 + 30 = 50, outer 2*5 + 20 = 30,
    // call 60 -> 140. Misuse (a sync past the mapping) throws at the call, before any await.
    Harness h;
    DmaBuffer buf(h.dma, 256, 32);
    Tick t0 = 0, t_called = 0, t_map = 0, t_sync_called = 0, t_sync = 0;
    bool mapped_at_call = false, invalidated_at_call = false, threw_at_call = false;
    std::uint64_t syncs_at_call = 0;
    h.body = [&]() -> engine::Task<> {
        t0 = h.cpu.now();
        {
            DmaCall map = dma_map_single(h.cpu, buf, 256, DMA_FROM_DEVICE);
            t_called = h.cpu.now();
            mapped_at_call = buf.mapped();
            invalidated_at_call = buf.invalidations(7) == 1;
            co_await std::move(map);
        }
        t_map = h.cpu.now();
        {
            DmaCall sync = dma_sync_single_for_cpu(h.cpu, buf, 0, 64, DMA_FROM_DEVICE);
            t_sync_called = h.cpu.now();
            syncs_at_call = h.dma.stats().syncs_for_cpu;
            co_await std::move(sync);
        }
        t_sync = h.cpu.now();
        try {
            (void)dma_sync_single_for_cpu(h.cpu, buf, 0, 257, DMA_FROM_DEVICE);
        } catch (const std::logic_error&) {
            threw_at_call = true;
        }
        co_await dma_unmap_single(h.cpu, buf, 256, DMA_FROM_DEVICE);
    };
    h.run();
    EXPECT_EQ(t_called, t0);
    EXPECT_TRUE(mapped_at_call);
    EXPECT_TRUE(invalidated_at_call);
    EXPECT_EQ(t_map - t0, 270 * engine::PS_PER_NS);
    EXPECT_EQ(t_sync_called, t_map);
    EXPECT_EQ(syncs_at_call, 1u);
    EXPECT_EQ(t_sync - t_map, 140 * engine::PS_PER_NS);
    EXPECT_TRUE(threw_at_call);
    EXPECT_EQ(h.dma.stats().syncs_for_cpu, 1u); // the failed call stopped at its check
}

TEST(DmaCost, MapAndUnmapByHand) {
    Harness h;
    DmaBuffer rx(h.dma, 9216, 32);
    DmaBuffer tx(h.dma, 2048, 32);
    engine::Cycles map_rx = 0, unmap_rx = 0, map_tx = 0, unmap_tx = 0, unmap_skip = 0;
    h.body = [&]() -> engine::Task<> {
        co_await h.timed(dma_map_single(h.cpu, rx, 9216, DMA_FROM_DEVICE), map_rx);
        co_await h.timed(dma_unmap_single(h.cpu, rx, 9216, DMA_FROM_DEVICE), unmap_rx);
        co_await h.timed(dma_map_single(h.cpu, tx, 1518, DMA_TO_DEVICE), map_tx);
        co_await h.timed(dma_unmap_single(h.cpu, tx, 1518, DMA_TO_DEVICE), unmap_tx);
        co_await dma_map_single(h.cpu, rx, 1536, DMA_FROM_DEVICE);
        co_await h.timed(dma_unmap_single_attrs(h.cpu, rx, 1536, DMA_FROM_DEVICE, DMA_ATTR_SKIP_CPU_SYNC),
                         unmap_skip);
    };
    h.run();
    // 9216 B = 288 lines. Map: inner 288*10 + 30 = 2910, outer 288*5 + 20 = 1460, call 100.
    EXPECT_EQ(map_rx, 4470u);
    // Unmap: the same maintenance with the unmap call 80.
    EXPECT_EQ(unmap_rx, 4450u);
    // TO_DEVICE 1518 B: clean of 48 lines (0..47): inner 48*12 + 30 = 606, outer 48*6 + 20 = 308,
    // call 100 -> 1014.
    EXPECT_EQ(map_tx, 1014u);
    // TO_DEVICE unmap: no maintenance, the call only.
    EXPECT_EQ(unmap_tx, 80u);
    // SKIP_CPU_SYNC: the call only.
    EXPECT_EQ(unmap_skip, 80u);
}

TEST(DmaCost, NoOuterCacheChargesInnerLinesOnly) {
    // An ARMv8-like platform: 64 B lines, outer figures 0. 1518 B from 0 = 23 whole lines + a
    // partial 24th: inner 23*10 + 14 + dsb 30 = 274; outer 0; call 60 -> 334.
    DmaCosts c = round_dma_costs();
    c.outer_inv_line = c.outer_clean_line = c.outer_flush_line = c.outer_sync = 0;
    EXPECT_EQ(60 + dma_maintenance_cycles(c, 64, 0, 1518, DMA_FROM_DEVICE, false), 334u);
}

TEST(DmaCost, AnInvalidatesCyclesFromThePlatformsInnerAndOuterSumsByHand) {
    // The round figures: per whole line inner 10 + outer 5 = 15, per partial end line 14 + 7 = 21,
    // once dsb 30 + outer sync 20 = 50. A sync for the CPU of [16, 116) on 32 B lines: lines 0 and
    // 3 partial, 1 and 2 whole: 2*15 + 2*21 + 50 = 122, call 60 -> 182 ns at 1 GHz, as the walkers
    // (dma_maintenance_cycles) count it.
    Harness h;
    EXPECT_EQ(h.dma.inv_line_cycles(), 15u);
    EXPECT_EQ(h.dma.flush_line_cycles(), 21u);
    EXPECT_EQ(h.dma.inv_fixed_cycles(), 50u);
    EXPECT_EQ(dma_maintenance_cycles(h.dma.costs(), 32, 16, 100, DMA_FROM_DEVICE, false), 122u);
    DmaBuffer buf(h.dma, 256, 32);
    Tick before = 0, after = 0;
    engine::Cycles charged = 0;
    h.body = [&]() -> engine::Task<> {
        co_await dma_map_single(h.cpu, buf, 256, DMA_FROM_DEVICE);
        const engine::Cycles c0 = h.dma.stats().cycles;
        before = h.cpu.now();
        co_await dma_sync_single_for_cpu(h.cpu, buf, 16, 100, DMA_FROM_DEVICE);
        after = h.cpu.now();
        charged = h.dma.stats().cycles - c0;
        co_await dma_unmap_single(h.cpu, buf, 256, DMA_FROM_DEVICE);
    };
    h.run();
    EXPECT_EQ(after - before, 182 * engine::PS_PER_NS);
    EXPECT_EQ(charged, 182u);
}

// ---------------------------------------------------------------------------------------------
// Stale reads.

TEST(DmaStale, DriverSyncingLessThanReceivedReadsStaleBytesAndTheFindingNamesThem) {
    Harness h;
    DmaBuffer buf(h.dma, 2048, 32);
    bool stale = false, synced_part_stale = true;
    Tick read_at = 0;
    h.body = [&]() -> engine::Task<> {
        co_await dma_map_single(h.cpu, buf, 2048, DMA_FROM_DEVICE);
        device_write(buf, 0, 1518, h.cpu.now());                           // a 1518 B frame
        co_await dma_sync_single_for_cpu(h.cpu, buf, 0, 1024, DMA_FROM_DEVICE); // the bug: 1024 only
        synced_part_stale = cpu_read(h.cpu, buf, 0, 1024);
        read_at = h.cpu.now();
        stale = cpu_read(h.cpu, buf, 0, 1518);
        co_await dma_unmap_single_attrs(h.cpu, buf, 2048, DMA_FROM_DEVICE, DMA_ATTR_SKIP_CPU_SYNC);
    };
    h.run();
    EXPECT_FALSE(synced_part_stale);
    EXPECT_TRUE(stale);
    ASSERT_EQ(h.dma.findings().stale_reads, 1u);
    ASSERT_EQ(h.dma.findings().reports.size(), 1u);
    const auto& r = h.dma.findings().reports[0];
    // Lines 32..47 were written and not invalidated: the stale bytes read are [1024, 1518).
    EXPECT_EQ(r.first, 1024u);
    EXPECT_EQ(r.end, 1518u);
    EXPECT_EQ(r.buffer, buf.id());
    EXPECT_EQ(r.read_offset, 0u);
    EXPECT_EQ(r.read_len, 1518u);
    EXPECT_EQ(r.time, read_at);
    // map of 64 lines: 640 + 30 + 320 + 20 + 100 = 1110; sync of 32 lines: 320 + 30 + 160 + 20 +
    // 60 = 590 -> the read at 1700 ns after the thread started.
    EXPECT_GE(read_at, 1700 * PS_PER_NS);
}

TEST(DmaStale, ReadWithoutAnySyncIsStaleAndOnlyTheFirstSixteenReportsAreKept) {
    Harness h;
    DmaBuffer buf(h.dma, 256, 32);
    h.body = [&]() -> engine::Task<> {
        co_await dma_map_single(h.cpu, buf, 256, DMA_FROM_DEVICE);
        device_write(buf, 70, 20, h.cpu.now()); // line 2 only
        for (int i = 0; i < 20; ++i) EXPECT_TRUE(cpu_read(h.cpu, buf, 0, 256));
        EXPECT_FALSE(cpu_read(h.cpu, buf, 0, 64)); // lines 0-1 were not written
        co_await dma_unmap_single(h.cpu, buf, 256, DMA_FROM_DEVICE);
        EXPECT_FALSE(cpu_read(h.cpu, buf, 0, 256)); // the unmap invalidated it
    };
    h.run();
    EXPECT_EQ(h.dma.findings().stale_reads, 20u);
    ASSERT_EQ(h.dma.findings().reports.size(), DmaFindings::MAX_REPORTS);
    EXPECT_EQ(h.dma.findings().reports[0].first, 64u); // the whole line 2 is stale in the cache
    EXPECT_EQ(h.dma.findings().reports[0].end, 96u);
}

// The line of a byte is its offset shifted by log2 of the line size, at every line size: a device
// write of the two bytes around the line 2 / line 3 boundary marks lines 2 and 3 and no other; a sync
// of line 3's first byte for the CPU clears line 3 only.
TEST(DmaStale, EachLineSizeMarksAndClearsTheLinesOfTheBytesByHand) {
    for (const std::uint32_t line : {16u, 64u, 128u}) {
        SCOPED_TRACE(line);
        Harness h;
        DmaBuffer buf(h.dma, 8 * line, line);
        EXPECT_EQ(1u << buf.line_shift(), line);
        EXPECT_EQ(buf.lines(), 8u);
        std::string after_write, after_sync;
        bool stale_before = true, stale_line2 = false, stale_after = true;
        h.body = [&]() -> engine::Task<> {
            co_await dma_map_single(h.cpu, buf, 8 * line, DMA_FROM_DEVICE);
            device_write(buf, 3 * line - 1, 2, h.cpu.now()); // bytes 3L-1 (line 2) and 3L (line 3)
            for (std::size_t i = 0; i < 8; ++i) after_write += buf.device_wrote(i) ? '1' : '0';
            stale_before = cpu_read(h.cpu, buf, 0, 2 * line);   // lines 0-1
            stale_line2 = cpu_read(h.cpu, buf, 3 * line - 1, 1); // line 2's last byte
            stale_after = cpu_read(h.cpu, buf, 4 * line, 4 * line); // lines 4-7
            co_await dma_sync_single_for_cpu(h.cpu, buf, 3 * line, 1, DMA_FROM_DEVICE);
            for (std::size_t i = 0; i < 8; ++i) after_sync += buf.device_wrote(i) ? '1' : '0';
            co_await dma_unmap_single_attrs(h.cpu, buf, 8 * line, DMA_FROM_DEVICE, DMA_ATTR_SKIP_CPU_SYNC);
        };
        h.run();
        EXPECT_EQ(after_write, "00110000");
        EXPECT_FALSE(stale_before);
        EXPECT_TRUE(stale_line2);
        EXPECT_FALSE(stale_after);
        EXPECT_EQ(after_sync, "00100000");
    }
}

TEST(DmaStale, LinesInOneWordAndAcrossAWordBoundaryAreMarkedFoundAndClearedByHand) {
    // 192 lines of 32 B: three 64-bit words of the bitmap (lines 0-63, 64-127, 128-191). Writes
    // of line 0 (a word's lowest bit), lines 63-64 (across words 0 and 1: bytes 2047-2048), line
    // 127 (word 1's highest bit) and lines 130-132 (within word 2).
    Harness h;
    DmaBuffer buf(h.dma, 192 * 32, 32);
    auto written = [&] {
        std::string s;
        for (std::size_t i = 0; i < buf.lines(); ++i)
            if (buf.device_wrote(i)) s += std::to_string(i) + " ";
        return s;
    };
    std::string after_write, after_sync;
    std::vector<bool> stale;
    h.body = [&]() -> engine::Task<> {
        co_await dma_map_single(h.cpu, buf, buf.size(), DMA_FROM_DEVICE);
        device_write(buf, 0, 1, h.cpu.now());
        device_write(buf, 2047, 2, h.cpu.now());
        device_write(buf, 127 * 32 + 31, 1, h.cpu.now());
        device_write(buf, 130 * 32, 3 * 32, h.cpu.now());
        after_write = written();
        stale.push_back(cpu_read(h.cpu, buf, 32, 62 * 32));       // lines 1-62: none written
        stale.push_back(cpu_read(h.cpu, buf, 64 * 32, 1));        // line 64 (found: bytes 2048-2049)
        stale.push_back(cpu_read(h.cpu, buf, 65 * 32, 62 * 32));  // lines 65-126: none
        stale.push_back(cpu_read(h.cpu, buf, 126 * 32, 64));      // lines 126-127 (4064-4096)
        stale.push_back(cpu_read(h.cpu, buf, 133 * 32, 59 * 32)); // lines 133-191: none
        stale.push_back(cpu_read(h.cpu, buf, 32, 129 * 32));      // lines 1-129, three words (2016-4096)
        co_await dma_sync_single_for_cpu(h.cpu, buf, 63 * 32, 64, DMA_FROM_DEVICE);         // lines 63-64
        co_await dma_sync_single_for_cpu(h.cpu, buf, 130 * 32 + 1, 64, DMA_FROM_DEVICE);    // lines 130-132
        after_sync = written();
        co_await dma_unmap_single_attrs(h.cpu, buf, buf.size(), DMA_FROM_DEVICE, DMA_ATTR_SKIP_CPU_SYNC);
    };
    h.run();
    EXPECT_EQ(after_write, "0 63 64 127 130 131 132 ");
    EXPECT_EQ(stale, (std::vector<bool>{false, true, false, true, false, true}));
    EXPECT_EQ(after_sync, "0 127 ");
    ASSERT_EQ(h.dma.findings().reports.size(), 3u);
    const auto& r = h.dma.findings().reports;
    EXPECT_EQ(r[0].first, 2048u);
    EXPECT_EQ(r[0].end, 2049u);
    EXPECT_EQ(r[1].first, 4064u);
    EXPECT_EQ(r[1].end, 4096u);
    EXPECT_EQ(r[2].first, 2016u);
    EXPECT_EQ(r[2].end, 4096u);
}

TEST(DmaStale, CorrectSequencesReportNothingOverManyRandomLengths) {
    // Both rx strategies of E5, 2000 packets each, lengths 60..9018 (random, fixed seed):
    //  before: 9 KiB buffer mapped FROM_DEVICE, device writes, full unmap, read;
    //  after: MTU-sized buffer, device writes, sync_for_cpu of the received length, unmap with
    //         SKIP_CPU_SYNC, read. The device writes after a 2-byte head padding (RX_HEAD_PADDING).
    Harness h;
    DmaBuffer big(h.dma, 9216 + 2, 32);
    DmaBuffer small(h.dma, 1518 + 2, 32);
    std::mt19937_64 rng(42);
    int reads = 0;
    h.body = [&]() -> engine::Task<> {
        for (int i = 0; i < 2000; ++i) {
            std::size_t len = std::uniform_int_distribution<std::size_t>(60, 9018)(rng);
            co_await dma_map_single(h.cpu, big, big.size(), DMA_FROM_DEVICE);
            device_write(big, 2, len, h.cpu.now());
            co_await dma_unmap_single(h.cpu, big, big.size(), DMA_FROM_DEVICE);
            EXPECT_FALSE(cpu_read(h.cpu, big, 2, len));

            std::size_t slen = std::uniform_int_distribution<std::size_t>(60, 1518)(rng);
            co_await dma_map_single(h.cpu, small, small.size(), DMA_FROM_DEVICE);
            device_write(small, 2, slen, h.cpu.now());
            co_await dma_sync_single_for_cpu(h.cpu, small, 2, slen, DMA_FROM_DEVICE);
            EXPECT_FALSE(cpu_read(h.cpu, small, 2, slen));
            co_await dma_unmap_single_attrs(h.cpu, small, small.size(), DMA_FROM_DEVICE, DMA_ATTR_SKIP_CPU_SYNC);
            EXPECT_FALSE(cpu_read(h.cpu, small, 0, small.size()));
            reads += 3;
        }
    };
    h.run();
    EXPECT_EQ(reads, 6000);
    EXPECT_EQ(h.dma.findings().stale_reads, 0u);
}

TEST(DmaCoherent, NeverStaleAndNoPerLineCost) {
    Harness h(round_dma_costs(/*coherent=*/true));
    DmaBuffer buf(h.dma, 9216, 64);
    engine::Cycles took = 0;
    h.body = [&]() -> engine::Task<> {
        Tick t0 = h.cpu.now();
        co_await dma_map_single(h.cpu, buf, 9216, DMA_FROM_DEVICE);
        device_write(buf, 0, 9000, h.cpu.now());
        EXPECT_FALSE(cpu_read(h.cpu, buf, 0, 9000)); // no sync at all: still coherent
        co_await dma_sync_single_for_cpu(h.cpu, buf, 0, 100, DMA_FROM_DEVICE);
        co_await dma_unmap_single(h.cpu, buf, 9216, DMA_FROM_DEVICE);
        took = (h.cpu.now() - t0) / PS_PER_NS;
    };
    h.run();
    // The fixed parts only: map 100 + sync 60 + unmap 80 = 240.
    EXPECT_EQ(took, 240u);
    EXPECT_EQ(h.dma.findings().stale_reads, 0u);
    EXPECT_EQ(maintenance(buf).substr(0, buf.lines()), std::string(buf.lines(), '0')); // no invalidation
    EXPECT_EQ(h.dma.stats().inner_inv + h.dma.stats().outer_inv + h.dma.stats().barriers, 0u);
    EXPECT_EQ(dma_maintenance_cycles(round_dma_costs(true), 64, 0, 9216, DMA_FROM_DEVICE, true), 0u);
}

} // namespace
} // namespace kdsim::devices
