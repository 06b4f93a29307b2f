// mem/line_bits.h: range operations over bitmaps of lines, expected words worked out by hand.
#include "mem/line_bits.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace kdsim::mem {
namespace {

TEST(LineBits, LowestSetIsTheIndexOfTheLowestSetBit) {
    EXPECT_EQ(lowest_set(1), 0u);
    EXPECT_EQ(lowest_set(0x50), 4u);
    EXPECT_EQ(lowest_set(0xF0), 4u);
    EXPECT_EQ(lowest_set(0x8000000000000000ull), 63u);
    EXPECT_EQ(lowest_set(0x100000000ull | 0x8000000000000000ull), 32u);
    EXPECT_EQ(lowest_set(~0ull), 0u);
    for (unsigned b = 0; b < 64; ++b) EXPECT_EQ(lowest_set(~0ull << b), b) << b;
}

TEST(LineBits, SetBitsAcrossAWordBoundarySetsTheTopOfOneWordAndTheBottomOfTheNext) {
    std::uint64_t w[3] = {0, 0, 0};
    set_bits(w, 60, 70); // bits 60..63 of word 0, 0..5 of word 1
    EXPECT_EQ(w[0], 0xF000000000000000ull);
    EXPECT_EQ(w[1], 0x3Full);
    EXPECT_EQ(w[2], 0u);
}

TEST(LineBits, SetBitsOfWholeWordsSetsEveryBitAndAnEmptyRangeNone) {
    std::uint64_t w[3] = {0, 0, 0};
    set_bits(w, 64, 64);
    EXPECT_EQ(w[1], 0u);
    set_bits(w, 0, 128);
    EXPECT_EQ(w[0], ~0ull);
    EXPECT_EQ(w[1], ~0ull);
    EXPECT_EQ(w[2], 0u);
}

TEST(LineBits, ClearBitsAcrossAWordBoundaryClearsOnlyTheRange) {
    std::uint64_t w[2] = {~0ull, ~0ull};
    clear_bits(w, 60, 70);
    EXPECT_EQ(w[0], 0x0FFFFFFFFFFFFFFFull);
    EXPECT_EQ(w[1], ~0x3Full);
    clear_bits(w, 3, 4); // one bit: bit 3
    EXPECT_EQ(w[0], 0x0FFFFFFFFFFFFFF7ull);
}

TEST(LineBits, FirstAndLastSetFindTheEndsInsideTheRangeOnly) {
    std::uint64_t w[3] = {0, 0, 0};
    w[0] = std::uint64_t{1} << 2;  // line 2
    w[1] = std::uint64_t{1} << 5;  // line 69
    w[2] = std::uint64_t{1} << 63; // line 191
    EXPECT_EQ(first_set(w, 0, 192), 2u);
    EXPECT_EQ(first_set(w, 3, 192), 69u);  // crosses into word 1
    EXPECT_EQ(first_set(w, 70, 191), 191u); // none in [70, 191): e
    EXPECT_EQ(first_set(w, 70, 192), 191u);
    EXPECT_EQ(last_set(w, 0, 192), 191u);
    EXPECT_EQ(last_set(w, 0, 191), 69u);   // line 191 is outside [0, 191)
    EXPECT_EQ(last_set(w, 0, 69), 2u);     // crosses back into word 0
    EXPECT_EQ(last_set(w, 3, 69), 69u);    // none in [3, 69): e
    EXPECT_EQ(last_set(w, 69, 70), 69u);   // a range of one line
    EXPECT_EQ(first_set(w, 69, 70), 69u);
}

} // namespace
} // namespace kdsim::mem
