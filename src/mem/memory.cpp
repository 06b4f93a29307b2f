#include "mem/memory.h"

#include "mem/lfsr.h"
#include "mem/line_bits.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kdsim::mem {

namespace {

std::string num(std::uint64_t v) { return std::to_string(v); }

} // namespace

std::optional<ConfigProblem> check_config(const MemoryConfig& c) {
    if (c.line == 0 || (c.line & (c.line - 1)) != 0)
        return ConfigProblem{"line", "expected a power of two number of bytes, found " + num(c.line)};
    if (c.levels.empty()) return ConfigProblem{"levels", "expected at least one cache level (the L1 data cache)"};
    bool seen_shared = false;
    for (std::size_t k = 0; k < c.levels.size(); ++k) {
        const CacheLevelConfig& l = c.levels[k];
        const std::string& n = l.name;
        if (l.size == 0) return ConfigProblem{n + ".size", "expected a size > 0 bytes"};
        if (l.ways == 0) return ConfigProblem{n + ".ways", "expected an associativity > 0"};
        if (l.latency == 0) return ConfigProblem{n + ".latency", "expected a load-to-use latency > 0 cycles"};
        const std::uint64_t way_bytes = std::uint64_t{l.ways} * c.line;
        if (l.size % way_bytes != 0)
            return ConfigProblem{n + ".ways", "associativity " + num(l.ways) + " x line " + num(c.line) +
                                                  " B does not divide the size " + num(l.size) + " B"};
        if (k > 0) {
            const CacheLevelConfig& p = c.levels[k - 1];
            if (l.size < p.size)
                return ConfigProblem{n + ".size", "expected at least the size of " + p.name + " (" + num(p.size) +
                                                      " B), found " + num(l.size) + " B"};
            if (l.latency <= p.latency)
                return ConfigProblem{n + ".latency", "expected more than " + p.name + "'s " + num(p.latency) +
                                                         " cycles, found " + num(l.latency)};
        }
        if (seen_shared && !l.shared)
            return ConfigProblem{n + ".shared", "a private level cannot follow a shared one"};
        seen_shared = seen_shared || l.shared;
    }
    if (!(c.dram_latency_ns > 0)) return ConfigProblem{"dram.latency", "expected a latency > 0 ns"};
    if (!(c.dram_bandwidth > 0)) return ConfigProblem{"dram.bandwidth", "expected a bandwidth > 0 bytes/s"};
    if (c.core_bandwidth < 0 || c.core_bandwidth > c.dram_bandwidth)
        return ConfigProblem{"dram.core_bandwidth", "expected at most the shared DRAM bandwidth, found more"};
    if (c.peer_latency != 0 && c.peer_latency <= c.levels[0].latency)
        return ConfigProblem{"peer_latency", "expected more than " + c.levels[0].name + "'s " + num(c.levels[0].latency) +
                                                 " cycles (a line from another CPU is not an L1 hit), found " +
                                                 num(c.peer_latency)};
    if (c.fill_buffers == 0 || c.fill_buffers > MAX_FILL_BUFFERS)
        return ConfigProblem{"fill_buffers", "expected 1 to " + num(MAX_FILL_BUFFERS) +
                                                 " demand misses in flight (1: serialised), found " + num(c.fill_buffers)};
    if (c.stride_trigger > 0 && c.stride_degree == 0)
        return ConfigProblem{"prefetch.stride_degree", "expected at least 1 stride fetched ahead"};
    if (c.prefetch_streams > 0 && c.prefetch_trigger == 0)
        return ConfigProblem{"prefetch.trigger", "expected at least 1 line miss before a stream is followed"};
    if ((c.refresh_interval_ns > 0) != (c.refresh_time_ns > 0) || c.refresh_interval_ns < 0 || c.refresh_time_ns < 0)
        return ConfigProblem{c.refresh_interval_ns > 0 ? "dram.refresh_time" : "dram.refresh_interval",
                             "expected refresh_interval and refresh_time together, both > 0 ns"};
    if (c.refresh_interval_ns > 0 && c.refresh_time_ns >= c.refresh_interval_ns)
        return ConfigProblem{"dram.refresh_time", "expected less than refresh_interval (the DRAM would never serve a request)"};
    if (c.dma_write_allocate && (!c.dma_coherent || !seen_shared))
        return ConfigProblem{"dma.write_allocate", "needs coherent DMA and a shared cache level to allocate into"};
    if (const L1iConfig& i = c.l1i; i.size > 0) {
        if (i.ways == 0) return ConfigProblem{"l1i.ways", "expected an associativity > 0"};
        if (i.size % (std::uint64_t{i.ways} * c.line) != 0)
            return ConfigProblem{"l1i.ways", "associativity " + num(i.ways) + " x line " + num(c.line) +
                                                 " B does not divide the size " + num(i.size) + " B"};
        if (c.levels.size() < 2)
            return ConfigProblem{"l1i.size", "expected a level after l1d to fill the instruction cache from"};
        if (!(i.executed > 0 && i.executed <= 1))
            return ConfigProblem{"l1i.executed", "expected a fraction of a function's bytes in (0, 1]"};
        if (i.align == 0 || (i.align & (i.align - 1)) != 0)
            return ConfigProblem{"l1i.align", "expected a power of two number of bytes, found " + num(i.align)};
    }
    return std::nullopt;
}

MemorySystem::MemorySystem(const MemoryConfig& c, int cpus, std::uint64_t hz) : cfg_(c), cpus_(cpus), clock_(hz) {
    if (auto p = check_config(c)) throw std::invalid_argument("memory hierarchy: " + p->key + ": " + p->message);
    if (cpus <= 0 || hz == 0) throw std::invalid_argument("memory hierarchy: needs at least one CPU and a clock");
    n_levels_ = c.levels.size();
    for (const auto& l : c.levels)
        if (!l.shared) ++n_private_;
    private_.reserve(n_private_ * static_cast<std::size_t>(cpus));
    for (int cpu = 0; cpu < cpus; ++cpu)
        for (std::size_t k = 0; k < n_private_; ++k) {
            const auto& l = c.levels[k];
            private_.emplace_back(static_cast<std::uint32_t>(l.size / (std::uint64_t{l.ways} * c.line)), l.ways,
                                  l.replacement);
        }
    // the holders directory (at most 16 caches) and, with it, a way hint per line in each shared level
    n_shared_ = c.levels.size() - n_private_;
    use_dir_ = private_.size() + n_shared_ <= 16;
    use_hint_ = use_dir_ && n_shared_ > 0 &&
                std::all_of(c.levels.begin() + static_cast<std::ptrdiff_t>(n_private_), c.levels.end(),
                            [](const auto& l) { return l.ways <= 65536; });
    // A shared level with way hints whose hits do not reorder (no LRU stamps, no tag search on a
    // hit) is laid out way-major: consecutive lines mostly sit in one way of consecutive sets there
    // (a buffer's lines, filled and dropped together).
    for (std::size_t k = n_private_; k < c.levels.size(); ++k) {
        const auto& l = c.levels[k];
        const bool way_major = use_hint_ && l.replacement != Replacement::LRU;
        shared_.emplace_back(static_cast<std::uint32_t>(l.size / (std::uint64_t{l.ways} * c.line)), l.ways,
                             l.replacement, way_major ? Layout::WAY_MAJOR : Layout::SET_MAJOR);
    }
    streams_.assign(static_cast<std::size_t>(cpus) * c.prefetch_streams, Stream{});
    if (c.stride_trigger > 0) strides_.assign(static_cast<std::size_t>(cpus) * STRIDE_SITES, StrideEntry{});
    inflight_.assign(c.fill_buffers, 0);
    touched_.assign(static_cast<std::size_t>(cpus), 0);
    line_shift_ = static_cast<unsigned>(std::countr_zero(c.line));
    for (const auto& l : c.levels) hit_ticks_.push_back(clock_.to_ticks(l.latency - c.levels[0].latency));
    peer_ticks_ = c.peer_latency ? clock_.to_ticks(c.peer_latency - c.levels[0].latency)
                                 : hit_ticks_[n_private_ < c.levels.size() ? n_private_ : n_private_ - 1];
    max_fast_stall_ = (UINT64_MAX - engine::PS_PER_S) / hz;
    dram_stall_ = static_cast<Tick>(std::llround(c.dram_latency_ns * 1000.0)) - clock_.to_ticks(c.levels[0].latency);
    for (auto& x : private_) by_id_.push_back(&x);
    for (auto& x : shared_) by_id_.push_back(&x);
    first_shared_id_ = private_.size();
    hint_from_ = use_hint_ ? n_private_ : n_levels_;
    use_held_runs_ = use_dir_ && n_private_ >= 1 && n_levels_ >= 2 && n_levels_ <= 4 &&
                     std::none_of(shared_.begin(), shared_.end(), [](const Cache& x) { return x.hits_reorder(); });
    const auto random_of = [](Cache& x, std::uint32_t sets, std::uint32_t ways) {
        return x.view().repl == Replacement::RANDOM && x.sets() == sets && x.ways() == ways;
    };
    a9_fills_ = use_hint_ && n_levels_ == 2 && n_private_ == 1 && random_of(shared_[0], 2048, 16) &&
                std::all_of(private_.begin(), private_.end(), [&](Cache& x) { return random_of(x, 256, 4); });
    assert(!a9_fills_ || use_held_runs_); // (access_run<true> and access() take held runs without the test)
    if (use_dir_) private_bits_ = static_cast<std::uint16_t>((1u << private_.size()) - 1);
    for (int cpu = 0; cpu < cpus; ++cpu)
        for (std::size_t k = 0; k < c.levels.size(); ++k) {
            const std::size_t id = k < n_private_ ? static_cast<std::size_t>(cpu) * n_private_ + k
                                                  : private_.size() + (k - n_private_);
            bits_.push_back(use_dir_ ? static_cast<std::uint16_t>(1u << id) : 0);
            lv_.push_back(by_id_[id]);
        }
    line_xfer_ = static_cast<Tick>(std::ceil(static_cast<double>(c.line) * 1e12 / c.dram_bandwidth));
    core_line_xfer_ = c.core_bandwidth > 0
                          ? static_cast<Tick>(std::ceil(static_cast<double>(c.line) * 1e12 / c.core_bandwidth))
                          : 0;
    if (c.refresh_interval_ns > 0) {
        refresh_period_ = static_cast<Tick>(std::llround(c.refresh_interval_ns * 1000.0));
        refresh_busy_ = static_cast<Tick>(std::llround(c.refresh_time_ns * 1000.0));
        by_refresh_ = engine::U64Divider(refresh_period_);
    }
    stats_.levels.assign(c.levels.size(), LevelStats{});
    next_addr_ = 1 << 20; // leave address 0 unused
}

Cache& MemorySystem::level(int cpu, std::size_t k) { return *lv_[static_cast<std::size_t>(cpu) * n_levels_ + k]; }
const Cache& MemorySystem::level(int cpu, std::size_t k) const {
    return *lv_[static_cast<std::size_t>(cpu) * n_levels_ + k];
}

Addr MemorySystem::alloc(std::size_t bytes, std::size_t align) {
    align = std::max<std::size_t>(align, cfg_.line);
    if ((align & (align - 1)) != 0) throw std::invalid_argument("MemorySystem::alloc: alignment not a power of two");
    const Addr a = (next_addr_ + align - 1) & ~static_cast<Addr>(align - 1);
    next_addr_ = a + std::max<std::size_t>(bytes, 1);
    if (use_dir_) dir_.resize(static_cast<std::size_t>((next_addr_ + cfg_.line - 1) / cfg_.line), 0);
    if (use_hint_) way_.resize(dir_.size() * n_shared_, 0);
    return a;
}

void MemorySystem::set_refresh_phase(Tick phase) {
    if (refresh_period_ == 0) return;
    refresh_phase_ = phase - by_refresh_(phase) * refresh_period_;
    clear_len_ = 0;
}

Tick MemorySystem::after_refresh(Tick t) {
    if (refresh_period_ == 0) return t;
    if (t - clear_from_ < clear_len_) return t; // between the same two refreshes as the last time asked
    // how far into its refresh period t is (refreshes begin at phase + k x period); within the period
    // after the span last found, from the refresh that ends it (clear_from_ + clear_len_, a refresh's
    // start), without the division
    Tick into = t - (clear_from_ + clear_len_);
    if (clear_len_ == 0 || into >= refresh_period_) {
        const Tick x = t + refresh_period_ - refresh_phase_;
        into = x - by_refresh_(x) * refresh_period_;
    }
    if (into >= refresh_busy_) {
        // [this refresh's end, the next one's start); modulo 2^64 when it began before time 0
        clear_from_ = t - into + refresh_busy_;
        clear_len_ = refresh_period_ - refresh_busy_;
        return t;
    }
    ++stats_.refresh_waits;
    return t + (refresh_busy_ - into);
}
// after_refresh's first tests inline (no refresh, or t in the span last found), else its call
[[gnu::always_inline]] inline Tick MemorySystem::after_refresh_here(Tick t) {
    if (refresh_period_ == 0 || t - clear_from_ < clear_len_) return t;
    return after_refresh(t);
}

inline Tick MemorySystem::xfer_ticks(std::uint64_t bytes) const {
    return bytes == cfg_.line ? line_xfer_
                              : static_cast<Tick>(std::ceil(static_cast<double>(bytes) * 1e12 / cfg_.dram_bandwidth));
}

inline Tick MemorySystem::channel_for(Tick start, Tick xfer) {
    const Tick begin = after_refresh_here(std::max(start, busy_until_));
    busy_until_ = begin + xfer;
    return busy_until_;
}

inline Tick MemorySystem::channel(Tick start, std::uint64_t bytes) { return channel_for(start, xfer_ticks(bytes)); }

