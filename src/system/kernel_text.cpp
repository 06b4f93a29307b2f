#include "system/kernel_text.h"

#include <vector>

namespace kdsim::system {

namespace {
std::uint32_t miss_cycles(const mem::MemoryConfig& c) { return c.levels[1].latency - c.levels[0].latency; }
} // namespace

KernelTextFetch::KernelTextFetch(const mem::MemoryConfig& c, int cpus)
    : icache_(c.l1i, c.line, miss_cycles(c), cpus) {
    const mem::KernelText text(c.l1i.functions, c.line, c.l1i.align);
    std::vector<std::vector<mem::CodeSpan>> groups(kernel::TEXTS); // group i: Text i's spans
    for (std::size_t i = 0; i < kernel::TEXTS; ++i)
        for (std::string_view fn : kernel::text_functions(static_cast<kernel::Text>(i)))
            if (const mem::CodeSpan s = text.executed(fn, c.l1i.executed); s.lines) {
                groups[i].push_back(s);
                lines_[i] += s.lines;
            }
    icache_.set_groups(groups);
}

std::unique_ptr<KernelTextFetch> KernelTextFetch::make(const mem::MemoryConfig& c, int cpus) {
    KernelTextFetch t(c, cpus);
    if (t.icache().walks_a9()) return std::make_unique<KernelTextFetchA9>(std::move(t));
    return std::unique_ptr<KernelTextFetch>(new KernelTextFetch(std::move(t))); // (its move is protected)
}

} // namespace kdsim::system
