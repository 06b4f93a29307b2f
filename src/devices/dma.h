// The streaming DMA API of one machine: dma_map_single, dma_unmap_single_attrs,
// dma_sync_single_for_cpu/for_device, with the cache maintenance a non-coherent CPU does and
// what it costs, and a functional model of what the CPU reads from a DMA buffer.
//
// Mirrors: kernel/dma/mapping.c + kernel/dma/direct.h (dma_direct_map_page /
// dma_direct_unmap_page / dma_direct_sync_single_for_cpu: DMA_ATTR_SKIP_CPU_SYNC skips the
// sync, a coherent device skips all maintenance) and arch/arm/mm/dma-mapping.c with
// arch/arm/mm/cache-v7.S and cache-l2x0.c (Linux 6.1):
//   map / sync_for_device (__dma_page_cpu_to_dev): inner dmac_map_area, then the outer cache:
//     FROM_DEVICE      -> v7_dma_inv_range   + outer_inv_range
//     TO_DEVICE, BIDIR -> v7_dma_clean_range + outer_clean_range
//   unmap / sync_for_cpu (__dma_page_dev_to_cpu), for every direction except TO_DEVICE:
//     outer_inv_range, then v7_dma_inv_range (again: lines may have been speculatively
//     refilled while the device owned the buffer).
// So FROM_DEVICE is invalidated at map and at unmap/sync_for_cpu, TO_DEVICE is cleaned at map,
// and BIDIRECTIONAL is cleaned at map and invalidated at unmap/sync_for_cpu.
// Whole lines: an invalidate clean+invalidates a partial first and last line (so as not to lose
// a neighbour's dirty bytes) and invalidates the lines between; a clean starts at the line
// holding the first byte. Both loops are emulated instruction for instruction, including their
// edge cases (a range inside one line gets two clean+invalidates; the clean loop runs at least
// once). Buffers start on a cache-line boundary.
//
// Functional model: each line of a buffer carries one bit, "the device wrote it since the CPU
// last invalidated it". A CPU read of such a line reads stale data: the read is counted and
// reported (time, CPU, buffer, byte range) in the platform's findings, never silently. The
// model is conservative in the way the kernel is: it assumes a speculative fill may always
// have brought the old contents into the cache. On a coherent platform nothing is stale.
// Not modelled: dirty CPU lines written back over device data, the device reading data the CPU
// has not cleaned (TO_DEVICE correctness), arm64's clean-instead-of-invalidate at map time.
//
// With a memory hierarchy (DmaPlatform::set_memory, the profile's [memory] tables) each buffer has
// an address in it, and the same operations act on its caches: the device's writes and reads use
// the DRAM channel (and snoop on a coherent platform, mem/memory.h), an invalidate drops the lines
// from every cache (its partial end lines are written back first, as DCCIMVAC does), a clean writes
// the dirty ones back. The stale-read bits above stay the functional truth: they are conservative
// (a speculative fill is always assumed), where the caches say only what the CPU pays.
//
// swiotlb (swiotlb.h, kernel/dma/direct.h + swiotlb.c): dma_direct_map_page bounces a buffer whose
// physical end lies beyond its device's mask (dma_capable fails), or every buffer under
// swiotlb=force (is_swiotlb_force_bounce). swiotlb_tbl_map_single takes a run of 2 KiB slots and
// copies the whole mapping orig -> slots whatever the direction (6.1: "unconditional bounce may
// prevent leaking swiotlb content"); the cache maintenance then acts on the SLOTS' lines
// (arch_sync_dma_for_device(swiotlb_addr)); the device reads and writes the slots. sync_for_cpu
// maintains the slots, then copies slots -> orig for FROM_DEVICE/BIDIRECTIONAL over the synced
// range; unmap does the same over the whole mapped length (dma_direct_unmap_page: sync_for_cpu of
// `size`, then swiotlb_tbl_unmap_single with DMA_ATTR_SKIP_CPU_SYNC) unless DMA_ATTR_SKIP_CPU_SYNC,
// and frees the slots; sync_for_device copies orig -> slots for TO_DEVICE/BIDIRECTIONAL, then
// maintains the slots. No free run: the mapping fails (dma_mapping_error), counted, nothing mapped.
// The copies are memcpy's on the CPU (Cat::COPY): the platform's warm cycles per byte plus, with a
// hierarchy, the stalls of reading the source and writing the destination. Functionally, a device
// write to a bounced mapping marks the ORIGINAL buffer's lines (on any platform, coherent too: the
// CPU reads the original, which holds the device's data only once copied back), and a copy back
// clears the lines it touches: a missing or short sync_for_cpu is still a stale read. Not
// modelled: the slot search's own instructions (no profile figure yet: it rides on map_call).
#pragma once

