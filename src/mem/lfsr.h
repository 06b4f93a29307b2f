// The random replacement's draw: the 16-bit Galois LFSR of Cache::replace (taps 0xB400), one step.
// Mirrors no kernel code: the model's pseudo-random victim choice, shared by the fills that copy
// Cache::replace's draw (memory.cpp's fast fills, the L1I's walk).
#pragma once

#include <cstdint>

namespace kdsim::mem {

// (x >> 1) ^ (x & 1 ? 0xB400 : 0), for every 32-bit x. On x86-64 the shift's carry is the low
// bit (shr, sbb: five instructions where the compiler's and-neg form takes six).
[[gnu::always_inline]] inline std::uint32_t lfsr_next(std::uint32_t x) {
#if defined(__x86_64__) && defined(__GNUC__)
    std::uint32_t low; // all ones when x's low bit was set, else 0
    asm("shrl $1, %0\n\tsbbl %1, %1" : "+r"(x), "=r"(low) : : "cc");
    return x ^ (low & 0xB400u);
#else
    return (x >> 1) ^ (-(x & 1u) & 0xB400u);
#endif
}

} // namespace kdsim::mem
