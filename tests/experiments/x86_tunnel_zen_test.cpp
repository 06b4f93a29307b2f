// X2 (scenarios/x86-tunnel-zen): the x86 tunnels of X1 on the two AMD profiles, x86/amd-zen4
// (measured here by kdsim calibrate) and x86/amd-zen5 (published figures). The claims: each
// profile loads with the figures its file types and the cipher the 6.1 kernel would pick on that
// CPU, and an ESP and a WireGuard stream over each conserve every segment and every frame.
#include "helpers.h"

#include "crypto/cipher_costs.h"
#include "crypto/hash_costs.h"

#include <gtest/gtest.h>

#include <string>

namespace kdsim {
namespace {

using namespace testing; // ROOT, run_scenario, metric, stat (helpers.h)
using crypto::CipherImpl;
using crypto::CipherPrim;

// XSAVES compacted size for XCR0 0x2e7 (x87, SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM, PKRU), from
// the component sizes of CPUID leaf 0DH: legacy area 512, header 64, then 256 + 64 + 512 + 1024 + 8.
constexpr std::uint64_t AVX512_PKU_XSAVES_BYTES = 512 + 64 + 256 + 64 + 512 + 1024 + 8;

TEST(X86TunnelZen, TheZen5ProfileLoadsWithThePublishedDerivationsTypedInItsFile) {
    auto p = scenario::load_profile(ROOT / "data/profiles/x86/amd-zen5.toml");
    EXPECT_EQ(p.name, "x86/amd-zen5");
    EXPECT_EQ(p.clock_hz, 3'650'000'000u); // EPYC 9135 base clock
    EXPECT_EQ(p.simd.state_size, AVX512_PKU_XSAVES_BYTES);
    // Poly1305 at 1024 B: 7305 MB/s at 5.0 GHz = 1024 / 7305e6 x 5e9 cycles, less 130
    // per call, over 1024 bytes.
    EXPECT_NEAR(p.cipher.get(CipherPrim::POLY1305, CipherImpl::AVX512)->cycles_per_byte, (1024 / 7305e6 * 5e9 - 130) / 1024, 0.001);
    // 16 B and 64 B at 598 and 1882 MB/s: (64/1882e6 - 16/598e6) x 5e9 / 48 bytes.
    EXPECT_NEAR(p.cipher.get(CipherPrim::POLY1305, CipherImpl::GENERIC)->cycles_per_byte,
                (64 / 1882e6 - 16 / 598e6) * 5e9 / 48, 0.001);
    // Linux 6.1 has no VAES GCM: the AES-NI driver is the one ESP gets.
    EXPECT_EQ(p.cipher.best(CipherPrim::AES128_GCM, true), CipherImpl::AESNI);
    EXPECT_EQ(p.cipher.best(CipherPrim::CHACHA20, true), CipherImpl::AVX512);
    EXPECT_EQ(p.cipher.best(CipherPrim::POLY1305, true), CipherImpl::AVX512);
    EXPECT_TRUE(p.tunnel.has_value());
}

TEST(X86TunnelZen, TheZen4ProfileLoadsWithTheAvx512StateAndItsMeasuredPrimitives) {
    auto p = scenario::load_profile(ROOT / "data/profiles/x86/amd-zen4.toml");
    EXPECT_EQ(p.name, "x86/amd-zen4");
    EXPECT_EQ(p.simd.state_size, AVX512_PKU_XSAVES_BYTES);
    // This machine has AVX-512 (avx512f, avx512vl in /proc/cpuinfo): calibrate measured OpenSSL's
    // AVX-512 ChaCha20 and Poly1305, and there is no VAES row (OpenSSL 3.0 has no VAES code).
    EXPECT_TRUE(p.cipher.has(CipherPrim::CHACHA20, CipherImpl::AVX512));
    EXPECT_TRUE(p.cipher.has(CipherPrim::POLY1305, CipherImpl::AVX512));
    EXPECT_FALSE(p.cipher.has(CipherPrim::AES128_GCM, CipherImpl::VAES));
    EXPECT_EQ(p.cipher.best(CipherPrim::AES128_GCM, true), CipherImpl::AESNI);
    EXPECT_TRUE(p.hash.has(crypto::HashAlg::SHA256, crypto::HashImpl::SHANI));
    EXPECT_TRUE(p.tunnel.has_value());
}

// Runs one scenario of X2 and checks that every segment and every frame is accounted for.
void expect_conserved(const std::string& stem) {
    auto r = run_scenario("scenarios/x86-tunnel-zen/" + stem + ".toml");
    ASSERT_FALSE(r.failed) << stem;
    const double sent = metric(r, "iperf3", "segments_sent");
    const double received = metric(r, "iperf3", "segments_received");
    const double cwnd = metric(r, "iperf3", "cwnd");
    const double dropped = stat(r, "*/netdev/*/rx_dropped") + stat(r, "*/netdev/*/tx_dropped") +
                           stat(r, "*/tunnel/*/ring_drops");
    ASSERT_GT(received, 1000) << stem;
    EXPECT_EQ(metric(r, "iperf3", "bytes_lost"), 0) << stem;
    EXPECT_EQ(stat(r, "*/tunnel/*/auth_failures"), 0) << stem;
    // the sender's segments (retransmissions included) = received + dropped + in flight at the end,
    // which are unacknowledged: at most the final congestion window
    EXPECT_GE(sent, received + dropped) << stem;
    EXPECT_LE(sent - received - dropped, cwnd) << stem;
    // every dropped segment is sent again once the sender sees it lost (the rx ring's drops are
    // recovered by fast retransmit, about an RTT after the drop): all but those dropped in the
    // run's last RTT, at most a final window's worth; and nothing else is sent again (no
    // reordering on this path, so no spurious retransmission)
    EXPECT_GE(metric(r, "iperf3", "retransmits") + cwnd, dropped) << stem;
    EXPECT_LE(metric(r, "iperf3", "retransmits"), dropped) << stem;
    // every segment received was encrypted by a's tunnel and decrypted by b's
    EXPECT_GE(stat(r, "a/tunnel/*/encrypted"), received) << stem;
    EXPECT_GE(stat(r, "b/tunnel/*/decrypted"), received) << stem;
    // frames: what a's NIC sent reached b's NIC (received or dropped there), but for those still
    // in a's tx ring or on the wire at the end; each of those is a data segment sent and not yet
    // received (a sends no other frames: the ACKs go from b to a)
    const double not_arrived = stat(r, "a/netdev/eth0/tx_frames") - stat(r, "b/netdev/eth0/rx_frames") -
                               stat(r, "b/netdev/eth0/rx_dropped");
    EXPECT_GE(not_arrived, 0) << stem;
    EXPECT_LE(not_arrived, sent - received) << stem;
    // and b's tunnel took in no frame b's NIC did not receive; those it has not taken in yet (in
    // the rx ring or NET_RX at the end) are also segments sent and not yet received
    const double not_in_tunnel = stat(r, "b/netdev/eth0/rx_frames") - stat(r, "b/tunnel/*/rx_packets");
    EXPECT_GE(not_in_tunnel, 0) << stem;
    EXPECT_LE(not_arrived + not_in_tunnel, sent - received) << stem;
}

TEST(X86TunnelZen, EspOnZen4ConservesEverySegmentAndFrame) { expect_conserved("zen4-esp-gcm"); }
TEST(X86TunnelZen, WireGuardOnZen4ConservesEverySegmentAndFrame) { expect_conserved("zen4-wg"); }
TEST(X86TunnelZen, EspOnZen5ConservesEverySegmentAndFrame) { expect_conserved("zen5-esp-gcm"); }
TEST(X86TunnelZen, WireGuardOnZen5ConservesEverySegmentAndFrame) { expect_conserved("zen5-wg"); }

} // namespace
} // namespace kdsim
