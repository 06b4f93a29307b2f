// The memory hierarchy of one machine: per-CPU private caches (L1, and L2 where it is private),
// shared caches (an L2C-310 outer cache, a cluster L2, an LLC), DRAM with a load-to-use latency
// and a bandwidth that the CPUs' fills, write-backs and the devices' DMA all share, and a
// sequential-stream prefetcher per CPU. It answers one question for the CPU model: how many
// cycles beyond warm (L1-hit) execution does touching these bytes stall?
//
// What the kernel's cache maintenance and the devices do to it (arch/arm/mm/cache-v7.S,
// cache-l2x0.c, arch/arm64/mm/cache.S, and the platform's DMA snooping):
//   - a device write (DMA to memory) goes to DRAM and uses bandwidth; on a non-coherent SoC the
//     CPU caches keep whatever they held (stale lines: the DMA API must invalidate them); on a
//     coherent one the write snoops the caches and drops their copies; with write-allocate into
//     the LLC (Intel DDIO-like, a profile option) the line lands in the last shared level, dirty;
//   - invalidate (dc ivac / DCIMVAC + the outer cache's INV_LINE_PA) drops lines from every level
//     of every CPU, dirty data lost;
//   - clean (dc cvac / DCCMVAC + CLEAN_LINE_PA) writes dirty lines back, using DRAM bandwidth.
//
// Timing model of one access of contiguous bytes, line by line in address order:
//   - a hit in the CPU's level k stalls latency(k) - latency(L1) cycles (compute figures are
//     measured on warm data, i.e. with L1 hits);
//   - a line held only by another CPU's private cache is served at the profile's peer latency, or
//     without one at the first shared level's latency (the snoop-control unit's cache-to-cache
//     transfer);
//   - a line from DRAM is a demand miss until the CPU's stream prefetcher has seen `trigger`
//     consecutive line misses, or unless the stride prefetcher covers it (below); a demand miss
//     waits for the DRAM channel, then stalls the DRAM load-to-use latency - latency(L1);
//   - independent demand misses overlap (memory-level parallelism): the lines of one access, and
//     the accesses issued together (MemorySystem::together: loads none of which depends on
//     another, as an out-of-order core has them in its window), keep up to `fill_buffers` misses
//     in flight, each issued when the channel takes it; a further miss waits for the earliest
//     to complete, and the access ends when the last completes. fill_buffers 1: serialised;
//   - the stride prefetcher follows one load site (the instruction: Access::site, given by the
//     caller) per entry: once its accesses' first lines have kept one constant stride
//     `stride_trigger` times, a first line within `stride_degree` strides ahead of the last one
//     was fetched ahead and costs only its transfer, as a streamed line;
//   - a line of a detected stream costs only its
//     transfer time on the channel (the prefetcher runs far enough ahead to hide the latency,
//     so a stream is bandwidth-bound), and no less than one core's own streaming limit
//     (core_bandwidth: its outstanding line fills bind before the shared DRAM does);
//   - a store that misses every level allocates the line (write-allocate) and costs its fill's
//     transfer time, at least the core's streaming limit as above (the store buffer hides the
//     latency); the line is then dirty;
//   - fills go into every level; a dirty line evicted from the last level is written back
//     (channel time, no CPU stall).
// An access consumed by compute of known length (MemorySystem::consume: a cipher over the payload
// it reads, a copy's loop over its source) overlaps that compute: the consumer works on the lines
// in address order, `compute / lines` warm cycles each, and starts a line when both the line has
// arrived (the times above: a hit or a streamed line when the cursor passes it, a demand miss when
// it completes) and the line before it is done. What is left beyond the compute is the stall:
// the first line's wait, and the waits for lines the prefetcher had not reached or a stream
// slower than the compute. With no compute it is read()'s stall. For a stream of N lines whose
// first is a demand miss of latency L and whose others arrive one per t_line (the core's limit):
// max(L, (N - 1) x (t_line - c)) at c cycles per line, against max(L, (N - 1) x t_line) alone;
// with one fill buffer the stream starts after the miss: L + max(0, (N - 1) x (t_line - c)).
// The DRAM channel is one resource with a "busy until" time: transfers queue behind each other,
// so DMA traffic slows the CPUs' misses and the other way round. With refresh figures, the
// memory controller's periodic all-bank REFRESH (one every tREFI, the DRAM busy for tRFC; JEDEC
// DDR3/LPDDR2/LPDDR4) takes the channel: a transfer that would begin during one waits for its
// end (one that began before it finishes first: the controller postpones the refresh, as DDR
// allows). Where the refreshes fall relative to the run is the refresh phase, drawn from the
// run's seed: it is one of the run-to-run variation sources.
//
// Not modelled: TLBs, banks and pages of DRAM, overlap of hits and peer transfers (they add up),
// write-streaming no-allocate modes. Instruction fetch is mem/icache.h's, beside this hierarchy.
#pragma once