// A device's transfer (device_write, device_read): a run's frames repeat a few lengths, so the
// last length's xfer_ticks (a double division and its ceil) is kept. The same time: a memo of a
// function of the length alone (the configuration is fixed).
inline Tick MemorySystem::device_channel(Tick start, std::uint64_t bytes) {
    if (bytes != dev_bytes_) {
        dev_bytes_ = bytes;
        dev_xfer_ = xfer_ticks(bytes);
    }
    return channel_for(start, dev_xfer_);
}

inline bool MemorySystem::streamed(int cpu, Line l, Stream** trained) {
    if (cfg_.prefetch_streams == 0) return false;
    Stream* s = &streams_[static_cast<std::size_t>(cpu) * cfg_.prefetch_streams];
    Stream* oldest = s;
    for (std::uint32_t i = 0; i < cfg_.prefetch_streams; ++i) {
        if (s[i].run > 0 && s[i].next == l) {
            ++s[i].run;
            s[i].next = l + 1;
            s[i].used = ++stream_clock_;
            if (trained) *trained = &s[i];
            return s[i].run > cfg_.prefetch_trigger;
        }
        if (s[i].used < oldest->used) oldest = &s[i];
    }
    *oldest = Stream{l + 1, 1, ++stream_clock_}; // a new candidate stream replaces the least recent
    if (trained) *trained = oldest;
    return 1 > cfg_.prefetch_trigger;
}

inline std::optional<Evicted> MemorySystem::fill_at(int cpu, std::size_t k, Line l, bool dirty) {
    const std::size_t slot = static_cast<std::size_t>(cpu) * n_levels_ + k;
    Evicted e;
    std::uint32_t way;
    const bool displaced = lv_[slot]->fill(l, dirty, e, way);
    if (use_dir_) {
        const std::uint16_t b = bits_[slot];
        if (l < dir_.size()) {
            dir_[l] = static_cast<std::uint16_t>(dir_[l] | b);
            if (use_hint_ && k >= n_private_) hint(l, k) = static_cast<std::uint16_t>(way);
        }
        if (displaced && e.line < dir_.size()) dir_[e.line] = static_cast<std::uint16_t>(dir_[e.line] & ~b);
    }
    if (displaced) return e;
    return std::nullopt;
}

void MemorySystem::place_evicted(int cpu, std::size_t k, const Evicted& e, Tick now) {
    if (!e.dirty) return;
    if (k + 1 < n_levels_) { // into the next level, dirty
        // the directory tells when the next level does not hold it (no tag search then)
        const std::uint16_t* d = holders(e.line);
        if (d && (*d & bit(cpu, k + 1)) != 0 && use_hint_ && k + 1 >= n_private_) { // held there, in its hinted way
            level(cpu, k + 1).mark_dirty_at(e.line, hint(e.line, k + 1));
            return;
        }
        if ((!d || (*d & bit(cpu, k + 1)) != 0) && level(cpu, k + 1).mark_dirty(e.line)) return;
        if (auto ev = fill_at(cpu, k + 1, e.line, true)) place_evicted(cpu, k + 1, *ev, now);
        return;
    }
    ++stats_.writebacks; // out of the last level: to DRAM
    channel(now, cfg_.line);
}

void MemorySystem::fill_from(int cpu, std::size_t k, Line l, bool dirty, Tick now) {
    // levels k-1 .. 0 (each missed), the farthest first, so that an eviction from a nearer level
    // finds its line's copy below it
    for (std::size_t j = k; j-- > 0;)
        if (auto ev = fill_at(cpu, j, l, dirty && j == 0)) place_evicted(cpu, j, *ev, now);
}

// The first line of [l, end) (all inside the directory `dir`) that some cache holds, or end.
// Wide: eight entries a test first, for searches over long stretches that no cache holds (a
// frame's lines after its DMA); else four first (skip_unheld's steps from one held line to the
// next, whose gaps are mostly short: a coherent device write's snoops, a clean).
template <bool Wide = true>
static inline Line next_held(const std::uint16_t* dir, Line l, Line end) {
    if constexpr (Wide)
        for (std::uint64_t w[2]; l + 8 <= end; l += 8) { // eight holder entries as two words, one test
            std::memcpy(w, &dir[l], sizeof w);
            if ((w[0] | w[1]) != 0) break;
        }
    for (std::uint64_t w = 0; l + 4 <= end; l += 4) { // four as one word
        std::memcpy(&w, &dir[l], sizeof w);
        if (w != 0) break;
    }
    while (l < end && dir[l] == 0) ++l;
    return l;
}

Line MemorySystem::skip_unheld(Line l, Line last) const {
    if (!use_dir_) return l;
    return next_held<false>(dir_.data(), l, std::min<Line>(last + 1, dir_.size()));
}

inline std::uint16_t MemorySystem::drop_bits(Line l, std::uint16_t m) {
    const std::uint16_t dropped = m;
    for (; m; m = static_cast<std::uint16_t>(m & (m - 1))) {
        const std::size_t id = static_cast<std::size_t>(std::countr_zero(m));
        if (use_hint_ && id >= first_shared_id_) // a shared level: the line's way is hinted
            cache_by_id(id).invalidate_at(l, hint_by_id(l, id));
        else
            cache_by_id(id).invalidate(l);
    }
    return dropped;
}

void MemorySystem::drop_everywhere(Line l, int keep_cpu) {
    if (std::uint16_t* d = holders(l)) {
        std::uint16_t m = *d;
        if (keep_cpu >= 0) m = static_cast<std::uint16_t>(m & private_bits_ & ~own_bits(keep_cpu));
        *d = static_cast<std::uint16_t>(*d & ~drop_bits(l, m));
        return;
    }
    for (int cpu = 0; cpu < cpus_; ++cpu) {
        if (cpu == keep_cpu || !touched(cpu)) continue;
        for (std::size_t k = 0; k < n_private_; ++k) level(cpu, k).invalidate(l);
    }
    if (keep_cpu < 0)
        for (auto& c : shared_) c.invalidate(l);
}

bool MemorySystem::stride_covered(int cpu, std::uint8_t site, Line l) {
    if (strides_.empty() || site == 0 || site >= STRIDE_SITES) return false;
    StrideEntry& e = strides_[static_cast<std::size_t>(cpu) * STRIDE_SITES + site];
    const std::int64_t d = static_cast<std::int64_t>(l - e.last);
    bool covered = false;
    if (e.valid && e.stride != 0 && e.hits >= cfg_.stride_trigger && d % e.stride == 0) {
        const std::int64_t k = d / e.stride;
        covered = k >= 1 && k <= static_cast<std::int64_t>(cfg_.stride_degree);
    }
    if (e.valid && d == e.stride) ++e.hits;
    else if (e.valid) e = StrideEntry{l, d, 1, true};
    else e = StrideEntry{l, 0, 0, true};
    e.last = l;
    return covered;
}

// (inline in every caller: a call's saves and restores cost more than its steps; docs/performance.md,
// thirty-first session, ir31f)
[[gnu::always_inline]] inline Tick MemorySystem::demand_miss(Tick t) {
    ++stats_.dram_demand_lines;
    // (channel(begin, line)'s steps: begin is past busy_until_ and outside a refresh already)
    // (inflight_ has cfg_.fill_buffers entries: the constructor's, never resized)
    if (cfg_.fill_buffers <= 1) { // serialised: the core waits for each miss before the next
        const Tick begin = after_refresh_here(std::max(t, busy_until_));
        busy_until_ = begin + line_xfer_;
        line_ready_ = begin + dram_stall_;
        return line_ready_;
    }
    if (n_inflight_ == cfg_.fill_buffers) { // every fill buffer busy: wait for the earliest
        const auto it = std::min_element(inflight_.begin(), inflight_.end());
        t = std::max(t, *it);
        *it = inflight_[--n_inflight_];
    }
    if (n_inflight_ > 0) ++stats_.overlapped_misses;
    const Tick begin = after_refresh_here(std::max(t, busy_until_));
    busy_until_ = begin + line_xfer_;
    line_ready_ = begin + dram_stall_;
    inflight_[n_inflight_++] = line_ready_;
    return t;
}

Cycles MemorySystem::finish(Tick now, Tick t) {
    for (std::size_t i = 0; i < n_inflight_; ++i) t = std::max(t, inflight_[i]);
    n_inflight_ = 0;
    return stall_cycles(t - now);
}

Cycles MemorySystem::stall_cycles(Tick stall) {
    const Cycles c = stall <= max_fast_stall_ // rounded up to whole cycles; 64-bit when it cannot overflow
                         ? static_cast<Cycles>((stall * clock_.hz() + engine::PS_PER_S - 1) / engine::PS_PER_S)
                         : static_cast<Cycles>((static_cast<unsigned __int128>(stall) * clock_.hz() + engine::PS_PER_S - 1) /
                                               engine::PS_PER_S);
    stats_.stall_cycles += c;
    return c;
}

[[gnu::always_inline]] inline Tick MemorySystem::from_dram(int cpu, Tick t, bool write, Line l, bool stride_line,
                                                                    Stream** trained) {
    if (write) {
        ++stats_.dram_write_allocates;
        return line_ready_ = std::max(channel(t, cfg_.line), t + core_line_xfer_);
    }
    if (streamed(cpu, l, trained)) { // trains the stream prefetcher even where the stride one covers the line
        ++stats_.dram_stream_lines;
        return line_ready_ = std::max(channel(t, cfg_.line), t + core_line_xfer_);
    }
    if (stride_line) {
        ++stats_.dram_stride_lines;
        return line_ready_ = std::max(channel(t, cfg_.line), t + core_line_xfer_);
    }
    return demand_miss(t);
}

// The runs' fills (read_unheld_n, held_run_n) for the Cortex-A9's shape: two levels, a private
// L1D and a shared L2 (the PL310) with way hints, both random with a power of two sets and ways,
// at most 64. Their line loop is then a second instance (`fast`) where which level is hinted, the
// hint's index and a held line's level (the L2) are known at compile time, and whose fills are
// Cache::View::fill's steps for that case alone (the set the line's low bits, the lowest empty
// way, else the LFSR's draw masked to a way) without the general fill's tests. The same ways,
// the same draws in the same order.
struct RandomPow2 {
    static bool of(const Cache::View& v) {
        return v.repl == Replacement::RANDOM && v.ways <= 64 && (v.sets & (v.sets - 1)) == 0 &&
               (v.ways & (v.ways - 1)) == 0; // then mask = sets - 1, way_mask = ways - 1 (Cache's constructor)
    }
};
// Cache::mark_dirty through a view (a level without way hints): the tag search, inline.
[[gnu::always_inline]] static inline bool mark_dirty_in(Cache::View& v, Line l) {
    const std::uint32_t set = v.set_of(l);
    for (std::uint32_t w = 0; w < v.ways; ++w)
        if (const std::size_t i = v.slot(set, w); v.tag[i] == l + 1) {
            v.dirty[i] = 1;
            return true;
        }
    return false;
}
// A level of that shape in the fast loops: its arrays, set mask, ways and LFSR copied into a small
// struct of their own, whose LFSR goes back to the view around the steps that use the members
// (the views, 88 bytes each, stay in memory, and their fields were reloaded after every byte store
// to the dirty flags). Its fill and dirty mark are Cache::View's for that case. W: the level's ways
// where the loop knows them at compile time (the Cortex-A9's 4-way L1D and 16-way PL310), else 0
// (read from the view). WayMajor: the level's layout (Layout::WAY_MAJOR, a shared level's; else
// SET_MAJOR, a private one's), the sets being mask + 1.
template <std::uint32_t W, bool WayMajor = false>
struct FastLevel {
    Tag* tag;
    std::uint8_t* dirty;
    std::uint64_t* empty;
    Line mask;
    std::uint32_t ways_, way_mask_, lfsr;

    static FastLevel of(const Cache::View& v) { return {v.tag, v.dirty, v.empty, v.mask, v.ways, v.way_mask, v.lfsr}; }
    static constexpr bool fixed = W != 0;
    // Cache::slot
    [[gnu::always_inline]] std::size_t slot(std::size_t set, std::size_t w) const {
        return WayMajor ? w * (mask + 1) + set : set * (fixed ? W : ways_) + w;
    }
    [[gnu::always_inline]] bool fill(Line l, bool d, Line& victim, bool& victim_dirty, std::uint32_t& way) {
        const std::uint32_t way_mask = fixed ? W - 1 : way_mask_;
        const std::uint32_t set = static_cast<std::uint32_t>(l & mask);
        std::uint64_t& e = empty[set];
        const bool displaced = e == 0;
        std::size_t w, i;
        if (!displaced) { // the lowest empty way
            w = lowest_set(e);
            i = slot(set, w);
            e &= e - 1;
        } else { // Cache::replace's LFSR
            lfsr = lfsr_next(lfsr);
            w = lfsr & way_mask;
            i = slot(set, w);
            victim = Line{tag[i]} - 1;
            victim_dirty = dirty[i] != 0;
        }
        tag[i] = static_cast<Tag>(l + 1);
        dirty[i] = d;
        way = static_cast<std::uint32_t>(w);
        return displaced;
    }
    [[gnu::always_inline]] void mark_dirty_at(Line l, std::uint32_t w) { dirty[slot(l & mask, w)] = 1; }
    // Cache::mark_dirty: the tag search of l's set
    [[gnu::always_inline]] void mark_dirty(Line l) {
        const std::size_t set = l & mask;
        for (std::uint32_t w = 0; w < (fixed ? W : ways_); ++w)
            if (const std::size_t i = slot(set, w); tag[i] == l + 1) {
                dirty[i] = 1;
                return;
            }
    }
};

