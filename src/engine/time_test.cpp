// The division-free conversions of engine/time.h against exact 128-bit arithmetic: every result
// must be the same Tick or cycle count the plain formulas give, on edge cases and random values.
#include "engine/time.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace kdsim::engine {
namespace {

using U = unsigned __int128;
constexpr std::uint64_t MAX64 = std::numeric_limits<std::uint64_t>::max();

Tick exact_ticks(std::uint64_t hz, Cycles c) {
    U t = U{c} * PS_PER_S / hz;
    return t > TICK_MAX ? TICK_MAX : static_cast<Tick>(t);
}
Tick exact_ticks_ceil(std::uint64_t hz, Cycles c) {
    U t = (U{c} * PS_PER_S + hz - 1) / hz;
    return t > TICK_MAX ? TICK_MAX : static_cast<Tick>(t);
}
Cycles exact_cycles(std::uint64_t hz, Tick t) { return static_cast<Cycles>(U{t} * hz / PS_PER_S); }

// Every shipped profile's clock, the bounds the scenario reader allows (1 MHz to 100 GHz), and
// clocks whose reduced ratio to 10^12 is awkward (primes, 2^k, 2^64 - 1).
std::vector<std::uint64_t> clocks() {
    return {1,
            2,
            3,
            7,
            1'000'000,
            667'000'000,
            800'000'000,
            996'000'000,
            1'000'000'000,
            1'200'000'000,
            1'500'000'000,
            1'800'000'000,
            2'300'000'000,
            2'400'000'000,
            2'450'000'000,
            3'000'000'000,
            3'600'000'000,
            100'000'000'000,
            999'999'937,
            1'000'000'007,
            4'294'967'291,
            1ull << 31,
            1ull << 40,
            PS_PER_S,
            PS_PER_S + 1,
            1ull << 63,
            (1ull << 63) + 1,
            MAX64 - 1,
            MAX64};
}

// Values around every boundary a conversion has: 0, 1, powers of two and their neighbours,
// multiples of the clock and of 10^12 and their neighbours, and the fast path's limits.
std::vector<std::uint64_t> edges(std::uint64_t hz) {
    std::vector<std::uint64_t> v{0, 1, 2, 3, 999, 1000, 1001, MAX64, MAX64 - 1, MAX64 / 2, MAX64 / 2 + 1};
    for (int k = 1; k < 64; ++k)
        for (std::uint64_t d : {std::uint64_t{0}, std::uint64_t{1}, MAX64}) v.push_back((1ull << k) + d); // MAX64 wraps to -1
    for (std::uint64_t base : {hz, std::uint64_t{PS_PER_S}, MAX64 / PS_PER_S, MAX64 / hz})
        for (std::uint64_t m = 1; m <= 5; ++m)
            if (base <= MAX64 / m)
                for (std::uint64_t d : {std::uint64_t{0}, std::uint64_t{1}, MAX64}) v.push_back(base * m + d);
    return v;
}

void expect_exact(const Clock& c, std::uint64_t hz, std::uint64_t x) {
    ASSERT_EQ(c.to_ticks(x), exact_ticks(hz, x)) << "hz " << hz << " cycles " << x;
    ASSERT_EQ(c.to_ticks_ceil(x), exact_ticks_ceil(hz, x)) << "hz " << hz << " cycles " << x;
    ASSERT_EQ(c.to_cycles(x), exact_cycles(hz, x)) << "hz " << hz << " ticks " << x;
}

TEST(U64Divider, EqualsHardwareDivisionOnEdgeAndRandomDividendsAndDivisors) {
    std::mt19937_64 rng(17);
    std::vector<std::uint64_t> divisors{1, 2, 3, 5, 7, 10, 249, 1000, 1ull << 32, (1ull << 32) + 1, PS_PER_S,
                                        1ull << 63, (1ull << 63) + 1, MAX64 - 1, MAX64};
    for (int i = 0; i < 200; ++i) divisors.push_back(rng() >> (rng() % 64) | 1);
    for (int i = 0; i < 50; ++i) divisors.push_back(((rng() >> (rng() % 64)) & ~1ull) | 2);
    for (std::uint64_t d : divisors) {
        U64Divider div(d);
        std::vector<std::uint64_t> ns = edges(d);
        for (int i = 0; i < 2000; ++i) ns.push_back(rng() >> (rng() % 64));
        for (std::uint64_t n : ns) ASSERT_EQ(div(n), n / d) << n << " / " << d;
    }
}

TEST(Clock, FastConversionsEqualExact128BitArithmeticOnEdgeCases) {
    for (std::uint64_t hz : clocks()) {
        Clock c(hz);
        for (std::uint64_t x : edges(hz)) expect_exact(c, hz, x);
    }
}

TEST(Clock, FastConversionsEqualExact128BitArithmeticOnRandomValues) {
    std::mt19937_64 rng(1717);
    std::vector<std::uint64_t> hzs = clocks();
    for (int i = 0; i < 40; ++i) hzs.push_back(1'000'000 + rng() % 99'999'000'000ull); // the readable range
    for (std::uint64_t hz : hzs) {
        Clock c(hz);
        // Every magnitude: the durations a run meets are small, the slow path's are near 2^64.
        for (int i = 0; i < 20'000; ++i) expect_exact(c, hz, rng() >> (rng() % 64));
    }
}

TEST(Clock, DefaultClockIsOneHertz) {
    Clock c;
    EXPECT_EQ(c.hz(), 1u);
    EXPECT_EQ(c.to_ticks(3), 3 * PS_PER_S);
    EXPECT_EQ(c.to_ticks_ceil(3), 3 * PS_PER_S);
    EXPECT_EQ(c.to_cycles(2 * PS_PER_S - 1), 1u);
    EXPECT_EQ(c.to_ticks(MAX64), TICK_MAX);
}

} // namespace
} // namespace kdsim::engine
