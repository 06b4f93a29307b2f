#include "mem/icache.h"

#include "mem/lfsr.h"
#include "mem/line_bits.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace kdsim::mem {

KernelText::KernelText(std::span<const KernelFunction> functions, std::uint32_t line, std::uint32_t align)
    : line_(line) {
    if (line == 0 || (line & (line - 1)) != 0 || align == 0 || (align & (align - 1)) != 0)
        throw std::invalid_argument("KernelText: line and alignment must be powers of two");
    std::uint64_t addr = 0;
    for (const KernelFunction& f : functions) {
        if (index_.contains(f.name)) continue; // the first definition of a name counts
        addr = (addr + align - 1) & ~std::uint64_t{align - 1};
        index_.emplace(f.name, Placed{addr, f.bytes});
        addr += f.bytes;
    }
}

std::uint64_t KernelText::bytes(std::string_view fn) const {
    auto it = index_.find(std::string(fn));
    return it == index_.end() ? 0 : it->second.bytes;
}

CodeSpan KernelText::executed(std::string_view fn, double executed) const {
    auto it = index_.find(std::string(fn));
    if (it == index_.end() || it->second.bytes == 0) return {};
    const std::uint64_t run = static_cast<std::uint64_t>(std::ceil(static_cast<double>(it->second.bytes) * executed));
    const std::uint64_t start = it->second.addr, end = start + std::max<std::uint64_t>(run, 1);
    const Line first = start / line_, last = (end - 1) / line_;
    return CodeSpan{first, static_cast<std::uint32_t>(last - first + 1)};
}

InstructionCache::InstructionCache(const L1iConfig& c, std::uint32_t line, std::uint32_t miss_cycles, int cpus)
    : miss_(miss_cycles), prefetch_(c.prefetch) {
    if (c.size == 0 || c.ways == 0 || line == 0 || c.size % (std::uint64_t{c.ways} * line) != 0 || cpus <= 0)
        throw std::invalid_argument("InstructionCache: size, ways and line do not make a cache");
    const auto sets = static_cast<std::uint32_t>(c.size / (std::uint64_t{c.ways} * line));
    l1i_.reserve(static_cast<std::size_t>(cpus));
    for (int i = 0; i < cpus; ++i) l1i_.emplace_back(sets, c.ways, c.replacement);
    hits_reorder_ = l1i_.front().hits_reorder();
    const Cache::View v = l1i_.front().view(); // every CPU's L1I has the same shape
    random_pow2_ = v.repl == Replacement::RANDOM && v.mask != 0 && v.way_mask != 0 && v.ways <= 64;
    four_ways_ = random_pow2_ && v.ways == 4;
    a9_ = four_ways_ && v.mask == 255;
    resident_.assign(static_cast<std::size_t>(cpus), 0);
}

