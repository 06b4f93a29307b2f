#include "mem/lfsr.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace kdsim::mem {
namespace {

TEST(LfsrNext, StepsFromTheResetStateByHand) {
    // 0xACE1: low bit 1, so 0x5670 ^ 0xB400; then 0xE270 (low bit 0) and 0x7138 shift alone
    EXPECT_EQ(lfsr_next(0xACE1u), 0xE270u);
    EXPECT_EQ(lfsr_next(0xE270u), 0x7138u);
    EXPECT_EQ(lfsr_next(0x7138u), 0x389Cu);
    EXPECT_EQ(lfsr_next(0x389Cu), 0x1C4Eu);
    EXPECT_EQ(lfsr_next(1u), 0xB400u);
    EXPECT_EQ(lfsr_next(0u), 0u);
}

TEST(LfsrNext, EqualsTheAndNegFormForEveryStateAndWideValues) {
    const auto formula = [](std::uint32_t x) { return (x >> 1) ^ (-(x & 1u) & 0xB400u); };
    for (std::uint32_t x = 0; x <= 0xFFFFu; ++x) ASSERT_EQ(lfsr_next(x), formula(x)) << x;
    for (const std::uint32_t x : {0x10000u, 0x10001u, 0x8000'0000u, 0xFFFF'FFFFu, 0xDEAD'BEEFu})
        EXPECT_EQ(lfsr_next(x), formula(x)) << x;
}

TEST(LfsrNext, VisitsEveryNonzeroStateOnceAPeriod) {
    std::uint32_t x = 0xACE1u;
    std::uint32_t n = 0;
    do {
        x = lfsr_next(x);
        ++n;
    } while (x != 0xACE1u && n <= 65535u);
    EXPECT_EQ(n, 65535u); // taps 0xB400: a maximal 16-bit LFSR
}

TEST(LfsrStream, TheResetStatesDrawsByHand) {
    // 0xACE1's low ten bits 0b00'1110'0001 are the first ten bits shifted out; the draws' ways of a
    // 4-way set are bits k, k + 1: 0, 0, 0, 2, 3, 3, 1, 0 (the states above & 3)
    const std::uint64_t s = lfsr_stream(0xACE1u);
    EXPECT_EQ(s & 0x3FFu, 0x0E1u);
    const std::uint32_t ways[8] = {0, 0, 0, 2, 3, 3, 1, 0};
    for (std::uint32_t k = 1; k <= 8; ++k) EXPECT_EQ(s >> k & 3u, ways[k - 1]) << k;
}

TEST(LfsrStream, HoldsEveryStatesNext64ShiftedOutBits) {
    for (std::uint32_t x = 0; x <= 0xFFFFu; ++x) {
        const std::uint64_t s = lfsr_stream(x);
        std::uint32_t y = x;
        for (std::uint32_t i = 0; i < 64; ++i) {
            ASSERT_EQ(s >> i & 1u, y & 1u) << x << " " << i;
            if (i + 1 < 64) ASSERT_EQ(s >> i & 3u, y & 3u) << x << " " << i; // a draw's way of 4
            y = lfsr_next(y);
        }
    }
}

TEST(LfsrState, TheResetStateFromItsStreamByHand) {
    // 0xACE1's low eleven bits shift out first (1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 1): a tap xor'd in at
    // step j >= 1 at bit 10 or above reaches bit 0 at step j + 10 at the earliest
    EXPECT_EQ(lfsr_stream(0xACE1u) & 0x7FFu, 0x4E1u);
    EXPECT_EQ(lfsr_state(lfsr_stream(0xACE1u)), 0xACE1u);
    // the stream after four steps begins at the stream's bit 4: the state 0x1C4E
    EXPECT_EQ(lfsr_state(lfsr_stream(0xACE1u) >> 4), 0x1C4Eu);
    EXPECT_EQ(lfsr_state(0), 0u);
}

TEST(LfsrState, FindsEveryStateAfterUpTo48StepsFromItsStream) {
    for (std::uint32_t x = 0; x <= 0xFFFFu; ++x) {
        const std::uint64_t s = lfsr_stream(x);
        ASSERT_EQ(lfsr_state(s), x) << x;
        std::uint32_t y = x;
        for (std::uint32_t k = 1; k <= 48; ++k) {
            y = lfsr_next(y);
            if (x % 97 == 0 || k == 48) ASSERT_EQ(lfsr_state(s >> k), y) << x << " " << k;
        }
    }
}

} // namespace
} // namespace kdsim::mem
