#include "devices/dma.h"

#include "mem/line_bits.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>

namespace kdsim::devices {

void DmaPlatform::register_stats(const stats::Scope& s) const {
    const DmaStats& d = stats_;
    s.counter("maps", d.maps, "count", "dma_map_single calls")
        .counter("unmaps", d.unmaps, "count", "dma_unmap_single calls")
        .counter("syncs_for_cpu", d.syncs_for_cpu, "count", "dma_sync_single_for_cpu calls")
        .counter("syncs_for_device", d.syncs_for_device, "count", "dma_sync_single_for_device calls")
        .counter("lines_invalidated", d.inner_inv, "count", "inner (L1) cache lines invalidated")
        .counter("lines_cleaned", d.inner_clean, "count", "inner (L1) cache lines cleaned")
        .counter("lines_flushed", d.inner_flush, "count", "inner (L1) cache lines cleaned and invalidated (partial edge lines)")
        .counter("outer_lines_invalidated", d.outer_inv, "count", "outer (L2) cache lines invalidated")
        .counter("outer_lines_cleaned", d.outer_clean, "count", "outer (L2) cache lines cleaned")
        .counter("outer_lines_flushed", d.outer_flush, "count", "outer (L2) cache lines cleaned and invalidated")
        .counter("outer_syncs", d.outer_syncs, "count", "outer cache sync operations")
        .counter("barriers", d.barriers, "count", "barriers (dsb) issued by the API")
        .counter("cycles", d.cycles, "cycles", "cycles the API charged to cache_maintenance")
        .counter("stale_reads", findings_.stale_reads, "count", "CPU reads of lines the device wrote after their last invalidation");
    if (!pool_ && swiotlb_mode_ == SwiotlbMode::AUTO) return; // no swiotlb: nothing to show
    const stats::Scope sw = s.sub("swiotlb");
    if (pool_) {
        const SwiotlbPool& p = *pool_;
        sw.value("slots", [&p] { return static_cast<double>(p.nslabs()); }, "count", "IO_TLB_SIZE (2 KiB) slots of the bounce pool")
            .value("slots_high_water", [&p] { return static_cast<double>(p.high_water()); }, "count",
                   "the most slots in use at once, all devices")
            .value("full", [&p] { return static_cast<double>(p.failures()); }, "count",
                   "mappings refused: no free run of slots (\"swiotlb buffer is full\")")
            .value("slot_probes", [&p] { return static_cast<double>(p.slot_probes()); }, "count",
                   "slots tested by swiotlb_do_find_slots' searches")
            .value("slot_writes", [&p] { return static_cast<double>(p.slot_writes()); }, "count",
                   "iterations of the loops writing slot entries, at allocation and release (the merges included)");
    }
    for (const auto& d : devices_) {
        const SwiotlbDeviceStats& x = d->swiotlb;
        sw.sub(d->name)
            .counter("bounced_maps", x.bounced_maps, "count", "mappings that took bounce slots")
            .counter("map_failures", x.map_failures, "count", "mappings that failed (dma_mapping_error): the driver dropped")
            .counter("copies_to_device", x.copies_to_device, "count", "swiotlb_bounce copies from the buffer into its slots")
            .counter("bytes_to_device", x.bytes_to_device, "bytes", "bytes copied into the slots")
            .counter("copies_from_device", x.copies_from_device, "count", "swiotlb_bounce copies from the slots back to the buffer")
            .counter("bytes_from_device", x.bytes_from_device, "bytes", "bytes copied back to the buffer")
            .counter("copy_cycles", x.copy_cycles, "cycles", "cycles of those copies (copy), memory stalls included")
            .counter("slots_high_water", x.slots_high_water, "count", "the most slots this device held at once")
            .counter("slot_cycles", x.slot_cycles, "cycles",
                     "cycles of the slot allocator for this device's mappings: search, slot entries written, calls");
    }
}

DmaDevice& DmaPlatform::add_device(std::string name, std::uint64_t dma_mask) {
    devices_.push_back(std::make_unique<DmaDevice>(DmaDevice{std::move(name), dma_mask, {}}));
    return *devices_.back();
}

void DmaPlatform::set_swiotlb(SwiotlbMode mode, std::unique_ptr<SwiotlbPool> pool, double copy_per_byte) {
    swiotlb_mode_ = mode;
    pool_ = std::move(pool);
    bounce_copy_ = copy_per_byte;
}

std::string_view to_string(DmaDataDirection d) {
    switch (d) {
    case DMA_BIDIRECTIONAL: return "DMA_BIDIRECTIONAL";
    case DMA_TO_DEVICE: return "DMA_TO_DEVICE";
    case DMA_FROM_DEVICE: return "DMA_FROM_DEVICE";
    }
    return "?";
}

void DmaPlatform::report_stale_read(const StaleReadReport& r) {
    ++findings_.stale_reads;
    if (findings_.reports.size() < DmaFindings::MAX_REPORTS) findings_.reports.push_back(r);
}

DmaBuffer::DmaBuffer(DmaPlatform& platform, std::size_t size, std::uint32_t line_size, DmaDevice* dev)
    : platform_(&platform), dev_(dev ? dev : &platform.default_device()), id_(platform.new_buffer_id()), size_(size),
      line_(line_size), shift_(static_cast<unsigned>(std::countr_zero(line_size))) {
    if (line_size == 0 || (line_size & (line_size - 1)) != 0)
        throw std::invalid_argument("DmaBuffer: the cache line size must be a power of two");
    if (size == 0) throw std::invalid_argument("DmaBuffer: a buffer has at least one byte");
    bits_.assign((lines() + 63) / 64, 0);
    inv_.assign(lines() + 1, 0);
    clean_.assign(lines() + 1, 0);
}

void DmaBuffer::mapped_move_error(const char* what) const {
    throw std::logic_error(std::string(what) + ": DMA buffer " + std::to_string(id_) + " is mapped");
}

namespace {

// Lines [a, b] (a <= b) of a buffer's bitmap lying in one 64-bit word: almost every call's case (a
// buffer of at most 64 lines, a frame's lines within one word), done as one word's mask instead of
// line_bits' loop over words; the same bits.
inline bool one_word(std::uint64_t a, std::uint64_t b) { return (a >> 6) == (b >> 6); }
inline std::uint64_t word_mask(std::uint64_t a, std::uint64_t b) {
    return (~std::uint64_t{0} << (a & 63)) & (~std::uint64_t{0} >> (63 - (b & 63)));
}

enum class LineOp : std::uint8_t { INV, CLEAN, FLUSH };

// The line operations of one range operation, in the kernel's order.
struct RangeOps {
    std::uint64_t main = 0;  // INV lines of an invalidate, CLEAN lines of a clean
    std::uint64_t flush = 0; // clean+invalidate of the partial end lines of an invalidate
};

// The range walkers call f(first, n, op) for n consecutive lines from line `first`, all of one
// operation, in the kernel's order (a run of the same operation as one call).

// v7_dma_inv_range / l2c210_inv_range (identical structure): partial first and last lines are
// cleaned+invalidated, then every whole line in between is invalidated.
// Models: v7_dma_inv_range() (arch/arm/mm/cache-v7.S)
// Models: l2c210_inv_range() (arch/arm/mm/cache-l2x0.c)
template <class F>
RangeOps inv_range(std::uint64_t start, std::uint64_t end, std::uint64_t line, F&& f) {
    RangeOps r;
    const std::uint64_t mask = line - 1;
    if (start & mask) {
        start &= ~mask;
        f(start / line, 1, LineOp::FLUSH);
        ++r.flush;
        start += line;
    }
    if (end & mask) {
        end &= ~mask;
        f(end / line, 1, LineOp::FLUSH);
        ++r.flush;
    }
    if (start < end) { // both line-aligned here
        r.main = (end - start) / line;
        f(start / line, r.main, LineOp::INV);
    }
    return r;
}

// v7_dma_clean_range: a do-while loop from the line holding `start` (at least one line);
// l2c210_clean_range: the same as a while loop.
// Models: v7_dma_clean_range() (arch/arm/mm/cache-v7.S)
template <class F>
RangeOps clean_range(std::uint64_t start, std::uint64_t end, std::uint64_t line, bool at_least_once, F&& f) {
    RangeOps r;
    start &= ~(line - 1);
    if (at_least_once || start < end) { // the lines from `start` while below `end`, at least one
        r.main = start < end ? (end - start + line - 1) / line : 1;
        f(start / line, r.main, LineOp::CLEAN);
    }
    return r;
}

struct NoState {
    void operator()(std::uint64_t, std::uint64_t, LineOp) const {}
};

// Maintenance of [offset, offset + len): `to_device` = __dma_page_cpu_to_dev (map,
// sync_for_device), else __dma_page_dev_to_cpu (unmap, sync_for_cpu). Counts into `st` when
// given and calls `apply` for each run of inner line operations. Returns the cycles.
// Models: __dma_page_cpu_to_dev(), __dma_page_dev_to_cpu() (arch/arm/mm/dma-mapping.c)
template <class F>
engine::Cycles maintain(const DmaCosts& c, std::uint64_t line, std::uint64_t offset, std::uint64_t len,
                        DmaDataDirection dir, bool to_device, DmaStats* st, F&& apply) {
    const std::uint64_t end = offset + len;
    engine::Cycles cyc = 0;
    auto inner_inv = [&] {
        RangeOps r = inv_range(offset, end, line, apply);
        cyc += r.main * c.inner_inv_line + r.flush * c.inner_flush_line + c.barrier;
        if (st) st->inner_inv += r.main, st->inner_flush += r.flush, ++st->barriers;
    };
    auto outer_inv = [&] {
        RangeOps r = inv_range(offset, end, line, NoState{});
        cyc += r.main * c.outer_inv_line + r.flush * c.outer_flush_line + c.outer_sync;
        if (st) st->outer_inv += r.main, st->outer_flush += r.flush, ++st->outer_syncs;
    };
    if (to_device) {
        if (dir == DMA_FROM_DEVICE) {
            inner_inv(); // dmac_map_area -> v7_dma_inv_range
            outer_inv(); // outer_inv_range
        } else {
            RangeOps r = clean_range(offset, end, line, true, apply); // v7_dma_clean_range
            cyc += r.main * c.inner_clean_line + c.barrier;
            RangeOps o = clean_range(offset, end, line, false, NoState{}); // outer_clean_range
            cyc += o.main * c.outer_clean_line + c.outer_sync;
            if (st) st->inner_clean += r.main, st->outer_clean += o.main, ++st->barriers, ++st->outer_syncs;
        }
    } else if (dir != DMA_TO_DEVICE) {
        outer_inv(); // outer_inv_range first, then dmac_unmap_area -> v7_dma_inv_range
        inner_inv();
    }
    return cyc;
}

// The checks' errors, out of line (cold): a check itself is a test or two inline.
[[noreturn, gnu::noinline, gnu::cold]] void range_error(const DmaBuffer& b, std::size_t offset, std::size_t len,
                                                        const char* what) {
    throw std::logic_error(std::string(what) + ": range [" + std::to_string(offset) + ", +" + std::to_string(len) +
                           ") outside DMA buffer " + std::to_string(b.id()) + " of " + std::to_string(b.size()) +
                           " bytes");
}

inline void check_range(const DmaBuffer& b, std::size_t offset, std::size_t len, const char* what) {
    if (offset > b.size() || len > b.size() - offset) range_error(b, offset, len, what);
}

// check_mapped's error: the first of its three tests that fails, in their order.
[[noreturn, gnu::noinline, gnu::cold]] void mapped_error(const DmaBuffer& b, std::size_t offset, std::size_t len,
                                                         DmaDataDirection dir, const char* what) {
    if (!b.mapped())
        throw std::logic_error(std::string(what) + ": DMA buffer " + std::to_string(b.id()) + " is not mapped");
    if (offset > b.mapped_len() || len > b.mapped_len() - offset)
        throw std::logic_error(std::string(what) + ": range [" + std::to_string(offset) + ", +" + std::to_string(len) +
                               ") outside the mapping of DMA buffer " + std::to_string(b.id()) + " (" +
                               std::to_string(b.mapped_len()) + " bytes)");
    throw std::logic_error(std::string(what) + ": direction " + std::string(to_string(dir)) +
                           " differs from the mapping's " + std::string(to_string(b.mapped_dir())));
}

inline void check_mapped(const DmaBuffer& b, std::size_t offset, std::size_t len, DmaDataDirection dir,
                         const char* what) {
    if (!b.mapped() || offset > b.mapped_len() || len > b.mapped_len() - offset || dir != b.mapped_dir())
        mapped_error(b, offset, len, dir, what);
}

} // namespace

struct DmaOps {
    // Does the maintenance (state and counts) at `now` and returns its cycles (without the fixed
    // part). With a memory hierarchy the same line operations act on its caches.
    static engine::Cycles run(DmaBuffer& b, std::size_t offset, std::size_t len, DmaDataDirection dir,
                              bool to_device, Tick now) {
        return b.platform_->coherent() ? 0 : run_noncoherent(b, offset, len, dir, to_device, now);
    }
    static engine::Cycles run_noncoherent(DmaBuffer& b, std::size_t offset, std::size_t len, DmaDataDirection dir,
                                          bool to_device, Tick now) {
        DmaPlatform& p = *b.platform_;
        mem::MemorySystem* m = p.memory();
        // a bounced mapping's maintenance acts on its slots; the buffer's own lines keep their state
        const bool own = !b.bounced();
        const mem::Addr base = own ? b.addr_ : p.swiotlb()->slot_addr(b.tlb_);
        if (m && !own && base == 0) m = nullptr; // a pool without an address in the hierarchy
        const bool inv = to_device ? dir == DMA_FROM_DEVICE : dir != DMA_TO_DEVICE;
        if (inv && len > 0) return run_inv(b, offset, len, own, m, base, now);
        return run_walkers(b, offset, len, dir, to_device, now, own, m, base);
    }
    // run's other operations (a clean, an empty range) through maintain's walkers; out of line, so
    // that run_inv's path saves no registers for it.
    [[gnu::noinline]] static engine::Cycles run_walkers(DmaBuffer& b, std::size_t offset, std::size_t len,
                                                        DmaDataDirection dir, bool to_device, Tick now, bool own,
                                                        mem::MemorySystem* m, mem::Addr base) {
        DmaPlatform& p = *b.platform_;
        // the lines each kind of operation covered (contiguous per call), for the hierarchy
        std::uint64_t inv_first = UINT64_MAX, inv_last = 0, clean_first = UINT64_MAX, clean_last = 0;
        auto apply = [&](std::uint64_t i, std::uint64_t n, LineOp op) { // lines [i, i + n)
            const std::uint64_t e = std::min<std::uint64_t>(i + n, b.lines()); // the clean loop's minimum
            if (i >= e) return;                                              // iteration past a buffer's end
            if (own && op != LineOp::INV) ++b.clean_[i], --b.clean_[e]; // lines [i, e) cleaned once more
            if (op != LineOp::CLEAN) {
                if (own) {
                    ++b.inv_[i], --b.inv_[e];
                    mem::clear_bits(b.bits_.data(), i, e);
                }
                inv_first = std::min(inv_first, i);
                inv_last = std::max(inv_last, e - 1);
            }
            if (op == LineOp::FLUSH && m) m->clean(now, base + i * b.line_, b.line_); // one line, before its invalidate
            if (op == LineOp::CLEAN) {
                clean_first = std::min(clean_first, i);
                clean_last = std::max(clean_last, e - 1);
            }
        };
        const engine::Cycles c = maintain(p.costs(), b.line_, offset, len, dir, to_device, &p.stats(), apply);
        if (m && clean_first <= clean_last)
            m->clean(now, base + clean_first * b.line_, (clean_last - clean_first + 1) * b.line_);
        if (m && inv_first <= inv_last)
            m->invalidate(base + inv_first * b.line_, (inv_last - inv_first + 1) * b.line_);
        return c;
    }
    // run's invalidate, inner and outer, of [offset, offset + len) (len > 0) without maintain's
    // walkers: the same line operations, counts, cycles and hierarchy calls in the same order
    // (inv_range: a partial first and last line cleaned+invalidated, each on its own, then the
    // whole lines between invalidated; the hierarchy invalidates all the range's lines last).
    static engine::Cycles run_inv(DmaBuffer& b, std::size_t offset, std::size_t len, bool own, mem::MemorySystem* m,
                                  mem::Addr base, Tick now) {
        DmaPlatform& p = *b.platform_;
        const std::uint32_t line = b.line_;
        const unsigned shift = b.shift_;
        const std::uint64_t end = offset + len;
        const std::uint64_t first = offset >> shift, last = (end - 1) >> shift; // the range's lines
        const bool head = offset & (line - 1), tail = end & (line - 1);          // partial end lines
        const std::uint64_t lo = first + head, hi = end >> shift;                // whole lines [lo, hi)
        const std::uint64_t whole = hi > lo ? hi - lo : 0, flush = std::uint64_t{head} + tail;
        if (own) {
            if (head) ++b.clean_[first], --b.clean_[first + 1], ++b.inv_[first], --b.inv_[first + 1];
            if (tail) ++b.clean_[hi], --b.clean_[hi + 1], ++b.inv_[hi], --b.inv_[hi + 1];
            if (whole) ++b.inv_[lo], --b.inv_[hi];
            clear_lines(b, first, last);
        }
        DmaStats& st = p.stats();
        st.inner_inv += whole, st.outer_inv += whole, st.inner_flush += flush, st.outer_flush += flush;
        ++st.barriers, ++st.outer_syncs;
        if (m) {
            if (head) m->clean(now, base + (first << shift), line); // a flushed line: cleaned before its invalidate
            if (tail) m->clean(now, base + (hi << shift), line);
            m->invalidate(base + (first << shift), (last - first + 1) << shift);
        }
        return whole * p.inv_line_cycles() + flush * p.flush_line_cycles() + p.inv_fixed_cycles();
    }
    static void set_tlb(DmaBuffer& b, std::size_t index) { b.tlb_ = index; }
    static void set_map_failed(DmaBuffer& b, bool f) { b.map_failed_ = f; }
    static void mark_bounced(DmaBuffer& b) { b.bounce_marks_ = true; }
    static bool may_be_stale(const DmaBuffer& b) { return !b.platform_->coherent() || b.bounce_marks_; }
    // A bounce copy back over [offset, offset + len): the lines it writes hold the device's data.
    static void copied_back(DmaBuffer& b, std::size_t offset, std::size_t len) {
        if (len == 0) return;
        mem::clear_bits(b.bits_.data(), offset >> b.shift_, ((offset + len - 1) >> b.shift_) + 1);
    }
    static void set_mapping(DmaBuffer& b, bool mapped, std::size_t len, DmaDataDirection dir) {
        b.mapped_ = mapped;
        b.mapped_len_ = len;
        b.mapped_dir_ = dir;
    }
    // Marks lines [first, last] written by the device.
    static void mark(DmaBuffer& b, std::size_t first, std::size_t last) {
        if (one_word(first, last)) b.bits_[first >> 6] |= word_mask(first, last);
        else mem::set_bits(b.bits_.data(), first, last + 1);
    }
    // Clears lines [first, last] (an invalidate of them).
    static void clear_lines(DmaBuffer& b, std::size_t first, std::size_t last) {
        if (one_word(first, last)) b.bits_[first >> 6] &= ~word_mask(first, last);
        else mem::clear_bits(b.bits_.data(), first, last + 1);
    }
    // The first line of [first, last] the device wrote (last + 1: none).
    static std::size_t first_written(const DmaBuffer& b, std::size_t first, std::size_t last) {
        if (!one_word(first, last)) return mem::first_set(b.bits_.data(), first, last + 1);
        const std::uint64_t x = b.bits_[first >> 6] & word_mask(first, last);
        return x ? (first & ~std::size_t{63}) + mem::lowest_set(x) : last + 1;
    }
    // The last line of [i, e) the device wrote (e: none).
    static std::size_t last_written(const DmaBuffer& b, std::size_t i, std::size_t e) {
        return mem::last_set(b.bits_.data(), i, e);
    }
};

namespace {

// The call's cycles on the CPU, counted as the platform's: `co_await charge(...)` is the exec
// itself (an awaitable, not a coroutine of its own: one frame less for every DMA API call). `t`:
// the kernel code it runs, the arch's maintenance toward the device (a map, a sync for the device:
// __dma_page_cpu_to_dev) or toward the CPU (an unmap, a sync for the CPU: __dma_page_dev_to_cpu).
kernel::Cpu::ExecAwaiter charge(kernel::Cpu& cpu, DmaPlatform& p, engine::Cycles c,
                                kernel::Text t = kernel::Text::NONE) {
    p.stats().cycles += c;
    return cpu.exec(c, kernel::Cat::CACHE_MAINT, t);
}

// The cycles of the pool's slot allocator so far: slots tested, slot entries written.
engine::Cycles slot_work(const SwiotlbPool& pool, const DmaCosts& c) {
    return pool.slot_probes() * c.swiotlb_slot_probe.value_or(0) + pool.slot_writes() * c.swiotlb_slot_write.value_or(0);
}

} // namespace

namespace {

// swiotlb_bounce: the CPU's memcpy of [offset, offset + len) between the buffer and its slots.
// Models: swiotlb_bounce() (kernel/dma/swiotlb.c)
engine::Task<> bounce(kernel::Cpu& cpu, DmaBuffer& b, std::size_t offset, std::size_t len, bool to_device) {
    if (len == 0) co_return;
    DmaPlatform& p = b.platform();
    SwiotlbDeviceStats& st = b.device().swiotlb;
    engine::Cycles c = static_cast<engine::Cycles>(std::llround(p.bounce_copy_per_byte() * static_cast<double>(len)));
    const mem::Addr slot = p.swiotlb()->slot_addr(b.tlb_index());
    if (mem::MemorySystem* m = p.memory(); m && b.addr() != 0 && slot != 0) {
        const mem::Addr src = to_device ? b.addr() + offset : slot + offset;
        const mem::Addr dst = to_device ? slot + offset : b.addr() + offset;
        const engine::Cycles rd = m->read(cpu.id(), cpu.now(), src, len);
        c += rd + m->write(cpu.id(), cpu.now() + cpu.clock().to_ticks(rd), dst, len);
    }
    if (to_device) {
        ++st.copies_to_device;
        st.bytes_to_device += len;
    } else {
        ++st.copies_from_device;
        st.bytes_from_device += len;
        DmaOps::copied_back(b, offset, len);
    }
    st.copy_cycles += c;
    co_await cpu.exec(c, kernel::Cat::COPY);
}

// dma_direct_map_page's test: swiotlb=force, or the mapping's last byte beyond the device's reach.
// Models: dma_capable() (include/linux/dma-direct.h)
// Models: is_swiotlb_force_bounce() (include/linux/swiotlb.h)
bool needs_bounce(const DmaBuffer& b, std::size_t len) {
    if (len == 0) return false;
    const DmaPlatform& p = b.platform();
    if (p.swiotlb_mode() == SwiotlbMode::FORCE && p.swiotlb()) return true;
    return b.phys() + len - 1 > b.device().dma_mask;
}

// swiotlb_map: the slots (or the failure the driver sees, dma_mapping_error), the copy in, then the
// maintenance of the slots.
// Models: swiotlb_map(), swiotlb_tbl_map_single() (kernel/dma/swiotlb.c)
engine::Task<> swiotlb_map(kernel::Cpu& cpu, DmaBuffer& buf, std::size_t len, DmaDataDirection dir,
                           unsigned long attrs) {
    DmaPlatform& p = buf.platform();
    DmaDevice& d = buf.device();
    SwiotlbPool* pool = p.swiotlb();
    const engine::Cycles before = pool ? slot_work(*pool, p.costs()) : 0;
    engine::Cycles slots = 0;
    std::optional<std::size_t> index = pool ? pool->find_slots(cpu.id(), len) : std::nullopt;
    if (pool) slots += p.costs().swiotlb_map_call.value_or(0);
    if (index && pool->slot_phys(*index) + len - 1 > d.dma_mask) { // "swiotlb addr overflow"
        pool->release_slots(*index, len);
        slots += p.costs().swiotlb_unmap_call.value_or(0);
        index.reset();
    }
    if (pool) slots += slot_work(*pool, p.costs()) - before;
    d.swiotlb.slot_cycles += slots;
    if (!index) {
        ++d.swiotlb.map_failures;
        DmaOps::set_map_failed(buf, true);
        co_await charge(cpu, p, p.costs().map_call + slots);
        co_return;
    }
    ++d.swiotlb.bounced_maps;
    d.swiotlb.slots_in_use += SwiotlbPool::nr_slots(len);
    d.swiotlb.slots_high_water = std::max(d.swiotlb.slots_high_water, d.swiotlb.slots_in_use);
    DmaOps::set_tlb(buf, *index);
    co_await bounce(cpu, buf, 0, len, true); // whatever the direction (6.1)
    engine::Cycles c = p.costs().map_call + slots;
    if (!(attrs & DMA_ATTR_SKIP_CPU_SYNC)) c += DmaOps::run(buf, 0, len, dir, true, cpu.now());
    DmaOps::set_mapping(buf, true, len, dir);
    co_await charge(cpu, p, c);
}

} // namespace

bool DmaCall::await_ready() noexcept { return !task_.valid() && exec_.await_ready(); }

std::coroutine_handle<> DmaCall::await_suspend(std::coroutine_handle<> h) noexcept {
    if (task_.valid()) return std::move(task_).operator co_await().await_suspend(h);
    exec_.await_suspend(h);
    return std::noop_coroutine();
}

void DmaCall::task_resume() { std::move(task_).operator co_await().await_resume(); }

// Models: dma_map_single_attrs() (include/linux/dma-mapping.h)
// Models: dma_direct_map_page() (kernel/dma/direct.h)
DmaCall dma_map_single(kernel::Cpu& cpu, DmaBuffer& buf, std::size_t len, DmaDataDirection dir, unsigned long attrs) {
    check_range(buf, 0, len, "dma_map_single");
    if (buf.mapped())
        throw std::logic_error("dma_map_single: DMA buffer " + std::to_string(buf.id()) + " is already mapped");
    DmaPlatform& p = buf.platform();
    ++p.stats().maps;
    DmaOps::set_map_failed(buf, false);
    if (needs_bounce(buf, len)) return {cpu, swiotlb_map(cpu, buf, len, dir, attrs)};
    // State first: a device write racing with the maintenance is then still seen as stale.
    engine::Cycles c = p.costs().map_call;
    if (!(attrs & DMA_ATTR_SKIP_CPU_SYNC)) c += DmaOps::run(buf, 0, len, dir, true, cpu.now());
    DmaOps::set_mapping(buf, true, len, dir);
    return charge(cpu, p, c, kernel::Text::DMA_SYNC_FOR_DEVICE);
}

namespace {

// The rest of an unmap of a bounced mapping, after its maintenance's `c` cycles: the copy back of
// the whole mapping, then the slots freed.
engine::Task<> unmap_bounced(kernel::Cpu& cpu, DmaBuffer& buf, std::size_t len, DmaDataDirection dir,
                             unsigned long attrs, engine::Cycles c) {
    DmaPlatform& p = buf.platform();
    co_await charge(cpu, p, c, kernel::Text::DMA_SYNC_FOR_CPU);
    if (!(attrs & DMA_ATTR_SKIP_CPU_SYNC) && dir != DMA_TO_DEVICE) co_await bounce(cpu, buf, 0, len, false);
    SwiotlbPool& pool = *p.swiotlb();
    const engine::Cycles before = slot_work(pool, p.costs());
    pool.release_slots(buf.tlb_index(), len);
    const engine::Cycles slots = p.costs().swiotlb_unmap_call.value_or(0) + slot_work(pool, p.costs()) - before;
    buf.device().swiotlb.slot_cycles += slots;
    if (slots) co_await charge(cpu, p, slots);
    buf.device().swiotlb.slots_in_use -= SwiotlbPool::nr_slots(len);
    DmaOps::set_tlb(buf, SIZE_MAX);
    DmaOps::set_mapping(buf, false, 0, DMA_BIDIRECTIONAL);
}

// dma_unmap_single_attrs's error of a length other than the mapping's (cold).
[[noreturn, gnu::noinline, gnu::cold]] void unmap_length_error(const DmaBuffer& buf, std::size_t len) {
    throw std::logic_error("dma_unmap_single_attrs: length " + std::to_string(len) + " differs from the mapped " +
                           std::to_string(buf.mapped_len()));
}

// unmap_bounced's call: out of line, so that an unmap of a buffer of its own saves no registers
// and reserves no stack for the Task's ramp.
[[gnu::noinline]] DmaCall unmap_bounced_call(kernel::Cpu& cpu, DmaBuffer& buf, std::size_t len, DmaDataDirection dir,
                                             unsigned long attrs, engine::Cycles c) {
    return {cpu, unmap_bounced(cpu, buf, len, dir, attrs, c)};
}

} // namespace

// Models: dma_unmap_single_attrs() (include/linux/dma-mapping.h)
// Models: dma_direct_unmap_page() (kernel/dma/direct.h)
// Models: swiotlb_tbl_unmap_single() (kernel/dma/swiotlb.c)
DmaCall dma_unmap_single_attrs(kernel::Cpu& cpu, DmaBuffer& buf, std::size_t len, DmaDataDirection dir,
                               unsigned long attrs) {
    check_mapped(buf, 0, len, dir, "dma_unmap_single_attrs");
    if (len != buf.mapped_len()) [[unlikely]] unmap_length_error(buf, len);
    DmaPlatform& p = buf.platform();
    ++p.stats().unmaps;
    engine::Cycles c = p.costs().unmap_call;
    if (!(attrs & DMA_ATTR_SKIP_CPU_SYNC)) c += DmaOps::run(buf, 0, len, dir, false, cpu.now());
    if (buf.bounced()) [[unlikely]] return unmap_bounced_call(cpu, buf, len, dir, attrs, c);
    DmaOps::set_mapping(buf, false, 0, DMA_BIDIRECTIONAL);
    return charge(cpu, p, c, kernel::Text::DMA_SYNC_FOR_CPU);
}

namespace {

// A sync of a bounced mapping: swiotlb_sync_single_for_device copies in before the slots'
// maintenance, swiotlb_sync_single_for_cpu copies back after it.
engine::Task<> sync_bounced(kernel::Cpu& cpu, DmaBuffer& buf, std::size_t offset, std::size_t len,
                            DmaDataDirection dir, bool for_device) {
    DmaPlatform& p = buf.platform();
    if (for_device && dir != DMA_FROM_DEVICE) co_await bounce(cpu, buf, offset, len, true);
    engine::Cycles c = p.costs().sync_call + DmaOps::run(buf, offset, len, dir, for_device, cpu.now());
    co_await charge(cpu, p, c, for_device ? kernel::Text::DMA_SYNC_FOR_DEVICE : kernel::Text::DMA_SYNC_FOR_CPU);
    if (!for_device && dir != DMA_TO_DEVICE) co_await bounce(cpu, buf, offset, len, false);
}

// __dma_sync_single_for_{cpu,device}: the call's cost plus the maintenance of the range's lines.
DmaCall dma_sync_single(kernel::Cpu& cpu, DmaBuffer& buf, std::size_t offset, std::size_t len, DmaDataDirection dir,
                        bool for_device) {
    check_mapped(buf, offset, len, dir, for_device ? "dma_sync_single_for_device" : "dma_sync_single_for_cpu");
    DmaPlatform& p = buf.platform();
    ++(for_device ? p.stats().syncs_for_device : p.stats().syncs_for_cpu);
    if (buf.bounced()) return {cpu, sync_bounced(cpu, buf, offset, len, dir, for_device)};
    engine::Cycles c = p.costs().sync_call + DmaOps::run(buf, offset, len, dir, for_device, cpu.now());
    return charge(cpu, p, c, for_device ? kernel::Text::DMA_SYNC_FOR_DEVICE : kernel::Text::DMA_SYNC_FOR_CPU);
}

} // namespace

// Models: dma_sync_single_for_cpu() (kernel/dma/mapping.c)
DmaCall dma_sync_single_for_cpu(kernel::Cpu& cpu, DmaBuffer& buf, std::size_t offset, std::size_t len,
                                DmaDataDirection dir) {
    return dma_sync_single(cpu, buf, offset, len, dir, false);
}

// Models: dma_sync_single_for_device() (kernel/dma/mapping.c)
DmaCall dma_sync_single_for_device(kernel::Cpu& cpu, DmaBuffer& buf, std::size_t offset, std::size_t len,
                                   DmaDataDirection dir) {
    return dma_sync_single(cpu, buf, offset, len, dir, true);
}

namespace {

// The device's access must lie in a mapping whose direction lets it `verb` ("write" / "read").
[[noreturn, gnu::noinline, gnu::cold]] void device_access_error(const DmaBuffer& buf, std::size_t offset,
                                                                std::size_t len, const char* what, const char* verb) {
    throw std::logic_error(std::string(what) + ": DMA buffer " + std::to_string(buf.id()) +
                           " is not mapped for the device to " + verb + " [" + std::to_string(offset) + ", +" +
                           std::to_string(len) + ")");
}

inline void check_device_access(const DmaBuffer& buf, std::size_t offset, std::size_t len, DmaDataDirection forbidden,
                                const char* what, const char* verb) {
    check_range(buf, offset, len, what);
    if (!buf.mapped() || buf.mapped_dir() == forbidden || offset + len > buf.mapped_len())
        device_access_error(buf, offset, len, what, verb);
}

// The slots of a bounced mapping, where the device's DMA goes (0: no hierarchy address).
mem::Addr device_addr(const DmaBuffer& buf) {
    return buf.bounced() ? buf.platform().swiotlb()->slot_addr(buf.tlb_index()) : buf.addr();
}

} // namespace

void device_write(DmaBuffer& buf, std::size_t offset, std::size_t len, Tick now) {
    check_device_access(buf, offset, len, DMA_TO_DEVICE, "device_write", "write");
    if (mem::MemorySystem* m = buf.platform().memory()) m->device_write(now, device_addr(buf) + offset, len);
    if (buf.bounced() && len > 0) { // the CPU reads the original: stale until copied back, coherent or not
        DmaOps::mark_bounced(buf);
        DmaOps::mark(buf, offset >> buf.line_shift(), (offset + len - 1) >> buf.line_shift());
        return;
    }
    if (buf.platform().coherent() || len == 0) return;
    DmaOps::mark(buf, offset >> buf.line_shift(), (offset + len - 1) >> buf.line_shift());
}

void device_read(DmaBuffer& buf, std::size_t offset, std::size_t len, Tick now) {
    check_device_access(buf, offset, len, DMA_FROM_DEVICE, "device_read", "read");
    if (mem::MemorySystem* m = buf.platform().memory()) m->device_read(now, device_addr(buf) + offset, len);
}

namespace {

// cpu_read's finding, from the first written line of the read's lines [first_line, to): out of
// line (cold), so that a read finding no written line saves no registers for it.
[[gnu::noinline, gnu::cold]] void report_stale_read(kernel::Cpu& cpu, DmaBuffer& buf, std::size_t offset,
                                                    std::size_t len, std::size_t first_line, std::size_t to) {
    const std::size_t line = buf.line_size();
    const std::size_t last_line = DmaOps::last_written(buf, first_line, to);
    StaleReadReport r;
    r.time = cpu.now();
    r.cpu = cpu.id();
    r.buffer = buf.id();
    r.first = std::max<std::uint64_t>(offset, first_line * line);
    r.end = std::min<std::uint64_t>(offset + len, (last_line + 1) * line);
    r.read_offset = offset;
    r.read_len = len;
    buf.platform().report_stale_read(r);
    cpu.report_finding(stats::FindingKind::STALE_DMA_READ, "the device's write after the lines' last invalidation",
                       "buffer " + std::to_string(r.buffer) + " bytes " + std::to_string(r.first) + "-" + std::to_string(r.end),
                       "cpu read of bytes " + std::to_string(offset) + "-" + std::to_string(offset + len));
}

} // namespace

bool cpu_read(kernel::Cpu& cpu, DmaBuffer& buf, std::size_t offset, std::size_t len) {
    check_range(buf, offset, len, "cpu_read");
    if (len == 0 || !DmaOps::may_be_stale(buf)) return false;
    const unsigned shift = buf.line_shift();
    const std::size_t from = offset >> shift, to = ((offset + len - 1) >> shift) + 1; // lines [from, to)
    const std::size_t first_line = DmaOps::first_written(buf, from, to - 1);
    if (first_line == to) return false;
    report_stale_read(cpu, buf, offset, len, first_line, to);
    return true;
}

engine::Cycles dma_maintenance_cycles(const DmaCosts& c, std::uint32_t line_size, std::size_t offset, std::size_t len,
                                      DmaDataDirection dir, bool to_device) {
    if (c.coherent) return 0;
    return maintain(c, line_size, offset, len, dir, to_device, nullptr, NoState{});
}

} // namespace kdsim::devices
