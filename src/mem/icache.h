// The L1 instruction cache of each CPU and the kernel text it fetches from. The kernel's code
// is laid out as the linker would lay out the functions of one build: one after another in a
// given order, each at its own address (KernelText). Running a piece of kernel code fetches the
// lines of the bytes it executes (a function's first `executed` fraction of its bytes: gcc lays
// a function's likely path out first and its error branches after); a line the CPU's L1I holds
// is a hit (the profile's cycles are those of warm code), a missing one is filled from the next
// level and stalls the front end for that level's hit latency beyond an L1 hit. The fetch unit's
// next-line prefetch: a demand miss also requests the `prefetch` lines after it, so a missing
// line among them costs nothing more (its fill overlaps the one before); the lines it would
// fetch beyond the end of the executed bytes are not modelled. Code lines are taken to be in
// the next level (the hot kernel text, some 100-200 KB, fits the L2s modelled) and do not
// occupy the data hierarchy: the L1I is the only instruction cache modelled.
// Mirrors no kernel code: the hardware the kernel runs on (Cortex-A9/A53/A72 TRMs, L1 memory system).
#pragma once

#include "engine/time.h"
#include "mem/cache.h"
#include "mem/config.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kdsim::mem {

using engine::Cycles;

// A run of consecutive code lines: [first, first + lines).
struct CodeSpan {
    Line first = 0;
    std::uint32_t lines = 0;
};

// The addresses of a build's functions: each placed after the one before it, its start rounded
// up to `align` bytes (a power of two). A function of 0 bytes (inlined into its callers) has no
// lines.
class KernelText {
public:
    KernelText(std::span<const KernelFunction> functions, std::uint32_t line, std::uint32_t align);
    // Whether the build lists `fn` (with or without code of its own).
    bool has(std::string_view fn) const { return index_.contains(std::string(fn)); }
    std::uint64_t bytes(std::string_view fn) const;
    // The lines of `fn`'s first ceil(bytes x executed) bytes; none for a function that has no code
    // or that the build does not list.
    CodeSpan executed(std::string_view fn, double executed) const;

private:
    struct Placed {
        std::uint64_t addr = 0, bytes = 0;
    };
    std::uint32_t line_;
    std::unordered_map<std::string, Placed> index_;
};

struct ICacheStats {
    std::uint64_t hits = 0, misses = 0; // lines; misses include the prefetched ones
    std::uint64_t prefetched = 0;       // missing lines that a next-line prefetch had requested
    Cycles stall_cycles = 0;
};

class InstructionCache {
public:
    // Throws std::invalid_argument when `c` has no size or ways that do not divide it in `line`
    // byte lines, or `cpus` is 0.
    InstructionCache(const L1iConfig& c, std::uint32_t line, std::uint32_t miss_cycles, int cpus);
    // Movable, not copyable (it keeps pointers into its own arrays: a move keeps them valid).
    InstructionCache(const InstructionCache&) = delete;
    InstructionCache& operator=(const InstructionCache&) = delete;
    InstructionCache(InstructionCache&&) = default;
    InstructionCache& operator=(InstructionCache&&) = default;

    // CPU `cpu` runs the code of `spans`, in order: the stall in cycles beyond warm code, and its
    // L1I updated.
    Cycles fetch(int cpu, std::span<const CodeSpan> spans);
    Cycles fetch(int cpu, CodeSpan s) { return fetch(cpu, std::span<const CodeSpan>(&s, 1)); }

