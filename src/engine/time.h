// Simulated time. The engine counts integer picoseconds (Tick): 2^64 ps is 213 days, and
// cycle counts at any clock from 800 MHz to 5 GHz convert exactly enough that a run never
// drifts with its number of steps (a CPU converts from the start of a busy period, never by
// summing rounded per-step durations; see kernel/cpu.h).
#pragma once

#include <cstdint>
#include <limits>
#include <numeric>

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

// Division of any 64-bit value by a divisor fixed at construction, with one multiply-high, a
// subtraction, an addition and two shifts instead of a division instruction (Granlund and
// Montgomery, "Division by invariant integers using multiplication", PLDI 1994, figure 4.1).
// Exact: floor(n / d) for every n in [0, 2^64), every d >= 1.
class U64Divider {
public:
    constexpr U64Divider() = default;
    explicit constexpr U64Divider(std::uint64_t d) {
        using U = unsigned __int128;
        int l = 0; // ceil(log2 d)
        while (l < 64 && (U{1} << l) < d) ++l;
        m_ = static_cast<std::uint64_t>((((U{1} << l) - d) << 64) / d + 1);
        sh1_ = l < 1 ? l : 1;
        sh2_ = l > 1 ? l - 1 : 0;
    }

    constexpr std::uint64_t operator()(std::uint64_t n) const {
        const auto t = static_cast<std::uint64_t>((static_cast<unsigned __int128>(m_) * n) >> 64);
        return (t + ((n - t) >> sh1_)) >> sh2_;
    }

private:
    std::uint64_t m_ = 1; // d = 1
    int sh1_ = 0;
    int sh2_ = 0;
};

// A CPU clock: converts whole cycles to picoseconds and back. The results are those of exact
// 128-bit arithmetic (a time beyond TICK_MAX saturates there instead of wrapping). The ratio
// PS_PER_S / hz is kept reduced, num / den; whenever the product with num or den fits in 64 bits
// (every duration a run meets), the conversion is a multiplication and a U64Divider.
class Clock {
public:
    constexpr Clock() = default;
    explicit constexpr Clock(std::uint64_t hz)
        : hz_(hz), ps_num_(PS_PER_S / std::gcd(PS_PER_S, hz)), cyc_num_(hz / std::gcd(PS_PER_S, hz)),
          by_cyc_(cyc_num_), by_ps_(ps_num_), fast_cycles_(MAX / ps_num_), fast_ticks_(MAX / cyc_num_),
          ceil_add_(cyc_num_ - 1), fast_ceil_cycles_((MAX - ceil_add_) / ps_num_) {}

    constexpr std::uint64_t hz() const { return hz_; }

    // Time taken by `c` cycles, rounded down to the picosecond.
    constexpr Tick to_ticks(Cycles c) const {
        if (c <= fast_cycles_) [[likely]] return by_cyc_(c * ps_num_);
        return saturate(static_cast<unsigned __int128>(c) * PS_PER_S / hz_);
    }
    // Whether to_ticks_ceil(c) takes the fast conversion (a multiplication and a U64Divider).
    constexpr bool ceil_is_fast(Cycles c) const { return c <= fast_ceil_cycles_; }
    // Time taken by `c` cycles, rounded up: the first tick at which `c` cycles have completed.
    // ceil(n / d) as floor((n + d - 1) / d), while n + d - 1 fits 64 bits.
    constexpr Tick to_ticks_ceil(Cycles c) const {
        if (c <= fast_ceil_cycles_) [[likely]] return by_cyc_(c * ps_num_ + ceil_add_);
        auto num = static_cast<unsigned __int128>(c) * PS_PER_S;
        return saturate((num + hz_ - 1) / hz_);
    }
    // Whole cycles completed in `t` picoseconds.
    constexpr Cycles to_cycles(Tick t) const {
        if (t <= fast_ticks_) [[likely]] return by_ps_(t * cyc_num_);
        return static_cast<Cycles>(static_cast<unsigned __int128>(t) * hz_ / PS_PER_S);
    }

private:
    static constexpr std::uint64_t MAX = std::numeric_limits<std::uint64_t>::max();
    static constexpr Tick saturate(unsigned __int128 t) { return t > TICK_MAX ? TICK_MAX : static_cast<Tick>(t); }

    std::uint64_t hz_ = 1;
    std::uint64_t ps_num_ = PS_PER_S; // PS_PER_S / gcd(PS_PER_S, hz)
    std::uint64_t cyc_num_ = 1;       // hz / gcd(PS_PER_S, hz)
    U64Divider by_cyc_{};             // / cyc_num_
    U64Divider by_ps_{PS_PER_S};      // / ps_num_
    Cycles fast_cycles_ = MAX / PS_PER_S; // largest c with c * ps_num_ < 2^64
    Tick fast_ticks_ = MAX;               // largest t with t * cyc_num_ < 2^64
    std::uint64_t ceil_add_ = 0;          // cyc_num_ - 1
    Cycles fast_ceil_cycles_ = MAX / PS_PER_S; // largest c with c * ps_num_ + ceil_add_ < 2^64
};

constexpr double to_us(Tick t) { return static_cast<double>(t) / static_cast<double>(PS_PER_US); }
constexpr double to_ms(Tick t) { return static_cast<double>(t) / static_cast<double>(PS_PER_MS); }
constexpr double to_s(Tick t) { return static_cast<double>(t) / static_cast<double>(PS_PER_S); }

} // namespace kdsim::engine
