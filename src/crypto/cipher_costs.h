// Cycle costs of the cipher and MAC primitives the packet paths run (the [cipher.<prim>.<impl>]
// tables of an architecture profile): one entry per (primitive, implementation) a CPU has, with
// the implementation named as the kernel's arch glue names its code.
#pragma once

#include "crypto/cost_table.h"
#include "engine/time.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace kdsim::crypto {

// Primitives as the kernel composes them: lib/crypto/chacha20poly1305.c calls chacha20 and
// poly1305 separately; crypto/gcm.c composes ctr(aes) and ghash; fused drivers (gcm-aes-ce,
// generic-gcm-aesni, the stitched chacha20-poly1305 of OpenSSL) are primitives of their own.
// The skcipher modes (crypto/skcipher.h) are the arch drivers' mode routines: CBC encryption is
// serial (each block waits for the one before), CBC decryption is not, so they have a figure each;
// XTS is named by its AES key (aes128-xts: xts(aes) with a 256-bit key, two AES-128 keys).
enum class CipherPrim : std::uint8_t {
    CHACHA20, POLY1305, CHACHA20_POLY1305, AES128_CTR, AES256_CTR, GHASH, AES128_GCM, AES256_GCM,
    AES128_CBC_ENC, AES128_CBC_DEC, AES256_CBC_ENC, AES256_CBC_DEC, AES128_XTS, AES256_XTS, COUNT
};
inline constexpr std::size_t CIPHER_PRIMS = static_cast<std::size_t>(CipherPrim::COUNT);

enum class CipherImpl : std::uint8_t {
    GENERIC, // portable C
    ARM,     // arm32 scalar assembler (chacha_doarm, poly1305_blocks_arm)
    ARM64,   // arm64 scalar assembler
    NEON,    // ARM NEON / Advanced SIMD
    BSAES,   // bit-sliced AES on NEON (aes-neonbs)
    CE,      // ARMv8 Crypto Extensions (AES, PMULL)
    SSSE3, AVX2, AVX512, AESNI, VAES,
    AVX, // x86 AVX without AVX2: the stitched AES-NI/PCLMULQDQ GCM (the kernel's aesni_gcm_*_avx_gen2,
         // OpenSSL's aesni_gcm_encrypt), AVX Poly1305
    COUNT
};
inline constexpr std::size_t CIPHER_IMPLS = static_cast<std::size_t>(CipherImpl::COUNT);

std::string_view to_string(CipherPrim p);
std::optional<CipherPrim> cipher_prim_from_string(std::string_view s);
std::string_view to_string(CipherImpl i);
std::optional<CipherImpl> cipher_impl_from_string(std::string_view s);
// Whether the implementation runs on the SIMD/FPU unit (needs a kernel_*_begin/end bracket).
bool uses_simd(CipherImpl i);

struct CipherCost : PerByteCost {};

// One measured point of a call's cost curve: the median cycles of one call over `bytes` bytes.
struct CostPoint {
    std::uint64_t bytes = 0;
    double cycles = 0;
};

class CipherCostTable : public CostTable<CipherPrim, CipherImpl, CipherCost, CIPHER_PRIMS, CIPHER_IMPLS> {
public:
    // A measured cost curve ([cipher.<prim>.<impl>] `curve`, written by kdsim calibrate): points
    // with strictly increasing sizes, at least two. An empty vector removes it.
    void set_curve(CipherPrim p, CipherImpl i, std::vector<CostPoint> pts) {
        curves_[static_cast<std::size_t>(p)][static_cast<std::size_t>(i)] = std::move(pts);
    }
    const std::vector<CostPoint>& curve(CipherPrim p, CipherImpl i) const {
        return curves_[static_cast<std::size_t>(p)][static_cast<std::size_t>(i)];
    }
    // Cycles of one call over `len` bytes. Without a curve: cycles_per_call + bytes(0, len).
    // With one: linear between the two points around `len`; beyond its ends, the end point plus
    // cycles_per_byte per byte more (or less). Implementation code works in blocks and takes other
    // paths for tails, so that a call's cost is not a line in its length (docs/validation.md).
    // Precondition: the table has (p, i).
    engine::Cycles call_cycles(CipherPrim p, CipherImpl i, std::uint64_t len) const;
    // The part of call_cycles(p, i, len) for bytes [from, to) of the call, cycles_per_call in the
    // part that starts at 0; parts of one call add up to the whole. With a curve, the whole is
    // shared in proportion to the bytes.
    engine::Cycles part_cycles(CipherPrim p, CipherImpl i, std::uint64_t len, std::uint64_t from,
                               std::uint64_t to) const;

    // The implementation used: the SIMD one with the fewest cycles per byte or, with `simd`
    // false, the fastest one that needs no SIMD unit. (For the drivers modelled, the kernel's
    // cra_priority order is also the speed order: ce > neon > bsaes > scalar, vaes > aesni.)
    std::optional<CipherImpl> best(CipherPrim p, bool simd) const {
        std::optional<CipherImpl> b;
        for (std::size_t i = 0; i < CIPHER_IMPLS; ++i) {
            const auto impl = static_cast<CipherImpl>(i);
            const auto& c = get(p, impl);
            if (!c || uses_simd(impl) != simd) continue;
            if (!b || c->cycles_per_byte < get(p, *b)->cycles_per_byte) b = impl;
        }
        return b;
    }

private:
    std::array<std::array<std::vector<CostPoint>, CIPHER_IMPLS>, CIPHER_PRIMS> curves_{};
};

} // namespace kdsim::crypto
