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
// (every duration a run meets), the conversion is a multiplication and a U64Divider (the ceil:
// a multiplication and a multiply-high, while a busy period stays below its bound).
class Clock {
public:
    constexpr Clock() = default;
    explicit constexpr Clock(std::uint64_t hz)
        : hz_(hz), ps_num_(PS_PER_S / std::gcd(PS_PER_S, hz)), cyc_num_(hz / std::gcd(PS_PER_S, hz)),
          by_cyc_(cyc_num_), by_ps_(ps_num_), fast_cycles_(MAX / ps_num_), fast_ticks_(MAX / cyc_num_),
          ceil_add_(cyc_num_ == 1 ? 1 : cyc_num_ - 1), ceil_sh_(cyc_num_ == 1 ? 0 : floor_log2(cyc_num_ - 1)),
          ceil_m_(cyc_num_ == 1 ? MAX : ceil_magic(cyc_num_, ceil_sh_)),
          fast_ceil_end_(ceil_fast_end(ps_num_, cyc_num_, ceil_add_, ceil_sh_, ceil_m_)) {}

    constexpr std::uint64_t hz() const { return hz_; }

    // Time taken by `c` cycles, rounded down to the picosecond.
    constexpr Tick to_ticks(Cycles c) const {
        if (c <= fast_cycles_) [[likely]] return by_cyc_(c * ps_num_);
        return saturate(static_cast<unsigned __int128>(c) * PS_PER_S / hz_);
    }
    // Whether to_ticks_ceil(c) takes the fast conversion (to_ticks_ceil_fast).
    constexpr bool ceil_is_fast(Cycles c) const { return c < fast_ceil_end_; }
    // The cycle counts below this take the fast conversion (0: none does).
    constexpr Cycles ceil_fast_end() const { return fast_ceil_end_; }
    // Time taken by `c` cycles, rounded up: the first tick at which `c` cycles have completed.
    constexpr Tick to_ticks_ceil(Cycles c) const {
        if (c < fast_ceil_end_) [[likely]] return to_ticks_ceil_fast(c);
        auto num = static_cast<unsigned __int128>(c) * PS_PER_S;
        return saturate((num + hz_ - 1) / hz_);
    }
    // to_ticks_ceil(c) for ceil_is_fast(c): ceil(c * ps / cyc) as (c * ps + ceil_add_) * ceil_m_
    // >> (64 + ceil_sh_), a multiplication, a multiply-high and a shift. With cyc > 1, s = ceil_sh_
    // = floor(log2(cyc - 1)) and ceil_m_ = ceil(2^(64+s) / cyc) = (2^(64+s) + e) / cyc, 0 <= e <
    // cyc (so ceil_m_ < 2^64); for n = c * ps + cyc - 1 = t * cyc + r the product is 2^(64+s) *
    // (t + r / cyc + n * e / (cyc * 2^(64+s))), whose integer part is t = floor(n / cyc) =
    // ceil(c * ps / cyc) while n * e < 2^(64+s) (r <= cyc - 1). With cyc = 1, (c * ps + 1) *
    // (2^64 - 1) >> 64 is c * ps while c * ps + 1 < 2^64.
    constexpr Tick to_ticks_ceil_fast(Cycles c) const {
        const auto p = static_cast<unsigned __int128>(c * ps_num_ + ceil_add_) * ceil_m_;
        return static_cast<Tick>(static_cast<std::uint64_t>(p >> 64) >> ceil_sh_);
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
    std::uint64_t ceil_add_ = 1;          // cyc_num_ - 1, or 1 when cyc_num_ is 1
    int ceil_sh_ = 0;                     // floor(log2(cyc_num_ - 1)), or 0 when cyc_num_ is 1
    std::uint64_t ceil_m_ = MAX;          // ceil(2^(64+ceil_sh_) / cyc_num_), or 2^64 - 1 when cyc_num_ is 1
    Cycles fast_ceil_end_ = MAX / PS_PER_S + 1; // to_ticks_ceil_fast is exact for every c below it

    static constexpr int floor_log2(std::uint64_t v) { return 63 - __builtin_clzll(v); }
    static constexpr std::uint64_t ceil_magic(std::uint64_t cyc, int sh) {
        using U = unsigned __int128;
        return static_cast<std::uint64_t>(((U{1} << (64 + sh)) - 1) / cyc + 1);
    }
    // The first c for which to_ticks_ceil_fast may be inexact: n = c * ps + add must fit 64 bits,
    // and with e = m * cyc - 2^(64+sh) > 0 also n * e < 2^(64+sh).
    static constexpr Cycles ceil_fast_end(std::uint64_t ps, std::uint64_t cyc, std::uint64_t add, int sh,
                                          std::uint64_t m) {
        using U = unsigned __int128;
        const U e = cyc == 1 ? 0 : U{m} * cyc - (U{1} << (64 + sh));
        const U bound = e == 0 ? U{MAX} : ((U{1} << (64 + sh)) - 1) / e;
        const std::uint64_t n_max = bound > MAX ? MAX : static_cast<std::uint64_t>(bound);
        return n_max < add ? 0 : (n_max - add) / ps + 1;
    }
};

constexpr double to_us(Tick t) { return static_cast<double>(t) / static_cast<double>(PS_PER_US); }
constexpr double to_ms(Tick t) { return static_cast<double>(t) / static_cast<double>(PS_PER_MS); }
constexpr double to_s(Tick t) { return static_cast<double>(t) / static_cast<double>(PS_PER_S); }

} // namespace kdsim::engine
