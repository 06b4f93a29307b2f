// Costs of the DMA API on one platform (the optional [dma] section of a profile), in cycles.
// Header-only so that system::Profile can hold it without linking the devices layer.
#pragma once

#include <optional>

#include "engine/time.h"

namespace kdsim::devices {

using engine::Cycles;

struct DmaCosts {
    // Coherent platforms (x86: the device's writes snoop the CPU caches) do no cache
    // maintenance: every call costs only its fixed part.
    bool coherent = false;
    Cycles map_call = 0;   // dma_map_single: call chain, direction tests, address translation
    Cycles unmap_call = 0; // dma_unmap_single_attrs: call chain (and PG_dcache_clean marking on arm32)
    Cycles sync_call = 0;  // dma_sync_single_for_cpu / _for_device: call chain
    // Inner cache (L1, or L1+L2 to the point of coherency on ARMv8), per cache line:
    Cycles inner_inv_line = 0;   // invalidate by VA (DCIMVAC / dc ivac)
    Cycles inner_clean_line = 0; // clean by VA (DCCMVAC / dc cvac)
    Cycles inner_flush_line = 0; // clean+invalidate by VA (DCCIMVAC / dc civac): partial lines of an invalidate
    // Outer cache (an L2C-310/PL310 maintained by physical address), per line; 0 when there is none:
    Cycles outer_inv_line = 0;   // write of L2X0_INV_LINE_PA
    Cycles outer_clean_line = 0; // write of L2X0_CLEAN_LINE_PA
    Cycles outer_flush_line = 0; // write of L2X0_CLEAN_INV_LINE_PA (partial lines of an invalidate)
    Cycles outer_sync = 0;       // L2X0_CACHE_SYNC at the end of each outer range operation
    Cycles barrier = 0;          // the dsb that ends each inner range operation
    // swiotlb's slot allocator (kernel/dma/swiotlb.c); required when the machine has a bounce pool:
    std::optional<std::uint64_t> swiotlb_map_call;   // swiotlb_tbl_map_single + swiotlb_find_slots, area lock
    std::optional<std::uint64_t> swiotlb_unmap_call; // swiotlb_tbl_unmap_single + swiotlb_release_slots, area lock
    std::optional<std::uint64_t> swiotlb_slot_probe; // one slot tested by swiotlb_do_find_slots' search
    std::optional<std::uint64_t> swiotlb_slot_write; // one iteration of a loop that writes slot entries
    // All four swiotlb figures are given.
    bool has_swiotlb_figures() const {
        return swiotlb_map_call && swiotlb_unmap_call && swiotlb_slot_probe && swiotlb_slot_write;
    }
};

// A user-space stand-in for non-coherent DMA sync on a coherent machine ([flush] of a profile,
// written by kdsim calibrate): flushing a buffer the device (another core) wrote, line by line
// with CLFLUSHOPT, and reading the lines back from memory.
struct FlushCosts {
    Cycles per_call = 0;        // fixed cost of one buffer's flush (+ re-read without reread_per_call)
    double dirty_line = 0;      // cycles per flushed dirty line
    double reread_line = 0;     // cycles per line the CPU then reads back from memory (the received ones)
    // Given (kdsim calibrate splits them): per_call is the flush's fixed cost alone and this the
    // re-read's, so that a model with a memory hierarchy can take the re-read from it instead.
    std::optional<std::uint64_t> reread_per_call;
};

} // namespace kdsim::devices
