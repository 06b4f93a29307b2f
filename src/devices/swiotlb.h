// swiotlb: the bounce pool of the streaming DMA API, for devices whose DMA mask does not reach a
// buffer (or for every buffer with the kernel command line's swiotlb=force).
//
// Mirrors kernel/dma/swiotlb.c and kernel/dma/direct.h of Linux 6.1:
//   - the pool (io_tlb_default_mem): 64 MiB by default, of IO_TLB_SIZE (2 KiB) slots, allocated at
//     boot with memblock_alloc_low: top-down below ARCH_LOW_ADDRESS_LIMIT (4 GiB; on arm64 the
//     DMA zone's limit, which the narrowest DT dma-range sets), so that narrow masks reach it;
//   - split into areas, one per possible CPU rounded up to a power of two (swiotlb_adjust_nareas);
//     a mapping searches its CPU's area first, then the others (swiotlb_find_slots);
//   - swiotlb_do_find_slots: from the area's index, in steps of one slot (a page's worth of slots
//     for mappings of PAGE_SIZE or more), the first slot whose free-run count `list` covers the
//     mapping; a mapping never crosses an IO_TLB_SEGSIZE (128-slot) segment, so 256 KiB at most;
//     swiotlb_release_slots merges the freed run with its free neighbours in the segment;
//   - no run free: the mapping fails ("swiotlb buffer is full"): DMA_MAPPING_ERROR for the driver.
// The copies (swiotlb_bounce) and the maintenance on the bounce slot are in dma.cpp.
// Not modelled: min_align_mask (no device here sets it: slots start 2 KiB-aligned), restricted
// DMA pools, dynamic pools (6.6+), the area locks' contention.
#pragma once

#include "mem/memory.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kdsim::devices {

inline constexpr unsigned IO_TLB_SHIFT = 11;
inline constexpr std::size_t IO_TLB_SIZE = std::size_t{1} << IO_TLB_SHIFT; // one slot: 2 KiB
inline constexpr std::size_t IO_TLB_SEGSIZE = 128;                         // slots a mapping may span
inline constexpr std::uint64_t IO_TLB_DEFAULT_SIZE = std::uint64_t{64} << 20;
inline constexpr std::size_t SWIOTLB_PAGE_SIZE = 4096;
inline constexpr unsigned DMA_MASK_MIN_BITS = 24, DMA_MASK_MAX_BITS = 64;

// DMA_BIT_MASK(n): the highest bus address a device with an n-bit mask reaches.
constexpr std::uint64_t dma_bit_mask(unsigned bits) { return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1; }

// swiotlb= on the kernel command line: AUTO (no option: the pool exists when some device's mask
// does not reach all of DRAM, and bounces only what a mask misses), FORCE (swiotlb=force: every
// streaming mapping bounces), NOFORCE (swiotlb=noforce: no pool, an unreachable buffer fails).
enum class SwiotlbMode : std::uint8_t { AUTO, FORCE, NOFORCE };

// What one device's mappings did with the pool.
struct SwiotlbDeviceStats {
    std::uint64_t bounced_maps = 0;      // mappings that took bounce slots
    std::uint64_t map_failures = 0;      // mappings refused: the pool had no free run, or no pool
    std::uint64_t copies_to_device = 0;  // swiotlb_bounce orig -> slot
    std::uint64_t bytes_to_device = 0;
    std::uint64_t copies_from_device = 0; // swiotlb_bounce slot -> orig
    std::uint64_t bytes_from_device = 0;
    std::uint64_t copy_cycles = 0;        // the copies' cycles (Cat::COPY), stalls included
    std::uint64_t slots_in_use = 0, slots_high_water = 0;
    std::uint64_t slot_cycles = 0;        // the slot allocator's cycles (cache_maintenance): search, writes, calls
};

// The DMA side of a struct device: its reach and what its mappings bounced.
struct DmaDevice {
    std::string name;
    std::uint64_t dma_mask = ~std::uint64_t{0}; // min_not_zero(*dev->dma_mask, dev->bus_dma_limit)
    SwiotlbDeviceStats swiotlb;
};

// [machine.dram]: the machine's physical memory, for dma_capable. The page allocator's buffers lie
// spread over all of it (a running system's free pages are everywhere): the `key`-th allocation
// of `unit` bytes (a unit-aligned block) at the key's golden-ratio (Weyl) point of DRAM, so the
// share of buffers beyond a mask is the share of DRAM beyond it, deterministically.
struct DramLayout {
    std::uint64_t base = 0, size = 0;
    std::uint64_t place(std::uint64_t key, std::uint64_t unit) const;
};

