// The claims of experiment E1 (32-bit ARM guest, kernel-mode NEON in softirq) on the shipped
// scenarios: what runs where before and after ARM 9283/1 (the mechanism, read from the kernel
// code the model follows), that correct configurations never fail authentication or clobber
// registers, that the unsafe variant is caught, and that functional and timing modes agree.
#include "helpers.h"

#include "report/report.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace kdsim {
namespace {

namespace fs = std::filesystem;
using namespace testing; // ROOT, run_scenario, metric, stat, peer_of, cpu0 (helpers.h)

results::RunResults run(const std::string& stem) { return testing::run_scenario("scenarios/e1/" + stem + ".toml"); }

const char* const ALL[] = {"wg-g2h-task-only",      "wg-g2h-softirq",      "wg-h2g-task-only",
                           "wg-h2g-softirq",        "esp-gcm-g2h-task-only", "esp-gcm-g2h-softirq",
                           "esp-gcm-h2g-task-only", "esp-gcm-h2g-softirq"};

TEST(E1, CorrectConfigurationsNeverFailAuthenticationOrClobberAndResendEveryDroppedSegment) {
    for (const char* s : ALL) {
        auto r = run(s);
        EXPECT_FALSE(r.failed) << s; // every byte delivered in order, exactly once
        EXPECT_EQ(metric(r, "iperf3", "bytes_lost"), 0) << s;
        EXPECT_EQ(results::finding_count(r, "simd_clobber"), 0u) << s;
        for (const char* k : {"*/tunnel/*/auth_failures", "*/tunnel/*/ring_drops", "*/netdev/*/rx_dropped"})
            EXPECT_EQ(stat(r, k), 0) << s << " " << k;
        // With iperf3's default windows the host's cwnd may outgrow the tap's 500-frame ring
        // (tun_net_xmit drops when it is full): TCP resends each segment dropped there.
        EXPECT_GE(metric(r, "iperf3", "retransmits"), stat(r, "*/netdev/*/tx_dropped")) << s;
    }
}

TEST(E1, SegmentsAreConservedThroughTheTunnel) {
    for (const char* s : ALL) {
        auto r = run(s);
        const double sent = metric(r, "iperf3", "segments_sent");
        const double received = metric(r, "iperf3", "segments_received");
        const double dropped = stat(r, "*/netdev/*/tx_dropped");
        const double cwnd = metric(r, "iperf3", "cwnd");
        ASSERT_GT(received, 1000) << s;
        // the sender's segments (retransmissions included) = segments received + segments dropped
        // + segments still in flight at the end, which are unacknowledged: at most the sender's
        // congestion window at the end (the windows are autotuned: iperf3's defaults)
        EXPECT_GE(sent, received + dropped) << s;
        EXPECT_LE(sent - received - dropped, cwnd) << s;
        // every data segment the receiver got was encrypted by the sender's tunnel and decrypted
        // by its own; the receiver's tunnel also carried the ACKs the other way
        EXPECT_GE(stat(r, peer_of(r, "iperf3") + "/tunnel/*/encrypted"), received) << s;
        EXPECT_GE(stat(r, "@iperf3/tunnel/*/decrypted"), received) << s;
        // ACKs the receiver encrypted were decrypted by the sender, but for those in flight at the
        // end: the receiver ACKs at most once per segment it gets (no run sends a window update),
        // and each such segment is one the sender still counts as unacknowledged: at most its
        // final congestion window of them
        const double acks = stat(r, "@iperf3/tunnel/*/encrypted");
        EXPECT_GE(acks, stat(r, peer_of(r, "iperf3") + "/tunnel/*/decrypted")) << s;
        EXPECT_LE(acks - stat(r, peer_of(r, "iperf3") + "/tunnel/*/decrypted"), cwnd) << s;
    }
}

TEST(E1, BeforeArm9283EspDecryptionInNetRxGoesThroughCryptdAndAfterItRunsInTheSoftirq) {
    // host -> guest: the guest decrypts the data stream in NET_RX.
    auto before = run("esp-gcm-h2g-task-only");
    auto after = run("esp-gcm-h2g-softirq");
    // before: may_use_simd() is false in softirq and gcm(aes) is behind crypto/simd.c: every
    // request made in NET_RX is queued to cryptd: the data it decrypts and the ACKs it sends
    // from tcp_v4_rcv (all but the window updates the reader task sends, which encrypt in place)
    const double async = stat(before, "@iperf3/tunnel/*/async_crypts");
    const double sync = stat(before, "@iperf3/tunnel/*/sync_crypts");
    const double requests = stat(before, "@iperf3/tunnel/*/decrypted") +
                            stat(before, "@iperf3/tunnel/*/encrypted");
    EXPECT_EQ(sync, metric(before, "iperf3", "window_updates"));
    EXPECT_GE(async + sync, requests); // some may still wait in cryptd at the end
    // (the longest queue of each CPU, summed: at least what is queued at the end)
    EXPECT_LE(async + sync - requests, stat(before, "@iperf3/tunnel/*/cryptd/*/max_qlen"));
    EXPECT_GT(stat(before, "@iperf3/tunnel/*/cryptd/*/max_qlen"), 1);
    EXPECT_GT(stat(before, "@iperf3/*/cycles/queueing"), 0);
    // after: the synchronous gcm-aes-ce in softirq, no cryptd at all
    EXPECT_EQ(stat(after, "@iperf3/tunnel/*/async_crypts"), 0);
    // every request synchronous: counted when made, done when the crypt returns, so the run may
    // end with one in progress in each context of the guest's 2 vCPUs (task and softirq): 4 at most
    const double made = stat(after, "@iperf3/tunnel/*/sync_crypts");
    const double done = stat(after, "@iperf3/tunnel/*/decrypted") + stat(after, "@iperf3/tunnel/*/encrypted");
    EXPECT_GE(made, done);
    EXPECT_LE(made - done, 4);
    EXPECT_GT(metric(after, "iperf3", "receiver_mbit_s"), metric(before, "iperf3", "receiver_mbit_s"));
}

TEST(E1, BeforeTheChangeTheSendingGuestUsesCryptdExactlyWhereItEncryptsWithBottomHalvesOff) {
    // guest -> host: the guest decrypts the host's ACKs in NET_RX (cryptd before the change), and
    // sends data segments from its writer (task context: synchronous) and from ACK processing
    // with bottom halves off: in NET_RX, or in cryptd's completion of a decrypted ACK, which
    // runs tcp_v4_rcv -> tcp_ack -> tcp_write_xmit with BH disabled (cryptd again).
    auto before = run("esp-gcm-g2h-task-only");
    const double async = stat(before, peer_of(before, "iperf3") + "/tunnel/*/async_crypts");
    const double sync = stat(before, peer_of(before, "iperf3") + "/tunnel/*/sync_crypts");
    const double in_bh = metric(before, "iperf3", "segments_sent_in_bh");
    const double sent = metric(before, "iperf3", "segments_sent");
    const double acks_in = stat(before, peer_of(before, "iperf3") + "/tunnel/*/rx_packets");
    ASSERT_GT(in_bh, 0);
    ASSERT_LT(in_bh, sent);
    EXPECT_EQ(sync, sent - in_bh);
    // every ACK received and every segment sent in BH went to cryptd, except at most the one
    // packet whose esp_output/esp_input was still running when the run ended (counted as sent
    // or received, not yet as a crypt)
    const double unfinished = acks_in + in_bh - async;
    EXPECT_GE(unfinished, 0);
    EXPECT_LE(unfinished, 1);
    auto after = run("esp-gcm-g2h-softirq");
    EXPECT_EQ(stat(after, peer_of(after, "iperf3") + "/tunnel/*/async_crypts"), 0);
}

TEST(E1, BeforeTheChangeTheWritersSynchronousSegmentsOvertakeCryptdsQueueAndTheHostAcksEachAtOnce) {
    // guest -> host, ESP before the change: segments sent from ACK processing (BH off) wait in
    // cryptd's FIFO while those the writer sends in task context are encrypted at once and
    // overtake them. The host's TCP queues the out-of-order ones (tcp_data_queue_ofo) and, while
    // its out-of-order queue is not empty, ACKs every segment at once with SACK blocks
    // (__tcp_ack_snd_check) instead of every second one.
    auto before = run("esp-gcm-g2h-task-only");
    const std::string host = "@iperf3/tcp/*/";
    const double received = metric(before, "iperf3", "segments_received");
    EXPECT_GT(stat(before, host + "ofo_segments"), 0);
    EXPECT_GT(stat(before, host + "sack_acks"), 0);
    EXPECT_GT(metric(before, "iperf3", "acks_sent"), 0.6 * received);
    // after: all synchronous, nothing reordered, one ACK per two full segments (tcp_ack_snd_check)
    auto after = run("esp-gcm-g2h-softirq");
    const double received_after = metric(after, "iperf3", "segments_received");
    EXPECT_EQ(stat(after, host + "ofo_segments"), 0);
    EXPECT_EQ(stat(after, host + "sack_acks"), 0);
    EXPECT_NEAR(metric(after, "iperf3", "acks_sent"), received_after / 2, 0.01 * received_after);
}

TEST(E1, WireGuardCryptoRunsInKworkersSoNeitherPolicyFallsBackToScalarCode) {
    for (const char* s : {"wg-g2h-task-only", "wg-g2h-softirq", "wg-h2g-task-only", "wg-h2g-softirq"}) {
        auto r = run(s);
        EXPECT_EQ(stat(r, "@iperf3/tunnel/*/aead/simd_fallbacks"), 0) << s;
        EXPECT_EQ(stat(r, peer_of(r, "iperf3") + "/tunnel/*/aead/simd_fallbacks"), 0) << s;
        EXPECT_EQ(stat(r, "@iperf3/tunnel/*/async_crypts"), 0) << s;
        // chacha20 over block 0 is scalar for every packet; a 52-byte ACK pads to one 64-byte
        // block, so its data pass is scalar too (chacha_crypt_arch: bytes <= CHACHA_BLOCK_SIZE)
        // (up to two passes per CPU may belong to packets still being processed at the end)
        const double scalar = stat(r, "@iperf3/tunnel/*/aead/scalar_passes");
        const double expect =
            stat(r, "@iperf3/tunnel/*/decrypted") + 2 * stat(r, "@iperf3/tunnel/*/encrypted");
        EXPECT_GE(scalar, expect) << s;
        EXPECT_LE(scalar - expect, 4) << s;
    }
}

TEST(E1, VirtioSuppressesInterruptsAndKicksWhileTheOtherSideIsBusy) {
    auto r = run("wg-h2g-softirq");
    const double frames = metric(r, "iperf3", "segments_received");
    // an interrupt only when NAPI had completed (callbacks enabled): frames arrive in batches
    EXPECT_LT(stat(r, "@iperf3/netdev/*/irqs"), frames / 2);
    EXPECT_GT(stat(r, "@iperf3/netdev/*/irqs"), 0);
    auto g = run("wg-g2h-softirq");
    EXPECT_LT(stat(g, peer_of(g, "iperf3") + "/netdev/*/kicks"), metric(g, "iperf3", "segments_sent") / 10);
    EXPECT_GT(stat(g, peer_of(g, "iperf3") + "/netdev/*/kicks"), 0);
}

TEST(E1, FunctionalAndTimingModesGiveIdenticalResults) {
    for (const char* s : {"wg-h2g-task-only", "esp-gcm-h2g-task-only"}) {
        scenario::LoadOptions t, f;
        t.mode_override = system::Mode::TIMING;
        f.mode_override = system::Mode::FUNCTIONAL;
        auto ct = scenario::load_scenario(ROOT / "scenarios/e1" / (std::string(s) + ".toml"), t);
        auto cf = scenario::load_scenario(ROOT / "scenarios/e1" / (std::string(s) + ".toml"), f);
        ct.duration = cf.duration = 30 * engine::PS_PER_MS;
        system::System st(ct), sf(cf);
        auto rt = st.run();
        auto rf = sf.run();
        rf.mode = rt.mode; // the only field allowed to differ
        EXPECT_EQ(report::to_json_text(rt), report::to_json_text(rf)) << s;
        EXPECT_EQ(stat(rf, "@iperf3/tunnel/*/auth_failures"), 0) << s;
    }
}

TEST(E1, TheUnsafeVariantIsCaughtWithAClobberAndAnAuthenticationFailure) {
    auto r = testing::run_scenario("scenarios/e1-unsafe/esp-gcm-bidir-no-bh.toml");
    EXPECT_TRUE(r.failed);
    EXPECT_GT(results::finding_count(r, "simd_clobber"), 0u);
    ASSERT_FALSE(results::findings_of(r, "simd_clobber").empty());
    EXPECT_EQ(results::findings_of(r, "simd_clobber")[0]->machine, "guest");
    EXPECT_GT(stat(r, "@g2h/tunnel/*/auth_failures") + stat(r, "@h2g/tunnel/*/auth_failures"), 0);
}

TEST(E1, TheSameScenarioAndSeedGiveByteIdenticalResults) {
    auto a = run("esp-gcm-h2g-task-only");
    auto b = run("esp-gcm-h2g-task-only");
    EXPECT_EQ(report::to_json_text(a), report::to_json_text(b));
}

} // namespace
} // namespace kdsim