// A FastLevel of a level whose shape is known (M: the sets' mask, W: the ways), its flags and
// empty words at the block layout's offsets from its tags: the fields a fill reads as constants.
template <Line M, std::uint32_t W, bool WayMajor>
[[gnu::always_inline]] inline FastLevel<W, WayMajor> a9_level(Tag* tag, std::uint32_t lfsr) {
    return {tag, Cache::dirty_from<M + 1, W>(tag), Cache::empty_from<M + 1, W>(tag), M, W, W - 1, lfsr};
}

// (out of line: the Cold copy inline in read() gave read() a larger frame on every machine)
template <bool A9, bool Cold>
[[gnu::noinline]]
Tick MemorySystem::access_run(int cpu, Tick t, bool write, Line first, Line last, bool stride_ahead) {
    static_assert(A9 || !Cold);
    // Cold: the caller found [first, last] a read of at most two lines, each held nowhere. No step
    // below changes that before the line's turn (a fill's victim is a held line), so each line takes
    // the h == 0 steps (a run needs three lines): from DRAM, missing both levels, filled clean.
    if constexpr (Cold) write = false;
    const std::size_t nlev = A9 ? 2 : n_levels_;
    const std::size_t base = static_cast<std::size_t>(cpu) * nlev;
    // this CPU's levels, nearest first, and their bits (the Cortex-A9's two copied: locals, which
    // no store to the caches' arrays can alias, so they are not read again after each)
    Cache* const a9_lv[2] = {A9 ? lv_[base] : nullptr, A9 ? lv_[base + 1] : nullptr};
    const std::uint16_t a9_bits[2] = {A9 ? bits_[base] : std::uint16_t{0}, A9 ? bits_[base + 1] : std::uint16_t{0}};
    Cache* const* const lv = A9 ? a9_lv : &lv_[base];
    const std::uint16_t* const bits = A9 ? a9_bits : &bits_[base];
    std::uint16_t* const dir = dir_.data(); // every line of [first, last] has its entry
    const Line dir_lines = dir_.size();
    // The other CPUs' private caches' bits, where a line no level of this CPU holds is looked for.
    // The Cortex-A9's shape (one private level, whose bit is the CPU's own): read where used (rare
    // there) rather than kept over the loop; else kept (own_bits' shifts and multiply).
    const std::uint16_t other_bits = A9 ? 0 : static_cast<std::uint16_t>(private_bits_ & ~own_bits(cpu));
    auto peers = [&]() __attribute__((always_inline)) {
        return A9 ? static_cast<std::uint16_t>(private_bits_ & ~bits[0]) : other_bits;
    };
    std::uint64_t unheld = 0; // lines no cache held: each a miss in every level
    for (Line l = first; l <= last; ++l) {
        const std::uint16_t h = Cold ? 0 : dir[l];
        std::size_t found = nlev;
        bool peer_dirty = false;
        if (h != 0 && (h & private_bits_) == 0 && (A9 || use_held_runs_)) { // held by shared levels alone: a run
            Line next = l + 1;
            switch (nlev) {
            case 2: t = held_run_n<2, A9>(cpu, t, write, l, last, next); break;
            case 3: t = held_run_n<3>(cpu, t, write, l, last, next); break;
            case 4: t = held_run_n<4>(cpu, t, write, l, last, next); break;
            }
            l = next - 1;
            continue;
        }
        // a run of three lines or more that no cache holds: read_unheld's steps (a shorter one, as
        // a received frame's headers read before its copy, costs less by the general steps below)
        if (!Cold && h == 0 && !write && l + 2 <= last && dir[l + 1] == 0 && dir[l + 2] == 0) {
            const Line b = next_held(dir, l + 3, last + 1) - 1;
            unheld += b - l + 1;
            t = A9 ? read_unheld_n<2, true>(cpu, t, l, b, stride_ahead && l == first)
                   : read_unheld(cpu, t, l, b, stride_ahead && l == first);
            l = b;
            continue;
        }
        if (h == 0) {
            ++unheld;
            t = from_dram(cpu, t, write, l, stride_ahead && l == first);
            consume_line(line_ready_);
        } else {
            if constexpr (A9) { // random levels: the directory alone answers presence
                found = (h & bits[0]) ? 0 : (h & bits[1]) ? 1 : 2;
                for (std::size_t k = 0; k < found; ++k) ++stats_.levels[k].misses;
            } else
                for (std::size_t k = 0; k < nlev; ++k) {
                    // the directory answers presence; a lookup is needed only to reorder an LRU set,
                    // and in a shared level the hint gives the way
                    if ((h & bits[k]) && (!lv[k]->hits_reorder() || (k >= hint_from_ ? (lv[k]->touch_at(l, hint(l, k)), true)
                                                                                      : lv[k]->lookup(l)))) {
                        found = k;
                        break;
                    }
                    ++stats_.levels[k].misses;
                }
            if (found < nlev) {
                ++stats_.levels[found].hits;
                t += hit_ticks_[found];
                consume_line(t);
            } else if (std::uint16_t m = static_cast<std::uint16_t>(h & peers())) {
                for (; m; m = static_cast<std::uint16_t>(m & (m - 1)))
                    peer_dirty = peer_dirty || private_[static_cast<std::size_t>(std::countr_zero(m))].dirty(l);
                ++stats_.peer_hits;
                t += peer_ticks_;
                consume_line(t);
            } else {
                t = from_dram(cpu, t, write, l, stride_ahead && l == first);
                consume_line(line_ready_);
            }
        }
        // fill_from: the levels that missed, the farthest first, the directory kept as fill_at does
        const bool dirty = write || peer_dirty;
        // one level's fill; `shared`: a level with way hints (j >= hint_from_), whose fill sets the hint
        auto fill_level = [&](std::size_t j, auto shared) {
            Evicted ev;
            std::uint32_t w;
            const bool displaced = lv[j]->fill(l, dirty && j == 0, ev, w);
            dir[l] = static_cast<std::uint16_t>(dir[l] | bits[j]);
            if constexpr (shared) hint(l, j) = static_cast<std::uint16_t>(w);
            if (!displaced) return;
            if (ev.line < dir_lines) dir[ev.line] = static_cast<std::uint16_t>(dir[ev.line] & ~bits[j]);
            if (!ev.dirty) return;
            // a dirty victim usually finds its line in the next level: marked dirty there, inline
            // (place_evicted's first step, the directory saying the line is there; in a shared
            // level, in the way its hint gives)
            if (j + 1 < nlev && ev.line < dir_lines && (dir[ev.line] & bits[j + 1]) != 0) {
                if (shared || j + 1 >= hint_from_) {
                    lv[j + 1]->mark_dirty_at(ev.line, hint(ev.line, j + 1));
                    return;
                }
                if (lv[j + 1]->mark_dirty(ev.line)) return;
            }
            place_evicted(cpu, j, ev, t);
        };
        if constexpr (A9) { // fill_level's steps for the L2 that missed, then the L1 (found >= 1)
            std::uint16_t* const hints = way_.data(); // hint(x, 1): one shared level, one private
            if (found == 2) {
                FastLevel<16, true> f = a9_level<2047, 16, true>(lv[1]->view().tag, lv[1]->view().lfsr);
                Line victim;
                bool victim_dirty = false;
                std::uint32_t w;
                const bool displaced = f.fill(l, false, victim, victim_dirty, w);
                dir[l] = static_cast<std::uint16_t>(dir[l] | bits[1]);
                hints[l] = static_cast<std::uint16_t>(w);
                if (displaced) {
                    lv[1]->commit_lfsr(f.lfsr);
                    if (victim < dir_lines) dir[victim] = static_cast<std::uint16_t>(dir[victim] & ~bits[1]);
                    if (victim_dirty) place_evicted(cpu, 1, Evicted{victim, true}, t);
                }
            }
            if (found >= 1) {
                FastLevel<4> f = a9_level<255, 4, false>(lv[0]->view().tag, lv[0]->view().lfsr);
                Line victim;
                bool victim_dirty = false;
                std::uint32_t w;
                const bool displaced = f.fill(l, dirty, victim, victim_dirty, w);
                dir[l] = static_cast<std::uint16_t>(dir[l] | bits[0]);
                if (displaced) {
                    lv[0]->commit_lfsr(f.lfsr);
                    if (victim < dir_lines) dir[victim] = static_cast<std::uint16_t>(dir[victim] & ~bits[0]);
                    if (victim_dirty) {
                        if (victim < dir_lines && (dir[victim] & bits[1]) != 0)
                            a9_level<2047, 16, true>(lv[1]->view().tag, 0).mark_dirty_at(victim, hints[victim]);
                        else
                            place_evicted(cpu, 0, Evicted{victim, true}, t);
                    }
                }
            }
        } else {
            std::size_t j = found;
            for (; j > hint_from_; --j) fill_level(j - 1, std::true_type{}); // the hinted levels that missed
            for (; j > 0; --j) fill_level(j - 1, std::false_type{});
        }
        if (write) {
            if (found == 0) { // (a fill above already made it dirty)
                if constexpr (A9) a9_level<255, 4, false>(lv[0]->view().tag, 0).mark_dirty(l);
                else lv[0]->mark_dirty(l);
            }
            if ((dir[l] & peers()) != 0) drop_everywhere(l, cpu); // another CPU's private cache holds it
        } else if (peer_dirty) {
            drop_everywhere(l, cpu); // the owner's dirty data moves with the line (filled dirty above)
        }
    }
    if (unheld != 0)
        for (std::size_t k = 0; k < nlev; ++k) stats_.levels[k].misses += unheld;
    return t;
}

// The LFSR's state before lfsr_next(x) (its inverse: a draw whose result has bit 15 set shifted
// out a 1 and took the taps in), for a fill loop that takes back the draw of a line it stops at.
[[gnu::always_inline]] static inline std::uint32_t lfsr_back(std::uint32_t x) {
    return (x & 0x8000u) ? ((x ^ 0xB400u) << 1) | 1u : x << 1;
}
// Whether no L1 set that lines l .. e map to (`mask`: the sets' mask) has an empty way: fast_fills
// then takes its victim step at every line without the empty-way test (its fills only take empty
// ways, never make one). Reads each such set's empty word once (all of them when the lines cover
// every set).
[[gnu::always_inline]] static inline bool sets_full(const std::uint64_t* const empty, const Line mask, const Line l,
                                                    const Line e) {
    auto any_in = [empty](Line s, const Line end) __attribute__((always_inline)) { // sets s .. end
        std::uint64_t any = 0;
#if defined(__SSE2__)
        if (s + 3 <= end) { // four words a step, two a register
            __m128i a = _mm_setzero_si128(), b = _mm_setzero_si128();
            for (; s + 3 <= end; s += 4) {
                a = _mm_or_si128(a, _mm_loadu_si128(reinterpret_cast<const __m128i*>(empty + s)));
                b = _mm_or_si128(b, _mm_loadu_si128(reinterpret_cast<const __m128i*>(empty + s + 2)));
            }
            a = _mm_or_si128(a, b);
            any = static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm_or_si128(a, _mm_unpackhi_epi64(a, a))));
        }
