// Simulated time. The engine counts integer picoseconds (Tick): 2^64 ps is 213 days, and
// cycle counts at any clock from 800 MHz to 5 GHz convert exactly enough that a run never
// drifts with its number of steps (a CPU converts from the start of a busy period, never by
// summing rounded per-step durations; see kernel/cpu.h).
#pragma once

#include <cstdint>
#include <limits>

namespace kdsim::engine {

using Tick = std::uint64_t;   // picoseconds
using Cycles = std::uint64_t; // CPU clock cycles

inline constexpr Tick PS_PER_NS = 1'000;
inline constexpr Tick PS_PER_US = 1'000'000;
inline constexpr Tick PS_PER_MS = 1'000'000'000;
inline constexpr Tick PS_PER_S = 1'000'000'000'000;
inline constexpr Tick TICK_MAX = std::numeric_limits<Tick>::max();

// a + b, or TICK_MAX when the sum does not fit: a time that far away is never reached.
constexpr Tick sat_add(Tick a, Tick b) { return b > TICK_MAX - a ? TICK_MAX : a + b; }

// A CPU clock: converts whole cycles to picoseconds and back with 128-bit intermediates; a
// time beyond TICK_MAX saturates there instead of wrapping.
class Clock {
public:
    constexpr Clock() = default;
    explicit constexpr Clock(std::uint64_t hz) : hz_(hz) {}

    constexpr std::uint64_t hz() const { return hz_; }

    // Time taken by `c` cycles, rounded down to the picosecond.
    constexpr Tick to_ticks(Cycles c) const { return saturate(static_cast<unsigned __int128>(c) * PS_PER_S / hz_); }
    // Time taken by `c` cycles, rounded up: the first tick at which `c` cycles have completed.
    constexpr Tick to_ticks_ceil(Cycles c) const {
        auto num = static_cast<unsigned __int128>(c) * PS_PER_S;
        return saturate((num + hz_ - 1) / hz_);
    }
    // Whole cycles completed in `t` picoseconds.
    constexpr Cycles to_cycles(Tick t) const {
        return static_cast<Cycles>(static_cast<unsigned __int128>(t) * hz_ / PS_PER_S);
    }

private:
    static constexpr Tick saturate(unsigned __int128 t) { return t > TICK_MAX ? TICK_MAX : static_cast<Tick>(t); }

    std::uint64_t hz_ = 1;
};

constexpr double to_us(Tick t) { return static_cast<double>(t) / static_cast<double>(PS_PER_US); }
constexpr double to_ms(Tick t) { return static_cast<double>(t) / static_cast<double>(PS_PER_MS); }
constexpr double to_s(Tick t) { return static_cast<double>(t) / static_cast<double>(PS_PER_S); }

} // namespace kdsim::engine
