// Bitmaps of lines, a bit per line in 64-bit words (bit i: word i / 64, bit i % 64), operated on
// over a range [i, e) a word at a time instead of a line at a time: the DMA API's per-line state
// of a buffer (devices/dma.cpp) marks, clears and searches whole line ranges; the L1I's mask of a
// span within one word (icache.cpp) is a range_mask. Mirrors no kernel
// code: a bookkeeping primitive of the model.
#pragma once

#include <bit>
#include <cstdint>

namespace kdsim::mem {

// The index of the lowest set bit of `x` (not 0), as std::countr_zero, in a 64-bit register. On
// x86-64 with GCC one tzcnt: the compiler's countr_zero adds a zeroing xor before it and a sign
// extension of its int after it (two instructions a call in the fills' loops).
[[gnu::always_inline]] inline std::uint64_t lowest_set(std::uint64_t x) {
#if defined(__x86_64__) && defined(__GNUC__)
    std::uint64_t n;
    asm("tzcntq %1, %0" : "=r"(n) : "rm"(x) : "cc");
    return n;
#else
    return static_cast<std::uint64_t>(std::countr_zero(x));
#endif
}

// The bits [i, e) of word w (i / 64 == w, i < e): the mask of the part of [i, e) in that word.
inline std::uint64_t range_mask(std::uint64_t i, std::uint64_t e) {
    const std::uint64_t n = e - i < 64 - i % 64 ? e - i : 64 - i % 64;
    return (n == 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << n) - 1)) << (i % 64);
}

// Sets bits [i, e) of `w` (nothing when i >= e).
inline void set_bits(std::uint64_t* w, std::uint64_t i, std::uint64_t e) {
    while (i < e) {
        const std::uint64_t m = range_mask(i, e);
        w[i / 64] |= m;
        i = (i / 64 + 1) * 64;
    }
}

// Clears bits [i, e) of `w` (nothing when i >= e).
inline void clear_bits(std::uint64_t* w, std::uint64_t i, std::uint64_t e) {
    while (i < e) {
        const std::uint64_t m = range_mask(i, e);
        w[i / 64] &= ~m;
        i = (i / 64 + 1) * 64;
    }
}

// The lowest set bit of `w` in [i, e), or e when none is set.
inline std::uint64_t first_set(const std::uint64_t* w, std::uint64_t i, std::uint64_t e) {
    while (i < e) {
        if (const std::uint64_t x = w[i / 64] & range_mask(i, e)) return (i & ~std::uint64_t{63}) + std::countr_zero(x);
        i = (i / 64 + 1) * 64;
    }
    return e;
}

// The highest set bit of `w` in [i, e), or e when none is set.
inline std::uint64_t last_set(const std::uint64_t* w, std::uint64_t i, std::uint64_t e) {
    std::uint64_t hi = e; // the part [lo, hi) of [i, e) in one word, from the top
    while (hi > i) {
        const std::uint64_t lo = (hi - 1) / 64 * 64 > i ? (hi - 1) / 64 * 64 : i;
        if (const std::uint64_t x = w[lo / 64] & range_mask(lo, hi))
            return (lo & ~std::uint64_t{63}) + 63 - std::countl_zero(x);
        hi = lo;
    }
    return e;
}

} // namespace kdsim::mem
