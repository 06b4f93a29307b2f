#include "mem/cache.h"

#include <stdexcept>

namespace kdsim::mem {

Cache::Cache(std::uint32_t sets, std::uint32_t ways, Replacement repl) : sets_(sets), ways_(ways), repl_(repl) {
    if (sets == 0 || ways == 0) throw std::invalid_argument("Cache: sets and ways must be at least 1");
    const std::size_t n = static_cast<std::size_t>(sets) * ways;
    tag_.assign(n, 0);
    stamp_.assign(n, 0);
    dirty_.assign(n, 0);
    next_.assign(sets, 0);
}

int Cache::find(Line l) const {
    const std::size_t base = static_cast<std::size_t>(l % sets_) * ways_;
    for (std::uint32_t w = 0; w < ways_; ++w)
        if (tag_[base + w] == l + 1) return static_cast<int>(base + w);
    return -1;
}

bool Cache::lookup(Line l) {
    const int i = find(l);
    if (i < 0) return false;
    stamp_[i] = ++clock_;
    return true;
}

bool Cache::dirty(Line l) const {
    const int i = find(l);
    return i >= 0 && dirty_[i];
}

std::uint32_t Cache::victim(std::uint32_t set) {
    const std::size_t base = static_cast<std::size_t>(set) * ways_;
    for (std::uint32_t w = 0; w < ways_; ++w)
        if (tag_[base + w] == 0) return w; // an empty way first
    switch (repl_) {
    case Replacement::LRU: {
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
        return lfsr_ % ways_;
    }
    return 0;
}

std::optional<Evicted> Cache::fill(Line l, bool dirty) {
    const std::uint32_t set = static_cast<std::uint32_t>(l % sets_);
    const std::size_t i = static_cast<std::size_t>(set) * ways_ + victim(set);
    std::optional<Evicted> out;
    if (tag_[i] != 0) out = Evicted{tag_[i] - 1, dirty_[i] != 0};
    tag_[i] = l + 1;
    dirty_[i] = dirty;
    stamp_[i] = ++clock_;
    return out;
}

bool Cache::mark_dirty(Line l) {
    const int i = find(l);
    if (i < 0) return false;
    dirty_[i] = 1;
    return true;
}

std::optional<bool> Cache::invalidate(Line l) {
    const int i = find(l);
    if (i < 0) return std::nullopt;
    const bool was_dirty = dirty_[i] != 0;
    tag_[i] = 0;
    dirty_[i] = 0;
    stamp_[i] = 0;
    return was_dirty;
}

bool Cache::clean(Line l) {
    const int i = find(l);
    if (i < 0 || !dirty_[i]) return false;
    dirty_[i] = 0;
    return true;
}

} // namespace kdsim::mem