#endif
        for (; s <= end; ++s) any |= empty[s];
        return any;
    };
    if (e - l >= mask) return any_in(0, mask) == 0;
    const Line s = l & mask, end = e & mask;
    return (s <= end ? any_in(s, end) : any_in(s, mask) | any_in(0, end)) == 0;
}
// held_run_n's fast copy's fills of lines l .. e, out of line and with no call in it, so that its
// state stays in registers (in the line loop, whose rare steps call out, about ten values a line
// were reloaded from the stack). The L2 alone holds each line (the loop stops at the first line
// whose holders are not `bit1` alone), which goes into the L1, dirty when `dirty0`: the same
// steps in the same order as the line loop's (FastLevel::fill, the victim's directory bit, a
// dirty victim marked dirty in the L2 in its hinted way), for every line none of whose steps
// needs the members. A line whose dirty L1 victim the L2 does not hold (place_evicted) stops the
// loop before anything of it is done. Returns the first line not filled (e + 1 when all were).
// M0, M1: the sets' masks where they are the i.MX6's 255 and 2,047 (constants), else 0. Dirty0:
// `dirty0`, a constant where the masks are (a copy for a store's lines and one for a read's).
// The loop in two copies: without the L1's empty-way test when no set of lines l .. e has an
// empty way (sets_full), with it otherwise.
// What a fill loop of the i.MX6's shape leaves: the first line not filled, and the L1's LFSR after
// the draws before it (two words: returned in registers).
struct Filled {
    Line next;
    std::uint32_t lfsr0;
};
// fast_fills' loop where the shape is the i.MX6's and every L1 set it fills is full (every line
// draws): the draws from the LFSR's stream (lfsr.h), 48 a block (cold_fills'). In a function
// whose arguments are in registers where they fit and that has the loop's values alone to keep
// (fast_fills_a9; fast_fills' other copies gave GCC a larger set of values to allocate). `bits`:
// bit0 | bit1 << 16.
template <bool Dirty0>
[[gnu::always_inline]] static inline Filled full_fills_a9(Tag* const tag0, Tag* const tag1, std::uint16_t* const dir,
                                              const std::uint16_t* const hints, Line l, const Line e,
                                              const std::uint32_t lfsr0, const std::uint32_t bits,
                                              const Line dir_lines) {
    constexpr Line mask0 = 255, mask1 = 2047;
    std::uint8_t* const dirty_0 = Cache::dirty_from<mask0 + 1, 4>(tag0);
    std::uint8_t* const dirty_1 = Cache::dirty_from<mask1 + 1, 16>(tag1);
    const auto bit0 = static_cast<std::uint16_t>(bits), bit1 = static_cast<std::uint16_t>(bits >> 16);
    std::uint64_t s = lfsr_stream(lfsr0), y = s;
    Line first = l;
    for (;;) {
        const Line stop = std::min(e, first + 47);
        for (; l <= stop && dir[l] == bit1; ++l) {
            const std::size_t base0 = static_cast<std::size_t>(l & mask0) * 4;
            y >>= 1;
            const std::size_t i0 = base0 + (y & 3u);
            const Line v0 = Line{tag0[i0]} - 1; // (its flag, dirty_0[i0], read at each use: no register held)
            if (v0 < dir_lines) [[likely]] {
                const std::uint32_t h = dir[v0];
                if ((h & bit1) == 0) [[unlikely]] // a victim the L2 does not hold: a dirty one stops the loop
                    if (dirty_0[i0] != 0) goto out;
                dir[v0] = static_cast<std::uint16_t>(h & ~bit0);
                dirty_1[std::size_t{hints[v0]} * (mask1 + 1) + (v0 & mask1)] |= dirty_0[i0]; // (0 or 1)
            } else if (dirty_0[i0] != 0) [[unlikely]] {
                goto out;
            }
            tag0[i0] = static_cast<Tag>(l + 1);
            dirty_0[i0] = Dirty0;
            dir[l] = static_cast<std::uint16_t>(bit0 | bit1);
        }
        if (l <= stop || l > e) break;
        s = y = lfsr_stream(lfsr_state(y)); // the block's 48 draws taken
        first = l;
    }
out: // the block's draws before line l taken (a stop line's draw is not)
    return {l, lfsr_state(s >> (l - first))};
}
template <std::uint32_t W0, std::uint32_t W1, Line M0, Line M1, int Dirty0 = -1>
[[gnu::noinline]] static Line fast_fills(FastLevel<W0>& f0, const FastLevel<W1, true>& f1, std::uint16_t* const dir,
                                         const std::uint16_t* const hints, const Line dir_lines,
                                         const std::uint16_t bit0, const std::uint16_t bit1, bool dirty0, Line l,
                                         const Line e) {
    if constexpr (Dirty0 >= 0) dirty0 = Dirty0 != 0;
    // where the shape is known, the flags and empty words from the tag bases (the block layout)
    constexpr bool known = M0 && M1 && W0 && W1;
    Tag* const tag0 = f0.tag;
    std::uint8_t* const dirty_0 = known ? Cache::dirty_from<M0 + 1, W0>(tag0) : f0.dirty;
    std::uint64_t* const empty0 = known ? Cache::empty_from<M0 + 1, W0>(tag0) : f0.empty;
    const Line mask0 = M0 ? M0 : f0.mask;
    const std::uint32_t ways0 = W0 ? W0 : f0.ways_, way_mask0 = W0 ? W0 - 1 : f0.way_mask_;
    std::uint32_t lfsr0 = f0.lfsr;
    std::uint8_t* const dirty_1 = known ? Cache::dirty_from<M1 + 1, W1>(f1.tag) : f1.dirty;
    const Line mask1 = M1 ? M1 : f1.mask;
    // the loop, with the empty-way test (`full` false) or without it (every set it fills is full)
    auto fill = [&](auto full) __attribute__((always_inline)) {
        for (; l <= e && dir[l] == bit1; ++l) {
            const std::uint32_t set0 = static_cast<std::uint32_t>(l & mask0);
            const std::size_t base0 = static_cast<std::size_t>(set0) * ways0;
            const std::uint64_t e0 = full ? 0 : empty0[set0];
            if (e0 != 0) { // the lowest empty way
                const std::size_t i0 = base0 + lowest_set(e0);
                empty0[set0] = e0 & (e0 - 1);
                tag0[i0] = static_cast<Tag>(l + 1);
                dirty_0[i0] = dirty0;
            } else { // Cache::replace's LFSR
                lfsr0 = lfsr_next(lfsr0);
                const std::size_t i0 = base0 + (lfsr0 & way_mask0);
                const Line v0 = Line{tag0[i0]} - 1;
                if (v0 < dir_lines) [[likely]] {
                    const std::uint32_t h = dir[v0];
                    if ((h & bit1) == 0) [[unlikely]] // a victim the L2 does not hold: a dirty one stops the loop
                        if (dirty_0[i0] != 0) {
                            lfsr0 = lfsr_back(lfsr0); // (rather than the LFSR kept twice over the loop)
                            break;
                        }
                    dir[v0] = static_cast<std::uint16_t>(h & ~bit0);
                    // a dirty victim marked dirty in the L2 at its hint with no branch on the flag (the
                    // outcome is the data's): a clean victim's or's 0 into the byte there
                    dirty_1[std::size_t{hints[v0]} * (mask1 + 1) + (v0 & mask1)] |= dirty_0[i0]; // (0 or 1)
                } else if (dirty_0[i0] != 0) [[unlikely]] {
                    lfsr0 = lfsr_back(lfsr0);
                    break;
                }
                tag0[i0] = static_cast<Tag>(l + 1);
                dirty_0[i0] = dirty0;
            }
            dir[l] = static_cast<std::uint16_t>(bit0 | bit1);
        }
    };
    if (l <= e && sets_full(empty0, mask0, l, e)) {
        if constexpr (known && W0 == 4) { // every line draws
            const Filled r = full_fills_a9<Dirty0 != 0>(tag0, f1.tag, dir, hints, l, e, lfsr0,
                                                        bit0 | std::uint32_t{bit1} << 16, dir_lines);
            f0.lfsr = r.lfsr0;
            return r.next;
        } else {
            fill(std::true_type{});
        }
    } else {
        fill(std::false_type{});
    }
    f0.lfsr = lfsr0;
    return l;
}
template <std::uint32_t W0, std::uint32_t W1>
[[gnu::always_inline]] inline Line fast_fills_for(FastLevel<W0>& f0, const FastLevel<W1, true>& f1, std::uint16_t* dir,
                                                  const std::uint16_t* hints, Line dir_lines, std::uint16_t bit0,
                                                  std::uint16_t bit1, bool dirty0, Line l, Line e) {
    if constexpr (W0 == 4 && W1 == 16)
        if (f0.mask == 255 && f1.mask == 2047)
            return dirty0 ? fast_fills<W0, W1, 255, 2047, 1>(f0, f1, dir, hints, dir_lines, bit0, bit1, true, l, e)
                          : fast_fills<W0, W1, 255, 2047, 0>(f0, f1, dir, hints, dir_lines, bit0, bit1, false, l, e);
    return fast_fills<W0, W1, 0, 0>(f0, f1, dir, hints, dir_lines, bit0, bit1, dirty0, l, e);
}
// held_run_n's fills on the i.MX6's shape (fast_fills<4, 16, 255, 2047, Dirty0>'s), its levels by
// their tags and the L1's LFSR in registers (no FastLevel stored for the call): the full-set loop
// here, the copy with the L1's empty-way test by fast_fills. `bits`: bit0 | bit1 << 16.
template <bool Dirty0>
[[gnu::noinline]] static Filled fast_fills_a9(Tag* const tag0, Tag* const tag1, std::uint16_t* const dir,
                                              const std::uint16_t* const hints, const Line l, const Line e,
                                              const std::uint32_t lfsr0, const std::uint32_t bits,
                                              const Line dir_lines) {
    if (l <= e && sets_full(Cache::empty_from<256, 4>(tag0), 255, l, e))
        return full_fills_a9<Dirty0>(tag0, tag1, dir, hints, l, e, lfsr0, bits, dir_lines);
    FastLevel<4> f0 = a9_level<255, 4, false>(tag0, lfsr0);
    const FastLevel<16, true> f1 = a9_level<2047, 16, true>(tag1, 0);
    const Line next = fast_fills<4, 16, 255, 2047, Dirty0>(f0, f1, dir, hints, dir_lines, static_cast<std::uint16_t>(bits),
                                                         static_cast<std::uint16_t>(bits >> 16), Dirty0, l, e);
    return {next, f0.lfsr};
}
// cold_fills' L2 fill of l taken back (the way its hint gives emptied again, its tag 0 as an empty
// way's), out of line: the loop keeps none of that fill's values for it.
[[gnu::noinline, gnu::cold]] static void cold_fill_back(std::uint64_t* empty1, Tag* tag1, Line mask1,
                                                        const std::uint16_t* hints, Line l) {
    const std::size_t set1 = static_cast<std::size_t>(l & mask1), w1 = hints[l];
    empty1[set1] |= std::uint64_t{1} << w1;
    tag1[w1 * (mask1 + 1) + set1] = 0;
}
// read_unheld_n's fast copy's fills of lines l .. e of a steady stretch (or of the stream step's
// line and the stretch after it), with no call in it (as fast_fills): each line, held nowhere,
// goes into the L2's lowest empty way (its way hint kept) and then into the L1, as the line loop's
// steps do, in the same order (the L2's fill, then the L1's: FastLevel::fill, the victim's
// directory bit, a dirty victim marked dirty in the L2 in its hinted way). A line whose L2 set has
// no empty way, or whose dirty L1 victim the L2 does not hold (place_evicted), stops the loop
// before anything of it is done (the L1's draw and the L2's fill taken back; only l's way hint
// may differ, and a hint is read only for a line its level holds). The levels by their arrays,
// masks and the L1's LFSR (constants where the entry below knows them); the two entries below are
// out of line. E1Off: where not 0, empty1 is tag1 + E1Off bytes (the block layout's), and its
// words are addressed from tag1 (one address: GCC otherwise held tag1 + E1Off in a register of
// its own over the loop, and spilled another value).
template <bool Full, std::size_t E1Off = 0>
[[gnu::always_inline]] static inline Filled cold_fills_body(Tag* const tag0, std::uint8_t* const dirty_0,
                                                              std::uint64_t* const empty0, const Line mask0,
                                                              const std::uint32_t lfsr0, Tag* const tag1,
                                                              std::uint8_t* const dirty_1, std::uint64_t* const empty1,
                                                              const Line mask1, std::uint16_t* const dir,
                                                              std::uint16_t* const hints, const Line dir_lines,
                                                              const std::uint16_t bit0, const std::uint16_t bit1, Line l,
                                                              const Line e) {
    const auto both = static_cast<std::uint16_t>(bit0 | bit1);
    // the L1's draws from the LFSR's stream (lfsr.h), 48 a block: s the stream of the block's first
    // state, y = s >> the block's draws so far; the line `first` + k - 1 takes the block's k-th draw
    // (first moves up at a line that takes an empty way); lines up to `stop` draw within the block
    std::uint64_t s = lfsr_stream(lfsr0), y = s;
    Line first = l;
    for (;;) {
        Line stop = std::min(e, first + 47);
        for (; l <= stop; ++l) {
            // the L2's fill first (its values' lives end before the L1's step: fewer registers held
            // over it); taken back below if the L1's step stops the loop
            const std::size_t set1 = static_cast<std::size_t>(l & mask1);
            std::uint64_t& e1_word = E1Off ? *reinterpret_cast<std::uint64_t*>(reinterpret_cast<char*>(tag1) +
                                                                               (set1 * sizeof(std::uint64_t) + E1Off))
                                           : empty1[set1];
            const std::uint64_t e1 = e1_word;
            if (e1 == 0) goto out; // the L2's fill would evict
            const std::uint64_t w1 = lowest_set(e1);
            e1_word = e1 & (e1 - 1);
            tag1[w1 * (mask1 + 1) + set1] = static_cast<Tag>(l + 1);
            assert(dirty_1[w1 * (mask1 + 1) + set1] == 0);
            hints[l] = static_cast<std::uint16_t>(w1);
            const std::size_t set0 = static_cast<std::size_t>(l & mask0);
            const std::uint64_t e0 = Full ? 0 : empty0[set0];
            std::size_t i0;
            if (e0 != 0) [[unlikely]] { // the L1's lowest empty way
                i0 = set0 * 4 + lowest_set(e0);
                empty0[set0] = e0 & (e0 - 1);
                assert(dirty_0[i0] == 0); // (as every step that empties a way clears its flag)
                dir[l] = both;
                tag0[i0] = static_cast<Tag>(l + 1);
                ++first; // (no draw)
                stop = std::min(e, first + 47);
                continue;
            } else { // Cache::replace's LFSR
                y >>= 1;
                i0 = set0 * 4 + (y & 3u);
                const Line v0 = Line{tag0[i0]} - 1; // (its flag, dirty_0[i0], read at each use: no register held)
                if (v0 < dir_lines) [[likely]] {
                    const std::uint32_t h = dir[v0];
                    if ((h & bit1) == 0) [[unlikely]] // a victim the L2 does not hold: a dirty one stops the loop
                        if (dirty_0[i0] != 0) {
                            cold_fill_back(empty1, tag1, mask1, hints, l);
                            goto out;
                        }
                    dir[v0] = static_cast<std::uint16_t>(h & ~bit0);
                    // a dirty victim marked dirty in the L2 at its hint with no branch on the flag (the
                    // outcome is the data's): a clean victim's or's 0 into the byte there
                    dirty_1[std::size_t{hints[v0]} * (mask1 + 1) + (v0 & mask1)] |= dirty_0[i0]; // (0 or 1)
                } else if (dirty_0[i0] != 0) [[unlikely]] {
                    cold_fill_back(empty1, tag1, mask1, hints, l);
                    goto out;
                }
                dirty_0[i0] = 0; // (l goes in clean)
            }
            // (the flags of the ways l takes are 0 now: an empty way's is, as every step that empties a
            // way clears it, and a victim's was cleared above)
            assert(dirty_0[i0] == 0);
            dir[l] = both;
            tag0[i0] = static_cast<Tag>(l + 1);
        }
        if (l > e) break;
        s = y = lfsr_stream(lfsr_state(y)); // the block's 48 draws taken
        first = l;
    }
out: // the block's draws before line l taken (a stop line's draw is not)
    return {l, lfsr_state(s >> (l - first))};
}
// The i.MX6's shape: the levels by their tags alone, and the L1's LFSR, in registers (no FastLevel
// stored for the call: read_unheld_n's per-call set-up); `bits`: bit0 | bit1 << 16. Full: no L1
// set of the lines has an empty way (sets_full), so none has one at its line's turn (the L1's
// fills take the victims' ways, and the L2's change nothing in the L1): the copy without the test.
template <bool Full>
[[gnu::always_inline]] inline Filled cold_fills_a9_body(Tag* const tag0, Tag* const tag1, std::uint16_t* const dir,
                                                        std::uint16_t* const hints, const Line l, const Line e,
                                                        const std::uint32_t lfsr0, const std::uint32_t bits,
                                                        const Line dir_lines) {
    constexpr std::size_t e1_off = Cache::empty_offset(2048, 16);
    static_assert(e1_off != 0);
    return cold_fills_body<Full, e1_off>(tag0, Cache::dirty_from<256, 4>(tag0), Cache::empty_from<256, 4>(tag0), 255, lfsr0,
                                 tag1, Cache::dirty_from<2048, 16>(tag1), Cache::empty_from<2048, 16>(tag1), 2047, dir,
                                 hints, dir_lines, static_cast<std::uint16_t>(bits),
                                 static_cast<std::uint16_t>(bits >> 16), l, e);
}
[[gnu::noinline]] static Filled cold_fills_a9_some_empty(Tag* const tag0, Tag* const tag1, std::uint16_t* const dir,
                                                         std::uint16_t* const hints, const Line l, const Line e,
                                                         const std::uint32_t lfsr0, const std::uint32_t bits,
                                                         const Line dir_lines) {
    return cold_fills_a9_body<false>(tag0, tag1, dir, hints, l, e, lfsr0, bits, dir_lines);
}
[[gnu::noinline]] static Filled cold_fills_a9(Tag* const tag0, Tag* const tag1, std::uint16_t* const dir,
                                              std::uint16_t* const hints, const Line l, const Line e,
                                              const std::uint32_t lfsr0, const std::uint32_t bits,
                                              const Line dir_lines) {
    if (!sets_full(Cache::empty_from<256, 4>(tag0), 255, l, e))
        return cold_fills_a9_some_empty(tag0, tag1, dir, hints, l, e, lfsr0, bits, dir_lines);
    return cold_fills_a9_body<true>(tag0, tag1, dir, hints, l, e, lfsr0, bits, dir_lines);
}
// The other shapes of 4 and 16 ways: the levels' FastLevels; f0's LFSR left as the draws leave it.
// Returns the first line not filled (e + 1 when all were).
[[gnu::noinline]] static Line cold_fills(FastLevel<4>& f0, const FastLevel<16, true>& f1, std::uint16_t* const dir,
                                         std::uint16_t* const hints, const Line dir_lines, const std::uint16_t bit0,
                                         const std::uint16_t bit1, const Line l, const Line e) {
    const Filled r = cold_fills_body<false>(f0.tag, f0.dirty, f0.empty, f0.mask, f0.lfsr, f1.tag, f1.dirty, f1.empty,
                                               f1.mask, dir, hints, dir_lines, bit0, bit1, l, e);
    f0.lfsr = r.lfsr0;
    return r.next;
}
// Which copy of a run's line loop: the general one, or the fast one (RandomPow2) with the L1's
// and the L2's ways W0 and W1 known (both 0: read from the views).
template <bool Fast, std::uint32_t W0, std::uint32_t W1>
struct LoopShape {
    static constexpr bool fast = Fast;
    static constexpr std::uint32_t w0 = W0, w1 = W1;
};
// Runs `lines` (a run's line loop, generic in its LoopShape) in the copy for the hierarchy `v`:
// for two levels, one private and hinted (`hinted_pair`), both RandomPow2, the fast copy, with the
// ways known when they are the Cortex-A9's 4 and 16; the general copy otherwise. (The Cortex-A9's
// shape, a9_fills_, has copies of the runs of its own: read_unheld_n and held_run_n with A9.)
template <std::size_t N, class Lines>
[[gnu::always_inline]] inline void run_loop_for_shape(const Cache::View (&v)[N], bool hinted_pair, Lines& lines) {
    if constexpr (N == 2) {
        if (hinted_pair && RandomPow2::of(v[0]) && RandomPow2::of(v[1])) {
            assert(v[0].way_stride == 1 && v[1].set_stride == 1); // the L1 set-major, the L2 way-major (FastLevel)
            if (v[0].ways == 4 && v[1].ways == 16) lines(LoopShape<true, 4, 16>{});
            else lines(LoopShape<true, 0, 0>{});
            return;
        }
    }
    lines(LoopShape<false, 0, 0>{});
}