#include "engine/time.h"
#include "mem/cache.h"
#include "mem/config.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kdsim::mem {

using engine::Cycles;
using engine::Tick;
using Addr = std::uint64_t; // a byte address in the machine's simulated physical memory

// One access of an exec: CPU loads (or stores) of [a, a + len). `site` names the load instruction
// for the stride prefetcher (1 .. STRIDE_SITES - 1; 0: not tracked).
struct Access {
    Addr a = 0;
    std::size_t len = 0;
    bool write = false;
    std::uint8_t site = 0;
};


struct LevelStats {
    std::uint64_t hits = 0, misses = 0;
};

struct MemoryStats {
    std::vector<LevelStats> levels;      // per configured level (private ones summed over CPUs)
    std::uint64_t peer_hits = 0;         // lines served from another CPU's private cache
    std::uint64_t dram_demand_lines = 0; // CPU line reads from DRAM that paid the latency
    std::uint64_t dram_stream_lines = 0; // CPU line reads from DRAM that a stream prefetch covered
    std::uint64_t dram_stride_lines = 0; // CPU line reads from DRAM that the stride prefetcher covered
    std::uint64_t overlapped_misses = 0; // demand misses issued while another was in flight
    std::uint64_t dram_write_allocates = 0;
    std::uint64_t writebacks = 0;        // dirty lines written to DRAM (evictions and cleans)
    std::uint64_t dma_write_bytes = 0, dma_read_bytes = 0;
    std::uint64_t invalidated_lines = 0; // lines dropped by invalidate (present somewhere)
    std::uint64_t refresh_waits = 0;     // DRAM transfers that waited for a refresh to end
    Cycles stall_cycles = 0;             // every stall returned by read/write
};

class MemorySystem {
public:
    // Throws std::invalid_argument when `check_config(c)` finds a problem or `cpus` / `hz` is 0.
    MemorySystem(const MemoryConfig& c, int cpus, std::uint64_t hz);
    MemorySystem(const MemorySystem&) = delete;
    MemorySystem& operator=(const MemorySystem&) = delete;

    const MemoryConfig& config() const { return cfg_; }
    std::uint32_t line_size() const { return cfg_.line; }
    const MemoryStats& stats() const { return stats_; }

    // A region of `bytes` at a fresh address aligned to `align` (a power of two, at least the
    // line). Deterministic: the same calls give the same addresses.
    Addr alloc(std::size_t bytes, std::size_t align = 0);

    // CPU `cpu` loads / stores [a, a + len) starting at `now`: the stall in cycles beyond L1-hit
    // execution, and the caches updated. `site`: the load's site for the stride prefetcher.
    Cycles read(int cpu, Tick now, Addr a, std::size_t len, std::uint8_t site = 0);
    Cycles write(int cpu, Tick now, Addr a, std::size_t len);
    // Independent accesses issued together from `now`, in order: their demand misses overlap up to
    // fill_buffers; the stall until the last of them completes.
    Cycles together(int cpu, Tick now, std::span<const Access> accesses);
    // Access `x` consumed from `now` by `compute` warm cycles of work spread evenly over its lines
    // (the consumer charges those cycles itself): the stall left beyond them, in cycles (above).
    Cycles consume(int cpu, Tick now, const Access& x, Cycles compute);

    // A device's DMA write to / read from memory at `now` (its channel time, no CPU time).
    void device_write(Tick now, Addr a, std::size_t len);
    void device_read(Tick now, Addr a, std::size_t len);

    // Cache maintenance over the lines of [a, a + len) (whole lines), all CPUs and levels:
    // returns the lines dropped / the dirty lines written back (channel time from `now`).
    std::uint64_t invalidate(Addr a, std::size_t len);
    std::uint64_t clean(Tick now, Addr a, std::size_t len);

