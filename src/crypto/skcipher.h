// skcipher requests (crypto/skcipher.c) as the kernel's crypto API runs them: crypto_skcipher_
// encrypt/decrypt calls the driver, whose glue walks the request with skcipher_walk_virt and calls
// its mode routine once per walk step inside its own kernel_neon_begin/end or kernel_fpu_begin/end
// (arch/arm64/crypto/aes-glue.c ecb/cbc/ctr/xts_encrypt, arch/x86/crypto/aesni-intel_glue.c
// cbc_encrypt, ctr_crypt, xts_crypt). A walk step ends at a page boundary of the buffer, so a
// request is as many brackets as pages it touches. XTS encrypts the IV with the second key in its
// first step, and a request whose length is not a multiple of 16 and that spans more than one step
// walks all but the last full block and the tail first, then steals the ciphertext in a bracket
// of its own. Whether the request goes through crypto/simd.c or cryptd is the caller's choice
// (workloads/tcrypt_skcipher.h); this is the driver's synchronous part. Functional mode encrypts
// real bytes through OpenSSL EVP (SkcipherKey).
#pragma once

#include "arch/simd.h"
#include "crypto/cipher_costs.h"
#include "engine/enum_names.h"
#include "engine/task.h"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kdsim::crypto {

enum class SkcipherAlg : std::uint8_t { CBC_AES, CTR_AES, XTS_AES };
inline constexpr engine::EnumNames<SkcipherAlg, 3> SKCIPHER_ALG_NAMES{{"cbc(aes)", "ctr(aes)", "xts(aes)"}};
std::string_view to_string(SkcipherAlg a);
std::optional<SkcipherAlg> skcipher_alg_from_string(std::string_view s);

inline constexpr std::uint64_t AES_BLOCK_SIZE = 16;
inline constexpr std::uint64_t PAGE_SIZE = 4096;

// The key sizes in bits the model has figures for: AES-128 and AES-256 (xts(aes): two keys of one
// of them, 256 or 512 bits in all).
std::span<const unsigned> skcipher_key_bits(SkcipherAlg a);
// The crypto API's block size: 16 for cbc and xts, 1 for ctr (a stream mode).
std::uint64_t skcipher_blocksize(SkcipherAlg a);
// What is wrong with a request of `len` bytes for `a` (nullopt: nothing): cbc(aes) needs whole
// blocks, xts(aes) at least one block (it steals ciphertext for a tail), ctr(aes) at least a byte.
std::optional<std::string> skcipher_len_error(SkcipherAlg a, std::uint64_t len);
// The primitive of the profile's [cipher] tables that runs `a` with a `key_bits` key.
CipherPrim skcipher_prim(SkcipherAlg a, unsigned key_bits, bool encrypt);

// The figures around the mode routine ([skcipher] of a profile).
struct SkcipherCosts {
    engine::Cycles request = 0;      // crypto_skcipher_encrypt -> the driver, skcipher_walk_virt's first step
    engine::Cycles walk_step = 0;    // skcipher_walk_done + skcipher_walk_next, per further step
    engine::Cycles simd_wrapper = 0; // crypto/simd.c simd_skcipher_encrypt staying synchronous
};

// One call of the mode routine: `bytes` of the request, in one bracket.
struct WalkStep {
    std::uint64_t bytes = 0;
    bool walk = false; // a skcipher_walk step of its own (false: the walk's first, set up by the request)
    bool tweak = false; // XTS's first call: it also encrypts the IV with the second key
};
// The mode routine calls of a request of `len` bytes whose data starts `offset` bytes into a page
// (tcrypt puts it after the key): one per walk step, each ending at a page boundary; an XTS
// request with a tail spanning more than one step walks len - 16 - tail bytes, then 16 + tail.
std::vector<WalkStep> skcipher_walk_steps(SkcipherAlg a, std::uint64_t len, std::uint64_t offset);

struct SkcipherStats {
    std::uint64_t calls = 0;
    std::uint64_t bytes = 0;
    std::uint64_t steps = 0;         // mode routine calls
    std::uint64_t brackets = 0;      // kernel_*_begin/end pairs
    std::uint64_t scalar_calls = 0;  // requests run by a driver without SIMD (generic)
    std::uint64_t unusable_simd = 0; // brackets opened where may_use_simd() was false
};

// The driver name as /proc/crypto shows it: "xts-aes-ce", "__xts-aes-aesni" (the inner driver of
// a crypto/simd.c pair), "xts(ecb(aes-generic))".
std::string skcipher_driver_name(SkcipherAlg a, CipherImpl impl);
// The implementation a CPU of this table runs: its fastest SIMD one, else its fastest scalar one;
// nullopt when it has neither for the primitive.
std::optional<CipherImpl> skcipher_impl(const CipherCostTable& t, CipherPrim p);

// Charges one crypto_skcipher_encrypt/decrypt of `len` bytes (data at `offset` in its page) on
// unit.cpu(), in the running context: the request, then per walk step the mode routine's call
// (cycles_per_call + its bytes at cycles_per_byte, + one block for XTS's tweak) inside a bracket
// when the implementation uses SIMD. The driver opens its brackets without testing
// crypto_simd_usable(): one where may_use_simd() is false counts in `stats.unusable_simd`.
// Returns whether a bracket found foreign register contents (the result is garbage).
engine::Task<bool> skcipher_crypt(arch::SimdUnit& unit, const CipherCostTable& t, const SkcipherCosts& c,
                                  SkcipherAlg a, unsigned key_bits, bool encrypt, std::uint64_t len,
                                  std::uint64_t offset, SkcipherStats& stats);

// One key of an skcipher, set up once, for real bytes through OpenSSL EVP (aes-N-cbc without
// padding, aes-N-ctr, aes-N-xts). The key's length must be one of skcipher_key_bits(a) / 8 and
// the IV 16 bytes (std::invalid_argument otherwise); a length skcipher_len_error refuses throws too.
class SkcipherKey {
public:
    SkcipherKey(SkcipherAlg a, std::span<const std::uint8_t> key);
    ~SkcipherKey();
    SkcipherKey(const SkcipherKey&) = delete;
    SkcipherKey& operator=(const SkcipherKey&) = delete;
    SkcipherAlg alg() const noexcept { return alg_; }
    // out = in encrypted (or decrypted) under `iv`; out is resized to in.size().
    void crypt(bool encrypt, std::span<const std::uint8_t> iv, std::span<const std::uint8_t> in,
               std::vector<std::uint8_t>& out);

private:
    SkcipherAlg alg_;
    void* enc_; // EVP_CIPHER_CTX
    void* dec_;
};

} // namespace kdsim::crypto