#include "devices/dma_costs.h"
#include "devices/swiotlb.h"
#include "engine/task.h"
#include "engine/time.h"
#include "kernel/cpu.h"
#include "mem/memory.h"

#include <cstddef>
#include <coroutine>
#include <cstdint>
#include <memory>
#include <vector>

namespace kdsim::devices {

using engine::Tick;

// include/linux/dma-direction.h values.
enum DmaDataDirection : std::uint8_t { DMA_BIDIRECTIONAL = 0, DMA_TO_DEVICE = 1, DMA_FROM_DEVICE = 2 };
std::string_view to_string(DmaDataDirection d);

// include/linux/dma-mapping.h
inline constexpr unsigned long DMA_ATTR_SKIP_CPU_SYNC = 1UL << 5;

// A finding: the CPU read bytes of a DMA buffer that the device had written after the CPU's
// last invalidation of their lines.
struct StaleReadReport {
    Tick time = 0;
    int cpu = 0;
    std::uint64_t buffer = 0; // DmaBuffer::id()
    std::uint64_t first = 0;  // first stale byte read (offset in the buffer)
    std::uint64_t end = 0;    // one past the last stale byte read
    std::uint64_t read_offset = 0, read_len = 0; // the whole read
};

struct DmaFindings {
    static constexpr std::size_t MAX_REPORTS = 16;
    std::uint64_t stale_reads = 0;        // every stale read, counted
    std::vector<StaleReadReport> reports; // the first MAX_REPORTS, in order
};

// Counts of what the API did (for attribution and tests).
struct DmaStats {
    std::uint64_t maps = 0, unmaps = 0, syncs_for_cpu = 0, syncs_for_device = 0;
    std::uint64_t inner_inv = 0, inner_clean = 0, inner_flush = 0; // line operations
    std::uint64_t outer_inv = 0, outer_clean = 0, outer_flush = 0;
    std::uint64_t outer_syncs = 0, barriers = 0;
    engine::Cycles cycles = 0; // everything charged to Cat::CACHE_MAINT by the API
};

// The DMA side of one machine: whether it is coherent, what maintenance costs, what was found.
class DmaPlatform {
public:
    explicit DmaPlatform(const DmaCosts& costs)
        : costs_(costs), inv_line_(costs.inner_inv_line + costs.outer_inv_line),
          flush_line_(costs.inner_flush_line + costs.outer_flush_line), inv_fixed_(costs.barrier + costs.outer_sync) {}
    DmaPlatform(const DmaPlatform&) = delete;
    DmaPlatform& operator=(const DmaPlatform&) = delete;

    const DmaCosts& costs() const { return costs_; }
    // An invalidate's cycles, inner and outer together (the costs never change): per whole line,
    // per partial end line (cleaned and invalidated), and once (the barrier and the outer sync).
    engine::Cycles inv_line_cycles() const { return inv_line_; }
    engine::Cycles flush_line_cycles() const { return flush_line_; }
    engine::Cycles inv_fixed_cycles() const { return inv_fixed_; }
    bool coherent() const { return costs_.coherent; }
    const DmaFindings& findings() const { return findings_; }
    const DmaStats& stats() const { return stats_; }
    DmaStats& stats() { return stats_; }
    // Registers the DMA API's counters under `s` (<machine>/dma); dma.cpp.
    void register_stats(const stats::Scope& s) const;

    std::uint64_t new_buffer_id() { return ++next_id_; }
    void report_stale_read(const StaleReadReport& r);

    // The machine's memory hierarchy, or nullptr (the DMA API then acts on the stale-read bits only).
    void set_memory(mem::MemorySystem* m) { memory_ = m; }
    mem::MemorySystem* memory() const { return memory_; }

