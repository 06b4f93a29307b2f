// X1 (scenarios/x86-tunnel): IPsec ESP and WireGuard between two Ice Lake-SP servers, and the
// crypto API's two switches. The claims are the kernel's rules, counted on the shipped runs:
// crypto/simd.c keeps a request in its caller wherever the FPU is usable (the sender's task and
// NET_RX both are on x86), crypto_simd_disabled_for_test sends every request to cryptd, and the
// inner driver called directly never does.
#include "helpers.h"

#include <gtest/gtest.h>

#include <string>

namespace kdsim {
namespace {

using namespace testing; // run_scenario, metric, stat (helpers.h)

results::RunResults run(const std::string& stem) { return run_scenario("scenarios/x86-tunnel/" + stem + ".toml"); }

// Runs an ESP scenario and checks that it delivered, authenticated, and ran every request in
// its caller (`in_cryptd` false) or in cryptd (true), on the SIMD unit and where it was usable.
void expect_esp(const std::string& stem, bool in_cryptd) {
    auto r = run(stem);
    auto crypts = [&](const std::string& kind) { return stat(r, "a/tunnel/esp0/" + kind) + stat(r, "b/tunnel/esp0/" + kind); };
    EXPECT_FALSE(r.failed) << stem;
    EXPECT_EQ(crypts(in_cryptd ? "sync_crypts" : "async_crypts"), 0) << stem;
    EXPECT_GT(crypts(in_cryptd ? "async_crypts" : "sync_crypts"), 1000) << stem;
    EXPECT_EQ(stat(r, "*/tunnel/esp0/aead/scalar_passes"), 0) << stem;
    EXPECT_EQ(stat(r, "*/tunnel/esp0/aead/simd_unusable"), 0) << stem;
    EXPECT_EQ(stat(r, "*/tunnel/esp0/auth_failures"), 0) << stem;
    EXPECT_GT(metric(r, "iperf3", "receiver_mbit_s"), 0) << stem;
}

TEST(X86Tunnel, EspBehindTheSimdWrapperEncryptsAndDecryptsEveryPacketInItsCallerOnX86) {
    // irq_fpu_usable() holds in task context and in softirq on x86: nothing goes to cryptd.
    expect_esp("esp-gcm", false);
}

TEST(X86Tunnel, CryptoSimdDisabledForTestSendsEveryEspRequestThroughCryptd) {
    // cryptd's kworker calls the inner AES-NI driver in task context: SIMD passes, none unusable.
    expect_esp("esp-gcm-cryptd-all", true);
}

TEST(X86Tunnel, TheInnerDriverCalledDirectlyNeverGoesToCryptd) {
    expect_esp("esp-gcm-direct", false); // and the FPU is usable at every call here
}

TEST(X86Tunnel, WireGuardRunsItsChachaPolyOnAvx512InItsKworkers) {
    // Every packet's payload is > 64 bytes (ChaCha20 on SIMD) and the TCP segments' Poly1305 input
    // is >= 288 bytes (SIMD on x86); the ACKs' is not, so scalar passes exist too.
    auto r = run("wg");
    EXPECT_FALSE(r.failed);
    EXPECT_EQ(stat(r, "*/tunnel/wg0/auth_failures"), 0);
    EXPECT_GT(stat(r, "*/tunnel/wg0/aead/simd_passes"), 1000);
    EXPECT_EQ(stat(r, "*/tunnel/wg0/aead/simd_fallbacks"), 0);
    EXPECT_GT(metric(r, "iperf3", "receiver_mbit_s"), 0);
}

} // namespace
} // namespace kdsim