    // Named pieces of code (each a list of spans), fetched by number: fetch_group(cpu, g) is
    // fetch(cpu, groups[g]) with the same result. Call once, before any fetch. Each CPU then keeps
    // a bit per line of the groups' code, set while its L1I does not hold the line (an absence
    // bit: a word's missing lines are its mask ANDed with it), so that where a hit leaves the
    // replacement state as it is (random and round-robin: a hit is presence alone) a fetch visits
    // only the missing lines, 64 lines a word.
    // Where a hit is presence alone, each CPU also keeps a bit per group (the first 64) set while
    // its L1I holds every line of the group: set when a fetch of the group begins (for a group of
    // no lines, from here on) and cleared when a fill evicts one of the group's lines, so that a
    // fetch of a group still whole there (nothing has evicted its lines since it last ran) is all
    // hits without a walk.
    // Throws std::invalid_argument for a group of 2^30 lines or more (its spans' lines added), and
    // for a line of a group at or above 2^32 - 1 - prefetch (a walk's prefetch cover, a line + 1 +
    // prefetch, is a 32-bit number).
    void set_groups(const std::vector<std::vector<CodeSpan>>& groups);
    Cycles fetch_group(int cpu, std::uint32_t g) {
        if (g < 64) {
            if ((resident_[static_cast<std::size_t>(cpu)] >> g) & 1) {
                stats_.hits += group_lines_[g]; // every line present: no state a hit would change
                return 0;
            }
            if (a9_groups_) return walk_a9(cpu, g);
        }
        return walk_group(cpu, g);
    }
    // Whether fetch_group of a group g < 64 is fetch_group_a9's: from set_groups on where the L1I
    // is the Cortex-A9's (random, 4 ways, 256 sets) with a prefetch of 1 and holds no line past
    // the groups', until a fetch() of a span past them.
    bool walks_a9() const { return a9_groups_; }
    // fetch_group(cpu, g) where walks_a9() and g < 64, without its tests of the shape.
    Cycles fetch_group_a9(int cpu, std::uint32_t g) {
        if ((resident_[static_cast<std::size_t>(cpu)] >> g) & 1) {
            stats_.hits += group_lines_[g]; // every line present: no state a hit would change
            return 0;
        }
        return walk_a9(cpu, g);
    }
    // Whether CPU `cpu`'s L1I is known to hold every line of group `g` (false: not known).
    bool group_resident(int cpu, std::uint32_t g) const {
        return g < 64 && ((resident_[static_cast<std::size_t>(cpu)] >> g) & 1) != 0;
    }
    bool holds(int cpu, Line l) const { return l1i_[static_cast<std::size_t>(cpu)].contains(l); }
    const ICacheStats& stats() const { return stats_; }
    std::uint32_t miss_cycles() const { return miss_; }

private:
    // A span's absence bits when they lie in one 64-bit word: word index and mask (0: they do not).
    struct SpanWord {
        std::size_t word = 0;
        std::uint64_t mask = 0;
    };
    // fetch(), with `words` (nullptr, or one per span) telling where a span's bits are all clear
    // (every line present) with one test.
    Cycles walk(int cpu, std::span<const CodeSpan> spans, const SpanWord* words);
    // walk of group g (whose spans all lie in the bits' range) where random_pow2_, by the group's
    // absence words (group_word_list_, known once by set_groups): each word's missing lines are its
    // mask ANDed with the word, filled in order by Cache::fill's steps for that case alone, over the
    // cache's arrays and LFSR held in locals (a Cache::View: the same ways, the same draws in the same
    // order) and the resident bits held in locals too, so that a fill's store does not make them be
    // reloaded; bits_lines_, prefetch_ and line_keep_ are read as members, at the victim's and the
    // demand miss's steps (a local copy is spilled: the loop has no register for it, and the member is
    // one operand through `this`). After each fill the word is read again above the filled line (a
    // fill may evict a later line of the span); with SetMask (64 sets or more) no fill evicts a line
    // of its own word (its 64 lines are in 64 sets), so a word's missing lines are known before its
    // first fill and its bits are cleared at once, and a word none of whose missing lines' sets may
    // have an empty way (its may-empty word: lead_) fills each by the draw alone, without the
    // set's empty test. The group's resident bit is set in the local at
    // the start; the LFSR and the resident bits are handed back at the end. Ways: the L1I's ways
    // where 4 (the Cortex-A9's: a constant), else 0 (read from the cache); SetMask: its sets less
    // one where 255 (the Cortex-A9's 256 sets), else 0.
    // AnyLine: an L1I may hold a line at or above bits_lines_ (foreign_), so a victim's line is
    // tested against the bits' range; without it every victim's line is in the range.
    // Prefetch: prefetch_ where it is that constant, else ANY_PREFETCH (read from prefetch_).
    static constexpr std::uint32_t ANY_PREFETCH = ~std::uint32_t{0};
    template <std::uint32_t Ways, Line SetMask, bool AnyLine, std::uint32_t Prefetch = ANY_PREFETCH>
    Cycles walk_random(int cpu, std::uint32_t g);
    // walk_random<4, 255, false, 1>: the Cortex-A9's L1I holding no line outside the bits' range,
    // with a prefetch of one line (every profile's) (flattened: the walk is its body, not a jump
    // away).
    [[gnu::flatten]] Cycles walk_a9(int cpu, std::uint32_t g);
    // fetch_group of a group not known whole, other than walk_a9's: walk_lru where the slots are
    // kept, else the group's resident bit set where kept (g < 64) and its lines walked.
    Cycles walk_group(int cpu, std::uint32_t g);
    // walk of group g where a hit reorders (LRU) and slot_of_ is kept: each line, in order, a hit
    // where its absence bit is clear, stamped in the slot slot_of_ gives (Cache::lookup's hit
    // without its search of the set; the hits up to a word's next missing line in a loop of
    // their own), else filled by Cache::View::fill (Cache::fill's steps) and its slot kept; over
    // the cache's arrays and clock held in a view, handed back at the end.
    Cycles walk_lru(int cpu, std::uint32_t g);
    // walk_lru's miss: `l` (in the bits' range, absent) filled by `v` (with a CPU's absence bits
    // and slots), its absence bit cleared, its slot kept, its victim's absence bit set. Out of
    // line: the hits' loop keeps its registers.
    [[gnu::noinline]] void fill_lru(Cache::View& v, std::uint64_t* bits, std::uint32_t* slot_of, Line l);
    // Installs `l` (absent) in `cpu`'s L1I, the absence bits of it and of the line it evicts and
    // its slot (where slot_of_ is kept) kept.
    void fill(Cache& c, int cpu, Line l);
    // `cpu`'s absence bits (after its lead).
    std::uint64_t* bits_of(int cpu) { return absent_.data() + static_cast<std::size_t>(cpu) * words_ + lead_; }
    // Line k (< bits_lines_) left `cpu`'s L1I: its absence bit set and the resident bits of its
    // groups cleared.
    void evicted(std::uint64_t* bits, int cpu, Line k) {
        bits[k / 64] |= std::uint64_t{1} << (k % 64);
        if (!line_keep_.empty()) resident_[static_cast<std::size_t>(cpu)] &= line_keep_[k + 1];
    }