    // A device doing DMA on this platform, with its mask (DMA_BIT_MASK(bits)); lives as long as the
    // platform. Buffers made without one belong to a device with a 64-bit mask.
    DmaDevice& add_device(std::string name, std::uint64_t dma_mask);
    DmaDevice& default_device() { return default_device_; }
    // swiotlb: the mode, the pool (nullptr: none; AUTO then bounces nothing it could not map, so an
    // unreachable buffer fails) and the bounce memcpy's warm cycles per byte. Call before the run.
    void set_swiotlb(SwiotlbMode mode, std::unique_ptr<SwiotlbPool> pool, double copy_per_byte);
    SwiotlbMode swiotlb_mode() const { return swiotlb_mode_; }
    SwiotlbPool* swiotlb() const { return pool_.get(); }
    double bounce_copy_per_byte() const { return bounce_copy_; }

private:
    DmaCosts costs_;
    engine::Cycles inv_line_, flush_line_, inv_fixed_;
    mem::MemorySystem* memory_ = nullptr;
    DmaDevice default_device_{"dma", ~std::uint64_t{0}, {}};
    std::vector<std::unique_ptr<DmaDevice>> devices_;
    SwiotlbMode swiotlb_mode_ = SwiotlbMode::AUTO;
    std::unique_ptr<SwiotlbPool> pool_;
    double bounce_copy_ = 0;
    DmaFindings findings_;
    DmaStats stats_;
    std::uint64_t next_id_ = 0;
};

// One buffer used for streaming DMA (an rx ring buffer, a tx frame), line-aligned.
class DmaBuffer {
public:
    DmaBuffer(DmaPlatform& platform, std::size_t size, std::uint32_t line_size, DmaDevice* dev = nullptr);

    DmaPlatform& platform() const { return *platform_; }
    DmaDevice& device() const { return *dev_; }
    std::uint64_t id() const { return id_; }
    std::size_t size() const { return size_; }
    std::uint32_t line_size() const { return line_; }
    // log2(line_size()): a byte offset's line is offset >> line_shift() (the line is a power of two)
    unsigned line_shift() const { return shift_; }
    std::size_t lines() const { return (size_ + line_ - 1) >> shift_; }

    // Functional state of line `i`.
    bool device_wrote(std::size_t i) const { return (bits_[i / 64] >> (i % 64)) & 1U; }
    // How many times the inner cache maintenance invalidated / cleaned line `i` (a
    // clean+invalidate counts as both). Outer-cache operations cover the same lines.
    std::uint32_t invalidations(std::size_t i) const { return upto(inv_, i); }
    std::uint32_t cleans(std::size_t i) const { return upto(clean_, i); }

    bool mapped() const { return mapped_; }
    std::size_t mapped_len() const { return mapped_len_; }
    DmaDataDirection mapped_dir() const { return mapped_dir_; }

    // Where the buffer lies in the platform's memory hierarchy (0: none). A driver that refills a
    // descriptor with a fresh buffer moves the unmapped object to the new buffer's address.
    mem::Addr addr() const { return addr_; }
    void set_addr(mem::Addr a) {
        if (mapped_) [[unlikely]] mapped_move_error("DmaBuffer::set_addr");
        addr_ = a;
    }
    // Its physical address, which dma_capable holds against the device's mask (0 with no DRAM
    // layout: every mask reaches it).
    std::uint64_t phys() const { return phys_; }
    void set_phys(std::uint64_t p) {
        if (mapped_) [[unlikely]] mapped_move_error("DmaBuffer::set_phys");
        phys_ = p;
    }
    // Whether the current mapping is a bounce slot run, and its first slot.
    bool bounced() const { return tlb_ != NO_SLOT; }
    std::size_t tlb_index() const { return tlb_; }
    // dma_mapping_error: the last dma_map_single of this buffer failed (nothing is mapped).
    bool map_failed() const { return map_failed_; }

private:
    friend struct DmaOps;
    static constexpr std::size_t NO_SLOT = SIZE_MAX;
    // set_addr's and set_phys's error: a mapped buffer cannot move (dma.cpp, cold).
    [[noreturn, gnu::noinline, gnu::cold]] void mapped_move_error(const char* what) const;
    DmaPlatform* platform_;
    DmaDevice* dev_;
    std::uint64_t phys_ = 0;
    std::size_t tlb_ = NO_SLOT;
    bool map_failed_ = false;
    bool bounce_marks_ = false; // a bounced device write marked lines (coherent platforms too)
    std::uint64_t id_;
    std::size_t size_;
    std::uint32_t line_;
    unsigned shift_;
    std::vector<std::uint64_t> bits_;
    // The counts as differences (lines() + 1 each): an operation on lines [i, e) adds 1 at i and
    // takes 1 at e (modulo 2^32), so that line j's count is the sum of entries 0..j.
    std::vector<std::uint32_t> inv_, clean_;
    static std::uint32_t upto(const std::vector<std::uint32_t>& d, std::size_t i) {
        std::uint32_t n = 0;
        for (std::size_t k = 0; k <= i; ++k) n += d[k];
        return n;
    }
    bool mapped_ = false;
    mem::Addr addr_ = 0;
    std::size_t mapped_len_ = 0;
    DmaDataDirection mapped_dir_ = DMA_BIDIRECTIONAL;
};

// What a DMA API call returns, to be awaited at once: on the common path the call's exec on the
// CPU (its work done when called, no coroutine frame of its own), on a path that awaits more than
// one thing (swiotlb's copies) the Task of that path. Awaiting it is awaiting the exec or the Task.
class [[nodiscard]] DmaCall {
public:
    DmaCall(kernel::Cpu::ExecAwaiter e) : exec_(e) {}
    DmaCall(kernel::Cpu& cpu, engine::Task<> t) : exec_(cpu.exec(0, kernel::Cat::CACHE_MAINT)), task_(std::move(t)) {}
    DmaCall(DmaCall&&) = default;

