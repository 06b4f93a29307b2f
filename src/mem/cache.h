// One set-associative cache: which lines it holds, which are dirty, and which way a fill
// replaces (LRU, round-robin per set as the PL310 and Cortex-A9 offer, or a deterministic
// pseudo-random choice). Physically indexed by line number modulo the number of sets. Every
// array is sized at construction; a lookup or fill never allocates.
#pragma once

#include "mem/config.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace kdsim::mem {

using Line = std::uint64_t; // a line number: byte address / line size

struct Evicted {
    Line line = 0;
    bool dirty = false;
};

class Cache {
public:
    // `sets` x `ways` lines. Throws std::invalid_argument when either is zero.
    Cache(std::uint32_t sets, std::uint32_t ways, Replacement repl);

    std::uint32_t sets() const { return sets_; }
    std::uint32_t ways() const { return ways_; }

    // True when `l` is present; a hit makes it the most recently used line of its set.
    bool lookup(Line l);
    // True when `l` is present, without touching the replacement state.
    bool contains(Line l) const { return find(l) >= 0; }
    bool dirty(Line l) const;
    // Installs `l` (not present) as most recently used; returns the line it displaced, if any.
    std::optional<Evicted> fill(Line l, bool dirty);
    // Marks a present line dirty; false when absent.
    bool mark_dirty(Line l);
    // Drops `l`; returns whether it was present and dirty (the dirty data is lost).
    std::optional<bool> invalidate(Line l);
    // Marks `l` clean; returns true when it was present and dirty (a write-back is due).
    bool clean(Line l);

private:
    int find(Line l) const;
    std::uint32_t victim(std::uint32_t set);

    std::uint32_t sets_, ways_;
    Replacement repl_;
    std::vector<Line> tag_;            // line + 1; 0 = empty way
    std::vector<std::uint64_t> stamp_; // LRU: last use
    std::vector<std::uint8_t> dirty_;
    std::vector<std::uint32_t> next_;  // ROUND_ROBIN: next way per set
    std::uint64_t clock_ = 0;
    std::uint32_t lfsr_ = 0xACE1u;
};

} // namespace kdsim::mem
