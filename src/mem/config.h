// The figures of a machine's memory hierarchy (the [memory] tables of a profile) and their
// consistency rules. Header-only types so that system::Profile can hold them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kdsim::mem {

// The most demand misses one core can have in flight (MemoryConfig::fill_buffers).
inline constexpr std::uint32_t MAX_FILL_BUFFERS = 64;
// Load sites the stride prefetcher tells apart per CPU (Access::site 1 .. STRIDE_SITES - 1).
inline constexpr std::uint32_t STRIDE_SITES = 16;

enum class Replacement : std::uint8_t { LRU, ROUND_ROBIN, RANDOM };

struct CacheLevelConfig {
    std::string name;             // "l1d", "l2", ...: the profile's key
    std::uint64_t size = 0;       // bytes
    std::uint32_t ways = 0;
    std::uint32_t latency = 0;    // load-to-use, core cycles
    bool shared = false;          // one for all CPUs (else one per CPU)
    Replacement replacement = Replacement::LRU;
};

// One function of the kernel build whose text the L1I fetches (data/kernel/code-sizes-*.tsv).
struct KernelFunction {
    std::string name;
    std::uint64_t bytes = 0; // 0: inlined into its callers (or not built)
};

// The L1 instruction cache of each CPU ([memory.l1i]) and the kernel text it fetches. A miss
// stalls the next level's latency beyond an L1 hit (the hierarchy's second level, from the levels).
struct L1iConfig {
    std::uint64_t size = 0;       // bytes; 0: no instruction cache modelled (code is warm)
    std::uint32_t ways = 0;
    Replacement replacement = Replacement::LRU;
    std::uint32_t prefetch = 0;   // lines after a demand miss that the fetch unit requests with it
    double executed = 0;          // the fraction of a function's bytes its fast path runs, (0, 1]
    std::uint32_t align = 0;      // a function's start, bytes (a power of two)
    std::string code;             // the build's code sizes, as the profile names them
    std::vector<KernelFunction> functions; // the build's functions, in link order
};

struct MemoryConfig {
    std::uint32_t line = 64;             // bytes, every level
    std::vector<CacheLevelConfig> levels; // nearest first; private levels before shared ones
    double dram_latency_ns = 0;          // load-to-use of a line from DRAM
    double dram_bandwidth = 0;           // bytes per second, all requesters together
    // Bytes per second one core's line fills can stream at most (its outstanding misses bind, by
    // Little's law); 0: only the shared DRAM bandwidth binds.
    double core_bandwidth = 0;
    // Load-to-use of a line that another CPU's private cache holds (a cache-to-cache transfer),
    // core cycles; 0: the first shared level's latency (else the last private level's).
    std::uint32_t peer_latency = 0;
    std::uint32_t prefetch_streams = 0;  // stream trackers per CPU (0: no prefetcher)
    std::uint32_t prefetch_trigger = 2;  // consecutive line misses before a stream is followed
    // Demand misses one core has in flight at once (its line fill buffers / MSHRs): independent
    // misses issued together overlap up to this many; 1: serialised, each waits for the one before.
    std::uint32_t fill_buffers = 1;
    // The stride prefetcher (one entry per load site and CPU): after `stride_trigger` accesses of a
    // site at one constant stride, its next `stride_degree` strides are fetched ahead. 0: none.
    std::uint32_t stride_trigger = 0;
    std::uint32_t stride_degree = 1;
    // DRAM refresh (a DDR/LPDDR all-bank REFRESH command every tREFI, the banks busy for tRFC):
    // every refresh_interval_ns the channel serves nothing for refresh_time_ns. Both 0: none.
    double refresh_interval_ns = 0;
    double refresh_time_ns = 0;
    bool dma_coherent = false;           // device writes snoop the CPU caches
    bool dma_write_allocate = false;     // device writes allocate into the last shared level (DDIO)
    // Cycles per byte of the kernel's copy loop with source and destination in L1 ([memory].copy).
    // Given, the network datapath runs on this hierarchy (its packet-data figures are then warm
    // compute, the stalls come from here); 0: the datapath keeps the profile's figures alone.
    double copy_warm = 0;
    L1iConfig l1i;
};

// The first inconsistency of a configuration: the key (e.g. "l2.size") and what is wrong.
struct ConfigProblem {
    std::string key;
    std::string message;
};
std::optional<ConfigProblem> check_config(const MemoryConfig& c);

} // namespace kdsim::mem