void InstructionCache::set_groups(const std::vector<std::vector<CodeSpan>>& groups) {
    group_spans_.clear();
    group_begin_.assign(1, 0);
    Line hi = 0;
    for (const auto& g : groups) {
        for (const CodeSpan& s : g)
            if (s.lines) {
                group_spans_.push_back(s);
                hi = std::max(hi, s.first + s.lines);
            }
        group_begin_.push_back(static_cast<std::uint32_t>(group_spans_.size()));
    }
    group_lines_.assign(groups.size(), 0);
    for (std::size_t g = 0; g < groups.size(); ++g) {
        for (const CodeSpan& s : groups[g]) group_lines_[g] += s.lines;
        if (group_lines_[g] >= std::uint64_t{1} << 30) // walk_random counts a walk's misses in 30 bits
            throw std::invalid_argument("InstructionCache: a group of 2^30 lines or more");
    }
    if (hi + prefetch_ > std::numeric_limits<std::uint32_t>::max()) // walk_random's cover is 32-bit
        throw std::invalid_argument("InstructionCache: a group's line at or above 2^32 - 1 - prefetch");
    resident_.assign(l1i_.size(), 0);
    line_keep_.clear();
    slot_of_.clear();
    group_words_.clear();
    a9_groups_ = false;
    if (group_spans_.empty()) return;
    bits_lines_ = hi; // from line 0, the kernel text's first (a walk then takes a victim's line as its bit)
    foreign_ = false; // a tag at or above hi + 1 (a stale tag of an empty way counted too)
    for (Cache& c : l1i_) {
        const Cache::View v = c.view();
        for (std::size_t i = 0; i < std::size_t{v.sets} * v.ways; ++i)
            if (v.tag[i] > hi) foreign_ = true;
    }
    lead_ = a9_ ? 4 : 0;
    words_ = lead_ + static_cast<std::size_t>((bits_lines_ + 63) / 64) + 1; // + the sentinel word
    absent_.assign(words_ * l1i_.size(), ~std::uint64_t{0});
    for (std::size_t cpu = 0; cpu < l1i_.size(); ++cpu) {
        std::uint64_t* const bits = absent_.data() + cpu * words_ + lead_;
        for (Line l = 0; l < hi; ++l) // lines already cached (none before the first fetch)
            if (l1i_[cpu].contains(l)) bits[l / 64] &= ~(std::uint64_t{1} << (l % 64));
        const Cache::View v = l1i_[cpu].view();
        for (std::uint32_t set = 0; set < lead_ * 64; ++set) // the sets without an empty way
            if (v.empty[set] == 0) bits[set / 64 - lead_] &= ~(std::uint64_t{1} << (set % 64));
    }
    if (hits_reorder_) {
        const Cache& c0 = l1i_.front();
        if (std::uint64_t{c0.sets()} * c0.ways() > std::numeric_limits<std::uint32_t>::max()) return;
        slot_of_.assign(l1i_.size() * static_cast<std::size_t>(hi), 0);
        for (std::size_t cpu = 0; cpu < l1i_.size(); ++cpu)
            for (Line l = 0; l < hi; ++l)
                if (const int w = l1i_[cpu].way_of(l); w >= 0)
                    slot_of_[cpu * static_cast<std::size_t>(hi) + l] =
                        l1i_[cpu].view().set_of(l) * c0.ways() + static_cast<std::uint32_t>(w);
        return;
    }
    group_words_.resize(group_spans_.size());
    for (std::size_t i = 0; i < group_spans_.size(); ++i) { // a span within one word: its mask
        const Line k = group_spans_[i].first, n = group_spans_[i].lines;
        if (k % 64 + n <= 64)
            group_words_[i] = SpanWord{static_cast<std::size_t>(k / 64), range_mask(k, k + n)};
    }
    line_keep_.assign(static_cast<std::size_t>(bits_lines_) + 1, ~std::uint64_t{0});
    for (std::size_t g = 0; g < groups.size() && g < 64; ++g)
        for (const CodeSpan& s : groups[g])
            for (Line l = s.first; l < s.first + s.lines; ++l) line_keep_[l + 1] &= ~(std::uint64_t{1} << g);
    for (std::size_t g = 0; g < groups.size() && g < 64; ++g) // a group of no lines: known whole
        if (group_lines_[g] == 0)
            for (std::uint64_t& r : resident_) r |= std::uint64_t{1} << g;
    group_word_list_.clear();
    group_word_range_.clear();
    if (!random_pow2_) return;
    std::vector<std::uint32_t> word_begin{0};
    for (std::size_t g = 0; g + 1 < group_begin_.size(); ++g) { // each span's words, in order
        for (std::uint32_t i = group_begin_[g]; i < group_begin_[g + 1]; ++i) {
            const Line k = group_spans_[i].first, end = k + group_spans_[i].lines;
            for (Line w = k / 64; w * 64 < end; ++w) {
                const GroupWord e{static_cast<std::uint32_t>(w), w == k / 64 ? 0u : ~0u,
                                  range_mask(std::max(k, w * 64), end)};
                // A span's first word above the previous entry's lines in the same word, out of
                // reach of their prefetch cover, joins that entry: its lines are walked in the same
                // order after the other's, and its first missing line is a demand miss either way.
                if (group_word_list_.size() > word_begin.back() && e.keep == 0) {
                    GroupWord& prev = group_word_list_.back();
                    const Line prev_last = w * 64 + 63 - static_cast<Line>(std::countl_zero(prev.mask));
                    if (prev.word == e.word && k >= prev_last + 1 + prefetch_) {
                        prev.mask |= e.mask;
                        continue;
                    }
                }
                group_word_list_.push_back(e);
            }
        }
        // the group's sentinel: the sentinel word (all ones) under the group's line count (not 0:
        // a group of no lines is never walked)
        group_word_list_.push_back(GroupWord{static_cast<std::uint32_t>(words_ - lead_ - 1), ~0u, group_lines_[g]});
        word_begin.push_back(static_cast<std::uint32_t>(group_word_list_.size()));
    }
    walk_cpu_.resize(l1i_.size());
    for (std::size_t cpu = 0; cpu < l1i_.size(); ++cpu) walk_cpu_[cpu] = {bits_of(static_cast<int>(cpu)), &l1i_[cpu], &resident_[cpu]};
    group_word_range_.resize(word_begin.size() - 1);
    for (std::size_t g = 0; g < group_word_range_.size(); ++g)
        group_word_range_[g] = {group_word_list_.data() + word_begin[g], group_word_list_.data() + word_begin[g + 1] - 1};
    a9_groups_ = a9_ && !foreign_ && prefetch_ == 1;
}

