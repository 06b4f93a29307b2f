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
    if (ways <= 64) empty_.assign(sets, ways == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << ways) - 1);
    if ((sets & (sets - 1)) == 0) mask_ = sets - 1;
    if ((ways & (ways - 1)) == 0) way_mask_ = ways - 1;
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
