// The instruction fetch of a machine's CPUs (kernel::TextFetch) over its profile's L1I
// ([memory.l1i]): each kernel::Text's functions placed in the build's code (the profile's
// code-size table, in its order) and resolved once to the lines their fast path executes; a
// fetch runs them through the CPU's L1I. A miss stalls the hierarchy's second level's latency
// beyond an L1 hit (the L2 the profile has).
#pragma once

#include "kernel/text.h"
#include "mem/icache.h"

#include <array>
#include <utility>
#include <vector>

namespace kdsim::system {

class KernelTextFetch final : public kernel::TextFetch {
public:
    // Precondition: c.l1i.size > 0 and mem::check_config(c) passed.
    KernelTextFetch(const mem::MemoryConfig& c, int cpus);
    engine::Cycles fetch(int cpu, kernel::Text t) override {
        const auto [b, e] = ranges_[static_cast<std::size_t>(t)];
        return b == e ? 0 : icache_.fetch(cpu, std::span<const mem::CodeSpan>(spans_.data() + b, e - b));
    }
    const mem::InstructionCache& icache() const { return icache_; }
    // The bytes of `t`'s functions that run (each function's executed part, whole lines).
    std::uint64_t lines(kernel::Text t) const;

private:
    mem::InstructionCache icache_;
    std::vector<mem::CodeSpan> spans_; // every Text's, one after another
    std::array<std::pair<std::uint32_t, std::uint32_t>, kernel::TEXTS> ranges_{};
};

} // namespace kdsim::system
