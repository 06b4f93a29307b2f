// In-process measurements of kdsim calibrate besides hashes and XSAVE.
#pragma once

#include "calibrate/calibrate.h"

#include <optional>
#include <array>
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
// Pointer chases and the copy (hierarchy.cpp); `line` is the chase stride.
HierarchyResult measure_hierarchy(const std::vector<CacheLevelInfo>& levels, std::size_t line, int samples);

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
DeviceLinesResult measure_device_lines(std::optional<int> writer_cpu, int samples);

// The [memory] tables of the calibrated profile from `h` (TSC cycles at `tsc_hz`; sources start
// with `prefix`), or "" with `problem` set when the figures are inconsistent for kdsim's model
// (e.g. two levels whose measured latencies do not increase).
std::string memory_tables(const HierarchyResult& h, const DeviceLinesResult& dev, double tsc_hz, std::size_t line, const std::string& prefix,
                          std::string& problem);

} // namespace kdsim::calibrate
