// The instruction fetch of a machine's CPUs (kernel::TextFetch) over its profile's L1I
// ([memory.l1i]): each kernel::Text's functions placed in the build's code (the profile's
// code-size table, in its order) and resolved once to the lines their fast path executes; a
// fetch runs them through the CPU's L1I. A miss stalls the hierarchy's second level's latency
// beyond an L1 hit (the L2 the profile has).
#pragma once

#include "kernel/text.h"
#include "mem/icache.h"

#include <array>
#include <memory>
#include <utility>
#include <vector>

namespace kdsim::system {

class KernelTextFetch : public kernel::TextFetch {
public:
    // Precondition: c.l1i.size > 0 and mem::check_config(c) passed.
    KernelTextFetch(const mem::MemoryConfig& c, int cpus);
    // A KernelTextFetch of `c`, as a KernelTextFetchA9 where its L1I walks as the Cortex-A9's
    // (mem::InstructionCache::walks_a9).
    static std::unique_ptr<KernelTextFetch> make(const mem::MemoryConfig& c, int cpus);
    engine::Cycles fetch(int cpu, kernel::Text t) override {
        static_assert(kernel::TEXTS <= 64, "every Text a group with a resident bit");
        const auto g = static_cast<std::uint32_t>(t);
        if (g >= kernel::TEXTS) __builtin_unreachable(); // (fetch_group's g < 64 test folded)
        return icache_.fetch_group(cpu, g);
    }
    const mem::InstructionCache& icache() const { return icache_; }
    // The lines of `t`'s functions that run (each function's executed part, whole lines).
    std::uint64_t lines(kernel::Text t) const { return lines_[static_cast<std::size_t>(t)]; }

protected:
    KernelTextFetch(KernelTextFetch&&) = default;
    mem::InstructionCache icache_;

private:
    std::array<std::uint64_t, kernel::TEXTS> lines_{};
};

// A KernelTextFetch whose L1I walks as the Cortex-A9's (fixed from set_groups on: nothing fetches
// spans past the groups' lines through it): a fetch is InstructionCache::fetch_group_a9, without
// fetch_group's test of the shape.
class KernelTextFetchA9 final : public KernelTextFetch {
public:
    // Precondition: t.icache().walks_a9().
    explicit KernelTextFetchA9(KernelTextFetch&& t) : KernelTextFetch(std::move(t)) {}
    engine::Cycles fetch(int cpu, kernel::Text t) override {
        const auto g = static_cast<std::uint32_t>(t);
        if (g >= kernel::TEXTS) __builtin_unreachable(); // (g < 64)
        return icache_.fetch_group_a9(cpu, g);
    }
};

} // namespace kdsim::system