Tick MemorySystem::read_unheld(int cpu, Tick t, Line a, Line b, bool stride_first) {
    switch (n_levels_) {
    case 1: return read_unheld_n<1>(cpu, t, a, b, stride_first);
    case 2: return read_unheld_n<2>(cpu, t, a, b, stride_first);
    case 3: return read_unheld_n<3>(cpu, t, a, b, stride_first);
    case 4: return read_unheld_n<4>(cpu, t, a, b, stride_first);
    default: // deeper than any profile: the per-line steps
        for (Line l = a; l <= b; ++l) {
            t = from_dram(cpu, t, false, l, stride_first && l == a);
            consume_line(line_ready_);
            fill_from(cpu, n_levels_, l, false, t);
        }
        return t;
    }
}

template <std::size_t N, bool A9>
Tick MemorySystem::read_unheld_n(int cpu, Tick t, Line a, Line b, bool stride_first) {
    const std::size_t base = static_cast<std::size_t>(cpu) * N;
    Cache* const* const lv = &lv_[base];
    std::uint16_t bits[N];
    bool hinted[N];
    std::uint16_t all_bits = 0;
    for (std::size_t j = 0; j < N; ++j) {
        bits[j] = bits_[base + j];
        all_bits = static_cast<std::uint16_t>(all_bits | bits[j]);
        hinted[j] = j >= hint_from_;
    }
    std::uint16_t* const dir = dir_.data();
    const Line dir_lines = dir_.size();
    // hint(l, j) = way_[l * n_shared_ + (j - n_private_)]
    std::uint16_t* const ways = way_.data();
    const std::size_t n_shared = n_shared_, n_private = n_private_;
    // the general copy's views (taken where that copy is chosen, below; the fast copies keep their
    // levels in FastLevels instead)
    Cache::View v[N];
    // f(integral_constant<0>) .. f(integral_constant<N - 1>): the levels with their index known at
    // compile time, so that the views' fields can live in registers
    auto each_level = [](auto&& f) __attribute__((always_inline)) {
        [&]<std::size_t... J>(std::index_sequence<J...>) __attribute__((always_inline)) {
            (f(std::integral_constant<std::size_t, J>{}), ...);
        }(std::make_index_sequence<N>{});
    };
    // the first line as from_dram has it (a new stream, the stride prefetcher's line, a demand miss)
    Stream* trained = nullptr;
    t = from_dram(cpu, t, false, a, stride_first, &trained);
    Tick ready = line_ready_;
    Tick busy = busy_until_, consumer = consumer_, clear_from = clear_from_, clear_len = clear_len_;
    // the stream the first line trained (its next line a + 1): streamed() finds it first for each
    // later line when no stream before it in the CPU's table expects one of them
    Stream* s = nullptr;
    if (trained && b > a) {
        s = trained;
        for (const Stream* k = &streams_[static_cast<std::size_t>(cpu) * cfg_.prefetch_streams]; k < trained; ++k)
            if (k->run > 0 && k->next > a && k->next <= b) s = nullptr;
    }
    std::uint32_t run = s ? s->run : 0;
    std::uint64_t stream_lines = 0;
    const std::uint32_t trigger = cfg_.prefetch_trigger;
    const Tick xfer = line_xfer_, core = core_line_xfer_, per_line = consume_line_;
    const bool refresh = refresh_period_ != 0;
    // the lines, with the fills of the random power-of-two case (RandomPow2) or the general ones
    auto lines = [&](auto rp) __attribute__((always_inline)) {
        using Shape = decltype(rp);
        constexpr bool fast = Shape::fast;
        // fast: the L1's and the L2's state (random caches: their LFSRs alone change)
        FastLevel<Shape::w0> f0{};
        FastLevel<Shape::w1, true> f1{};
        if constexpr (A9) { // the i.MX6's shape (a9_fills_): the masks, flags and empty words known
            f0 = a9_level<255, 4, false>(lv[0]->view().tag, lv[0]->view().lfsr);
            f1 = a9_level<2047, 16, true>(lv[1]->view().tag, lv[1]->view().lfsr);
        } else if constexpr (fast) {
            f0 = FastLevel<Shape::w0>::of(lv[0]->view());
            f1 = FastLevel<Shape::w1, true>::of(lv[N - 1]->view());
        }
        // the state held here goes back to the members around a step that uses them (a demand
        // miss, a write-back, a fill of a level below a dirty victim), and is read again after it
        auto out = [&]() __attribute__((always_inline)) {
            if constexpr (fast) {
                lv[0]->commit_lfsr(f0.lfsr);
                lv[N - 1]->commit_lfsr(f1.lfsr);
            } else {
                each_level([&](auto J) __attribute__((always_inline)) { lv[J]->commit(v[J]); });
            }
            busy_until_ = busy;
            consumer_ = consumer;
        };
        // (after the first view only a cache's LFSR and clock are read again: Cache::refresh)
        auto in = [&]() __attribute__((always_inline)) {
            if constexpr (fast) {
                f0.lfsr = lv[0]->view().lfsr;
                f1.lfsr = lv[N - 1]->view().lfsr;
            } else {
                each_level([&](auto J) __attribute__((always_inline)) { lv[J]->refresh(v[J]); });
            }
            busy = busy_until_;
            consumer = consumer_;
            clear_from = clear_from_;
            clear_len = clear_len_;
        };
        // Streamed lines in a steady stretch: once a streamed line has left the channel free by its
        // arrival (busy <= t, always so after one) and the next lines' starts stay between the
        // same two refreshes, each next line starts at t, occupies the channel to t + xfer and
        // arrives at t + c (c = max(xfer, core)): lines up to steady_end advance t by c alone,
        // and their run count, stream count, the channel's busy time and the consumer's time are
        // settled (settle()) when the stretch ends or a step that uses the members comes. The
        // consumer, C = max(C, R_k) + p for arrivals R_k = R_1 + (k - 1) c, is after n of them
        // max(C + n p, R_n + p) when c >= p, else max(C + n p, R_1 + n p).
        const Tick c = std::max(xfer, core);
        Line steady_end = 0;    // the stretch's last line (none while steady_end < l)
        std::uint64_t pend = 0; // its lines taken so far, not yet settled
        auto settle = [&]() __attribute__((always_inline)) {
            if (pend == 0) return;
            run += static_cast<std::uint32_t>(pend);
            stream_lines += pend;
            busy = t - c + xfer; // the last line's channel time
            ready = t;
            if (per_line != 0)
                consumer = std::max(consumer + pend * per_line, c >= per_line ? t + per_line : t - (pend - 1) * c + pend * per_line);
            pend = 0;
        };
        if (per_line != 0) consumer = std::max(consumer, ready) + per_line; // consume_line, line a
        // The Cortex-A9's shape (`cold`): cold_fills fills lines ahead of their time steps, from the
        // first line not filled (filled_to) on, up to b or to the first line (`stop`) whose fill needs
        // the members (a full L2 set, a dirty L1 victim the L2 does not hold); that line takes the
        // general fill below at its turn, after its time step, as the loop's order has it. Exact: a
        // fill by cold_fills reads and writes the caches, the directory and the hints alone, a time
        // step the channel, the streams and the consumer alone, so the two commute; the general fill
        // (its write-back at t) runs in the loop's order, and no line after it is filled before it.
        constexpr bool cold = Shape::w0 == 4 && Shape::w1 == 16;
        Line filled_to = a, stop = b + 1;
        for (Line l = a;;) {
            // (l == stop: cold_fills would stop at l again, the state it stopped on being unchanged)
            if constexpr (cold) {
                if (l >= filled_to && l != stop) {
                    if constexpr (A9) {
                        const Filled r = cold_fills_a9(f0.tag, f1.tag, dir, ways, l, b, f0.lfsr,
                                                           bits[0] | std::uint32_t{bits[1]} << 16, dir_lines);
                        f0.lfsr = r.lfsr0;
                        filled_to = stop = r.next;
                    } else {
                        filled_to = stop = cold_fills(f0, f1, dir, ways, dir_lines, bits[0], bits[1], l, b);
                    }
                }
            }
            // fill_from's levels, the farthest first, as access_run's fill_level; `l` was held nowhere
            // and no fill's victim is `l`, so its holders are the levels' bits together
            if (!cold || l >= filled_to) {
                if constexpr (cold) filled_to = l + 1;
                dir[l] = all_bits;
                each_level([&](auto J) __attribute__((always_inline)) {
                    constexpr std::size_t j = N - 1 - decltype(J)::value; // N - 1 .. 0
                    Line victim = 0;
                    bool victim_dirty = false;
                    std::uint32_t w;
                    bool displaced;
                    if constexpr (fast) {
                        if constexpr (j == 0) displaced = f0.fill(l, false, victim, victim_dirty, w);
                        else displaced = f1.fill(l, false, victim, victim_dirty, w);
                    } else {
                        displaced = v[j].fill(l, false, victim, victim_dirty, w);
                    }
                    if (fast ? j == 1 : hinted[j]) ways[fast ? l : l * n_shared + (j - n_private)] = static_cast<std::uint16_t>(w);
                    if (!displaced) return;
                    if (victim < dir_lines) dir[victim] = static_cast<std::uint16_t>(dir[victim] & ~bits[j]);
                    if (!victim_dirty) return;
                    if constexpr (j + 1 < N) {
                        if (victim < dir_lines && (dir[victim] & bits[j + 1]) != 0) {
                            if (fast || hinted[j + 1]) { // (fast: j + 1 is the shared level)
                                if constexpr (fast) f1.mark_dirty_at(victim, ways[victim]);
                                else v[j + 1].mark_dirty_at(victim, ways[victim * n_shared + (j + 1 - n_private)]);
                                return;
                            }
                            if (mark_dirty_in(v[j + 1], victim)) return; // Cache::mark_dirty's tag search
                        }
                    }
                    settle();
                    out();
                    place_evicted(cpu, j, Evicted{victim, true}, t);
                    in();
                    steady_end = l; // the channel's busy time may have moved: the next line by the general step
                });
            }
            if (l == b) break;
            ++l;
            if (l <= steady_end) { // a line of the steady stretch (above)
                if constexpr (cold) { // with the filled lines after it
                    const Line last = l < filled_to ? std::min(steady_end, filled_to - 1) : l;
                    t += (last - l) * c;
                    pend += last - l;
                    l = last;
                }
                t += c;
                ++pend;
                continue;
            }
            settle();
            if (s && ++run > trigger) { // streamed (from_dram): a transfer on the channel, at the core's limit
                ++stream_lines;
                Tick begin = std::max(t, busy);
                if (refresh && begin - clear_from >= clear_len) { // after_refresh beyond the last span it found
                    begin = after_refresh(begin);
                    clear_from = clear_from_;
                    clear_len = clear_len_;
                }
                busy = begin + xfer;
                t = ready = std::max(busy, t + core);
                // busy <= t now: the next lines are a steady stretch while their starts stay inside
                // the refresh-free span t lies in
                Line left = b - l;
                if (refresh) {
                    const Tick into = t - clear_from;
                    left = into >= clear_len ? 0 : std::min<Line>(left, (clear_len - into + c - 1) / c);
                }
                steady_end = l + left;
                if (per_line != 0) consumer = std::max(consumer, ready) + per_line; // consume_line
            } else if (A9 && s) { // the stream not yet followed: a demand miss, which uses the channel
                // alone (the general copies keep out() and in(): without, Zen 4 ESP's three-level copy
                // took 2.0 M Ir more)
                busy_until_ = busy;
                t = demand_miss(t);
                ready = line_ready_;
                busy = busy_until_;
                clear_from = clear_from_;
                clear_len = clear_len_;
                if (per_line != 0) consumer = std::max(consumer, ready) + per_line; // consume_line
            } else { // the stream not yet followed (a demand miss), or the lines' stream unknown
                out();
                t = s ? demand_miss(t) : from_dram(cpu, t, false, l, false);
                ready = line_ready_;
                in();
                if (per_line != 0) consumer = std::max(consumer, ready) + per_line; // consume_line
            }
        }
        settle();
        out();
    };
    if constexpr (A9) { // (run_loop_for_shape's choice for the Cortex-A9, without the views)
        lines(LoopShape<true, 4, 16>{});
    } else {
        each_level([&](auto J) __attribute__((always_inline)) { v[J] = lv[J]->view(); });
        run_loop_for_shape<N>(v, n_private_ == 1 && use_hint_, lines);
    }
    line_ready_ = ready;
    stats_.dram_stream_lines += stream_lines;
    if (s) {
        stream_clock_ += b - a;
        *s = Stream{b + 1, run, stream_clock_};
    }
    return t;
}