    // Out of line (dma.cpp): a driver's coroutine awaits several calls, and their exec's code
    // inlined at each await would crowd out what GCC inlines of the driver's own awaits.
    bool await_ready() noexcept;
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) noexcept;
    // Inline: the common path (an exec) has nothing to resume with; a Task's result is out of line.
    void await_resume() {
        if (task_.valid()) [[unlikely]] task_resume();
    }

private:
    void task_resume();
    kernel::Cpu::ExecAwaiter exec_;
    engine::Task<> task_;
};

// The API. Each call spends its cycles on `cpu` as Cat::CACHE_MAINT in one exec (and a bounce
// copy's as Cat::COPY in another). Misuse (a range outside the buffer or the mapping, unmapping
// what is not mapped) throws std::logic_error when called. A mapping swiotlb cannot give fails:
// the buffer stays unmapped and dma_mapping_error(buf) says so.
DmaCall dma_map_single(kernel::Cpu& cpu, DmaBuffer& buf, std::size_t len, DmaDataDirection dir, unsigned long attrs = 0);
inline bool dma_mapping_error(const DmaBuffer& buf) { return buf.map_failed(); }
DmaCall dma_unmap_single_attrs(kernel::Cpu& cpu, DmaBuffer& buf, std::size_t len, DmaDataDirection dir,
                               unsigned long attrs);
inline DmaCall dma_unmap_single(kernel::Cpu& cpu, DmaBuffer& buf, std::size_t len, DmaDataDirection dir) {
    return dma_unmap_single_attrs(cpu, buf, len, dir, 0);
}
DmaCall dma_sync_single_for_cpu(kernel::Cpu& cpu, DmaBuffer& buf, std::size_t offset, std::size_t len,
                                DmaDataDirection dir);
DmaCall dma_sync_single_for_device(kernel::Cpu& cpu, DmaBuffer& buf, std::size_t offset, std::size_t len,
                                   DmaDataDirection dir);

// The device writes [offset, offset + len) of the buffer at `now` (its DMA engine, no CPU time).
void device_write(DmaBuffer& buf, std::size_t offset, std::size_t len, Tick now);
// The device reads [offset, offset + len) of a buffer mapped for it to read (a transmit) at `now`.
void device_read(DmaBuffer& buf, std::size_t offset, std::size_t len, Tick now);
// The CPU reads [offset, offset + len). Returns true, and reports the finding, when any byte read
// lies in a line the device wrote after the CPU's last invalidation of it. Costs no cycles (the
// caller charges its copy or parse).
bool cpu_read(kernel::Cpu& cpu, DmaBuffer& buf, std::size_t offset, std::size_t len);

// The cycles one maintenance call costs, without doing it (for reports and planning):
// op = the inner+outer work of map/sync_for_device (to_device = true) or unmap/sync_for_cpu.
engine::Cycles dma_maintenance_cycles(const DmaCosts& c, std::uint32_t line_size, std::size_t offset,
                                      std::size_t len, DmaDataDirection dir, bool to_device);

} // namespace kdsim::devices
