// One AEAD operation on a packet as the kernel's crypto code runs it, charged to the calling
// context: which primitives run, in which implementation, inside which SIMD brackets.
//  - LIB_CHACHAPOLY: lib/crypto/chacha20poly1305.c (WireGuard) and the rfc7539 template
//    (ESP with ChaCha20-Poly1305): chacha20 over the Poly1305 key block, poly1305 over
//    AAD, ciphertext and lengths, chacha20 over the data. Each arch routine checks
//    crypto_simd_usable() itself and brackets at most 4 KiB per kernel_*_begin/end
//    (706024a52c61); when SIMD is not usable it runs its scalar code (chacha_doarm,
//    poly1305_blocks_arm). x86 Poly1305 uses SIMD only from 288 bytes (poly1305_glue.c).
//  - GCM_TEMPLATE: crypto/gcm.c over ctr(aes) and ghash, two passes in two brackets.
//  - GCM_FUSED: one fused driver (gcm-aes-ce, generic-gcm-aesni/vaes): one pass, NEON held
//    per skcipher_walk step of at most 4 KiB.
// Whether the request runs here or is handed to cryptd is the caller's decision (esp4.c via
// crypto/simd.c); this function is the synchronous part.
#pragma once

#include "arch/simd.h"
#include "crypto/aead.h"
#include "crypto/cipher_costs.h"
#include "engine/task.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kdsim::crypto {

enum class AeadDriver : std::uint8_t { LIB_CHACHAPOLY, GCM_TEMPLATE, GCM_FUSED };
std::string_view to_string(AeadDriver d);

struct AeadPathStats {
    std::uint64_t calls = 0;
    std::uint64_t bytes = 0;
    std::uint64_t simd_steps = 0;   // primitive passes that ran on the SIMD unit
    std::uint64_t scalar_steps = 0; // passes that ran scalar code
    std::uint64_t fallbacks = 0;    // passes that wanted SIMD but crypto_simd_usable() was false
    std::uint64_t unusable_simd = 0; // an internal driver's SIMD pass where may_use_simd() was false
};

struct AeadOutcome {
    bool clobbered = false; // some pass found foreign register contents: the result is garbage
    engine::Cycles work = 0; // the passes' cycles: the warm compute that consumes the data
};

// Which AEAD driver an IPsec SA's crypto_alloc_aead() ends up with (highest priority
// registered), and whether crypto/simd.c wraps it (so that requests made where SIMD is not
// usable go through cryptd):
//  - chacha20-poly1305: rfc7539 over chacha20-{neon,simd} and poly1305: synchronous, scalar
//    fallback inside the arch routines.
//  - aes-gcm on arm32 before ARM 9283/1: crypto/gcm.c over ctr(aes) from aes-ce (simd-wrapped)
//    and ghash-ce (async via cryptd when !may_use_simd): asynchronous in softirq.
//  - aes-gcm on arm32 with 9283/1: the fused synchronous gcm-aes-ce (added with that series).
//  - aes-gcm on arm64: gcm-aes-ce, synchronous; on x86: generic-gcm-aesni behind crypto/simd.c.
struct AeadDriverChoice {
    AeadDriver driver = AeadDriver::LIB_CHACHAPOLY;
    bool async_wrapped = false;
};
AeadDriverChoice select_esp_driver(arch::SimdPolicy policy, AeadAlg alg, const CipherCostTable& t);

// The primitives `driver` runs for `alg`, with the implementation each would use on a CPU of
// this cost table with SIMD usable (simd = true) or not. Returns a description of what is
// missing when the table lacks a needed primitive. `simd_never`: crypto_simd_usable() is always
// false where the driver runs synchronously (crypto_simd_disabled_for_test), so every pass needs
// a scalar implementation.
std::optional<std::string> aead_missing_costs(const CipherCostTable& t, AeadDriver driver, AeadAlg alg,
                                              bool simd_never = false);

// Charges one encrypt/decrypt of `len` payload bytes with `assoc` bytes of associated data on
// unit.cpu(), in the running context. `internal`: the driver is the inner ("__") driver of a
// crypto/simd.c pair, which opens its SIMD brackets without testing crypto_simd_usable(); a pass
// where may_use_simd() is false counts in `stats.unusable_simd` (x86's kernel_fpu_begin WARNs there).
engine::Task<AeadOutcome> aead_crypt(arch::SimdUnit& unit, const CipherCostTable& t, AeadDriver driver,
                                     AeadAlg alg, std::uint64_t len, std::uint64_t assoc, AeadPathStats& stats,
                                     bool internal = false);

} // namespace kdsim::crypto
