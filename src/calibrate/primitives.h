// In-process measurements of kdsim calibrate besides hashes and XSAVE.
#pragma once

#include "calibrate/calibrate.h"

#include <optional>
#include <vector>

namespace kdsim::calibrate {

// CLFLUSHOPT (or CLFLUSH) of every line of a dirty, cache-resident buffer (+ MFENCE), and the
// re-read of one byte per line from memory afterwards; cycles per line.
struct FlushPoint {
    std::size_t size = 0, lines = 0;
    Measured flush, reread;
};
std::vector<FlushPoint> measure_flush(const CpuFeatures& cpu, const std::vector<std::size_t>& sizes, int samples);

struct MemcpyResult {
    struct Point {
        std::size_t len;
        Measured cycles;
    };
    std::vector<Point> points;
    LineFit fit;
};
// memcpy between L1-resident buffers, cycles per call, fitted per call + per byte.
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
};
SignalResult measure_signals(double tsc_hz, int samples);

} // namespace kdsim::calibrate