void InstructionCache::fill(Cache& c, int cpu, Line l) {
    Evicted ev;
    std::uint32_t way;
    const bool displaced = c.fill(l, false, ev, way);
    if (absent_.empty()) return;
    std::uint64_t* bits = bits_of(cpu);
    if (l < bits_lines_) {
        bits[l / 64] &= ~(std::uint64_t{1} << (l % 64));
        if (!slot_of_.empty()) slot_of_[static_cast<std::size_t>(cpu) * bits_lines_ + l] = c.view().set_of(l) * c.ways() + way;
    }
    if (displaced && ev.line < bits_lines_) evicted(bits, cpu, ev.line);
}

Cycles InstructionCache::fetch(int cpu, std::span<const CodeSpan> spans) {
    for (const CodeSpan& s : spans)
        if (s.lines && s.first + s.lines > bits_lines_) { // a line of it may be filled
            foreign_ = true;
            a9_groups_ = false;
        }
    return walk(cpu, spans, nullptr);
}

namespace {

// The fetch unit's next-line prefetch within one span (its lines visited in ascending order): a
// missing line that an earlier demand miss of the span requested (it lies in [covered,
// covered_end)) costs nothing more; any other is a demand miss, which requests the `prefetch`
// lines after it.
struct PrefetchCover {
    Line covered = 0, covered_end = 0;
    // Whether the missing line `l` is a demand miss (it stalls); the cover moved past it if so.
    bool demand(Line l, std::uint32_t prefetch) {
        if (l >= covered && l < covered_end) return false;
        covered = l + 1;
        covered_end = l + 1 + prefetch;
        return true;
    }
};

// walk_random's count of a missing line `l` of a span, in `counts` (from bit 30 the walk's misses,
// in bits 0-29 those of them that were prefetched): a miss counted, and where l < covered_end (a
// line that an earlier demand miss of the span requested) a prefetched one too, else (a demand
// miss, which stalls) the prefetch cover moved to `next_end`. Without a branch: whether a missing
// line was prefetched follows no pattern that a predictor learns (a quarter of the Cortex-A9's
// walk's misses, in no order), so after one compare its carry is added and the cover's move is a
// conditional one.
// Lines below 2^32 - 1 - prefetch: the cover and the compare are 32-bit.
[[gnu::always_inline]] inline void count_miss(Line l, Line next_end, std::uint64_t& counts, std::uint32_t& covered_end) {
    constexpr std::uint64_t MISS = std::uint64_t{1} << 30;
#if defined(__x86_64__) && defined(__GNUC__)
    asm("cmpl %[end], %k[l]\n\tcmovael %k[next], %[end]\n\tadcq %[miss], %[counts]"
        : [end] "+r"(covered_end), [counts] "+r"(counts)
        : [l] "r"(l), [next] "r"(next_end), [miss] "i"(MISS)
        : "cc");
#else
    counts += MISS;
    if (l < covered_end) ++counts;
    else covered_end = static_cast<std::uint32_t>(next_end);
#endif
}

} // namespace

