// In-process measurements of kdsim calibrate besides hashes and XSAVE.
#pragma once

#include "calibrate/calibrate.h"

#include <optional>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kdsim::calibrate {

// CLFLUSHOPT (or CLFLUSH) of every line of a cache-resident buffer (+ MFENCE), the lines either
// just written (dirty: memset) or just read (clean: written, flushed, then read back); and the
// re-read of one byte per line from memory after the dirty flush. All per 64-byte line; the fits
// are cycles(lines) = per_call + per_line x lines over the buffer sizes.
struct FlushPoint {
    std::size_t size = 0, lines = 0;
    Measured dirty, clean, reread; // cycles per line
};
struct FlushResult {
    std::string insn; // "CLFLUSHOPT" or "CLFLUSH"
    std::vector<FlushPoint> points;
    LineFit dirty_fit, clean_fit, reread_fit; // zero when fewer than two sizes
};
FlushResult measure_flush(const CpuFeatures& cpu, const std::vector<std::size_t>& sizes, int samples);

struct MemcpyResult {
    struct Point {
        std::size_t len;
        Measured cycles;
    };
    std::vector<Point> points;
    LineFit fit;
};
// memcpy with a hot (cache-resident) source and destination, cycles per call, fitted per call +
// per byte (weighted by 1/cycles^2).
MemcpyResult measure_memcpy(const std::vector<std::size_t>& sizes, int samples);

struct FutexResult {
    Measured wake_nowaiter;    // FUTEX_WAKE finding no waiter: syscall round trip + hash lookup
    Measured wait_eagain;      // FUTEX_WAIT whose value differs: syscall round trip + hash lookup
    Measured handoff_same_cpu; // half a round trip, both threads pinned to one CPU
    Measured handoff_cross_cpu; // half a round trip, threads on two CPUs (wake-up latency)
    Measured wake_waiter_local; // FUTEX_WAKE that wakes a sleeper on the same CPU (no preemption), waker side
    Measured wake_waiter;      // FUTEX_WAKE that wakes a sleeper on the other CPU, waker side (with IPI)
    bool cross_cpu = false;
};
FutexResult measure_futex(int cpu_a, std::optional<int> cpu_b, int samples, bool quick);

struct SignalResult {
    Measured self_signal;   // tgkill to self: syscall + signal frame + handler + sigreturn
    Measured timer_latency; // POSIX timer (SIGEV_SIGNAL) expiry -> handler entry, busy thread
    // A periodic POSIX timer (timer_create + sigaction handler) interrupting a thread that spins
    // reading the TSC: the gap in the thread's TSC readings around each signal = timer interrupt +
    // signal delivery + handler + sigreturn, i.e. what one timer signal costs the thread.
    Measured timer_round_trip;
    Measured timer_to_handler;  // the part of the gap before the handler's first instruction
    Measured handler_to_thread; // the part after it (handler return, sigreturn, back in the loop)
    double period_us = 0;
};
SignalResult measure_signals(double tsc_hz, int samples);

// A data or unified cache level as sysfs describes it for one CPU.
struct CacheLevelInfo {
    int level = 0;
    std::uint64_t size = 0; // bytes
    unsigned ways = 0, line = 0;
    int sharers = 0;        // CPUs in shared_cpu_list
    bool shared = false;    // shared beyond the SMT siblings of one core (one for the machine in kdsim)
    std::string size_source, ways_source; // where size and ways were read, for the profile's source strings
};
// The levels of `cpu`, nearest first: from sysfs, else (a guest whose kernel lists no cache
// folders) from CPUID (cpuid_cache_levels); an empty list when neither has them.
std::vector<CacheLevelInfo> read_cache_levels(int cpu);