    std::vector<Cache> l1i_; // per CPU
    std::uint32_t miss_;
    std::uint32_t prefetch_;
    bool hits_reorder_ = true;
    // random replacement, sets and ways powers of two (over 1), at most 64 ways (the Cortex-A9's
    // L1I): a group fetch with absence bits walks through walk_random
    bool random_pow2_ = false;
    bool four_ways_ = false; // random_pow2_ with 4 ways: walk_random<4, 0>
    bool a9_ = false;        // four_ways_ with 256 sets (the Cortex-A9's L1I): walk_random<4, 255, *>
    // some L1I may hold a line at or above bits_lines_ (every line, before set_groups): kept by
    // set_groups (from the L1Is' tags) and fetch() (set by a span that reaches past the range: a
    // group's spans lie in it)
    bool foreign_ = false;
    bool a9_groups_ = false; // a9_, groups set, no foreign_ line and a prefetch of 1: walk_a9
    // groups: their spans one after another, group g's at [group_begin_[g], group_begin_[g + 1])
    std::vector<CodeSpan> group_spans_;
    std::vector<SpanWord> group_words_; // per group span (where absence bits are kept)
    std::vector<std::uint32_t> group_begin_{0};
    // A group's spans as the words of absence bits they cover, span by span in the group's order
    // and each span's words in ascending order: the word, its bits of the span's lines, and
    // `keep`: 0 where it is a span's first word, else all ones (a next-line prefetch covers lines
    // of its own span alone: the prefetch cover, ANDed with it, starts anew at each span; 32 bits,
    // as walk_random's cover is, so that the AND takes it as it is). 16 bytes: four to a host
    // cache line, none across two (the list is read again at every walk, mostly from the L2). A
    // span's first word lying in the entry before's word, above its lines by more than the
    // prefetch reaches, joins that entry (its lines walked in the same order, its first miss a
    // demand miss either way): one word read for both. Each group's entries end with a sentinel:
    // the CPU's sentinel word (all ones, after its bits) under a mask of the group's line count
    // (not 0: a group of no lines is never walked), so that a walk tests for its end only at an
    // entry with missing lines and takes the group's line count from there.
    // Kept where random_pow2_, group g's at [group_word_range_[g].first, group_word_range_[g].last],
    // `last` its sentinel (pointers: one load each at a walk's start).
    struct GroupWord {
        std::uint32_t word = 0;
        std::uint32_t keep = 0;
        std::uint64_t mask = 0;
    };
    static_assert(sizeof(GroupWord) == 16);
    std::vector<GroupWord> group_word_list_;
    struct GroupWordRange {
        const GroupWord* first;
        const GroupWord* last;
    };
    std::vector<GroupWordRange> group_word_range_;
    // per CPU, where random_pow2_: its absence bits (bits_of), its L1I and its resident bits, for a
    // walk's start and end
    struct WalkCpu {
        std::uint64_t* bits;
        Cache* l1i;
        std::uint64_t* resident;
    };
    std::vector<WalkCpu> walk_cpu_;
    // absence bits of lines [0, bits_lines_) (to the groups' last line), per CPU `words_` words:
    // `lead_` words, then the bits (the last word's bits past the range set too, and never read),
    // then the sentinel word (all ones, never written: the group word list's sentinels').
    // Where a9_ the lead is 4 words, a bit per set of the CPU's L1I (its may-empty words), clear
    // once the set is known to have no empty way: from the L1I's empty words at set_groups, and
    // cleared by walk_random where a fill leaves its set full or finds it so (no way of an L1I is
    // ever emptied, so a clear bit stays true); else no lead.
    Line bits_lines_ = 0;
    std::size_t words_ = 0, lead_ = 0;
    std::vector<std::uint64_t> absent_;
    // where a hit reorders (LRU) and the slots fit 32 bits: per CPU and line of the bits' range,
    // the slot (set x ways + way) of its L1I that holds it (read only while its absence bit is
    // clear: a line keeps its way while it stays)
    std::vector<std::uint32_t> slot_of_;
    // per CPU, a bit per group (the first 64) whose every line its L1I holds; always 0 where a hit
    // reorders (LRU: each hit must be looked up) or without groups
    std::vector<std::uint64_t> resident_;
    // per line of the bits' range, at its tag (line + 1: a victim's tag indexes it as it is; entry 0
    // unused): the groups (< 64) not holding it; empty where the resident bits are not kept
    std::vector<std::uint64_t> line_keep_;
    std::vector<std::uint64_t> group_lines_;  // per group: its lines, counted per span
    ICacheStats stats_;
};

} // namespace kdsim::mem