Cycles InstructionCache::walk(int cpu, std::span<const CodeSpan> spans, const SpanWord* words) {
    Cache& c = l1i_[static_cast<std::size_t>(cpu)];
    Cycles stall = 0;
    std::uint64_t misses = 0, prefetched = 0, lines = 0;
    std::uint64_t* bits = absent_.empty() ? nullptr : bits_of(cpu);
    for (std::size_t i = 0; i < spans.size(); ++i) {
        const CodeSpan& s = spans[i];
        lines += s.lines;
        // every line present (words: only where a hit is presence alone): all hits
        if (words && words[i].mask && (bits[words[i].word] & words[i].mask) == 0) continue;
        PrefetchCover cover;
        Line k = s.first;
        if (!hits_reorder_ && bits && k < bits_lines_ && k + s.lines <= bits_lines_) {
            // only the missing lines, by their absence bits: the first at or after k, read again
            // after every fill (a fill may evict a later line of the span)
            const Line end = k + s.lines;
            while (k < end) {
                const std::uint64_t missing = bits[k / 64] >> (k % 64);
                if (missing == 0) {
                    k = (k / 64 + 1) * 64;
                    continue;
                }
                k += static_cast<Line>(std::countr_zero(missing));
                if (k >= end) break;
                const Line l = k;
                Evicted ev;
                const bool displaced = c.fill(l, false, ev);
                bits[k / 64] &= ~(std::uint64_t{1} << (k % 64));
                if (displaced && ev.line < bits_lines_) evicted(bits, cpu, ev.line);
                ++misses;
                if (cover.demand(l, prefetch_)) stall += miss_;
                else ++prefetched;
                ++k;
            }
            continue;
        }
        for (Line l = s.first, end = s.first + s.lines; l < end; ++l) {
            if (c.lookup(l)) continue;
            fill(c, cpu, l);
            ++misses;
            if (cover.demand(l, prefetch_)) stall += miss_;
            else ++prefetched;
        }
    }
    stats_.hits += lines - misses;
    stats_.misses += misses;
    stats_.prefetched += prefetched;
    stats_.stall_cycles += stall;
    return stall;
}

Cycles InstructionCache::walk_a9(int cpu, std::uint32_t g) { return walk_random<4, 255, false, 1>(cpu, g); }

Cycles InstructionCache::walk_group(int cpu, std::uint32_t g) {
    if (!slot_of_.empty()) return walk_lru(cpu, g);
    if (g < 64 && !line_keep_.empty()) {
        if (a9_) return foreign_ ? walk_random<4, 255, true>(cpu, g) : walk_random<4, 255, false>(cpu, g);
        if (four_ways_) return walk_random<4, 0, true>(cpu, g);
        if (random_pow2_) return walk_random<0, 0, true>(cpu, g);
        // known whole from here: a fill below that evicts a line of the group clears it again
        resident_[static_cast<std::size_t>(cpu)] |= std::uint64_t{1} << g;
    }
    const std::uint32_t b = group_begin_[g];
    return walk(cpu, std::span<const CodeSpan>(group_spans_.data() + b, group_begin_[g + 1] - b),
                group_words_.empty() ? nullptr : group_words_.data() + b);
}

Cycles InstructionCache::walk_lru(int cpu, std::uint32_t g) {
    Cache& c = l1i_[static_cast<std::size_t>(cpu)];
    Cache::View v = c.view();
    std::uint64_t* const bits = bits_of(cpu);
    std::uint32_t* const slot_of = slot_of_.data() + static_cast<std::size_t>(cpu) * bits_lines_;
    std::uint64_t* const stamp = v.stamp;
    std::uint64_t clock = v.clock;
    Cycles stall = 0;
    std::uint64_t misses = 0, prefetched = 0;
    for (std::uint32_t i = group_begin_[g]; i < group_begin_[g + 1]; ++i) {
        const CodeSpan s = group_spans_[i];
        PrefetchCover cover;
        for (Line l = s.first, end = s.first + s.lines; l < end;) {
            // the lines of l's word from l on: hits up to its next missing line
            const Line stop = std::min(end, (l / 64 + 1) * 64);
            const std::uint64_t absent = bits[l / 64] >> (l % 64);
            const Line hits_end = absent ? std::min(stop, l + static_cast<Line>(std::countr_zero(absent))) : stop;
            for (; l < hits_end; ++l) stamp[slot_of[l]] = ++clock; // Cache::lookup's stamp
            if (l == stop) continue;
            v.clock = clock;
            fill_lru(v, bits, slot_of, l);
            clock = v.clock;
            ++misses;
            if (cover.demand(l, prefetch_)) stall += miss_;
            else ++prefetched;
            ++l;
        }
    }
    v.clock = clock;
    c.commit(v);
    stats_.hits += group_lines_[g] - misses;
    stats_.misses += misses;
    stats_.prefetched += prefetched;
    stats_.stall_cycles += stall;
    return stall;
}