// The raw CPUID registers the fallback decodes: AMD's legacy descriptors Fn8000_0005 ECX (L1D)
// and Fn8000_0006 ECX (L2) / EDX (L3), and the deterministic cache leaf's subleaves (Intel leaf 4,
// AMD Fn8000_001D with TOPOEXT: EAX, EBX, ECX each), the empty ones left out.
struct CpuidCacheRegs {
    bool amd = false;
    std::uint32_t l1d_ecx = 0, l2_ecx = 0, l3_edx = 0; // AMD Fn8000_0005 ECX, Fn8000_0006 ECX and EDX
    std::vector<std::array<std::uint32_t, 3>> deterministic; // leaf 4 / Fn8000_001D: {EAX, EBX, ECX}
};
CpuidCacheRegs read_cpuid_cache_regs();
// Decodes them: the deterministic leaf when it lists data or unified caches, else (AMD) the legacy
// descriptors, whose associativity codes follow the APM's table (6h = 8 ways, 8h = 16, ...); a
// level whose code says "see Fn8000_001D" (9h) or "disabled" is left out. L1 and L2 are taken as
// private to a core, L3 as shared (the legacy descriptors do not say).
std::vector<CacheLevelInfo> cpuid_cache_levels(const CpuidCacheRegs& r);

struct HierarchyResult {
    std::vector<CacheLevelInfo> levels;
    std::vector<std::uint64_t> working_set; // per level: the pointer chase's set (half its size)
    std::vector<Measured> latency;          // per level: TSC cycles per dependent load
    std::uint64_t dram_working_set = 0;
    Measured dram_latency;                  // TSC cycles per dependent load beyond the last level
    std::uint64_t copy_bytes = 0;
    Measured copy_cycles_per_byte;          // memcpy between two cold sets, TSC cycles per byte copied
};
// Pointer chases and (unless `copy` is false) the copy (hierarchy.cpp); `line` is the chase stride.
HierarchyResult measure_hierarchy(const std::vector<CacheLevelInfo>& levels, std::size_t line, int samples,
                                  bool copy = true);
// The copy's working set for these levels: four times the last level, at least 64 MiB.
std::uint64_t copy_working_set(const std::vector<CacheLevelInfo>& levels);

// Two buffers of `bytes` for the cold copy, written once (so their pages are mapped) when made.
struct CopyBuffers {
    std::size_t bytes = 0;
    std::unique_ptr<char[]> src, dst;
    explicit CopyBuffers(std::size_t n);
};
// memcpy of one buffer into the other, TSC cycles per byte copied (at most a quarter of a set is
// still cached from the sample before).
Measured measure_copy(CopyBuffers& b, int samples);

// Lines another CPU wrote with non-temporal stores + SFENCE (kdsim validate's device thread):
// device_lines.cpp. TSC cycles.
struct DeviceLinesResult {
    static constexpr std::size_t CHASE_BYTES = 16384; // the chase's region: 4 pages, TLB-resident
    static constexpr std::size_t SEQ_LINES[] = {1, 2, 3, 4, 6, 8, 12, 16};
    bool two_cpus = false;  // false: the writer shared the measuring CPU (one CPU allowed)
    Measured chase;         // per dependent load, random order
    struct SeqPoint {
        std::size_t lines = 0;
        Measured cycles;    // per buffer: N lines read from a buffer of the ring, bracket included
        double net = 0;     // the median less the empty bracket
    };
    std::vector<SeqPoint> seq;
    LineFit seq_fit;        // net = intercept + slope x lines, over N >= 2
    Measured bracket;       // the empty fenced TSC bracket
    Measured peer;          // half a round trip of a line bounced between the two CPUs
    // Memory-level parallelism: K independent chases through such lines (PARALLEL_BYTES,
    // TLB-resident), walked in turn: TSC cycles per load at each K.
    static constexpr std::size_t PARALLEL_BYTES = 65536;
    static constexpr std::size_t CHAINS[] = {1, 2, 4, 6, 8, 12, 16, 24, 32};
    std::vector<Measured> parallel; // per CHAINS entry
    // The stride prefetcher: line 0 of each ring buffer read in ring order, a pause of
    // STRIDE_PAUSE cycles before each read (a prefetch issued has landed): per position 0..7, the
    // median cycles of that read; then, after reading buffers 0..STRIDE_TRAIN-1, buffer
    // STRIDE_TRAIN - 1 + k read after the pause, k = 1..8: whether a prefetch k strides ahead was issued.
    static constexpr std::size_t STRIDE_POSITIONS = 8, STRIDE_TRAIN = 16, STRIDE_SKIPS = 8;
    static constexpr std::uint64_t STRIDE_PAUSE = 3000;
    std::vector<double> stride_position; // median TSC cycles, bracket subtracted
    std::vector<double> stride_skip;     // [k - 1], median TSC cycles, bracket subtracted
};
// The regions one measure_device_lines writes and reads (the chase's, the ring's, the parallel
// chases'), page-aligned and zeroed when made. calibrate makes every round's regions together
// before the first round, so that no round reads pages another round had (the guest would hand a
// freed region's pages back to the next allocation).
struct DeviceLinesRegions {
    std::unique_ptr<std::uint8_t, void (*)(void*)> chase, ring, parallel;
    DeviceLinesRegions();
};
// `regions` null: regions of its own.
DeviceLinesResult measure_device_lines(std::optional<int> writer_cpu, int samples, DeviceLinesRegions* regions = nullptr);