    // Where CPU `cpu` would find the line of `a`: the index of the nearest level holding it
    // (its own private levels, then shared ones), or -1 (another CPU's cache or DRAM).
    int level_of(int cpu, Addr a) const;
    bool dirty_anywhere(Addr a) const;
    // Places the DRAM refreshes at phase + k x refresh_interval (k any integer); without refresh
    // figures, does nothing. The phase is 0 until set.
    void set_refresh_phase(Tick phase);
    Tick refresh_interval() const { return refresh_period_; } // ps; 0: no refresh
    // The earliest time at or after `t` when no refresh holds the DRAM (a wait is counted).
    Tick after_refresh(Tick t);
    // When the DRAM channel is next free.
    Tick dram_busy_until() const { return busy_until_; }

private:
    friend struct MemorySystemTestPeer; // memory_test.cpp: the same machine without the directory
    struct Stream {
        Line next = 0;      // the line that continues the stream
        std::uint32_t run = 0;
        std::uint64_t used = 0;
    };
    struct StrideEntry {
        Line last = 0;
        std::int64_t stride = 0;
        std::uint32_t hits = 0; // consecutive accesses at `stride`
        bool valid = false;
    };
    // One access from issue time `t`: returns the issue time after it; its demand misses beyond the
    // first fill buffer stay in inflight_ until finish(). `own_paths`: read()'s and write()'s, whose
    // accesses on the Cortex-A9's shape take paths of their own where they apply (a read's first
    // lines in the L1, then one or two lines held nowhere: access_run's Cold copy; a store's first
    // lines held in the L1 or the L2 alone); the other callers skip the tests.
    Tick access(int cpu, Tick t, const Access& x, bool own_paths = false);
    // access() over lines inside the holders directory (every access of alloc()'d memory): the same
    // per-line steps, with the CPU's levels, bits and peers read once per access and the holders
    // entry once per line. A line that no cache holds (a DMA-written frame, a fresh buffer) skips
    // the level probe and the peer search: it misses every level (counted once per access) and
    // comes from DRAM. A9: the copy for the Cortex-A9's shape (a9_fills_).
    // access() outside the directory (memory outside alloc()'s, or no directory): every cache
    // searched, line by line. Out of line, so that access() stays a short dispatch.
    Tick access_searched(int cpu, Tick t, bool write, Line first, Line last, bool stride_ahead);
    // Cold (A9 only): a read of one or two lines that no cache holds (a received frame's header),
    // the copy with only the steps such lines take (from DRAM, then the L2's and the L1's fills).
    template <bool A9, bool Cold = false>
    Tick access_run(int cpu, Tick t, bool write, Line first, Line last, bool stride_ahead);
    // access_run's per-line steps for a read of [a, b], lines that no cache holds (a received
    // frame after its DMA): each from DRAM, consumed, then filled into every level, the farthest
    // first. The same steps in the same order, with what the run already knows kept in registers:
    // the stream the lines continue (its state updated once at the end), the DRAM channel's busy
    // time and the consumer's, and the caches' arrays and LFSRs (Cache::View). `stride_first`: the
    // stride prefetcher covered line a. Returns the issue time after the last line.
    Tick read_unheld(int cpu, Tick t, Line a, Line b, bool stride_first);
    // access_run's per-line steps for lines from `a` on (at most to `last`) that only shared levels
    // hold (the nearest of them a hit, no CPU's private cache holding the line: a copy's destination
    // in the PL310), filled into the levels before it, with the same state kept in registers as
    // read_unheld. Stops at the first line that fails that test when its turn comes (a fill of the
    // run may have changed it); `next`: that line, or last + 1. For hierarchies whose shared levels
    // do not reorder on a hit (use_held_runs_).
    // A9: as read_unheld_n's.
    template <std::size_t N, bool A9 = false>
    Tick held_run_n(int cpu, Tick t, bool write, Line a, Line last, Line& next);
    // read_unheld for a hierarchy of N levels (the level loop unrolled, the views in registers).
    // A9: the Cortex-A9's shape (a9_fills_, N 2; access_run<true> calls it), its fast copy alone with
    // the shape's constants.
    template <std::size_t N, bool A9 = false>
    Tick read_unheld_n(int cpu, Tick t, Line a, Line b, bool stride_first);
    // A CPU line from DRAM at `t` (no cache holds it): a store's write-allocate, a streamed line,
    // the stride prefetcher's line (`stride_line`) or a demand miss; returns the issue time after it.
    // `trained`, where given: the stream a load's line trained (streamed()).
    Tick from_dram(int cpu, Tick t, bool write, Line l, bool stride_line, Stream** trained = nullptr);
    // Waits for the misses in flight: the stall from `now` to then, in cycles.
    Cycles finish(Tick now, Tick t);
    // `stall` ps rounded up to whole cycles, counted in the stats.
    Cycles stall_cycles(Tick stall);
    // The consumer (consume()) takes a line that arrives at `ready`.
    void consume_line(Tick ready) {
        if (consume_line_ != 0) consumer_ = std::max(consumer_, ready) + consume_line_;
    }
    // A demand miss of line-sized channel time issued at `t`: returns the issue time after it.
    Tick demand_miss(Tick t);
    // after_refresh with its first tests inline (no refresh figures, or `t` in the span it last
    // found), else its call (the division inline in every caller took Zen 4 ESP's runs 4 M Ir more)
    Tick after_refresh_here(Tick t);
    // Trains site `site` of `cpu` on line `l`; returns whether a prefetch had covered `l`.
    bool stride_covered(int cpu, std::uint8_t site, Line l);
    Cache& level(int cpu, std::size_t k);
    const Cache& level(int cpu, std::size_t k) const;
    // Installs `l` in level k of `cpu` and below; write-backs of what falls out.
    void fill_from(int cpu, std::size_t k, Line l, bool dirty, Tick now);
    void place_evicted(int cpu, std::size_t k, const Evicted& e, Tick now);
    Tick channel(Tick start, std::uint64_t bytes); // returns when the transfer ends
    Tick xfer_ticks(std::uint64_t bytes) const;    // channel's transfer time of `bytes`, ps
    Tick channel_for(Tick start, Tick xfer);       // channel with its transfer time given
    Tick device_channel(Tick start, std::uint64_t bytes); // channel, the time memoised by length
    // The stream prefetcher's state on a DRAM line miss: whether it had fetched `l`; `trained`,
    // where given, the stream `l` continued or began (untouched without streams).
    bool streamed(int cpu, Line l, Stream** trained = nullptr);
    void drop_everywhere(Line l, int keep_cpu);      // coherence / invalidation
    // The holders directory (a snoop filter): per line of the allocated space, one bit per cache
    // (private ones cpu-major, then the shared ones) set while that cache holds the line, so that
    // lookups, snoops and maintenance visit only the caches that hold it. nullptr for a line
    // outside what alloc() gave, or with more than 16 caches: every cache is then searched.
    std::uint16_t* holders(Line l) { return use_dir_ && l < dir_.size() ? &dir_[l] : nullptr; }
    std::uint16_t bit(int cpu, std::size_t k) const { return bits_[static_cast<std::size_t>(cpu) * n_levels_ + k]; }
    std::uint16_t own_bits(int cpu) const {
        return static_cast<std::uint16_t>(((1u << n_private_) - 1) << (static_cast<std::size_t>(cpu) * n_private_));
    }
    Cache& cache_by_id(std::size_t id) { return *by_id_[id]; }
    // The first line of [l, last] whose holder entry is not 0 (some cache holds it), or outside
    // the directory, or last + 1: the lines it passes are held by no cache, so a snoop or a
    // maintenance operation has nothing to do there. Skips four entries per 64-bit word.
    Line skip_unheld(Line l, Line last) const;
    // Cache::fill of level k of `cpu`, with the directory kept.
    std::optional<Evicted> fill_at(int cpu, std::size_t k, Line l, bool dirty);
    // Invalidates `l` in the caches of the bits of `m`; returns the bits dropped.
    std::uint16_t drop_bits(Line l, std::uint16_t m);
    // The way hint of line `l` (inside the directory) at shared level k (k >= n_private_): the way
    // of its set that `l` sits in there, valid while the directory says that level holds `l`.
    std::uint16_t& hint(Line l, std::size_t k) { return way_[l * n_shared_ + (k - n_private_)]; }
    // The same for the shared cache of id `id` (id >= first_shared_id_).
    std::uint16_t hint_by_id(Line l, std::size_t id) const { return way_[l * n_shared_ + (id - first_shared_id_)]; }
    // Whether CPU `cpu` has accessed memory yet (its private caches are empty until then).
    bool touched(int cpu) const { return touched_[static_cast<std::size_t>(cpu)] != 0; }

