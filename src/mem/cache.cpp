#include "mem/cache.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace kdsim::mem {

Cache::Cache(std::uint32_t sets, std::uint32_t ways, Replacement repl, Layout layout)
    : sets_(sets), ways_(ways), set_stride_(layout == Layout::WAY_MAJOR ? 1 : ways),
      way_stride_(layout == Layout::WAY_MAJOR ? sets : 1), span_(std::size_t{ways} * way_stride_), repl_(repl) {
    if (sets == 0 || ways == 0) throw std::invalid_argument("Cache: sets and ways must be at least 1");
    if (layout == Layout::WAY_MAJOR && repl == Replacement::LRU)
        throw std::invalid_argument("Cache: an LRU cache is set-major (its stamps are compared across a set)");
    const std::size_t n = static_cast<std::size_t>(sets) * ways;
    block_.assign(dirty_offset(sets, ways) / sizeof(std::uint64_t) + (n + sizeof(std::uint64_t) - 1) / sizeof(std::uint64_t), 0);
    rebase();
    stamp_.assign(n, 0);
    next_.assign(sets, 0);
    if (ways <= 64) std::fill_n(empty_, sets, ways == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << ways) - 1);
    if ((sets & (sets - 1)) == 0) mask_ = sets - 1;
    if ((ways & (ways - 1)) == 0) way_mask_ = ways - 1;
}

Cache::Cache(const Cache& o)
    : sets_(o.sets_), ways_(o.ways_), set_stride_(o.set_stride_), way_stride_(o.way_stride_),
      span_(o.span_), mask_(o.mask_), way_mask_(o.way_mask_), repl_(o.repl_), block_(o.block_),
      stamp_(o.stamp_), next_(o.next_), clock_(o.clock_), lfsr_(o.lfsr_) {
    rebase();
}

Cache& Cache::operator=(const Cache& o) {
    if (this != &o) {
        Cache c(o);
        *this = std::move(c);
    }
    return *this;
}

void Cache::rebase() {
    tag_ = reinterpret_cast<Tag*>(block_.data());
    empty_ = block_.data() + empty_offset(sets_, ways_) / sizeof(std::uint64_t);
    dirty_ = reinterpret_cast<std::uint8_t*>(tag_) + dirty_offset(sets_, ways_);
}

bool Cache::dirty(Line l) const {
    const int i = find(l);
    return i >= 0 && dirty_[i];
}

bool Cache::clean(Line l) {
    const int i = find(l);
    if (i < 0 || !dirty_[i]) return false;
    dirty_[i] = 0;
    return true;
}

} // namespace kdsim::mem
