// The synchronous hash path as the kernel's arch glue runs it (crypto_shash_digest ->
// arch/x86/crypto/sha256_ssse3_glue.c, arch/arm/crypto/sha256_neon_glue.c, ...): when the
// implementation uses SIMD and crypto_simd_usable() holds, the data is hashed inside
// kernel_fpu_begin/end (kernel_neon_begin/end) brackets; otherwise the generic C code runs.
//
// How long one bracket may run is the policy under study (E2):
//  - none:  one bracket for the whole message (the 6.1 glue);
//  - fixed: at most `bytes` per bracket, each its own begin/end (R. Elliott's bytes_per_fpu,
//           2022);
//  - yield: one bracket, but every `bytes` the loop checks need_resched() and, if set, ends
//           the bracket, calls cond_resched() and begins again (H. Xu's proposal, the Dec 2022
//           kernel_fpu_yield() series).
// A call whose implementation is cold in this CPU's caches (HashCache) first pays the
// profile's cold_start cycles, inside its first bracket.
// The final padding block and API overhead (cycles_per_call) are charged in the last bracket,
// as sha256_finup does. In functional mode the bytes are really hashed with OpenSSL in the
// same chunks; if the registers were clobbered during a chunk, that chunk's data is hashed
// corrupted, so the digest no longer verifies.
#pragma once

#include "arch/simd.h"
#include "crypto/chunking.h"
#include "crypto/digest.h"
#include "crypto/hash_costs.h"
#include "engine/task.h"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kdsim::crypto {

// What one crypto_shash_digest call did.
struct ShashOutcome {
    bool used_simd = false;
    bool clobbered = false;   // a chunk found foreign register contents
    bool verified = true;     // functional mode: digest matched the one-shot reference
};

// Which hash implementations' code and tables are warm in one CPU's caches.
class HashCache {
public:
    explicit HashCache(std::optional<engine::Tick> cold_after) : cold_after_(cold_after) {}
    // Records a call of (alg, impl) at `now`; true when it starts with cold caches.
    bool touch(HashAlg alg, HashImpl impl, engine::Tick now) {
        if (!cold_after_) return false;
        std::size_t k = static_cast<std::size_t>(alg) * HASH_IMPLS + static_cast<std::size_t>(impl);
        bool cold = !used_[k] || now - last_[k] >= *cold_after_;
        used_[k] = true;
        last_[k] = now;
        return cold;
    }

private:
    std::optional<engine::Tick> cold_after_;
    std::array<engine::Tick, HASH_ALGS * HASH_IMPLS> last_{};
    std::array<bool, HASH_ALGS * HASH_IMPLS> used_{};
};

// Counters across calls, per (algorithm) for the report.
struct ShashStats {
    std::uint64_t calls = 0;
    std::uint64_t bytes = 0;
    std::uint64_t simd_calls = 0;
    std::uint64_t fallback_calls = 0;
    std::uint64_t nosimd_calls = 0;   // the caller disabled SIMD (testmgr's crypto_disable_simd_for_test)
    std::uint64_t partial_calls = 0;  // updates that completed no block: the glue buffers them in C
    std::uint64_t digests_checked = 0;
    std::uint64_t cold_calls = 0;
};

// One call of the shash API on a descriptor that already took `buffered` bytes of the message:
// crypto_shash_update() or crypto_shash_finup() (final() is finup of 0 bytes; digest() of a
// driver without its own digest is init + finup).
enum class ShashOp : std::uint8_t { UPDATE, FINUP };
struct ShashCall {
    ShashOp op = ShashOp::FINUP;
    std::uint64_t len = 0;
    std::uint64_t buffered = 0;
    bool nosimd = false; // crypto_simd_usable() is false for this call (testmgr's nosimd configs)
};

// The kernel's name of an implementation: cra_driver_name, e.g. "sha256-ni", "sha512-avx2".
std::string driver_name(HashAlg alg, HashImpl impl);

// One shash call as the x86/arm glue runs it: generic C when !crypto_simd_usable() or, for an
// update, when the bytes do not complete a block (sha256_update: count % block + len < block);
// else inside brackets per the chunking policy, attributed to the driver (SimdUnit::owner). The
// padding block and per-call cost are charged to FINUP. In functional mode `d` is fed
// `data` (data.size() == call.len), corrupted where a chunk found clobbered registers.
engine::Task<ShashOutcome> crypto_shash_call(arch::SimdUnit& unit, const HashCostTable& cost, HashAlg alg,
                                             HashImpl impl, const Chunking& chunking, ShashCall call, Digest* d,
                                             std::span<const std::uint8_t> data, ShashStats& stats,
                                             HashCache* cache = nullptr);

// Finishes `d` (fed a whole message) and compares it with OpenSSL's one-shot digest of `data`;
// a mismatch is reported as a DIGEST_MISMATCH finding on `cpu`. Returns whether they match.
bool check_digest(kernel::Cpu& cpu, Digest& d, std::span<const std::uint8_t> data, ShashStats& stats);

// crypto_shash_digest(): hashes `len` bytes with `impl` on the running context of
// `unit.cpu()`; in functional mode also really hashes `data` (data.size() == len).
// Precondition: `cost` has entries for (alg, impl) and (alg, GENERIC).
engine::Task<ShashOutcome> crypto_shash_digest(arch::SimdUnit& unit, const HashCostTable& cost, HashAlg alg,
                                               HashImpl impl, const Chunking& chunking, std::uint64_t len,
                                               bool functional, std::span<const std::uint8_t> data,
                                               ShashStats& stats, HashCache* cache = nullptr);

// The implementation the kernel would register with the highest priority for `alg` on a CPU
// with these costs (x86: shani > avx2 > avx > ssse3; arm: ce > neon > arm; arm64: ce > neon >
// arm64; ppc: spe), or GENERIC.
HashImpl best_hash_impl(const HashCostTable& cost, HashAlg alg);

} // namespace kdsim::crypto
