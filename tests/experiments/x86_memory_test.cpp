// The x86 profiles' [memory] tables (issue 12, session 18): x86/amd-zen4, x86/amd-zen5 and
// x86/intel-broadwell-e5-1650v4. The claims: each hierarchy is consistent as the files type it
// (sizes growing, associativity x line dividing each size, latencies growing, the L3 shared), and
// a frame a device wrote is read from where the platform puts it: the LLC on the Xeon (Intel DDIO,
// dma_write_allocate), DRAM on the AMD parts (no cache injection by default). Every expected stall
// is worked out by hand from the figures typed in the profiles.
#include "helpers.h"

#include "mem/memory.h"

#include <gtest/gtest.h>

#include <string>

namespace kdsim {
namespace {

using namespace testing; // ROOT (helpers.h)

system::Profile x86(const std::string& name) { return scenario::load_profile(ROOT / ("data/profiles/x86/" + name + ".toml")); }

// L1 < L2 < L3 in size and latency, each size a whole number of sets of ways x 64-byte lines, the
// two private levels before the one shared L3, coherent DMA, a warm copy figure (the datapath runs
// on the hierarchy) and an instruction cache over the amd64 build's function sizes.
void expect_consistent_x86_hierarchy(const system::Profile& p) {
    ASSERT_TRUE(p.memory.has_value()) << p.name;
    const mem::MemoryConfig& m = *p.memory;
    EXPECT_EQ(m.line, 64u) << p.name;
    ASSERT_EQ(m.levels.size(), 3u) << p.name;
    for (std::size_t k = 0; k < 3; ++k) {
        const auto& l = m.levels[k];
        EXPECT_EQ(l.size % (std::uint64_t{l.ways} * m.line), 0u) << p.name << " " << l.name;
        if (k > 0) {
            EXPECT_LT(m.levels[k - 1].size, l.size) << p.name << " " << l.name;
            EXPECT_LT(m.levels[k - 1].latency, l.latency) << p.name << " " << l.name;
        }
        EXPECT_EQ(l.shared, k == 2) << p.name << " " << l.name;
    }
    EXPECT_TRUE(m.dma_coherent) << p.name;
    EXPECT_GT(m.copy_warm, 0) << p.name;
    EXPECT_GT(m.dram_latency_ns, 0) << p.name;
    EXPECT_LE(m.core_bandwidth, m.dram_bandwidth) << p.name;
    EXPECT_EQ(m.l1i.code, "kernel/code-sizes-6.1.0-47-amd64.tsv") << p.name;
    EXPECT_FALSE(m.l1i.functions.empty()) << p.name;
    EXPECT_DOUBLE_EQ(m.l1i.executed, 0.4) << p.name; // the ARM profiles' estimate, cited as such
}

TEST(X86Memory, TheZen4HierarchyIs32KiB8WayThen1MiB8WayThen32MiB16WayWithGrowingLatencies) {
    auto p = x86("amd-zen4");
    expect_consistent_x86_hierarchy(p);
    const auto& l = p.memory->levels;
    EXPECT_EQ(l[0].size, 32u * 1024);
    EXPECT_EQ(l[0].ways, 8u);
    EXPECT_EQ(l[1].size, 1024u * 1024);
    EXPECT_EQ(l[1].ways, 8u);
    EXPECT_EQ(l[2].size, 32u * 1024 * 1024);
    EXPECT_EQ(l[2].ways, 16u);
    // 32 KiB / (8 x 64 B) = 64 sets; 1 MiB / (8 x 64) = 2048; 32 MiB / (16 x 64) = 32768
    EXPECT_EQ(l[0].size / (l[0].ways * 64), 64u);
    EXPECT_EQ(l[1].size / (l[1].ways * 64), 2048u);
    EXPECT_EQ(l[2].size / (l[2].ways * 64), 32768u);
    EXPECT_FALSE(p.memory->dma_write_allocate); // no cache injection on EPYC by default
    // core_bandwidth is Little's law over the profile's own figures: 24 x 64 B / 132 ns
    EXPECT_NEAR(p.memory->core_bandwidth, 24 * 64 / 132e-9, 0.01e10);
}

TEST(X86Memory, TheZen5AndBroadwellHierarchiesAreConsistentAndOnlyTheXeonAllocatesDmaIntoItsLlc) {
    auto z5 = x86("amd-zen5");
    expect_consistent_x86_hierarchy(z5);
    EXPECT_FALSE(z5.memory->dma_write_allocate);
    auto bw = x86("intel-broadwell-e5-1650v4");
    expect_consistent_x86_hierarchy(bw);
    EXPECT_TRUE(bw.memory->dma_write_allocate); // Intel DDIO
    // the E5-1650 v4's 15 MB L3: 15 x 2^20 / (20 ways x 64 B) = 12,288 sets
    EXPECT_EQ(bw.memory->levels[2].size, 15u * 1024 * 1024);
    EXPECT_EQ(bw.memory->levels[2].size / (bw.memory->levels[2].ways * 64), 12288u);
}

// A 1514-byte frame (+ 4 FCS) written by the NIC at a line-aligned buffer, read by the driver 1 ms
// later (the DRAM channel long idle again).
constexpr std::size_t FRAME = 1514;
constexpr engine::Tick LATER = engine::PS_PER_MS;

TEST(X86Memory, OnTheBroadwellXeonADeviceWrittenFrameIsReadFromTheLlcAtL3LessL1PerLine) {
    auto p = x86("intel-broadwell-e5-1650v4");
    mem::MemorySystem m(*p.memory, 1, p.clock_hz);
    const mem::Addr a = m.alloc(2048, 64), b = m.alloc(2048, 64);
    m.device_write(0, a, FRAME + 4);
    m.device_write(0, b, FRAME + 4);
    // eth_type_trans's 14 bytes: one line, an L3 hit beyond an L1 hit: 40 - 4 = 36 cycles
    EXPECT_EQ(m.read(0, LATER, a, 14), 40u - 4u);
    // the whole frame: ceil(1514 / 64) = 24 lines, each an L3 hit (hits add up, no prefetch
    // for hits): 24 x 36 = 864 cycles
    EXPECT_EQ(m.read(0, LATER, b, FRAME), 24u * (40u - 4u));
    EXPECT_EQ(m.stats().dram_demand_lines, 0u);
    EXPECT_EQ(m.stats().dram_write_allocates, 0u);
}

TEST(X86Memory, OnZen4ADeviceWrittenFrameIsReadFromDramAtItsLatencyLessL1) {
    auto p = x86("amd-zen4");
    mem::MemorySystem m(*p.memory, 1, p.clock_hz);
    const mem::Addr a = m.alloc(2048, 64);
    m.device_write(0, a, FRAME + 4);
    // one demand miss: 132 ns x 2.596 GHz = 342.67 cycles, less the L1's 4 = 338.67 (the stall
    // rounds to whole cycles)
    EXPECT_NEAR(static_cast<double>(m.read(0, LATER, a, 14)), 132e-9 * 2.596e9 - 4, 1.0);
    EXPECT_EQ(m.stats().dram_demand_lines, 1u);
}

} // namespace
} // namespace kdsim