// Where memblock_alloc_low puts a pool of `bytes` in DRAM [dram_base, dram_base + dram_size):
// the top of the memory below `low_limit` (ARCH_LOW_ADDRESS_LIMIT + 1). Returns the pool's first
// physical address, or nothing when it does not fit there.
std::optional<std::uint64_t> swiotlb_pool_start(std::uint64_t dram_base, std::uint64_t dram_size, std::uint64_t bytes,
                                                std::uint64_t low_limit);

// Whether the kernel sets a pool up (swiotlb_init's test): swiotlb=force always, swiotlb=noforce
// never, else when DRAM reaches past the device's mask (the arm64 test max_pfn > DMA zone, x86's
// max_pfn > 4 GiB, for the device that needs it). Without a DRAM layout only force does.
bool swiotlb_wanted(SwiotlbMode mode, const DramLayout* dram, std::uint64_t mask);
// ARCH_LOW_ADDRESS_LIMIT + 1, below which the pool lies: 4 GiB; on arm64 the DMA zone's end
// (zone_dma_bits: the narrowest device mask from the device tree, at most 32 bits).
std::uint64_t swiotlb_low_limit(bool arm64, unsigned mask_bits);

// io_tlb_mem: the slots of one pool and their allocation.
class SwiotlbPool {
public:
    // A pool of `bytes` (a multiple of IO_TLB_SEGSIZE slots) at physical `phys_start`, split in
    // `cpus` rounded up to a power of two areas (fewer when the slots do not divide).
    SwiotlbPool(std::uint64_t phys_start, std::uint64_t bytes, int cpus);

    std::uint64_t phys_start() const { return start_; }
    std::uint64_t phys_end() const { return start_ + nslabs_ * IO_TLB_SIZE; } // one past the last byte
    std::size_t nslabs() const { return nslabs_; }
    std::size_t nareas() const { return areas_.size(); }
    std::size_t used() const { return used_; }
    std::size_t high_water() const { return high_water_; }
    std::uint64_t failures() const { return failures_; }
    // The allocator's work so far, all mappings: slots tested by the searches, and iterations of
    // the loops that write slot entries (at allocation: the run's list/alloc_size loop, its
    // orig_addr loop, the merge of the free slots before it; at release: the run's loop, the merge).
    std::uint64_t slot_probes() const { return probes_; }
    std::uint64_t slot_writes() const { return writes_; }

    // Where the pool lies in the machine's memory hierarchy (0: no hierarchy).
    void set_addr(mem::Addr a) { addr_ = a; }
    mem::Addr slot_addr(std::size_t index) const { return addr_ ? addr_ + index * IO_TLB_SIZE : 0; }
    std::uint64_t slot_phys(std::size_t index) const { return start_ + index * IO_TLB_SIZE; }

    // swiotlb_find_slots for `alloc_size` bytes from CPU `cpu`: the first slot's index, the slots
    // marked used; nothing when no area has a free run (counted).
    std::optional<std::size_t> find_slots(int cpu, std::size_t alloc_size);
    // swiotlb_release_slots of the run at `index` that find_slots gave for `alloc_size`.
    void release_slots(std::size_t index, std::size_t alloc_size);
    // The free-run count of slot i (`list`): how many free slots follow from it within its segment.
    std::uint32_t free_run(std::size_t i) const { return list_[i]; }

    static std::size_t nr_slots(std::size_t bytes) { return (bytes + IO_TLB_SIZE - 1) >> IO_TLB_SHIFT; }

private:
    struct Area {
        std::size_t index = 0; // where the next search starts
        std::size_t used = 0;
    };
    std::optional<std::size_t> find_in_area(std::size_t area, std::size_t alloc_size);

    std::uint64_t start_;
    std::size_t nslabs_;
    std::size_t area_nslabs_;
    std::vector<Area> areas_;
    std::vector<std::uint32_t> list_;
    std::size_t used_ = 0, high_water_ = 0;
    std::uint64_t failures_ = 0;
    std::uint64_t probes_ = 0, writes_ = 0;
    mem::Addr addr_ = 0;
};

} // namespace kdsim::devices
