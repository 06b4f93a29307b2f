#include "mem/icache.h"

#include <algorithm>
#include <bit>
#include <cmath>
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
}

Cycles InstructionCache::fetch(int cpu, std::span<const CodeSpan> spans) {
    Cache& c = l1i_[static_cast<std::size_t>(cpu)];
    Cycles stall = 0;
    std::uint64_t misses = 0, prefetched = 0, lines = 0;
    for (const CodeSpan& s : spans) {
        lines += s.lines;
        Line covered = 0; // lines up to covered_end (exclusive) were requested with a demand miss
        Line covered_end = 0;
        Evicted ev;
        for (Line l = s.first, end = s.first + s.lines; l < end; ++l) {
            if (c.lookup(l)) continue;
            c.fill(l, false, ev);
            ++misses;
            if (l >= covered && l < covered_end) {
                ++prefetched;
                continue;
            }
            stall += miss_;
            covered = l + 1;
            covered_end = l + 1 + prefetch_;
        }
    }
    stats_.hits += lines - misses;
    stats_.misses += misses;
    stats_.prefetched += prefetched;
    stats_.stall_cycles += stall;
    return stall;
}

} // namespace kdsim::mem
