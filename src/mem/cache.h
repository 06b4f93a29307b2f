// One set-associative cache: which lines it holds, which are dirty, and which way a fill
// replaces (LRU, round-robin per set as the PL310 and Cortex-A9 offer, or a deterministic
// pseudo-random choice). Physically indexed by line number modulo the number of sets. Every
// array is sized at construction; a lookup or fill never allocates.
#pragma once

#include "mem/config.h"

#include <bit>
#include <cassert>
#include <cstdint>
#include <optional>
#include <vector>

namespace kdsim::mem {

using Line = std::uint64_t; // a line number: byte address / line size
using Tag = std::uint64_t;  // a way's tag: its line + 1 (0: empty)

struct Evicted {
    Line line = 0;
    bool dirty = false;
};

// Where way w of set s sits in the per-way arrays (the tags, the dirty flags, the LRU stamps):
// SET_MAJOR at s x ways + w (a set's ways side by side: a tag search reads one run), WAY_MAJOR at
// w x sets + s (a way's sets side by side: consecutive lines that sit in the same way of
// consecutive sets, as a received buffer's lines do in the PL310, share host cache lines).
enum class Layout : std::uint8_t { SET_MAJOR, WAY_MAJOR };

class Cache {
public:
    // `sets` x `ways` lines. Throws std::invalid_argument when either is zero.
    Cache(std::uint32_t sets, std::uint32_t ways, Replacement repl, Layout layout = Layout::SET_MAJOR);
    // A copy has its own block (its pointers into the block rebased); a move keeps the block.
    Cache(const Cache& o);
    Cache& operator=(const Cache& o);
    Cache(Cache&&) noexcept = default;
    Cache& operator=(Cache&&) noexcept = default;

    // The block layout: the tags (one Line a way), then the sets' empty words (one std::uint64_t a
    // set), then the dirty flags (one byte a way), in one allocation. Byte offsets of the empty
    // words and of the flags from the tag base of a `sets` x `ways` cache: a loop over a cache of
    // a shape known at compile time reaches all three arrays from the one tag pointer.
    static constexpr std::size_t empty_offset(std::uint32_t sets, std::uint32_t ways) {
        return (std::size_t{sets} * ways * sizeof(Tag) + 7) / 8 * 8;
    }
    static constexpr std::size_t dirty_offset(std::uint32_t sets, std::uint32_t ways) {
        return empty_offset(sets, ways) + std::size_t{sets} * sizeof(std::uint64_t);
    }
    // The empty words and the dirty flags of a cache of `Sets` x `Ways`, from its tag base.
    template <std::uint32_t Sets, std::uint32_t Ways>
    static std::uint64_t* empty_from(Tag* tag) {
        return reinterpret_cast<std::uint64_t*>(reinterpret_cast<std::uint8_t*>(tag) + empty_offset(Sets, Ways));
    }
    template <std::uint32_t Sets, std::uint32_t Ways>
    static std::uint8_t* dirty_from(Tag* tag) {
        return reinterpret_cast<std::uint8_t*>(tag) + dirty_offset(Sets, Ways);
    }

    std::uint32_t sets() const { return sets_; }
    std::uint32_t ways() const { return ways_; }
    Layout layout() const { return set_stride_ == 1 && ways_ > 1 ? Layout::WAY_MAJOR : Layout::SET_MAJOR; }
    // The index of way `w` of set `set` in the per-way arrays (the layout above).
    std::size_t slot(std::uint32_t set, std::uint32_t w) const {
        return static_cast<std::size_t>(set) * set_stride_ + static_cast<std::size_t>(w) * way_stride_;
    }
    // Whether a hit changes the replacement state (LRU); under the others a hit is presence alone.
    bool hits_reorder() const { return repl_ == Replacement::LRU; }

