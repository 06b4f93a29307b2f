// The hash self-test plan of Linux 6.1 crypto/testmgr.c: which shash/ahash calls, of which
// lengths and with SIMD allowed or not, one test of one vector in one configuration makes.
//  - default_hash_testvec_configs[]: the 9 fixed configurations;
//  - generate_random_testvec_config(), generate_random_sgl_divisions(), generate_random_length()
//    (CONFIG_CRYPTO_MANAGER_EXTRA_TESTS): the random ones, drawing as testmgr draws
//    (prandom_u32_below(n) = a 32-bit draw mod n);
//  - build_test_sglist(): the scatterlist entries (length and offset in a 2-page buffer);
//  - test_shash_vec_cfg() and test_ahash_vec_cfg(): the calls each API makes; the ahash API of
//    an shash driver walks the scatterlist a page at a time (crypto_hash_walk, shash_ahash_update,
//    shash_ahash_finup, shash_ahash_digest in crypto/ahash.c and crypto/shash.c).
// Export/import, init and the key are not hashing work and make no call here.
#pragma once

#include "crypto/shash.h"
#include "engine/rng.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kdsim::workloads::testmgr {

inline constexpr std::uint32_t TEST_SG_TOTAL = 10000;
inline constexpr std::uint32_t XBUFSIZE = 8;
inline constexpr std::uint32_t PAGE_SIZE = 4096;
inline constexpr std::uint32_t TESTMGR_POISON_LEN = 16;
inline constexpr std::uint32_t MAX_ALGAPI_ALIGNMASK = 63;
// test_hash_vs_generic_impl(): maxdatasize = 2 * PAGE_SIZE - TESTMGR_POISON_LEN.
inline constexpr std::uint32_t MAX_RANDOM_DATA = 2 * PAGE_SIZE - TESTMGR_POISON_LEN;

enum class Flush : std::uint8_t { NONE, FLUSH, REIMPORT };
enum class Finalization : std::uint8_t { FINAL, FINUP, DIGEST };

struct SgDivision {
    std::uint32_t proportion_of_total = 0; // out of TEST_SG_TOTAL
    std::uint32_t offset = 0;
    bool offset_relative_to_alignmask = false;
    Flush flush = Flush::NONE;
    bool nosimd = false;
};

struct TestvecConfig {
    std::string name;
    bool may_sleep = false; // CRYPTO_TFM_REQ_MAY_SLEEP
    Finalization finalization = Finalization::FINAL;
    bool nosimd = false;
    std::vector<SgDivision> src_divs;
};

// The 9 default_hash_testvec_configs of 6.1, in order.
const std::vector<TestvecConfig>& default_hash_configs();

// generate_random_length(): [0, max_len], preferring short lengths.
std::uint32_t generate_random_length(engine::Rng& rng, std::uint32_t max_len);
// generate_random_testvec_config(), including the draws for fields a hash does not use
// (in-place mode, dst_divs, iv and key offsets), so the sequence of draws is testmgr's.
TestvecConfig generate_random_testvec_config(engine::Rng& rng);

// One scatterlist entry as build_test_sglist() lays it out.
struct SgEntry {
    std::uint32_t length = 0;
    std::uint32_t offset = 0;   // into a page-aligned 2-page buffer
    std::size_t div = 0;        // index into the config's src_divs
};
std::vector<SgEntry> build_test_sglist(const TestvecConfig& cfg, std::uint32_t total_len, std::uint32_t alignmask);

// One hash call: crypto_shash_update or _finup (final is finup of 0 bytes) with SIMD allowed or
// not, and whether cond_resched() follows it (crypto_hash_walk_done's crypto_yield() for a
// request that may sleep).
struct HashCall {
    crypto::ShashOp op = crypto::ShashOp::FINUP;
    std::uint32_t len = 0;
    bool nosimd = false;
    bool resched = false;
};
// test_shash_vec_cfg(): the shash calls of one test (none for a digest config over more than one
// entry: testmgr skips it).
std::vector<HashCall> shash_calls(const TestvecConfig& cfg, const std::vector<SgEntry>& sg);
// test_ahash_vec_cfg() on an shash driver: the shash calls its ahash API makes; each walk step
// of a CRYPTO_TFM_REQ_MAY_SLEEP config is followed by cond_resched().
std::vector<HashCall> ahash_calls(const TestvecConfig& cfg, const std::vector<SgEntry>& sg);

} // namespace kdsim::workloads::testmgr