void InstructionCache::fill_lru(Cache::View& v, std::uint64_t* bits, std::uint32_t* slot_of, Line l) {
    Line victim = 0;
    bool victim_dirty = false;
    std::uint32_t way = 0;
    const bool displaced = v.fill(l, false, victim, victim_dirty, way);
    bits[l / 64] &= ~(std::uint64_t{1} << (l % 64));
    slot_of[l] = v.set_of(l) * v.ways + way;
    if (displaced && victim < bits_lines_) bits[victim / 64] |= std::uint64_t{1} << (victim % 64);
}

template <std::uint32_t Ways, Line SetMask, bool AnyLine, std::uint32_t Prefetch>
Cycles InstructionCache::walk_random(int cpu, std::uint32_t g) {
    assert(Prefetch == ANY_PREFETCH || Prefetch == prefetch_);
    const std::uint32_t prefetch = Prefetch == ANY_PREFETCH ? prefetch_ : Prefetch;
    // the walk's misses (from bit 30) and those of them that were prefetched (bits 0-29: at most
    // the group's lines, below 2^30), in one count (count_miss)
    std::uint64_t counts = 0;
    // (with SetMask, the cache's sets' may-empty words lie just below the absence bits: lead_ is
    // (SetMask + 1) / 64)
    constexpr std::size_t lead = SetMask >= 63 ? (SetMask + 1) / 64 : 0;
    assert(SetMask < 63 || lead_ == lead);
    const WalkCpu* at = &walk_cpu_[static_cast<std::size_t>(cpu)];
    std::uint64_t* const bits = at->bits;
    // the resident bits are kept; the group known whole from here: a fill below that evicts one of
    // its lines clears it again
    assert(!line_keep_.empty() && g < 64);
    std::uint64_t resident = *at->resident | std::uint64_t{1} << g;
    Cache::View v = at->l1i->view();
    // (no dirty flags: a code line is never written, so every one stays 0 as the fill would set it)
    Line* const tag = v.tag;
    std::uint64_t* empty = v.empty;
    // (the block layout; with SetMask, found where a fill may take an empty way: not held over the walk)
    if constexpr (SetMask != 0 && Ways != 0 && SetMask < 63) empty = Cache::empty_from<SetMask + 1, Ways>(tag);
    const Line set_mask = SetMask ? SetMask : v.mask;
    const std::uint32_t ways = Ways ? Ways : v.ways, way_mask = Ways ? Ways - 1 : v.way_mask;
    std::uint32_t lfsr = v.lfsr;
    // Cache::fill of line l into its set, known full: Cache::replace's LFSR draw; the victim
    // leaves (evicted())
    const auto replace = [&](Line l) {
        const std::size_t base = static_cast<std::size_t>(l & set_mask) * ways;
        lfsr = lfsr_next(lfsr);
        const std::size_t w = base + (lfsr & way_mask);
        if (const Line t = tag[w], x = t - 1; !AnyLine || x < bits_lines_) {
            // (with SetMask, x and l lie in one set of 64 or more: x's bit in its word is l's)
            bits[x / 64] |= std::uint64_t{1} << (SetMask >= 63 ? l % 64 : x % 64);
            resident &= line_keep_[t]; // (by the tag: x's)
        }
        tag[w] = l + 1;
    };
    // Cache::fill of line l for a random-replacement cache of power-of-two sets and ways
    const auto fill = [&](Line l) {
        const std::uint32_t set = static_cast<std::uint32_t>(l & set_mask);
        std::uint64_t& e = empty[set];
        if (e != 0) [[unlikely]] { // the lowest empty way (the L1Is fill up early in a run)
            tag[static_cast<std::size_t>(set) * ways + lowest_set(e)] = l + 1;
            e &= e - 1;
        } else {
            replace(l);
        }
    };
    // lines of the span before covered_end were requested with a demand miss (the walk's lines
    // are below 2^32 - 1 - prefetch_: set_groups)
    std::uint32_t covered_end = 0;
    const GroupWord* p = group_word_range_[g].first;
    const GroupWord* const last = group_word_range_[g].last; // the group's sentinel
    assert(p != last); // a group of no lines is known whole from set_groups on: never walked
    for (;; ++p) {
        // a span's lines ascend: its first miss is a demand miss
        covered_end &= p->keep;
        const std::uint64_t mask = p->mask;
        std::uint64_t missing = mask & bits[p->word];
        if (missing == 0) [[likely]] continue; // every line of the span in this word present: all hits
        if (p == last) [[unlikely]] break; // the sentinel (its word all ones)
        std::uint64_t* const word = bits + p->word;
        const Line base_line = Line{p->word} * 64;
        if constexpr (SetMask >= 63) {
            // 64 consecutive lines lie in 64 different sets: a fill's victim is never a line of
            // this word, so the word's missing lines are known before the first fill, each is
            // filled once and the word's bits are all cleared at once. Its 64 lines' sets are those
            // of one may-empty word: where none of its missing lines' sets may have an empty way,
            // each fill is the draw, without the set's empty test.
            // (a memory xor: the word's value read for the test need not stay live past it)
#if defined(__x86_64__) && defined(__GNUC__)
            asm("xorq %[m], %[w]" : [w] "+m"(*word) : [m] "r"(missing) : "cc");
#else
            *word ^= missing;
#endif
            std::uint64_t& may = bits[static_cast<std::size_t>(p->word % lead) - lead];
            if ((missing & may) == 0) [[likely]] {
                do {
                    const Line l = base_line + lowest_set(missing);
                    replace(l);
                    count_miss(l, l + 1 + prefetch, counts, covered_end);
                    missing &= missing - 1;
                } while (missing != 0);
            } else {
                if constexpr (Ways != 0) {
                    Line* t = tag;
#if defined(__GNUC__)
                    asm volatile("" : "+r"(t)); // (computed here, not before the walk's loop)
#endif
                    empty = Cache::empty_from<SetMask + 1, Ways>(t);
                }
                do {
                    const auto b = static_cast<unsigned>(std::countr_zero(missing));
                    const Line l = base_line + b;
                    fill(l);
                    if (empty[l & set_mask] == 0) may &= ~(std::uint64_t{1} << b); // full from here
                    count_miss(l, l + 1 + prefetch, counts, covered_end);
                    missing &= missing - 1;
                } while (missing != 0);
            }
        } else {
            do {
                const auto b = static_cast<unsigned>(std::countr_zero(missing));
                const Line l = base_line + b;
                fill(l);
                *word &= ~(std::uint64_t{1} << b);
                count_miss(l, l + 1 + prefetch, counts, covered_end);
                // the span's lines above l in this word still missing (a fill may have evicted one)
                missing = mask & *word & (~std::uint64_t{1} << b);
            } while (missing != 0);
        }
    }
#if defined(__GNUC__)
    asm("" : "+r"(at)); // (its fields read again here: one register held over the loop, not three)
#endif
    at->l1i->commit_lfsr(lfsr);
    *at->resident = resident;
    const std::uint64_t misses = counts >> 30, prefetched = counts & ((std::uint64_t{1} << 30) - 1);
    stats_.hits += last->mask - misses; // the group's lines
    stats_.misses += misses;
    const Cycles stall = (misses - prefetched) * miss_;
    stats_.prefetched += prefetched;
    stats_.stall_cycles += stall;
    return stall;
}

} // namespace kdsim::mem