namespace kdsim {
namespace {

TEST(E1Tcp, RaisingTheCryptoCostMakesTheStreamCpuBoundOnTheDecryptingCpu) {
    // ESP after the change, host -> guest: the guest decrypts in NET_RX on vCPU 0. Four times the
    // AES-GCM cost per byte must lower throughput and leave vCPU 0 (nearly) never idle.
    auto run_with = [](double factor) {
        system::ScenarioConfig cfg = scenario::load_scenario(testing::ROOT / "scenarios/e1/esp-gcm-h2g-softirq.toml");
        cfg.duration = 50 * engine::PS_PER_MS;
        for (auto& m : cfg.machines)
            if (m.name == "guest") {
                auto c = *m.profile.cipher.get(crypto::CipherPrim::AES128_GCM, crypto::CipherImpl::CE);
                c.cycles_per_byte *= factor;
                m.profile.cipher.set(crypto::CipherPrim::AES128_GCM, crypto::CipherImpl::CE, c);
            }
        system::System sys(cfg);
        return sys.run();
    };
    auto base = run_with(1.0);
    auto slow = run_with(4.0);
    EXPECT_LT(testing::metric(slow, "iperf3", "receiver_mbit_s"), 0.8 * testing::metric(base, "iperf3", "receiver_mbit_s"));
    const auto& vcpu0 = slow.machines.at(0).cpus.at(0);
    // idle only before the stream starts at 5 ms, and under 5 % of the 45 ms after
    EXPECT_LT(vcpu0.idle_us, 5000 + 0.05 * 45000);
}

} // namespace
} // namespace kdsim