// ---- rounds of the [memory] measurements ----------------------------------------------------------
// A guest's memory figures move in episodes (host page placement, the host's other tenants): one
// measurement can land in one. calibrate measures the device-written lines and the cold copy in
// several rounds spread over its run, each on fresh regions, and writes the median of the rounds'
// figures with their spread.
struct MemoryRound {
    DeviceLinesResult dev;
    Measured copy;   // memcpy between two cold sets, TSC cycles per byte
    double at_s = 0; // seconds into the calibration
};

// One figure over the rounds: the median (type 7, as summarize), the lowest and highest value,
// range = (high - low) / |median| (0 when all agree; infinite when they differ around a median
// of 0), and whether the range is above `bound`.
struct RoundSpread {
    std::vector<double> values; // in round order
    double median = 0, low = 0, high = 0, range = 0, bound = 0;
    bool disagree = false;
};
RoundSpread combine_rounds(const std::vector<double>& values, double bound);
// The bound above which a [memory] figure's rounds are said to disagree (ROUNDS DISAGREE in its source).
constexpr double ROUNDS_BOUND = 0.20;

// One round's [memory] figures as the model reads them (TSC cycles at tsc_hz).
struct MemoryFigures {
    double dram_cycles = 0;                 // the chase through device-written lines, per load
    double copy_cycles_per_byte = 0;
    double dram_bandwidth = 0;              // bytes/s: 3 x the copy rate
    double stream_bps = 0;                  // a line per seq_fit.slope cycles; 0 when the slope is not positive
    double prefetch_trigger = 1;            // seq_fit.intercept / dram_cycles, rounded, at least 1
    double par_one = 0, par_best = 0, par_k = 1;
    double fill_buffers = 0;                // par_one / par_best rounded, 1..MAX_FILL_BUFFERS; 0 without chases
    double stride_first_cheap = -1;         // the first ring position under half a miss; -1 none
    double stride_trigger = 0;              // 0: none written
    double stride_degree = 0;               // 0 with no stride_trigger
    double peer_cycles = 0;                 // the bounced line, half a round trip; 0 with one CPU
};
MemoryFigures round_figures(const MemoryRound& r, double tsc_hz, std::size_t line);

// The [memory] tables of the calibrated profile from `h` and the rounds (TSC cycles at `tsc_hz`;
// sources start with `prefix`): each figure the rounds give is the median of the rounds' figures,
// its source lists them with their range and says ROUNDS DISAGREE above ROUNDS_BOUND. "" with
// `problem` set when the figures are inconsistent for kdsim's model (e.g. two levels whose
// measured latencies do not increase).
std::string memory_tables(const HierarchyResult& h, const std::vector<MemoryRound>& rounds, double tsc_hz,
                          std::size_t line, const std::string& prefix, std::string& problem);
// One round: `dev` and h's copy.
std::string memory_tables(const HierarchyResult& h, const DeviceLinesResult& dev, double tsc_hz, std::size_t line, const std::string& prefix,
                          std::string& problem);

} // namespace kdsim::calibrate
