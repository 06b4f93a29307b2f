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

} // namespace
} // namespace kdsim::mem