namespace kdsim {
namespace {

// An outer frame carrying an inner TCP segment of `ip_len` bytes, tunnel packet `counter`.
net::Packet tunnelled(net::FrameKind kind, std::uint64_t counter, std::uint32_t ip_len) {
    net::Packet p;
    p.kind = kind;
    p.inner = net::FrameKind::TCP_DATA;
    p.inner_len = ip_len + net::ETH_HEADER;
    p.counter = counter;
    p.seq = counter * 1000;
    return p;
}

TEST(TunnelChannel, RealBytesAuthenticateAndACorruptedByteIsDetected) {
    net::TunnelChannel ch(net::TunnelKind::WIREGUARD, crypto::AeadAlg::CHACHA20_POLY1305, true);
    ch.seal(0, tunnelled(net::FrameKind::WG_DATA, 7, 1400), false);
    EXPECT_TRUE(ch.open(1, tunnelled(net::FrameKind::WG_DATA, 7, 1400), false)); // side 1 opens what side 0 sealed
    ch.seal(0, tunnelled(net::FrameKind::WG_DATA, 8, 1400), false);
    EXPECT_FALSE(ch.open(1, tunnelled(net::FrameKind::WG_DATA, 8, 1400), true)); // one byte flipped on the way
    ch.seal(1, tunnelled(net::FrameKind::WG_DATA, 8, 64), true);                 // sealed with clobbered registers: garbage
    EXPECT_FALSE(ch.open(0, tunnelled(net::FrameKind::WG_DATA, 8, 64), false));
    EXPECT_EQ(ch.payload_mismatches(), 0u);
}

TEST(TunnelChannel, ManyMorePacketsInFlightThanTheInitialStoreAllStillOpen) {
    net::TunnelChannel ch(net::TunnelKind::ESP, crypto::AeadAlg::AES_128_GCM, true);
    for (std::uint64_t c = 0; c < 20'000; ++c) ch.seal(0, tunnelled(net::FrameKind::ESP, c, 100), false);
    int ok = 0;
    for (std::uint64_t c = 0; c < 20'000; ++c) ok += ch.open(1, tunnelled(net::FrameKind::ESP, c, 100), false) ? 1 : 0;
    EXPECT_EQ(ok, 20'000);
}

} // namespace
} // namespace kdsim
