#include "system/kernel_text.h"

namespace kdsim::system {

namespace {
std::uint32_t miss_cycles(const mem::MemoryConfig& c) { return c.levels[1].latency - c.levels[0].latency; }
} // namespace

KernelTextFetch::KernelTextFetch(const mem::MemoryConfig& c, int cpus)
    : icache_(c.l1i, c.line, miss_cycles(c), cpus) {
    const mem::KernelText text(c.l1i.functions, c.line, c.l1i.align);
    for (std::size_t i = 0; i < kernel::TEXTS; ++i) {
        const auto b = static_cast<std::uint32_t>(spans_.size());
        for (std::string_view fn : kernel::text_functions(static_cast<kernel::Text>(i)))
            if (const mem::CodeSpan s = text.executed(fn, c.l1i.executed); s.lines) spans_.push_back(s);
        ranges_[i] = {b, static_cast<std::uint32_t>(spans_.size())};
    }
}

std::uint64_t KernelTextFetch::lines(kernel::Text t) const {
    std::uint64_t n = 0;
    const auto [b, e] = ranges_[static_cast<std::size_t>(t)];
    for (std::uint32_t i = b; i < e; ++i) n += spans_[i].lines;
    return n;
}

} // namespace kdsim::system