    MemoryConfig cfg_;
    int cpus_;
    engine::Clock clock_;
    std::size_t n_private_ = 0;
    std::size_t n_levels_ = 0; // cfg_.levels.size(), kept: bit() is on every fill's path
    std::vector<Cache> private_; // cpu-major: cpu * n_private_ + k
    std::vector<Cache> shared_;  // levels n_private_ ..
    std::vector<Cache*> lv_;     // level k of CPU cpu: cpu * n_levels_ + k (into private_ / shared_)
    std::vector<Cache*> by_id_;  // cache id (private ones cpu-major, then the shared ones)
    std::vector<Stream> streams_; // cpu-major: cpu * prefetch_streams + s
    std::vector<StrideEntry> strides_; // cpu-major: cpu * STRIDE_SITES + site
    std::vector<Tick> inflight_;       // completion times of the demand misses in flight
    std::size_t n_inflight_ = 0;
    std::vector<std::uint8_t> touched_; // per CPU
    std::vector<std::uint16_t> dir_;    // holders, per line
    bool use_dir_ = false;
    // Way hints for the shared levels, per line of the directory: way_[l * n_shared_ + s] is the
    // way that shared level s holds `l` in. Written at every fill of a shared level (fill_at,
    // access_run); read only while `l`'s directory bit for that level is set. A line keeps its way
    // while it is held, and every eviction or invalidate clears the bit, so a stale hint is never
    // read. A dirty L1 victim marked dirty below, an invalidate, a clean and an LRU hit there then
    // need no tag search. Off (use_hint_ false, way_ empty) without the directory or with a shared
    // level of more than 65,536 ways. 16 bits a hint: a store of a character type may alias any
    // field, and a first, 8-bit version measured slower (docs/performance.md, twentieth session).
    std::vector<std::uint16_t> way_;
    std::size_t n_shared_ = 0;
    std::size_t first_shared_id_ = 0; // private_.size(): the cache id of the first shared level
    std::size_t hint_from_ = 0;       // the first level with way hints (n_levels_: none)
    bool use_hint_ = false;
    // held_run_n applies: 2 to 4 levels, at least one private, no shared one reordering on a hit
    bool use_held_runs_ = false;
    // The Cortex-A9's shape: two levels, each CPU's private L1 random with 4 ways of 256 sets, one
    // shared L2 (way hints) random with 16 ways of 2,048 sets; access_run's fills then take the
    // ways and the sets' masks as constants
    bool a9_fills_ = false;
    std::uint16_t private_bits_ = 0;    // the bits of every private cache
    std::vector<std::uint16_t> bits_;   // the bit of level k as CPU cpu sees it: cpu * levels + k
    Tick dram_stall_ = 0;               // a demand miss beyond an L1 hit, ps
    std::vector<Tick> hit_ticks_;       // a hit in level k beyond an L1 hit, ps
    Tick peer_ticks_ = 0;               // a line from another CPU's private cache, ps
    Tick max_fast_stall_ = 0;           // stalls up to this convert to cycles in 64 bits
    unsigned line_shift_ = 0;           // log2(line)
    std::uint64_t stream_clock_ = 0;
    Tick line_xfer_ = 0;         // one line on the DRAM channel, ps
    Tick core_line_xfer_ = 0;    // one line at one core's streaming limit, ps (0: none)
    Tick busy_until_ = 0;
    std::uint64_t dev_bytes_ = 0; // device_channel's memo: the last device transfer's length (0: none)
    Tick dev_xfer_ = 0;           // and its xfer_ticks
    Tick line_ready_ = 0;   // when the last line from_dram() gave arrives (a demand miss: completes)
    Tick consume_line_ = 0; // consume(): the consumer's work per line, ps (0: no consumer)
    Tick consumer_ = 0;     // consume(): when the consumer is done with the lines so far
    Tick refresh_period_ = 0;    // tREFI, ps (0: no refresh)
    Tick refresh_busy_ = 0;      // tRFC, ps
    Tick refresh_phase_ = 0;     // the first refresh's start, in [0, period)
    engine::U64Divider by_refresh_;
    // The last span with no refresh that after_refresh() found: [clear_from_, clear_from_ +
    // clear_len_) modulo 2^64 (clear_len_ 0: none yet), so that the times of a run of lines,
    // which mostly fall between two refreshes, need no division.
    Tick clear_from_ = 0;
    Tick clear_len_ = 0;
    Addr next_addr_ = 0;
    MemoryStats stats_;
};

} // namespace kdsim::mem