template <std::size_t N, bool A9>
Tick MemorySystem::held_run_n(int cpu, Tick t, bool write, Line a, Line last, Line& next) {
    const std::size_t base = static_cast<std::size_t>(cpu) * N;
    Cache* const* const lv = &lv_[base];
    if constexpr (A9) { // (an instance of its own: the general steps below are not taken)
        // The Cortex-A9's: the fast copy's steps below with only what they use kept. Every line is
        // found in the L2 (a hit there, a miss in the L1) and filled into the L1 alone: the L2's
        // LFSR and the DRAM channel do not change but in place_evicted, which reads them itself.
        std::uint16_t* const dir = dir_.data();
        std::uint16_t* const ways = way_.data();
        const Line dir_lines = dir_.size();
        const std::uint16_t bit0 = bits_[base], bit1 = bits_[base + 1];
        const Tick hit_l2 = hit_ticks_[1], per_line = consume_line_;
        FastLevel<4> f0 = a9_level<255, 4, false>(lv[0]->view().tag, lv[0]->view().lfsr);
        FastLevel<16, true> f1 = a9_level<2047, 16, true>(lv[1]->view().tag, lv[1]->view().lfsr);
        Tick consumer = consumer_;
        std::uint64_t pend = 0; // lines since the consumer was settled (read_unheld_n's closed form)
        auto settle = [&]() __attribute__((always_inline)) {
            if (pend != 0 && per_line != 0)
                consumer = std::max(consumer + pend * per_line,
                                    hit_l2 >= per_line ? t + per_line : t - (pend - 1) * hit_l2 + pend * per_line);
            pend = 0;
        };
        Line l = a;
        for (;; ++l) {
            const std::uint32_t bits = bit0 | std::uint32_t{bit1} << 16;
            const Filled r = write ? fast_fills_a9<true>(f0.tag, f1.tag, dir, ways, l, last, f0.lfsr, bits, dir_lines)
                                   : fast_fills_a9<false>(f0.tag, f1.tag, dir, ways, l, last, f0.lfsr, bits, dir_lines);
            f0.lfsr = r.lfsr0;
            const Line done = r.next;
            t += (done - l) * hit_l2;
            pend += done - l;
            l = done;
            if (l > last || dir[l] != bit1) break;
            // fast_fills stopped at l: its L1 victim is dirty and the L2 does not hold it
            t += hit_l2;
            ++pend;
            dir[l] = static_cast<std::uint16_t>(bit0 | bit1);
            Line victim = 0;
            bool victim_dirty = false;
            std::uint32_t w;
            if (!f0.fill(l, write, victim, victim_dirty, w)) continue;
            if (victim < dir_lines) dir[victim] = static_cast<std::uint16_t>(dir[victim] & ~bit0);
            if (!victim_dirty) continue;
            if (victim < dir_lines && (dir[victim] & bit1) != 0) {
                f1.mark_dirty_at(victim, ways[victim]);
                continue;
            }
            settle();
            lv[0]->commit_lfsr(f0.lfsr);
            consumer_ = consumer;
            place_evicted(cpu, 0, Evicted{victim, true}, t);
            f0.lfsr = lv[0]->view().lfsr;
            consumer = consumer_;
        }
        settle();
        lv[0]->commit_lfsr(f0.lfsr);
        consumer_ = consumer;
        next = l;
        stats_.levels[1].hits += l - a;
        stats_.levels[0].misses += l - a;
        return t;
    }
    std::uint16_t bits[N], below[N + 1]; // below[k]: the bits of levels 0 .. k - 1
    bool hinted[N];
    Tick hit[N];
    below[0] = 0;
    for (std::size_t j = 0; j < N; ++j) {
        bits[j] = bits_[base + j];
        below[j + 1] = static_cast<std::uint16_t>(below[j] | bits[j]);
        hinted[j] = j >= hint_from_;
        hit[j] = hit_ticks_[j];
    }
    std::uint16_t* const dir = dir_.data();
    const Line dir_lines = dir_.size();
    const std::uint16_t priv = private_bits_;
    std::uint16_t* const ways = way_.data();
    const std::size_t n_shared = n_shared_, n_private = n_private_;
    // the general copy's views (taken where that copy is chosen, below), as in read_unheld_n
    Cache::View v[N];
    Tick busy = busy_until_, consumer = consumer_;
    auto each_level = [](auto&& f) __attribute__((always_inline)) {
        [&]<std::size_t... J>(std::index_sequence<J...>) __attribute__((always_inline)) {
            (f(std::integral_constant<std::size_t, J>{}), ...);
        }(std::make_index_sequence<N>{});
    };
    std::uint64_t found_at[N] = {}; // lines found in level k: a hit there, a miss in each before it
    const Tick per_line = consume_line_;
    Line l = a;
    // the lines, as in read_unheld_n
    auto lines = [&](auto rp) __attribute__((always_inline)) {
        using Shape = decltype(rp);
        constexpr bool fast = Shape::fast;
        // fast: the L1's and the L2's state (random caches: their LFSRs alone change)
        FastLevel<Shape::w0> f0{};
        FastLevel<Shape::w1, true> f1{};
        if constexpr (fast) {
            f0 = FastLevel<Shape::w0>::of(lv[0]->view());
            f1 = FastLevel<Shape::w1, true>::of(lv[N - 1]->view());
        }
        // the state held here goes back to the members around a step that uses them, and is read
        // again after it (as in read_unheld_n)
        auto out = [&]() __attribute__((always_inline)) {
            if constexpr (fast) {
                lv[0]->commit_lfsr(f0.lfsr);
                lv[N - 1]->commit_lfsr(f1.lfsr);
            } else {
                each_level([&](auto J) __attribute__((always_inline)) { lv[J]->commit(v[J]); });
            }
            busy_until_ = busy;
            consumer_ = consumer;
        };
        auto in = [&]() __attribute__((always_inline)) {
            if constexpr (fast) {
                f0.lfsr = lv[0]->view().lfsr;
                f1.lfsr = lv[N - 1]->view().lfsr;
            } else {
                each_level([&](auto J) __attribute__((always_inline)) { lv[J]->refresh(v[J]); });
            }
            busy = busy_until_;
            consumer = consumer_;
        };
        // fast: a line passes the test when the L2 alone holds it, and then ends held by both levels
        const std::uint16_t l2_bit = bits[N - 1], both = static_cast<std::uint16_t>(bits[0] | bits[N - 1]);
        // fast: every line arrives hit[1] after the one before it, so the consumer (C = max(C, R)
        // + p a line) is taken over the lines since it was last settled (pend of them, the last
        // arriving at t) in closed form, as read_unheld_n's steady stretch: settled before a
        // step that uses the members and at the end
        const Tick hit_l2 = hit[N - 1];
        std::uint64_t pend = 0;
        auto settle = [&]() __attribute__((always_inline)) {
            if constexpr (fast) {
                if (pend != 0 && per_line != 0)
                    consumer = std::max(consumer + pend * per_line,
                                        hit_l2 >= per_line ? t + per_line : t - (pend - 1) * hit_l2 + pend * per_line);
                pend = 0;
            }
        };
        for (; l <= last; ++l) {
            if constexpr (fast) { // the lines while none needs the members
                const Line done = fast_fills_for(f0, f1, dir, ways, dir_lines, bits[0], l2_bit, write, l, last);
                t += (done - l) * hit_l2;
                pend += done - l;
                l = done;
                if (l > last) break;
            }
            const std::uint16_t h = dir[l];
            if (fast ? h != l2_bit : (h == 0 || (h & priv) != 0)) break;
            std::size_t found = 1; // fast: the shared level, the one after the L1
            if constexpr (!fast) { // the nearest shared level holding it (none reorders on a hit)
                found = n_private;
                while ((h & bits[found]) == 0) ++found;
            }
            if constexpr (!fast) ++found_at[found]; // (fast: every line found in the L2, counted at the end)
            if constexpr (fast) {
                t += hit_l2;
                ++pend;
            } else {
                t += hit[found];
                if (per_line != 0) consumer = std::max(consumer, t) + per_line; // consume_line
            }
            // the levels that missed, the farthest first (as the fills' bits: see read_unheld_n)
            dir[l] = fast ? both : static_cast<std::uint16_t>(h | below[found]);
            each_level([&](auto J) __attribute__((always_inline)) {
                constexpr std::size_t j = N - 1 - decltype(J)::value; // N - 1 .. 0
                if (j >= found) return;
                Line victim = 0;
                bool victim_dirty = false;
                std::uint32_t w;
                bool displaced;
                if constexpr (fast) {
                    if constexpr (j == 0) displaced = f0.fill(l, write && j == 0, victim, victim_dirty, w);
                    else displaced = f1.fill(l, write && j == 0, victim, victim_dirty, w);
                } else {
                    displaced = v[j].fill(l, write && j == 0, victim, victim_dirty, w);
                }
                if (fast ? j == 1 : hinted[j]) ways[fast ? l : l * n_shared + (j - n_private)] = static_cast<std::uint16_t>(w);
                if (!displaced) return;
                if (victim < dir_lines) dir[victim] = static_cast<std::uint16_t>(dir[victim] & ~bits[j]);
                if (!victim_dirty) return;
                if constexpr (j + 1 < N) {
                    if (victim < dir_lines && (dir[victim] & bits[j + 1]) != 0) {
                        if (fast || hinted[j + 1]) { // (fast: j + 1 is the shared level)
                            if constexpr (fast) f1.mark_dirty_at(victim, ways[victim]);
                            else v[j + 1].mark_dirty_at(victim, ways[victim * n_shared + (j + 1 - n_private)]);
                            return;
                        }
                        if (mark_dirty_in(v[j + 1], victim)) return; // Cache::mark_dirty's tag search
                    }
                }
                settle();
                out();
                place_evicted(cpu, j, Evicted{victim, true}, t);
                in();
            });
            // a write: no other CPU's private cache held the line, and no fill gives it one
        }
        if constexpr (fast) found_at[1] += l - a;
        settle();
        out();
    };
    each_level([&](auto J) __attribute__((always_inline)) { v[J] = lv[J]->view(); });
    run_loop_for_shape<N>(v, n_private_ == 1 && use_hint_, lines);
    next = l;
    for (std::size_t k = 0; k < N; ++k) {
        stats_.levels[k].hits += found_at[k];
        for (std::size_t j = 0; j < k; ++j) stats_.levels[j].misses += found_at[k];
    }
    return t;
}

