// Tests of the cipher cost table's call cost: the line (cycles_per_call + bytes at cycles_per_byte)
// without a measured curve, the curve interpolated with one, and a call's parts adding up.
#include "crypto/cipher_costs.h"

#include <gtest/gtest.h>

namespace kdsim::crypto {
namespace {

constexpr auto P = CipherPrim::CHACHA20_POLY1305;
constexpr auto I = CipherImpl::AVX512;

CipherCostTable table(bool with_curve) {
    CipherCostTable t;
    CipherCost c;
    c.cycles_per_call = 900;
    c.cycles_per_byte = 0.5;
    t.set(P, I, c);
    // a curve that is not a line: 1,024 bytes cost less than 512 (as OpenSSL's AVX-512 ChaCha20)
    if (with_curve) t.set_curve(P, I, {{64, 920}, {512, 1280}, {1024, 1130}, {2048, 1600}});
    return t;
}

TEST(CipherCostTable, WithoutACurveACallCostsItsPerCallFigurePlusItsBytes) {
    const CipherCostTable t = table(false);
    EXPECT_EQ(t.call_cycles(P, I, 0), 900u);
    EXPECT_EQ(t.call_cycles(P, I, 1420), 900u + 710u); // 0.5 x 1,420
    EXPECT_EQ(t.call_cycles(P, I, 3), 902u);           // 1.5 rounds away from zero
    // parts: the per-call figure in the first, bytes rounded so that the parts add up
    EXPECT_EQ(t.part_cycles(P, I, 3, 0, 1), 901u);     // 900 + llround(0.5) = 900 + 1
    EXPECT_EQ(t.part_cycles(P, I, 3, 1, 3), 1u);       // llround(1.5) - llround(0.5) = 2 - 1
}

TEST(CipherCostTable, ACurveIsInterpolatedBetweenItsPointsAndExtendedByThePerByteFigure) {
    const CipherCostTable t = table(true);
    EXPECT_EQ(t.call_cycles(P, I, 512), 1280u);  // a measured point, not the line's 1,156
    EXPECT_EQ(t.call_cycles(P, I, 1024), 1130u); // lower than at 512: as measured
    // 1,420 between 1,024 and 2,048: 1,130 + 470 x 396 / 1,024 = 1,311.76
    EXPECT_EQ(t.call_cycles(P, I, 1420), 1312u);
    // 288 between 64 and 512: 920 + 360 x 224 / 448 = 1,100
    EXPECT_EQ(t.call_cycles(P, I, 288), 1100u);
    // beyond the ends: the end point -/+ 0.5 per byte
    EXPECT_EQ(t.call_cycles(P, I, 16), 896u);           // 920 - 0.5 x 48
    EXPECT_EQ(t.call_cycles(P, I, 4096), 2624u);        // 1,600 + 0.5 x 2,048
    EXPECT_EQ(t.call_cycles(P, I, 0), 888u);            // 920 - 0.5 x 64
}

TEST(CipherCostTable, TheCurvesPartsOfACallAddUpToTheWholeInProportionToTheirBytes) {
    const CipherCostTable t = table(true);
    // 8,192 bytes in 4 KiB brackets: whole = 1,600 + 0.5 x 6,144 = 4,672, half each
    EXPECT_EQ(t.part_cycles(P, I, 8192, 0, 4096), 2336u);
    EXPECT_EQ(t.part_cycles(P, I, 8192, 4096, 8192), 2336u);
    // 1,420 bytes as 1,000 + 420: llround(1,312 x 1,000 / 1,420) = 924, then 1,312 - 924 = 388
    EXPECT_EQ(t.part_cycles(P, I, 1420, 0, 1000), 924u);
    EXPECT_EQ(t.part_cycles(P, I, 1420, 1000, 1420), 388u);
}

TEST(CipherCostTable, RemovingTheCurveGivesTheLineBack) {
    CipherCostTable t = table(true);
    t.set_curve(P, I, {});
    EXPECT_EQ(t.call_cycles(P, I, 512), 1156u); // 900 + 256
}

} // namespace
} // namespace kdsim::crypto
