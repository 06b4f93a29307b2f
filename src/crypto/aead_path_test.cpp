// The AEAD paths' cycles, brackets and scalar fallbacks, computed by hand from made-up cost
// tables and the kernel rules they model: chacha20 over one 64-byte block is always scalar
// (chacha_crypt_arch: bytes <= CHACHA_BLOCK_SIZE), x86 Poly1305 needs 288 bytes for SIMD, SIMD
// work is bracketed per 4 KiB, crypto_simd_usable() false means the scalar implementation.
#include "crypto/aead_path.h"
#include "crypto/crypto_test_support.h"

#include "kernel/preempt.h"

#include <gtest/gtest.h>

namespace kdsim::crypto {
namespace {


kernel::KernelCosts kcosts() {
    kernel::KernelCosts c;
    c.context_switch = 100;
    return c; // bh/irqflags costs stay 0, so only crypto and begin/end are charged
}

CipherCostTable table() {
    CipherCostTable t;
    t.set(CipherPrim::CHACHA20, CipherImpl::NEON, {5.0, 100});
    t.set(CipherPrim::CHACHA20, CipherImpl::ARM, {11.0, 50});
    t.set(CipherPrim::POLY1305, CipherImpl::NEON, {1.0, 200});
    t.set(CipherPrim::POLY1305, CipherImpl::ARM, {4.0, 70});
    t.set(CipherPrim::AES128_CTR, CipherImpl::CE, {1.0, 30});
    t.set(CipherPrim::GHASH, CipherImpl::CE, {1.5, 40});
    t.set(CipherPrim::AES128_GCM, CipherImpl::CE, {2.0, 300});
    return t;
}

struct Outcome : testing::TaskCrypto {
    AeadPathStats stats;
    engine::Cycles work = 0; // AeadOutcome::work
};

engine::Task<> call(arch::SimdUnit& u, const CipherCostTable& t, AeadDriver d, AeadAlg a, std::uint64_t len,
                    std::uint64_t assoc, AeadPathStats& s, bool in_softirq, bool internal, engine::Cycles& work) {
    if (in_softirq) u.cpu().preempt_count_add(kernel::SOFTIRQ_OFFSET); // as NET_RX would be
    work = (co_await aead_crypt(u, t, d, a, len, assoc, s, internal)).work;
    if (in_softirq) u.cpu().preempt_count_sub(kernel::SOFTIRQ_OFFSET);
}

// `disabled_for_test`: the CPU's crypto_simd_disabled_for_test; `internal`: the inner driver of a
// crypto/simd.c pair.
Outcome run(arch::SimdPolicy pol, AeadDriver d, AeadAlg a, std::uint64_t len, std::uint64_t assoc, bool in_softirq,
            bool disabled_for_test = false, bool internal = false) {
    engine::Simulation sim;
    kernel::Cpu cpu(sim, 0, engine::Clock(1'000'000'000), kcosts(), kernel::KernelConfig{});
    auto unit = arch::make_simd_unit(cpu, pol, arch::SimdCosts{.begin = 7, .end = 3, .save = 0, .restore = 0, .state_size = 0, .unavailable_trap = {}, .kernel_use_warning = {}});
    unit->set_crypto_simd_disabled_for_test(disabled_for_test);
    CipherCostTable t = table();
    Outcome o;
    cpu.create_task("kworker", kernel::SchedPolicy::NORMAL, 0, true,
                    call(*unit, t, d, a, len, assoc, o.stats, in_softirq, internal, o.work));
    static_cast<testing::TaskCrypto&>(o) = testing::run_task(sim, cpu, *unit);
    return o;
}

TEST(AeadPath, LibChachaPolyInTaskContextRunsBlockZeroScalarAndTheDataOnNeon) {
    // 1424 bytes, no AAD: chacha block 0 scalar (50 + 64 x 11), chacha data NEON (100 + 1424 x 5),
    // poly1305 NEON over pad16(0) + pad16(1424) + 16 = 1440 bytes (200 + 1440 x 1).
    auto o = run(arch::SimdPolicy::ARM32_SOFTIRQ, AeadDriver::LIB_CHACHAPOLY, AeadAlg::CHACHA20_POLY1305, 1424, 0, false);
    EXPECT_EQ(o.crypto, (50 + 64 * 11) + (100 + 1424 * 5) + (200 + 1440 * 1));
    EXPECT_EQ(o.brackets, 2u);
    EXPECT_EQ(o.begin_end, 2u * (7 + 3));
    EXPECT_EQ(o.stats.simd_steps, 2u);
    EXPECT_EQ(o.stats.scalar_steps, 1u);
    EXPECT_EQ(o.fallbacks, 0u);
}

TEST(AeadPath, InSoftirqBeforeArm9283EveryPassFallsBackToTheScalarCode) {
    // arm32 before 9283/1: may_use_simd() = !in_interrupt(): false in NET_RX.
    auto o = run(arch::SimdPolicy::ARM32_TASK_ONLY, AeadDriver::LIB_CHACHAPOLY, AeadAlg::CHACHA20_POLY1305, 1424, 0, true);
    EXPECT_EQ(o.crypto, (50 + 64 * 11) + (50 + 1424 * 11) + (70 + 1440 * 4));
    EXPECT_EQ(o.brackets, 0u);
    EXPECT_EQ(o.fallbacks, 2u); // chacha data and poly1305 wanted NEON; block 0 never does
}

TEST(AeadPath, CryptoSimdDisabledForTestMakesTheLibraryRunItsScalarCodeWhereNeonIsUsable) {
    // include/crypto/internal/simd.h: crypto_simd_usable() = may_use_simd() && !disabled_for_test.
    // A task after 9283/1 may use NEON, but the knob sends both passes to the scalar code, as in
    // the softirq case before 9283/1 above.
    auto o = run(arch::SimdPolicy::ARM32_SOFTIRQ, AeadDriver::LIB_CHACHAPOLY, AeadAlg::CHACHA20_POLY1305, 1424, 0,
                 false, true);
    EXPECT_EQ(o.crypto, (50 + 64 * 11) + (50 + 1424 * 11) + (70 + 1440 * 4));
    EXPECT_EQ(o.brackets, 0u);
    EXPECT_EQ(o.fallbacks, 2u);
}

TEST(AeadPath, AnInternalDriverOpensItsBracketWithoutTestingAndCountsAPassWhereSimdIsNotUsable) {
    // The inner driver of a crypto/simd.c pair runs NEON even in softirq before 9283/1, where
    // may_use_simd() is false: one bracket of 300 + (1000 + 8) x 2, one unusable pass, no fallback.
    auto o = run(arch::SimdPolicy::ARM32_TASK_ONLY, AeadDriver::GCM_FUSED, AeadAlg::AES_128_GCM, 1000, 8, true,
                 false, true);
    EXPECT_EQ(o.crypto, 300 + 1008 * 2);
    EXPECT_EQ(o.brackets, 1u);
    EXPECT_EQ(o.stats.unusable_simd, 1u);
    EXPECT_EQ(o.fallbacks, 0u);
    // In task context it may: nothing is counted.
    auto task = run(arch::SimdPolicy::ARM32_TASK_ONLY, AeadDriver::GCM_FUSED, AeadAlg::AES_128_GCM, 1000, 8, false,
                    true, true);
    EXPECT_EQ(task.stats.unusable_simd, 0u);
    EXPECT_EQ(task.brackets, 1u); // the test knob does not reach an internal driver
}

TEST(AeadPath, SimdWorkIsBracketedPerFourKibibytes) {
    // 10000 bytes of fused GCM with 8 bytes AAD: 10008 bytes -> brackets of 4096, 4096, 1816.
    auto o = run(arch::SimdPolicy::ARM32_SOFTIRQ, AeadDriver::GCM_FUSED, AeadAlg::AES_128_GCM, 10000, 8, false);
    EXPECT_EQ(o.brackets, 3u);
    EXPECT_EQ(o.crypto, 300 + 10008 * 2);
}

TEST(AeadPath, TheOutcomesWorkIsEveryPassCyclesScalarAndSimdWithoutTheBracketsBeginAndEnd) {
    // the work that consumes the data (MemorySystem::consume): the passes' cycles, not the SIMD
    // brackets' begin/end (7 + 3 each)
    auto lib = run(arch::SimdPolicy::ARM32_SOFTIRQ, AeadDriver::LIB_CHACHAPOLY, AeadAlg::CHACHA20_POLY1305, 1424, 0, false);
    EXPECT_EQ(lib.work, (50 + 64 * 11) + (100 + 1424 * 5) + (200 + 1440 * 1));
    auto fused = run(arch::SimdPolicy::ARM32_SOFTIRQ, AeadDriver::GCM_FUSED, AeadAlg::AES_128_GCM, 10000, 8, false);
    EXPECT_EQ(fused.work, 300 + 10008 * 2); // three brackets, one call's cycles
    auto scalar = run(arch::SimdPolicy::ARM32_TASK_ONLY, AeadDriver::LIB_CHACHAPOLY, AeadAlg::CHACHA20_POLY1305, 1424, 0, true);
    EXPECT_EQ(scalar.work, (50 + 64 * 11) + (50 + 1424 * 11) + (70 + 1440 * 4));
}

TEST(AeadPath, TheGcmTemplateRunsCtrAndGhashAsTwoPasses) {
    // ctr(aes) over len + 16 (the tag's counter block), ghash over pad16(8) + pad16(1000) + 16.
    auto o = run(arch::SimdPolicy::ARM32_SOFTIRQ, AeadDriver::GCM_TEMPLATE, AeadAlg::AES_128_GCM, 1000, 8, false);
    EXPECT_EQ(o.brackets, 2u);
    const double ghash_bytes = 16 + 1008 + 16;
    EXPECT_EQ(o.crypto, static_cast<kernel::Cycles>(30 + 1016 * 1 + 40 + ghash_bytes * 1.5));
}

TEST(AeadPath, X86Poly1305StaysScalarBelow288Bytes) {
    CipherCostTable t;
    t.set(CipherPrim::CHACHA20, CipherImpl::AVX2, {1.0, 10});
    t.set(CipherPrim::CHACHA20, CipherImpl::GENERIC, {4.0, 10});
    t.set(CipherPrim::POLY1305, CipherImpl::AVX2, {0.5, 10});
    t.set(CipherPrim::POLY1305, CipherImpl::GENERIC, {1.0, 10});
    engine::Simulation sim;
    kernel::Cpu cpu(sim, 0, engine::Clock(1'000'000'000), kcosts(), kernel::KernelConfig{});
    auto unit = arch::make_simd_unit(cpu, arch::SimdPolicy::X86_BH_OFF, arch::SimdCosts{});
    AeadPathStats s;
    engine::Cycles work = 0;
    // 100 bytes: chacha data (> 64) on AVX2; poly over 112 + 16 = 128 < 288 bytes: scalar.
    cpu.create_task("t", kernel::SchedPolicy::NORMAL, 0, true,
                    call(*unit, t, AeadDriver::LIB_CHACHAPOLY, AeadAlg::CHACHA20_POLY1305, 100, 0, s, false, false, work));
    cpu.boot();
    sim.run(engine::PS_PER_S);
    EXPECT_EQ(s.simd_steps, 1u);
    EXPECT_EQ(s.scalar_steps, 2u);
    EXPECT_EQ(s.fallbacks, 0u); // too short for SIMD is not a fallback
}

TEST(AeadPath, MissingCostsAreNamed) {
    CipherCostTable t;
    t.set(CipherPrim::CHACHA20, CipherImpl::NEON, {5.0, 100});
    t.set(CipherPrim::POLY1305, CipherImpl::NEON, {1.0, 200});
    auto m = aead_missing_costs(t, AeadDriver::LIB_CHACHAPOLY, AeadAlg::CHACHA20_POLY1305);
    ASSERT_TRUE(m.has_value());
    EXPECT_NE(m->find("cipher.chacha20 with a scalar implementation"), std::string::npos) << *m;
    EXPECT_FALSE(aead_missing_costs(table(), AeadDriver::GCM_FUSED, AeadAlg::AES_128_GCM).has_value());
    EXPECT_TRUE(aead_missing_costs(table(), AeadDriver::GCM_FUSED, AeadAlg::AES_256_GCM).has_value());
}

TEST(AeadPath, WhenSimdIsNeverUsableEveryPassOfASynchronousDriverNeedsScalarCode) {
    // table() has aes128-gcm on CE only: fine normally, missing with crypto_simd_disabled_for_test.
    EXPECT_FALSE(aead_missing_costs(table(), AeadDriver::GCM_FUSED, AeadAlg::AES_128_GCM, false).has_value());
    auto m = aead_missing_costs(table(), AeadDriver::GCM_FUSED, AeadAlg::AES_128_GCM, true);
    ASSERT_TRUE(m.has_value());
    EXPECT_NE(m->find("cipher.aes128-gcm with a scalar implementation"), std::string::npos) << *m;
    CipherCostTable t = table();
    t.set(CipherPrim::AES128_GCM, CipherImpl::GENERIC, {20.0, 400});
    EXPECT_FALSE(aead_missing_costs(t, AeadDriver::GCM_FUSED, AeadAlg::AES_128_GCM, true).has_value());
    // the template needs both ctr and ghash scalar
    auto tm = aead_missing_costs(table(), AeadDriver::GCM_TEMPLATE, AeadAlg::AES_128_GCM, true);
    ASSERT_TRUE(tm.has_value());
    EXPECT_NE(tm->find("cipher.aes128-ctr with a scalar implementation"), std::string::npos) << *tm;
}

TEST(AeadPath, EspDriverSelectionFollowsTheKernelOfEachPolicy) {
    const CipherCostTable t = table();
    auto before = select_esp_driver(arch::SimdPolicy::ARM32_TASK_ONLY, AeadAlg::AES_128_GCM, t);
    EXPECT_EQ(before.driver, AeadDriver::GCM_TEMPLATE); // gcm(ctr(aes-ce), ghash-ce)
    EXPECT_TRUE(before.async_wrapped);                  // crypto/simd.c + async ghash-ce
    auto after = select_esp_driver(arch::SimdPolicy::ARM32_SOFTIRQ, AeadAlg::AES_128_GCM, t);
    EXPECT_EQ(after.driver, AeadDriver::GCM_FUSED); // gcm-aes-ce, synchronous
    EXPECT_FALSE(after.async_wrapped);
    auto x86 = select_esp_driver(arch::SimdPolicy::X86_PREEMPT, AeadAlg::AES_128_GCM, t);
    EXPECT_TRUE(x86.async_wrapped); // generic-gcm-aesni behind crypto/simd.c
    auto chacha = select_esp_driver(arch::SimdPolicy::ARM32_TASK_ONLY, AeadAlg::CHACHA20_POLY1305, t);
    EXPECT_EQ(chacha.driver, AeadDriver::LIB_CHACHAPOLY);
    EXPECT_FALSE(chacha.async_wrapped); // rfc7539: scalar fallback inside the arch code
}

} // namespace
} // namespace kdsim::crypto