// The memory outside alloc()'s, or no directory: every cache searched, line by line.
[[gnu::noinline]] Tick MemorySystem::access_searched(int cpu, Tick t, bool write, Line first, Line last, bool stride_ahead) {
    const std::size_t nlev = n_levels_;
    Cache* const* const lv = &lv_[static_cast<std::size_t>(cpu) * nlev]; // this CPU's levels, nearest first
    const std::uint16_t* const bits = &bits_[static_cast<std::size_t>(cpu) * nlev];
    for (Line l = first; l <= last; ++l) {
        const std::uint16_t* d = holders(l);
        std::size_t found = nlev;
        for (std::size_t k = 0; k < nlev; ++k) {
            // the directory answers presence; a lookup is needed only to reorder an LRU set
            const bool hit = d ? (*d & bits[k]) && (!lv[k]->hits_reorder() || lv[k]->lookup(l)) : lv[k]->lookup(l);
            if (hit) {
                found = k;
                break;
            }
            ++stats_.levels[k].misses;
        }
        bool peer_dirty = false;
        if (found < nlev) {
            ++stats_.levels[found].hits;
            t += hit_ticks_[found];
            consume_line(t);
        } else {
            bool peer = false;
            if (d) {
                std::uint16_t m = static_cast<std::uint16_t>(*d & private_bits_ & ~own_bits(cpu));
                peer = m != 0;
                while (m) {
                    const unsigned id = static_cast<unsigned>(std::countr_zero(m));
                    m = static_cast<std::uint16_t>(m & (m - 1));
                    peer_dirty = peer_dirty || private_[id].dirty(l);
                }
            } else { // every peer: a clean copy in one does not tell that no other has it dirty
                for (int o = 0; o < cpus_; ++o)
                    for (std::size_t k = 0; o != cpu && touched(o) && k < n_private_; ++k)
                        if (level(o, k).contains(l)) {
                            peer = true;
                            peer_dirty = peer_dirty || level(o, k).dirty(l);
                        }
            }
            if (peer) {
                ++stats_.peer_hits;
                t += peer_ticks_;
                consume_line(t);
            } else {
                t = from_dram(cpu, t, write, l, stride_ahead && l == first);
                consume_line(line_ready_);
            }
        }
        fill_from(cpu, found, l, write || peer_dirty, t);
        if (write) {
            if (found == 0) lv[0]->mark_dirty(l); // a fill above already made it dirty
            // the directory says whether another CPU's private cache holds the line at all
            if (!d || (*d & private_bits_ & ~own_bits(cpu)) != 0) drop_everywhere(l, cpu);
        } else if (peer_dirty) {
            drop_everywhere(l, cpu); // the owner's dirty data moves with the line (filled dirty above)
        }
    }
    return t;
}

[[noreturn, gnu::noinline, gnu::cold]] static void throw_no_cpu(int cpu) {
    throw std::out_of_range("MemorySystem: no CPU " + std::to_string(cpu));
}

// (inline into read, write, together and consume: the access's values stay in registers into the run)
[[gnu::always_inline]] inline Tick MemorySystem::access(int cpu, Tick t, const Access& x, bool own_paths) {
    if (x.len == 0) return t;
    if (cpu < 0 || cpu >= cpus_) throw_no_cpu(cpu);
    touched_[static_cast<std::size_t>(cpu)] = 1;
    const bool write = x.write;
    const Line first = x.a >> line_shift_, last = (x.a + x.len - 1) >> line_shift_;
    // (stride_covered's first test, site 0, inline: most loads are not tracked)
    const bool stride_ahead = !write && x.site != 0 && stride_covered(cpu, x.site, first);
    // write()'s on the Cortex-A9's shape (no stride line), out of line (inline, its steps moved
    // every machine's registers in write())
    auto store_a9 = [this](const int c, Tick at, Line l, const Line end) __attribute__((noinline)) {
        const std::size_t base = static_cast<std::size_t>(c) * 2;
        const std::uint16_t bit0 = bits_[base];
        if (const std::uint16_t h = dir_[l]; (h & private_bits_) == bit0) {
            // its first line in this CPU's L1 and no other CPU's: access_run's steps for a store
            // that hits the L1 (no fill, no drop), then the lines after it below
            ++stats_.levels[0].hits;
            at += hit_ticks_[0];
            consume_line(at);
            a9_level<255, 4, false>(lv_[base]->view().tag, 0).mark_dirty(l);
            if (l == end) return at;
            ++l;
        }
        if (dir_[l] != 0 && (dir_[l] & private_bits_) == 0) {
            // a first line the L2 alone holds (a copy's destination): access_run's held run
            // (use_held_runs_ holds for this shape), then its steps for the lines after the run
            Line next = l + 1;
            at = held_run_n<2, true>(c, at, true, l, end, next);
            if (next > end) return at;
            l = next;
        }
        return access_run<true>(c, at, true, l, end, false);
    };
    // read()'s on the Cortex-A9's shape, out of line: its first lines in this CPU's L1 (hits:
    // access_run's steps for them), then one or two lines held nowhere (a frame's header, say)
    // by access_run's Cold copy, else by access_run<true>; the stride line can only be the first
    auto read_a9 = [this](const int c, Tick at, Line l, const Line end, bool stride) __attribute__((noinline)) {
        const std::uint16_t bit0 = bits_[static_cast<std::size_t>(c) * 2];
        for (; (dir_[l] & bit0) != 0; ++l, stride = false) {
            ++stats_.levels[0].hits;
            at += hit_ticks_[0];
            consume_line(at);
            if (l == end) return at;
        }
        if (end - l <= 1 && dir_[l] == 0 && dir_[end] == 0) return access_run<true, true>(c, at, false, l, end, stride);
        return access_run<true>(c, at, false, l, end, stride);
    };
    // consume()'s and together()'s accesses on the Cortex-A9's shape, out of line (a store:
    // access_run<true>): a read's first line that the L2 and another CPU's L1 hold (a copy's source)
    // takes access_run<true>'s steps for an L2 hit (the hit, the L1's fill); three lines or more
    // held nowhere after it go to read_unheld_n as there (its fill's victim is a held line: their
    // holders stay 0), and access_run<true> takes the rest. (It takes `*this` and every such
    // access, so that consume()'s call site is the one it had.)
    auto copy_a9 = [](MemorySystem& m, const int c, Tick at, const bool write, Line l, const Line end, bool stride) __attribute__((noinline)) {
        const std::size_t base = static_cast<std::size_t>(c) * 2;
        const std::uint16_t bit0 = m.bits_[base], bit1 = m.bits_[base + 1];
        std::uint16_t* const dir = m.dir_.data();
        const std::uint16_t h = dir[l];
        if (write || (h & bit0) != 0 || (h & bit1) == 0 || (h & m.private_bits_) == 0)
            return m.access_run<true>(c, at, write, l, end, stride);
        ++m.stats_.levels[0].misses;
        ++m.stats_.levels[1].hits;
        at += m.hit_ticks_[1];
        m.consume_line(at);
        FastLevel<4> f = a9_level<255, 4, false>(m.lv_[base]->view().tag, m.lv_[base]->view().lfsr);
        Line victim;
        bool victim_dirty = false;
        std::uint32_t w;
        const bool displaced = f.fill(l, false, victim, victim_dirty, w);
        dir[l] = static_cast<std::uint16_t>(h | bit0);
        if (displaced) {
            m.lv_[base]->commit_lfsr(f.lfsr);
            const Line dir_lines = m.dir_.size();
            if (victim < dir_lines) dir[victim] = static_cast<std::uint16_t>(dir[victim] & ~bit0);
            if (victim_dirty) {
                if (victim < dir_lines && (dir[victim] & bit1) != 0)
                    a9_level<2047, 16, true>(m.lv_[base + 1]->view().tag, 0).mark_dirty_at(victim, m.way_[victim]);
                else
                    m.place_evicted(c, 0, Evicted{victim, true}, at);
            }
        }
        if (l == end) return at;
        ++l;
        if (l + 2 <= end && dir[l] == 0 && dir[l + 1] == 0 && dir[l + 2] == 0) {
            const Line b = next_held(dir, l + 3, end + 1) - 1;
            m.stats_.levels[0].misses += b - l + 1;
            m.stats_.levels[1].misses += b - l + 1;
            at = m.read_unheld_n<2, true>(c, at, l, b, false);
            if (b == end) return at;
            l = b + 1;
        }
        return m.access_run<true>(c, at, false, l, end, false);
    };
    if (use_dir_ && last < dir_.size()) {
        if (!a9_fills_) return access_run<false>(cpu, t, write, first, last, stride_ahead);
        if (own_paths && !write) return read_a9(cpu, t, first, last, stride_ahead);
        if (own_paths && write) return store_a9(cpu, t, first, last);
        return copy_a9(*this, cpu, t, write, first, last, stride_ahead);
    }
    return access_searched(cpu, t, write, first, last, stride_ahead);
}

Cycles MemorySystem::read(int cpu, Tick now, Addr a, std::size_t len, std::uint8_t site) {
    return finish(now, access(cpu, now, Access{a, len, false, site}, true));
}
Cycles MemorySystem::write(int cpu, Tick now, Addr a, std::size_t len) {
    return finish(now, access(cpu, now, Access{a, len, true, 0}, true));
}
Cycles MemorySystem::together(int cpu, Tick now, std::span<const Access> accesses) {
    Tick t = now;
    for (const Access& x : accesses) t = access(cpu, t, x);
    return finish(now, t);
}
Cycles MemorySystem::consume(int cpu, Tick now, const Access& x, Cycles compute) {
    if (x.len == 0) return 0;
    if (cpu < 0 || cpu >= cpus_) throw_no_cpu(cpu);
    const std::uint64_t lines = ((x.a + x.len - 1) >> line_shift_) - (x.a >> line_shift_) + 1;
    consume_line_ = clock_.to_ticks(compute) / lines;
    consumer_ = now;
    const Tick t = access(cpu, now, x);
    const Tick work = consume_line_ * lines;
    consume_line_ = 0;
    if (work == 0) return finish(now, t);
    // every line's arrival, a demand miss's completion too, is in consumer_: the consumer is done
    // last (t, the cursor, is at most the last line's arrival)
    n_inflight_ = 0;
    return stall_cycles(std::max(consumer_, t + consume_line_) - work - now);
}

void MemorySystem::device_write(Tick now, Addr a, std::size_t len) {
    if (len == 0) return;
    stats_.dma_write_bytes += len;
    const Line first = a >> line_shift_, last = (a + len - 1) >> line_shift_;
    if (cfg_.dma_write_allocate) { // DDIO-like: into the last shared level, not to DRAM
        // (out of line: the DRAM path below then saves no registers for this loop)
        [this](Tick now, Line first, Line last) __attribute__((noinline)) {
            for (Line l = first; l <= last; ++l) {
                drop_everywhere(l, -1);
                if (auto ev = fill_at(0, cfg_.levels.size() - 1, l, true); ev && ev->dirty) {
                    ++stats_.writebacks;
                    channel(now, cfg_.line);
                }
            }
        }(now, first, last);
        return;
    }
    device_channel(now, (last - first + 1) * cfg_.line);
    if (cfg_.dma_coherent)
        [this](Line first, Line last) __attribute__((noinline)) { // the snoops (out of line, as above)
            for (Line l = skip_unheld(first, last); l <= last; l = skip_unheld(l + 1, last)) drop_everywhere(l, -1);
        }(first, last);
}

void MemorySystem::device_read(Tick now, Addr a, std::size_t len) {
    if (len == 0) return;
    stats_.dma_read_bytes += len;
    const Line first = a >> line_shift_, last = (a + len - 1) >> line_shift_;
    channel(now, (last - first + 1) * cfg_.line);
}

