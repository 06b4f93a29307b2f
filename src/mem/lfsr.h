// The random replacement's draw: the 16-bit Galois LFSR of Cache::replace (taps 0xB400), one step.
// Mirrors no kernel code: the model's pseudo-random victim choice, shared by the fills that copy
// Cache::replace's draw (memory.cpp's fast fills, the L1I's walk).
#pragma once

#include <array>
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

// The draws as a stream of bits. Bit i of a state's stream is the bit that the (i + 1)-th step from
// it shifts out (bit 0 of the state after i steps). A state's bit 1 is the next state's bit 0 (the
// taps are at bit 10 and above), so the k-th draw's way of a 4-way set (the state after k steps
// & 3) is the stream's bits k and k + 1, and the stream >> k is the stream of the state after k
// steps. The stream is linear in the state (over GF(2)), and so is the state in its stream's first
// 16 bits: tables by byte (4 KiB and 1 KiB).
namespace lfsr_detail {
// the first 64 bits of the stream of x
constexpr std::uint64_t stream_of(std::uint32_t x) {
    std::uint64_t s = 0;
    for (unsigned i = 0; i < 64; ++i) {
        s |= std::uint64_t{x & 1u} << i;
        x = (x >> 1) ^ (-(x & 1u) & 0xB400u);
    }
    return s;
}
// [h][b]: the stream of the state b << 8h
inline constexpr std::array<std::array<std::uint64_t, 256>, 2> streams = [] {
    std::array<std::array<std::uint64_t, 256>, 2> t{};
    for (unsigned h = 0; h < 2; ++h)
        for (std::uint32_t b = 0; b < 256; ++b) t[h][b] = stream_of(b << (8 * h));
    return t;
}();
// [h][b]: the state whose stream's first 16 bits are b << 8h (16 bits determine a state: the map
// of the states' bits to them inverted by elimination)
inline constexpr std::array<std::array<std::uint16_t, 256>, 2> states = [] {
    std::uint32_t state[16] = {}, bits[16] = {}; // pairs: a state, its stream's first 16 bits
    for (unsigned j = 0; j < 16; ++j) {
        state[j] = 1u << j;
        bits[j] = static_cast<std::uint32_t>(stream_of(state[j]) & 0xFFFFu);
    }
    for (unsigned m = 0; m < 16; ++m) { // pair m's bits become 1 << m
        unsigned r = m;
        while (!(bits[r] >> m & 1u)) ++r;
        std::uint32_t t = state[r];
        state[r] = state[m];
        state[m] = t;
        t = bits[r];
        bits[r] = bits[m];
        bits[m] = t;
        for (unsigned j = 0; j < 16; ++j)
            if (j != m && (bits[j] >> m & 1u)) {
                bits[j] ^= bits[m];
                state[j] ^= state[m];
            }
    }
    std::array<std::array<std::uint16_t, 256>, 2> t{};
    for (unsigned h = 0; h < 2; ++h)
        for (std::uint32_t b = 0; b < 256; ++b) {
            std::uint32_t x = 0;
            for (unsigned m = 0; m < 8; ++m)
                if (b >> m & 1u) x ^= state[8 * h + m];
            t[h][b] = static_cast<std::uint16_t>(x);
        }
    return t;
}();
} // namespace lfsr_detail

// The first 64 bits of state x's stream (x < 2^16).
[[gnu::always_inline]] inline std::uint64_t lfsr_stream(std::uint32_t x) {
    return lfsr_detail::streams[0][x & 255u] ^ lfsr_detail::streams[1][(x >> 8) & 255u];
}
// The state whose stream begins with s's low 16 bits: for the stream of x shifted right by k <= 48,
// the state after k steps from x.
[[gnu::always_inline]] inline std::uint32_t lfsr_state(std::uint64_t s) {
    return lfsr_detail::states[0][s & 255u] ^ lfsr_detail::states[1][(s >> 8) & 255u];
}

} // namespace kdsim::mem