    // True when `l` is present; a hit makes it the most recently used line of its set.
    bool lookup(Line l);
    // True when `l` is present, without touching the replacement state.
    bool contains(Line l) const { return find(l) >= 0; }
    bool dirty(Line l) const;
    // Installs `l` (not present) as most recently used; returns the line it displaced, if any.
    std::optional<Evicted> fill(Line l, bool dirty);
    // The same fill, the displaced line in `out`: returns whether there was one.
    bool fill(Line l, bool dirty, Evicted& out);
    // The same fill, also giving the way `l` now sits in (it stays there until evicted or invalidated).
    bool fill(Line l, bool dirty, Evicted& out, std::uint32_t& way);
    // Marks a present line dirty; false when absent.
    bool mark_dirty(Line l);
    // Drops `l`; returns whether it was present and dirty (the dirty data is lost).
    std::optional<bool> invalidate(Line l);
    // Marks `l` clean; returns true when it was present and dirty (a write-back is due).
    bool clean(Line l);

    // The way of its set that `l` sits in, or -1 when absent (a tag search).
    int way_of(Line l) const;
    // lookup's hit, mark_dirty, invalidate (returns whether it was dirty) and clean of a line the
    // caller knows to sit in way `w` (the way fill gave; MemorySystem's way hints): no tag search.
    // The line must be there, in that way (debug builds check it against the search).
    void touch_at(Line l, std::uint32_t w);
    void mark_dirty_at(Line l, std::uint32_t w);
    bool invalidate_at(Line l, std::uint32_t w);
    bool clean_at(Line l, std::uint32_t w);

    // The cache's arrays and the scalar state a fill changes (the LFSR, the LRU clock), copied so
    // that a run of fills (MemorySystem's lines that no cache holds) keeps them in the caller's
    // registers instead of reloading them through the cache after every store. Its fill is
    // Cache::fill itself: the same ways, the same draws in the same order. Between view() and
    // commit() the cache is used through this view alone.
    struct View {
        Tag* tag;
        std::uint8_t* dirty;
        std::uint64_t* empty;
        std::uint64_t* stamp;
        std::uint32_t* next;
        Line mask;
        std::uint32_t sets, ways, way_mask;
        std::uint32_t set_stride, way_stride; // Cache::slot's
        Replacement repl;
        std::uint32_t lfsr;
        std::uint64_t clock;

        std::uint32_t set_of(Line l) const { return static_cast<std::uint32_t>(mask ? (l & mask) : (l % sets)); }
        // Cache::fill (below): the displaced line and its dirty flag in `victim` and `victim_dirty`
        // (set only when one was displaced); `way`: the way `l` now sits in.
        bool fill(Line l, bool d, Line& victim, bool& victim_dirty, std::uint32_t& way);
        // Cache::mark_dirty_at, the way known.
        std::size_t slot(std::uint32_t set, std::uint32_t w) const {
            return static_cast<std::size_t>(set) * set_stride + static_cast<std::size_t>(w) * way_stride;
        }
        void mark_dirty_at(Line l, std::uint32_t w) { dirty[slot(set_of(l), w)] = 1; }
        std::uint32_t replace(std::uint32_t set);
    };
    View view() {
        return View{tag_, dirty_, empty_, stamp_.data(), next_.data(), mask_, sets_, ways_,
                    way_mask_, set_stride_, way_stride_, repl_, lfsr_, clock_};
    }
    // Takes back the scalar state of a view made by view().
    void commit(const View& v) {
        lfsr_ = v.lfsr;
        clock_ = v.clock;
    }
    // commit() for a view whose fills drew but never touched the LRU clock (a random cache's): the
    // LFSR alone goes back.
    void commit_lfsr(std::uint32_t lfsr) { lfsr_ = lfsr; }
    // The other way: a view made by view() takes the scalar state the cache has now (its arrays
    // and shape never change, so nothing else of the view is stale).
    void refresh(View& v) const {
        v.lfsr = lfsr_;
        v.clock = clock_;
    }

private:
    // The slot of `l` in the per-way arrays, or -1 when absent (the tag search).
    int find(Line l) const;
    // The way of slot `i` of set `set`.
    std::uint32_t way_at(std::size_t i, std::uint32_t set) const;
    std::uint32_t victim(std::uint32_t set);
    // The way a fill of a full set replaces (the replacement policy's choice).
    std::uint32_t replace(std::uint32_t set);

    // The slot of way `w` of `l`'s set, checked against the tag search in debug builds.
    std::size_t slot_at(Line l, std::uint32_t w) const {
        const std::size_t i = slot(set_of(l), w);
        assert(w < ways_ && find(l) == static_cast<int>(i));
        return i;
    }
    std::uint32_t set_of(Line l) const {
        return static_cast<std::uint32_t>(mask_ ? (l & mask_) : (l % sets_));
    }

