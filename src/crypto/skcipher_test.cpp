// skcipher requests: published test vectors through OpenSSL (NIST SP 800-38A F.2.1, F.2.5, F.5.1;
// IEEE 1619-2007 XTS-AES-128 vector 2), the walk steps the arch glue makes (a step per page the
// data touches, XTS ciphertext stealing in a step of its own), and the cycles and brackets of a
// request computed by hand from a made-up cost table.
#include "crypto/skcipher.h"
#include "crypto/crypto_test_support.h"

#include <gtest/gtest.h>

#include <string>

namespace kdsim::crypto {
namespace {

std::vector<std::uint8_t> hex(std::string_view s) {
    std::vector<std::uint8_t> out;
    for (std::size_t i = 0; i + 1 < s.size(); i += 2) out.push_back(static_cast<std::uint8_t>(std::stoi(std::string(s.substr(i, 2)), nullptr, 16)));
    return out;
}

constexpr std::string_view SP800_38A_PLAIN = "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
                                             "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710";

struct Vector {
    const char* source;
    SkcipherAlg alg;
    std::string_view key, iv, plain, cipher;
};

// SP 800-38A F.2.1 (CBC-AES128), F.2.5 (CBC-AES256), F.5.1 (CTR-AES128); IEEE 1619-2007 vector 2
// (XTS-AES-128: Key1 = 11..11, Key2 = 22..22, data unit sequence number 0x3333333333, little-endian tweak).
const Vector VECTORS[] = {
    {"SP 800-38A F.2.1", SkcipherAlg::CBC_AES, "2b7e151628aed2a6abf7158809cf4f3c", "000102030405060708090a0b0c0d0e0f",
     SP800_38A_PLAIN,
     "7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b2"
     "73bed6b8e3c1743b7116e69e222295163ff1caa1681fac09120eca307586e1a7"},
    {"SP 800-38A F.2.5", SkcipherAlg::CBC_AES, "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
     "000102030405060708090a0b0c0d0e0f", SP800_38A_PLAIN,
     "f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d"
     "39f23369a9d9bacfa530e26304231461b2eb05e2c39be9fcda6c19078c6a9d1b"},
    {"SP 800-38A F.5.1", SkcipherAlg::CTR_AES, "2b7e151628aed2a6abf7158809cf4f3c", "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff",
     SP800_38A_PLAIN,
     "874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff"
     "5ae4df3edbd5d35e5b4f09020db03eab1e031dda2fbe03d1792170a0f3009cee"},
    {"IEEE 1619 vector 2", SkcipherAlg::XTS_AES, "1111111111111111111111111111111122222222222222222222222222222222",
     "33333333330000000000000000000000", "4444444444444444444444444444444444444444444444444444444444444444",
     "c454185e6a16936e39334038acef838bfb186fff7480adc4289382ecd6d394f0"},
};

TEST(SkcipherVectors, EveryPublishedVectorEncryptsToItsCiphertextAndDecryptsBack) {
    for (const Vector& v : VECTORS) {
        SCOPED_TRACE(v.source);
        SkcipherKey k(v.alg, hex(v.key));
        std::vector<std::uint8_t> out, back;
        k.crypt(true, hex(v.iv), hex(v.plain), out);
        EXPECT_EQ(out, hex(v.cipher));
        k.crypt(false, hex(v.iv), out, back);
        EXPECT_EQ(back, hex(v.plain));
    }
}

TEST(SkcipherVectors, XtsRefusesOneAesKeyAndShortRequests) {
    EXPECT_THROW(SkcipherKey(SkcipherAlg::XTS_AES, std::vector<std::uint8_t>(16)), std::invalid_argument);
    SkcipherKey k(SkcipherAlg::XTS_AES, hex("1111111111111111111111111111111122222222222222222222222222222222"));
    std::vector<std::uint8_t> out;
    EXPECT_THROW(k.crypt(true, std::vector<std::uint8_t>(16), std::vector<std::uint8_t>(15), out), std::invalid_argument);
}

TEST(SkcipherChecks, CbcNeedsWholeBlocksXtsOneBlockCtrAnyByte) {
    EXPECT_TRUE(skcipher_len_error(SkcipherAlg::CBC_AES, 1420));
    EXPECT_FALSE(skcipher_len_error(SkcipherAlg::CBC_AES, 1424));
    EXPECT_TRUE(skcipher_len_error(SkcipherAlg::XTS_AES, 15));
    EXPECT_FALSE(skcipher_len_error(SkcipherAlg::XTS_AES, 17));
    EXPECT_FALSE(skcipher_len_error(SkcipherAlg::CTR_AES, 1));
}

std::vector<std::uint64_t> step_bytes(SkcipherAlg a, std::uint64_t len, std::uint64_t offset) {
    std::vector<std::uint64_t> out;
    for (const WalkStep& s : skcipher_walk_steps(a, len, offset)) out.push_back(s.bytes);
    return out;
}

TEST(SkcipherWalk, AStepEndsAtEachPageBoundary) {
    EXPECT_EQ(step_bytes(SkcipherAlg::CBC_AES, 4096, 0), (std::vector<std::uint64_t>{4096}));
    // tcrypt's data starts after the 16-byte key in the first page
    EXPECT_EQ(step_bytes(SkcipherAlg::CBC_AES, 4096, 16), (std::vector<std::uint64_t>{4080, 16}));
    EXPECT_EQ(step_bytes(SkcipherAlg::CTR_AES, 10000, 0), (std::vector<std::uint64_t>{4096, 4096, 1808}));
    EXPECT_EQ(step_bytes(SkcipherAlg::CTR_AES, 1420, 16), (std::vector<std::uint64_t>{1420}));
}

TEST(SkcipherWalk, XtsStealsCiphertextInAStepOfItsOwnOnlyAcrossPages) {
    // 4100 = 256 blocks + 4: blocks but the last whole one (4080 B), then 16 + 4
    EXPECT_EQ(step_bytes(SkcipherAlg::XTS_AES, 4100, 0), (std::vector<std::uint64_t>{4080, 20}));
    EXPECT_EQ(step_bytes(SkcipherAlg::XTS_AES, 100, 32), (std::vector<std::uint64_t>{100})); // one step: one call
    const auto s = skcipher_walk_steps(SkcipherAlg::XTS_AES, 8192, 0);
    ASSERT_EQ(s.size(), 2u);
    EXPECT_TRUE(s[0].tweak);
    EXPECT_FALSE(s[1].tweak);
    EXPECT_FALSE(s[0].walk);
    EXPECT_TRUE(s[1].walk);
}

TEST(SkcipherNames, DriversAsProcCryptoNamesThem) {
    EXPECT_EQ(skcipher_driver_name(SkcipherAlg::XTS_AES, CipherImpl::CE), "xts-aes-ce");
    EXPECT_EQ(skcipher_driver_name(SkcipherAlg::CBC_AES, CipherImpl::AESNI), "__cbc-aes-aesni");
    EXPECT_EQ(skcipher_driver_name(SkcipherAlg::XTS_AES, CipherImpl::GENERIC), "xts(ecb(aes-generic))");
    EXPECT_EQ(skcipher_driver_name(SkcipherAlg::CTR_AES, CipherImpl::GENERIC), "ctr(aes-generic)");
}

struct Request : testing::TaskCrypto {
    SkcipherStats stats;
};

engine::Task<> call(arch::SimdUnit& u, const CipherCostTable& t, const SkcipherCosts& c, SkcipherAlg a,
                    unsigned key_bits, bool enc, std::uint64_t len, std::uint64_t offset, SkcipherStats& s) {
    co_await skcipher_crypt(u, t, c, a, key_bits, enc, len, offset, s);
}

Request run(const CipherCostTable& t, SkcipherAlg a, unsigned key_bits, bool enc, std::uint64_t len, std::uint64_t offset) {
    engine::Simulation sim;
    kernel::Cpu cpu(sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{});
    auto unit = arch::make_simd_unit(cpu, arch::SimdPolicy::ARM64_BH_OFF,
                                     arch::SimdCosts{.begin = 7, .end = 3, .save = 0, .restore = 0, .state_size = 0,
                                                     .unavailable_trap = {}, .kernel_use_warning = {}});
    const SkcipherCosts c{.request = 100, .walk_step = 20, .simd_wrapper = 0};
    Request r;
    cpu.create_task("tcrypt", kernel::SchedPolicy::NORMAL, 0, true, call(*unit, t, c, a, key_bits, enc, len, offset, r.stats));
    static_cast<testing::TaskCrypto&>(r) = testing::run_task(sim, cpu, *unit);
    return r;
}

CipherCostTable ce_table() {
    CipherCostTable t;
    t.set(CipherPrim::AES128_CBC_ENC, CipherImpl::CE, {1.5, 40});
    t.set(CipherPrim::AES128_CBC_DEC, CipherImpl::CE, {1.0, 40});
    t.set(CipherPrim::AES128_XTS, CipherImpl::CE, {1.25, 60});
    t.set(CipherPrim::AES128_CTR, CipherImpl::GENERIC, {20.0, 10});
    return t;
}

TEST(SkcipherCycles, A4KiBRequestAfterTheKeyIsTwoStepsInTwoBrackets) {
    const Request r = run(ce_table(), SkcipherAlg::CBC_AES, 128, true, 4096, 16);
    // request 100; step 1: 40 + 4080 x 1.5 = 6160; walk step 20; step 2: 40 + 16 x 1.5 = 64
    EXPECT_EQ(r.crypto, 100u + 6160 + 20 + 64);
    EXPECT_EQ(r.brackets, 2u);
    EXPECT_EQ(r.begin_end, 2u * (7 + 3));
    EXPECT_EQ(r.stats.steps, 2u);
}

TEST(SkcipherCycles, DecryptionUsesTheCbcDecryptFigure) {
    const Request r = run(ce_table(), SkcipherAlg::CBC_AES, 128, false, 1024, 0);
    EXPECT_EQ(r.crypto, 100u + 40 + 1024);
    EXPECT_EQ(r.brackets, 1u);
}

TEST(SkcipherCycles, XtsEncryptsTheTweakOnceInItsFirstStep) {
    const Request r = run(ce_table(), SkcipherAlg::XTS_AES, 256, true, 3 * 4096, 0);
    // request 100; three steps of 60 + 4096 x 1.25 = 5180, the first + 16 x 1.25 = 20; two walk steps
    EXPECT_EQ(r.crypto, 100u + 3 * 5180 + 20 + 2 * 20);
    EXPECT_EQ(r.brackets, 3u); // one kernel_neon_begin per page
}

TEST(SkcipherCycles, AScalarDriverRunsWithoutBrackets) {
    const Request r = run(ce_table(), SkcipherAlg::CTR_AES, 128, true, 64, 0);
    EXPECT_EQ(r.crypto, 100u + 10 + 64 * 20);
    EXPECT_EQ(r.brackets, 0u);
    EXPECT_EQ(r.stats.scalar_calls, 1u);
}

} // namespace
} // namespace kdsim::crypto
