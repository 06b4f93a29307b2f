// The crypto self-tests of a boot (crypto/testmgr.c, 6.1): when a driver registers a hash
// algorithm, cryptomgr_test runs alg_test() -> alg_test_hash() -> __alg_test_hash(): every test
// vector under the 9 default configurations through the shash and the ahash API and, with
// CONFIG_CRYPTO_MANAGER_EXTRA_TESTS, fuzz_iterations random configurations per vector
// (test_hash_vec) and fuzz_iterations * 8 random vectors checked against the generic driver
// (test_hash_vs_generic_impl). One kernel thread tests the drivers of one algorithm in the order
// they register (generic, then the arch glue module's ssse3, avx, avx2, ni). The calls go
// through the arch glue (crypto/shash.h), so the machine's SIMD bracket policy applies.
#pragma once

#include "workloads/hashing.h"
#include "workloads/testmgr_rules.h"

namespace kdsim::workloads {

class Testmgr final : public HashWorkloadBase {
public:
    Testmgr(Env env, TestmgrWorkload cfg);
    void start() override;
    results::WorkloadResult result() const override;
    // The drivers tested, in registration order.
    const std::vector<crypto::HashImpl>& drivers() const { return drivers_; }

private:
    static engine::Task<> cryptomgr_test(Testmgr& w);
    // test_hash_vec_cfg(): the shash then the ahash calls of one vector of `len` bytes.
    engine::Task<> test_hash_vec_cfg(crypto::HashImpl impl, const testmgr::TestvecConfig& cfg, std::uint32_t len);
    // Functional mode: the next message's `len` bytes (a test vector's plaintext) into buf_.
    void new_message(std::uint32_t len, engine::Rng& data);
    engine::Task<> run_calls(crypto::HashImpl impl, const std::vector<testmgr::HashCall>& calls);
    TestmgrWorkload cfg_;
    std::vector<crypto::HashImpl> drivers_;
    std::uint64_t tests_ = 0;
    std::uint64_t random_configs_ = 0;
    std::uint64_t random_vectors_ = 0;
};

} // namespace kdsim::workloads
