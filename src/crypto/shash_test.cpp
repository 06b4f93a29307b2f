// The x86 SHA glue's rules for the calls testmgr makes (arch/x86/crypto/sha256_ssse3_glue.c), by
// hand from a made-up cost table: an update that completes no block runs the C code without a
// bracket; other updates and every finup are one kernel_fpu_begin/end bracket, attributed to the
// driver; a call with SIMD disabled runs the generic code. Functional mode: the bytes fed over
// several calls give OpenSSL's one-shot digest.
#include "crypto/shash.h"
#include "crypto/crypto_test_support.h"

#include <gtest/gtest.h>

#include <numeric>

namespace kdsim::crypto {
namespace {


struct Outcome : testing::TaskCrypto {
    ShashStats stats;
    std::optional<arch::SimdOwnerStats> driver;
    bool verified = false;
};

engine::Task<> calls(arch::SimdUnit& u, const HashCostTable& t, const std::vector<ShashCall>& cs,
                     std::span<const std::uint8_t> data, Outcome& o) {
    Digest d(HashAlg::SHA256);
    for (const ShashCall& c : cs)
        co_await crypto_shash_call(u, t, HashAlg::SHA256, HashImpl::SSSE3, Chunking{}, c, &d,
                                   data.subspan(c.buffered, c.len), o.stats);
    o.verified = check_digest(u.cpu(), d, data, o.stats);
}

Outcome run(const std::vector<ShashCall>& cs) {
    engine::Simulation sim;
    kernel::Cpu cpu(sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{});
    auto unit = arch::make_simd_unit(cpu, arch::SimdPolicy::X86_PREEMPT,
                                     arch::SimdCosts{.begin = 7, .end = 3, .save = 0, .restore = 0, .state_size = 0,
                                                     .unavailable_trap = {}, .kernel_use_warning = {}});
    HashCostTable t;
    t.set(HashAlg::SHA256, HashImpl::GENERIC, {10.0, 100, {}});
    t.set(HashAlg::SHA256, HashImpl::SSSE3, {5.0, 50, {}});
    std::uint64_t total = 0;
    for (const ShashCall& c : cs) total = std::max(total, c.buffered + c.len);
    std::vector<std::uint8_t> data(total);
    std::iota(data.begin(), data.end(), std::uint8_t{1});
    Outcome o;
    cpu.create_task("cryptomgr", kernel::SchedPolicy::NORMAL, 0, true, calls(*unit, t, cs, data, o));
    static_cast<testing::TaskCrypto&>(o) = testing::run_task(sim, cpu, *unit);
    if (!unit->owners().empty()) o.driver = unit->owners().front();
    return o;
}

TEST(ShashGlue, AnUpdateShortOfABlockRunsTheCCodeAndTheRestOneBracketEach) {
    // update(10): 10 + 0 < 64, generic 10 x 10 = 100; update(100) from byte 10: SSSE3 bytes
    // [10, 110) = 550 - 50 = 500, one bracket; final: SSSE3 per call 50, one bracket.
    auto o = run({{ShashOp::UPDATE, 10, 0, false}, {ShashOp::UPDATE, 100, 10, false}, {ShashOp::FINUP, 0, 110, false}});
    EXPECT_EQ(o.crypto, 100u + 500u + 50u);
    EXPECT_EQ(o.brackets, 2u);
    EXPECT_EQ(o.begin_end, 2u * (7 + 3));
    EXPECT_EQ(o.stats.partial_calls, 1u);
    EXPECT_EQ(o.stats.simd_calls, 2u);
    ASSERT_TRUE(o.driver);
    EXPECT_EQ(o.driver->name, "sha256-ssse3");
    EXPECT_EQ(o.driver->calls, 2u);
    EXPECT_EQ(o.driver->brackets, 2u);
    EXPECT_EQ(o.driver->begin_end_cycles, 2u * (7 + 3));
    EXPECT_EQ(o.driver->bytes, 100u);
    EXPECT_TRUE(o.verified); // three calls, one digest of the 110 bytes
}

TEST(ShashGlue, WithSimdDisabledForTheTestTheGenericCodeRunsAndNoFallbackIsCounted) {
    // finup(200) with nosimd: generic 200 x 10 + 100 per call, no bracket; crypto_simd_usable()
    // was made false by testmgr, not by the policy, so the unit counts no fallback.
    auto o = run({{ShashOp::FINUP, 200, 0, true}});
    EXPECT_EQ(o.crypto, 200u * 10 + 100);
    EXPECT_EQ(o.brackets, 0u);
    EXPECT_EQ(o.stats.nosimd_calls, 1u);
    EXPECT_EQ(o.fallbacks, 0u);
    EXPECT_FALSE(o.driver);
    EXPECT_TRUE(o.verified);
}

} // namespace
} // namespace kdsim::crypto