    std::uint32_t sets_, ways_;
    std::uint32_t set_stride_, way_stride_; // slot(): (ways, 1) set-major, (1, sets) way-major
    std::size_t span_;                      // ways x way_stride_: a set's first slot to past its last
    Line mask_ = 0; // sets - 1 when sets is a power of two (else 0: modulo)
    std::uint32_t way_mask_ = 0;  // ways - 1 when ways is a power of two (else 0: modulo)
    Replacement repl_;
    // Points the arrays into block_ (the block layout above).
    void rebase();

    std::vector<std::uint64_t> block_; // the tags, the empty words and the dirty flags
    Tag* tag_ = nullptr;               // line + 1; 0 = empty way
    std::uint64_t* empty_ = nullptr;   // per set, a bit per empty way (caches of at most 64 ways)
    std::uint8_t* dirty_ = nullptr;
    std::vector<std::uint64_t> stamp_; // LRU: last use
    std::vector<std::uint32_t> next_;  // ROUND_ROBIN: next way per set
    std::uint64_t clock_ = 0;
    std::uint32_t lfsr_ = 0xACE1u;
};

// The hot paths, inline: the memory system calls them for every line it touches.
inline int Cache::find(Line l) const {
    const std::size_t first = static_cast<std::size_t>(set_of(l)) * set_stride_;
    const std::size_t end = first + span_, step = way_stride_; // (a local: GCC reloaded the member every way)
    for (std::size_t i = first; i != end; i += step)
        if (tag_[i] == l + 1) return static_cast<int>(i);
    return -1;
}

inline bool Cache::lookup(Line l) {
    const int i = find(l);
    if (i < 0) return false;
    stamp_[i] = ++clock_;
    return true;
}

inline std::uint32_t Cache::victim(std::uint32_t set) {
    if (ways_ <= 64) { // the lowest empty way first
        if (empty_[set]) return static_cast<std::uint32_t>(std::countr_zero(empty_[set]));
    } else {
        for (std::uint32_t w = 0; w < ways_; ++w)
            if (tag_[slot(set, w)] == 0) return w;
    }
    return replace(set);
}

inline std::uint32_t Cache::replace(std::uint32_t set) {
    switch (repl_) {
    case Replacement::LRU: { // (set-major: the constructor's rule)
        const std::size_t base = static_cast<std::size_t>(set) * ways_;
        std::uint32_t v = 0;
        for (std::uint32_t w = 1; w < ways_; ++w)
            if (stamp_[base + w] < stamp_[base + v]) v = w;
        return v;
    }
    case Replacement::ROUND_ROBIN: {
        const std::uint32_t v = next_[set];
        next_[set] = (v + 1) % ways_;
        return v;
    }
    case Replacement::RANDOM: // 16-bit Galois LFSR (taps 16, 14, 13, 11): deterministic per cache
        lfsr_ = (lfsr_ >> 1) ^ (-(lfsr_ & 1u) & 0xB400u);
        return way_mask_ ? (lfsr_ & way_mask_) : lfsr_ % ways_; // the same way: x % 2^n = x & (2^n - 1)
    }
    return 0;
}

inline bool Cache::fill(Line l, bool dirty, Evicted& out) {
    std::uint32_t way;
    return fill(l, dirty, out, way);
}

inline bool Cache::fill(Line l, bool dirty, Evicted& out, std::uint32_t& way) {
    const std::uint32_t set = set_of(l);
    std::uint32_t w;
    bool displaced;
    if (ways_ <= 64) { // empty_ is exact: a set without an empty way is full, its victim displaced
        std::uint64_t& e = empty_[set];
        displaced = e == 0;
        if (!displaced) { // victim(): the lowest empty way
            w = static_cast<std::uint32_t>(std::countr_zero(e));
            e &= e - 1;
        } else {
            w = replace(set);
        }
    } else {
        w = victim(set);
        displaced = tag_[slot(set, w)] != 0;
    }
    const std::size_t i = slot(set, w);
    if (displaced) out = Evicted{Line{tag_[i]} - 1, dirty_[i] != 0};
    tag_[i] = static_cast<Tag>(l + 1);
    dirty_[i] = dirty;
    if (repl_ == Replacement::LRU) stamp_[i] = ++clock_; // only LRU reads the stamps
    way = w;
    return displaced;
}

inline std::optional<Evicted> Cache::fill(Line l, bool dirty) {
    Evicted e;
    if (fill(l, dirty, e)) return e;
    return std::nullopt;
}

inline bool Cache::mark_dirty(Line l) {
    const int i = find(l);
    if (i < 0) return false;
    dirty_[i] = 1;
    return true;
}

inline std::uint32_t Cache::way_at(std::size_t i, std::uint32_t set) const {
    return static_cast<std::uint32_t>(way_stride_ == 1 ? i - static_cast<std::size_t>(set) * ways_ : (i - set) / sets_);
}

inline std::optional<bool> Cache::invalidate(Line l) {
    const int i = find(l);
    if (i < 0) return std::nullopt;
    return invalidate_at(l, way_at(static_cast<std::size_t>(i), set_of(l)));
}

inline int Cache::way_of(Line l) const {
    const int i = find(l);
    return i < 0 ? -1 : static_cast<int>(way_at(static_cast<std::size_t>(i), set_of(l)));
}

inline void Cache::touch_at(Line l, std::uint32_t w) { stamp_[slot_at(l, w)] = ++clock_; }

inline void Cache::mark_dirty_at(Line l, std::uint32_t w) { dirty_[slot_at(l, w)] = 1; }

inline bool Cache::invalidate_at(Line l, std::uint32_t w) {
    const std::size_t i = slot_at(l, w);
    const bool was_dirty = dirty_[i] != 0;
    if (ways_ <= 64) empty_[set_of(l)] |= std::uint64_t{1} << w;
    tag_[i] = 0;
    dirty_[i] = 0;
    stamp_[i] = 0;
    return was_dirty;
}

inline bool Cache::clean_at(Line l, std::uint32_t w) {
    const std::size_t i = slot_at(l, w);
    if (!dirty_[i]) return false;
    dirty_[i] = 0;
    return true;
}

[[gnu::always_inline]] inline std::uint32_t Cache::View::replace(std::uint32_t set) {
    switch (repl) {
    case Replacement::LRU: { // (set-major)
        const std::size_t base = static_cast<std::size_t>(set) * ways;
        std::uint32_t v = 0;
        for (std::uint32_t w = 1; w < ways; ++w)
            if (stamp[base + w] < stamp[base + v]) v = w;
        return v;
    }
    case Replacement::ROUND_ROBIN: {
        const std::uint32_t v = next[set];
        next[set] = (v + 1) % ways;
        return v;
    }
    case Replacement::RANDOM: // Cache::replace's LFSR
        lfsr = (lfsr >> 1) ^ (-(lfsr & 1u) & 0xB400u);
        return way_mask ? (lfsr & way_mask) : lfsr % ways;
    }
    return 0;
}

[[gnu::always_inline]] inline bool Cache::View::fill(Line l, bool d, Line& victim, bool& victim_dirty, std::uint32_t& way) {
    const std::uint32_t set = set_of(l);
    std::uint32_t w;
    bool displaced;
    if (ways <= 64) { // as Cache::fill: the lowest empty way, or the policy's victim of a full set
        std::uint64_t& e = empty[set];
        displaced = e == 0;
        if (!displaced) {
            w = static_cast<std::uint32_t>(std::countr_zero(e));
            e &= e - 1;
        } else {
            w = replace(set);
        }
    } else {
        w = 0;
        while (w < ways && tag[slot(set, w)] != 0) ++w;
        if (w == ways) w = replace(set);
        displaced = tag[slot(set, w)] != 0;
    }
    const std::size_t i = slot(set, w);
    if (displaced) {
        victim = Line{tag[i]} - 1;
        victim_dirty = dirty[i] != 0;
    }
    tag[i] = static_cast<Tag>(l + 1);
    dirty[i] = d;
    if (repl == Replacement::LRU) stamp[i] = ++clock;
    way = w;
    return displaced;
}

} // namespace kdsim::mem