// invalidate's run of lines from `l` on whose holders entry is `shared_bit` alone (the shared
// level of a power of two sets, at most 64 ways, not LRU): each dropped there as
// Cache::invalidate_at does in the way its hint gives (the LRU stamp left: see invalidate), its
// entry cleared. Returns the first line after the run. Out of line, with the arrays as its
// arguments, so that they stay in registers over the run. Four entries at a time where the word
// of four equals `shared_bit` four times (a frame's buffer mostly): one load, one test and one
// store of the word for the four lines' entries; on a way-major level, blocks of sixteen or eight
// lines in one way first (below). WayMajor: the level's layout is Layout::WAY_MAJOR (a shared level
// with way hints: the PL310), else SET_MAJOR. The lines' slots are distinct (each holds its own
// line), so the order of the stores does not matter. Not vectorised: GCC's SLP turned the four ors
// of the empty words into a longer SSE sequence.
// The empty bit of each way (way_bit[w] = 1 << w), read by drop_shared_run: one load for the
// shift's three instructions.
constexpr auto way_bit = [] {
    std::array<std::uint64_t, 64> b{};
    for (std::size_t w = 0; w < 64; ++w) b[w] = std::uint64_t{1} << w;
    return b;
}();
// M, W: the sets' mask and the ways where they are the i.MX6's PL310's (2,047 and 16: constants,
// its empty words and flags at the block layout's offsets from its tags), else 0.
template <bool WayMajor, Line M = 0, std::uint32_t W = 0>
[[gnu::noinline, gnu::optimize("no-tree-slp-vectorize")]] static Line drop_shared_run(std::uint16_t* dir, Line l, Line end, std::uint16_t shared_bit,
                                              const std::uint16_t* hints, Line set_mask, std::uint32_t ways,
                                              std::uint64_t* empty, Tag* tag, std::uint8_t* dirty) {
    if constexpr (M != 0) {
        set_mask = M;
        ways = W;
        empty = Cache::empty_from<M + 1, W>(tag);
        dirty = Cache::dirty_from<M + 1, W>(tag);
    }
    // Cache::slot's strides: way w of set s at s x set_stride + w x way_stride
    const std::size_t set_stride = WayMajor ? 1 : ways, way_stride = WayMajor ? set_mask + 1 : 1;
    const std::uint64_t* const bit = way_bit.data();
    auto drop = [&](Line x) __attribute__((always_inline)) {
        const std::size_t w = hints[x];
        const std::size_t set = static_cast<std::size_t>(x & set_mask), i = set * set_stride + w * way_stride;
        assert(tag[i] == x + 1); // the hint is right while the directory bit is set
        empty[set] |= bit[w];
        tag[i] = 0;
        dirty[i] = 0;
    };
    auto drop_rest = [&](Line x) __attribute__((always_inline)) { // the rest, line by line
        for (; x < end && dir[x] == shared_bit; ++x) {
            drop(x);
            dir[x] = 0;
        }
        return x;
    };
    const std::uint64_t four = std::uint64_t{shared_bit} * 0x0001000100010001u; // the entry, four times
    auto four_held = [&]() __attribute__((always_inline)) {
        std::uint64_t word;
        std::memcpy(&word, &dir[l], sizeof word);
        return word == four;
    };
    auto clear_four = [&]() __attribute__((always_inline)) { std::memset(&dir[l], 0, 4 * sizeof dir[l]); };
    if constexpr (WayMajor) {
        // Sixteens, then eights, of lines in one way of consecutive sets (a buffer's lines mostly
        // are, filled together: docs/performance.md, twenty-eighth session, ir28a): their tags and
        // flags are consecutive slots, their empty words consecutive, the one way's bit in each.
        // Stretch by stretch up to the sets' wrap; the first eight that is not (held elsewhere too,
        // in two ways, across the wrap) and the lines after it take the steps below.
        const std::size_t sets = set_mask + 1;
        std::size_t set = 0;
        // the n lines from l (n a multiple of 4) held by the shared level alone, in one way
        auto word = [](const std::uint16_t* p) __attribute__((always_inline)) { // four entries
            std::uint64_t x;
            std::memcpy(&x, p, sizeof x);
            return x;
        };
        auto in_one_way = [&](auto n) __attribute__((always_inline)) {
            const std::uint64_t h = word(&hints[l]);
            bool one = std::rotr(h, 16) == h;
            for (std::size_t k = 0; k < n; k += 4) one = one && word(&dir[l + k]) == four && word(&hints[l + k]) == h;
            return one;
        };
        auto drop_in_way = [&](auto n) __attribute__((always_inline)) {
            const std::size_t w = hints[l], i = w * sets + set;
            const std::uint64_t b = bit[w];
            for (std::size_t k = 0; k < n; ++k) {
                assert(tag[i + k] == l + k + 1);
                empty[set + k] |= b;
            }
            for (std::size_t k = 0; k < n; k += 8) // (eight at a time: one memset of n tags is a rep stos)
                std::memset(&tag[i + k], 0, 8 * sizeof tag[i]);
            std::memset(&dirty[i], 0, n * sizeof dirty[i]);
            std::memset(&dir[l], 0, n * sizeof dir[l]);
            l += n;
            set += n;
        };
        for (;;) {
            set = static_cast<std::size_t>(l & set_mask);
            const Line stop = std::min<Line>(end, l + (sets - set));
            while (l + 16 <= stop && in_one_way(std::integral_constant<std::size_t, 16>{}))
                drop_in_way(std::integral_constant<std::size_t, 16>{});
            while (l + 8 <= stop && in_one_way(std::integral_constant<std::size_t, 8>{}))
                drop_in_way(std::integral_constant<std::size_t, 8>{});
            if (l != stop || stop == end) break; // (else the next stretch, from set 0)
        }
    }
    while (l + 4 <= end) {
        // the lines before the sets wrap to 0 have consecutive sets: each array's slots of a four
        // from one base, stepped by four sets
        const std::size_t set = static_cast<std::size_t>(l & set_mask);
        const Line stop = std::min<Line>(end, l + (set_mask + 1 - set));
        std::uint64_t* e = empty + set;
        Tag* t = tag + set * set_stride;
        std::uint8_t* d = dirty + set * set_stride;
        for (; l + 4 <= stop; l += 4, e += 4, t += 4 * set_stride, d += 4 * set_stride) {
            if (!four_held()) return drop_rest(l);
            for (std::size_t k = 0; k < 4; ++k) { // drop(l + k)
                const std::size_t w = hints[l + k], i = k * set_stride + w * way_stride;
                assert(t[i] == l + k + 1);
                e[k] |= bit[w];
                t[i] = 0;
                d[i] = 0;
            }
            clear_four();
        }
        if (l + 4 > end || !four_held()) break;
        drop(l); // a four across the last set and the first
        drop(l + 1);
        drop(l + 2);
        drop(l + 3);
        clear_four();
        l += 4;
    }
    return drop_rest(l);
}

std::uint64_t MemorySystem::invalidate(Addr a, std::size_t len) {
    if (len == 0) return 0;
    std::uint64_t dropped = 0;
    const Line first = a >> line_shift_, last = (a + len - 1) >> line_shift_;
    Line l = first;
    if (use_dir_) { // the lines the directory covers: only the held ones visited, their holders dropped
        std::uint16_t* const dir = dir_.data();
        const Line end = std::min<Line>(last + 1, dir_.size());
        l = next_held(dir, l, end);
        if (use_hint_ && n_shared_ == 1 && l < end) {
            // one shared level (the PL310, an L3), its arrays read once (Cache::View, a local): its
            // copy of each line dropped as Cache::invalidate_at does, in the way the hint gives,
            // which changes no scalar state of the cache (nothing to commit); the private caches'
            // copies by drop_bits (a tag search). A view per level for more shared levels, indexed
            // at run time, measured slower than drop_bits (docs/performance.md, twenty-first session).
            const std::uint16_t* const hints = way_.data();
            const std::uint16_t priv = private_bits_;
            const std::uint16_t shared_bit = static_cast<std::uint16_t>(1u << first_shared_id_);
            // The held lines in address order, taken one after another while they are held (the
            // received frames' lines mostly are: a test of the entry instead of next_held's search),
            // next_held past a line held nowhere. `pow2`: a power of two sets, at most 64 ways and no LRU
            // (the PL310): the set is the line's low bits, the empty mask is kept, and the slot's LRU
            // stamp is left as it is (only LRU replacement reads one).
            // (the private copies, rare here, out of line: the loop's values then stay in registers)
            auto drop_private = [this](Line x, std::uint16_t m) __attribute__((noinline)) {
                if (!a9_fills_) {
                    drop_bits(x, m);
                    return;
                }
                // the Cortex-A9's L1Ds (256 sets of 4 ways, random): x's way found among its set's
                // four tags (the directory says the cache holds x), then Cache::invalidate_at's steps
                // but the LRU stamp's (a random cache's stamps stay 0)
                for (; m; m = static_cast<std::uint16_t>(m & (m - 1))) {
                    Tag* const tag = private_[static_cast<std::size_t>(std::countr_zero(m))].view().tag;
                    const std::size_t set = static_cast<std::size_t>(x & 255);
                    std::size_t i = set * 4;
                    while (tag[i] != x + 1) ++i;
                    assert(i < set * 4 + 4);
                    Cache::empty_from<256, 4>(tag)[set] |= std::uint64_t{1} << (i - set * 4);
                    tag[i] = 0;
                    Cache::dirty_from<256, 4>(tag)[i] = 0;
                }
            };
            // a9: the i.MX6's PL310 (a9_fills_), the view's fields constants but its tags
            auto drop_run = [&](auto pow2, auto a9, const Cache::View& c) {
                const Line set_mask = c.sets - 1;
                auto drop_shared = [&](Line x) { // Cache::invalidate_at(x, its hinted way)
                    const std::uint32_t w = hints[x];
                    const std::uint32_t set = pow2 ? static_cast<std::uint32_t>(x & set_mask) : c.set_of(x);
                    const std::size_t i = c.slot(set, w);
                    assert(c.tag[i] == x + 1); // the hint is right while the directory bit is set
                    if (pow2 || c.ways <= 64) c.empty[set] |= std::uint64_t{1} << w;
                    c.tag[i] = 0;
                    c.dirty[i] = 0;
                    if (!pow2) c.stamp[i] = 0; // (pow2: not LRU, and only LRU replacement reads a stamp)
                };
                while (l < end) {
                    const std::uint16_t m = dir[l];
                    if (m == shared_bit) { // held by the shared level alone: so are the lines after it, mostly
                        const Line from = l;
                        if constexpr (pow2) {
                            l = a9 ? drop_shared_run<true, 2047, 16>(dir, l, end, shared_bit, hints, 0, 0, nullptr, c.tag, nullptr)
                                : c.set_stride == 1 ? drop_shared_run<true>(dir, l, end, shared_bit, hints, set_mask, c.ways, c.empty, c.tag, c.dirty)
                                                    : drop_shared_run<false>(dir, l, end, shared_bit, hints, set_mask, c.ways, c.empty, c.tag, c.dirty);
                        } else {
                            do {
                                drop_shared(l);
                                dir[l] = 0;
                            } while (++l < end && dir[l] == shared_bit);
                        }
                        dropped += l - from;
                        continue;
                    }
                    if (m == 0) {
                        l = next_held(dir, l + 1, end);
                        continue;
                    }
                    if ((m & priv) != 0) drop_private(l, static_cast<std::uint16_t>(m & priv));
                    if ((m & shared_bit) != 0) drop_shared(l);
                    dir[l] = 0;
                    ++dropped;
                    ++l;
                }
            };
            if (a9_fills_) { // (the PL310 way-major: Cache's constructor, the layout above)
                Tag* const tag = shared_[0].view().tag;
                const Cache::View c{tag,  Cache::dirty_from<2048, 16>(tag), Cache::empty_from<2048, 16>(tag), nullptr,
                                    nullptr, 2047, 2048, 16, 15, 1, 2048, Replacement::RANDOM, 0, 0};
                assert(shared_[0].view().set_stride == 1 && shared_[0].view().way_stride == 2048 &&
                       shared_[0].view().empty == c.empty && shared_[0].view().dirty == c.dirty);
                drop_run(std::true_type{}, std::true_type{}, c);
            } else if (const Cache::View c = shared_[0].view();
                       (c.sets & (c.sets - 1)) == 0 && c.ways <= 64 && c.repl != Replacement::LRU) {
                drop_run(std::true_type{}, std::false_type{}, c);
            } else {
                drop_run(std::false_type{}, std::false_type{}, c);
            }
        }
        for (; l < end; l = next_held(dir, l + 1, end)) {
            drop_bits(l, dir[l]);
            dir[l] = 0;
            ++dropped;
        }
        l = std::max(l, end);
    }
    for (; l <= last; ++l) { // outside the directory: every cache searched
        bool present = false;
        for (int cpu = 0; cpu < cpus_; ++cpu)
            for (std::size_t k = 0; touched(cpu) && k < n_private_; ++k)
                present = level(cpu, k).invalidate(l).has_value() || present;
        for (auto& c : shared_) present = c.invalidate(l).has_value() || present;
        dropped += present;
    }
    stats_.invalidated_lines += dropped;
    return dropped;
}

std::uint64_t MemorySystem::clean(Tick now, Addr a, std::size_t len) {
    if (len == 0) return 0;
    const Line first = a >> line_shift_, last = (a + len - 1) >> line_shift_;
    // The write-backs from the first held line `l` on: out of line, so that a range the directory
    // shows held nowhere (a received frame's partial end line, dropped at its map) returns after
    // the search alone, without the loop's registers saved and restored.
    auto clean_from = [this, now, last](Line l) __attribute__((noinline)) {
        std::uint64_t written = 0;
        for (; l <= last; l = skip_unheld(l + 1, last)) {
            bool was_dirty = false;
            if (const std::uint16_t* d = holders(l)) {
                for (std::uint16_t m = *d; m; m = static_cast<std::uint16_t>(m & (m - 1))) {
                    const std::size_t id = static_cast<std::size_t>(std::countr_zero(m));
                    const bool c = use_hint_ && id >= first_shared_id_
                                       ? cache_by_id(id).clean_at(l, hint_by_id(l, id))
                                       : cache_by_id(id).clean(l);
                    was_dirty = c || was_dirty;
                }
            } else {
                for (int cpu = 0; cpu < cpus_; ++cpu)
                    for (std::size_t k = 0; touched(cpu) && k < n_private_; ++k)
                        was_dirty = level(cpu, k).clean(l) || was_dirty;
                for (auto& c : shared_) was_dirty = c.clean(l) || was_dirty;
            }
            if (was_dirty) {
                ++written;
                channel(now, cfg_.line);
            }
        }
        stats_.writebacks += written;
        return written;
    };
    const Line l = skip_unheld(first, last);
    if (l > last) return 0; // held nowhere (the directory says so): nothing written back
    return clean_from(l);
}

int MemorySystem::level_of(int cpu, Addr a) const {
    const Line l = a / cfg_.line;
    for (std::size_t k = 0; k < cfg_.levels.size(); ++k)
        if (level(cpu, k).contains(l)) return static_cast<int>(k);
    return -1;
}

bool MemorySystem::dirty_anywhere(Addr a) const {
    const Line l = a / cfg_.line;
    for (const auto& c : private_)
        if (c.dirty(l)) return true;
    for (const auto& c : shared_)
        if (c.dirty(l)) return true;
    return false;
}

} // namespace kdsim::mem
