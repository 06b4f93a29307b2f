// rx_flood (src/workloads/rxflood.*): the predicted packet rate is the clock divided by the
// per-packet cycles computed by hand from a small made-up profile.
#include "helpers.h"

#include "workloads/rxflood.h"

namespace kdsim {
namespace {

constexpr std::uint64_t CLOCK = 1'000'000'000; // 1 GHz: a cycle is a nanosecond

// One machine, one CPU, the x86 base profile with every kernel cost zeroed (ticks, interrupts and
// switches cost nothing unless a test sets them), a made-up cipher table and a non-coherent [dma].
system::ScenarioConfig flood(workloads::RxFloodWorkload w, engine::Tick duration = 20 * engine::PS_PER_MS) {
    system::ScenarioConfig cfg;
    cfg.name = "rx-flood-test";
    cfg.duration = duration;
    cfg.max_duration = duration;
    system::MachineConfig m;
    m.name = "host";
    m.profile = scenario::load_profile(testing::ROOT / "data/profiles/x86/amd-zen3.toml");
    m.profile.clock_hz = CLOCK;
    m.profile.cache_line = 64;
    m.profile.kernel = kernel::KernelCosts{};
    m.profile.cipher = crypto::CipherCostTable{};
    using crypto::CipherImpl;
    using crypto::CipherPrim;
    m.profile.cipher.set(CipherPrim::AES128_GCM, CipherImpl::GENERIC, {20.0, 3000});
    m.profile.cipher.set(CipherPrim::AES128_GCM, CipherImpl::SSSE3, {8.0, 1500});
    m.profile.cipher.set(CipherPrim::AES128_GCM, CipherImpl::AESNI, {2.0, 1000}); // the best SIMD one
    m.profile.cipher.set(CipherPrim::CHACHA20_POLY1305, CipherImpl::GENERIC, {5.0, 700}); // scalar only
    devices::DmaCosts dma;
    dma.coherent = false;
    dma.inner_inv_line = 10;
    dma.barrier = 7;
    m.profile.dma = dma;
    m.profile.flush.reset(); // the [dma] path unless a test sets the [flush] stand-in
    m.workloads.push_back(w);
    cfg.machines.push_back(std::move(m));
    return cfg;
}

results::RunResults run(const system::ScenarioConfig& cfg) {
    system::System sys(cfg);
    return sys.run();
}

// packets/s from the per-packet cycles: the whole packets that fit the run, over its length.
double expected_pps(double cycles_per_packet, double seconds) {
    return std::floor(seconds * static_cast<double>(CLOCK) / cycles_per_packet) / seconds;
}

TEST(RxFlood, InlinePacketRateIsTheClockOverTheDecryptCycles) {
    workloads::RxFloodWorkload w;
    w.payload = 1000;
    auto r = run(flood(w));
    ASSERT_FALSE(r.failed);
    // aes128-gcm.aesni: 1000 + 1000 x 2.0 = 3000 cycles per packet, nothing else
    EXPECT_EQ(testing::metric(r, "rx", "decrypt_cycles"), 3000);
    EXPECT_NEAR(testing::metric(r, "rx", "packets_per_s"), expected_pps(3000, 0.02), 1e-6);
    EXPECT_NEAR(testing::metric(r, "rx", "cycles_per_packet"), 3000, 3000 * 1.0 / 6000);
    // all of the CPU's task cycles are decryptions (the one the end of the run cut short included)
    const double crypto = testing::cpu0(r).cycles.at("task").at("crypto");
    EXPECT_GE(crypto, 3000 * testing::metric(r, "rx", "packets_decrypted"));
    EXPECT_LT(crypto, 3000 * (testing::metric(r, "rx", "packets_decrypted") + 1));
}

TEST(RxFlood, ScalarImplementationWhenThePrimitiveHasNoSimdOne) {
    workloads::RxFloodWorkload w;
    w.alg = crypto::AeadAlg::CHACHA20_POLY1305;
    w.payload = 64;
    auto r = run(flood(w));
    EXPECT_EQ(testing::metric(r, "rx", "decrypt_cycles"), 700 + 64 * 5);
    EXPECT_NEAR(testing::metric(r, "rx", "packets_per_s"), expected_pps(1020, 0.02), 1e-6);
}

TEST(RxFlood, TheCalibratedFlushStandInIsChargedPerCallPlusPerLine) {
    workloads::RxFloodWorkload w;
    w.payload = 1000;
    w.buffer = 9216;
    w.flush = workloads::RxFlush::FULL_BUFFER;
    auto cfg = flood(w);
    cfg.machines[0].profile.flush = devices::FlushCosts{100, 2.0, 3.0}; // preferred over [dma]
    auto r = run(cfg);
    // 144 lines flushed x 2 + the received frame's lines read back x 3 + 100, + 3000 decrypt
    const double read_lines = std::ceil(static_cast<double>(workloads::rx_frame_len(1000)) / 64);
    const double per_packet = 100 + 144 * 2.0 + read_lines * 3.0 + 3000;
    EXPECT_NEAR(testing::metric(r, "rx", "packets_per_s"), expected_pps(per_packet, 0.02), 1e-6);
    EXPECT_EQ(testing::metric(r, "rx", "flush_lines_per_packet"), 144);
}

TEST(RxFlood, FlushOfTheFullBufferOrTheReceivedLength) {
    workloads::RxFloodWorkload w;
    w.payload = 1000;
    w.buffer = 9216;
    w.flush = workloads::RxFlush::FULL_BUFFER; // 144 lines x 10 + barrier 7 = 1447
    auto full = run(flood(w));
    EXPECT_EQ(testing::metric(full, "rx", "flush_lines_per_packet"), 144);
    EXPECT_NEAR(testing::metric(full, "rx", "packets_per_s"), expected_pps(3000 + 1447, 0.02), 1e-6);
    w.flush = workloads::RxFlush::RECEIVED_LENGTH; // 1066 bytes: 17 lines x 10 + 7 = 177
    auto rxlen = run(flood(w));
    EXPECT_EQ(testing::metric(rxlen, "rx", "flush_lines_per_packet"), 17);
    EXPECT_NEAR(testing::metric(rxlen, "rx", "packets_per_s"), expected_pps(3000 + 177, 0.02), 1e-6);
}

TEST(RxFlood, PerRoundCostIsPaidOncePerBudgetOfPolls) {
    workloads::RxFloodWorkload w;
    w.payload = 1000;
    auto cfg = flood(w);
    cfg.machines[0].profile.kernel.softirq_round = 3200; // a round = 5 polls of 64 = 320 packets: +10 per packet
    auto r = run(cfg);
    const double rounds = testing::metric(r, "rx", "rounds");
    EXPECT_LE(testing::metric(r, "rx", "polls"), 5 * rounds); // the last round is cut short by the end of the run
    EXPECT_GT(testing::metric(r, "rx", "polls"), 5 * (rounds - 1));
    EXPECT_NEAR(testing::metric(r, "rx", "packets_per_s"), 1e9 / 3010, 1e9 / 3010 * 320 / 6600.0);
}

TEST(RxFlood, CryptdHandOffPaysOneWakeUpAndTwoSwitchesPerRound) {
    workloads::RxFloodWorkload w;
    w.payload = 1000;
    w.cryptd = true;
    w.priority = 50;
    auto cfg = flood(w, 50 * engine::PS_PER_MS);
    cfg.machines[0].profile.kernel.wakeup = 2000;
    cfg.machines[0].profile.kernel.context_switch = 3000;
    auto r = run(cfg);
    ASSERT_FALSE(r.failed);
    EXPECT_EQ(testing::metric(r, "rx", "queue_drops"), 0);
    EXPECT_EQ(testing::metric(r, "rx", "max_cryptd_queue"), 320);
    const double rounds = testing::metric(r, "rx", "rounds");
    EXPECT_NEAR(testing::metric(r, "rx", "worker_wakeups"), rounds, 1);
    // per round of 320: 320 decryptions, one wake-up of the worker, a switch to it and back
    const double per_packet = 3000 + (2000 + 2 * 3000) / 320.0;
    EXPECT_NEAR(testing::metric(r, "rx", "packets_per_s"), 1e9 / per_packet, 1e9 / per_packet * 0.01);
    EXPECT_NEAR(testing::metric(r, "rx", "cycles_per_packet"), per_packet, per_packet * 0.01);
}

TEST(RxFlood, ABoundedQueueDropsWhatDoesNotFit) {
    workloads::RxFloodWorkload w;
    w.payload = 1000;
    w.cryptd = true;
    w.cryptd_qlen = 100; // a round enqueues 320: 220 dropped per round
    w.priority = 50;
    auto r = run(flood(w));
    const double rounds = testing::metric(r, "rx", "rounds");
    EXPECT_EQ(testing::metric(r, "rx", "max_cryptd_queue"), 100);
    EXPECT_NEAR(testing::metric(r, "rx", "queue_drops"), 220 * rounds, 220);
    // every packet received is decrypted, dropped, or still queued at the end (at most the bound)
    const double left = testing::metric(r, "rx", "packets_received") - testing::metric(r, "rx", "packets_decrypted") -
                        testing::metric(r, "rx", "queue_drops");
    EXPECT_GE(left, 0);
    EXPECT_LE(left, 100);
}

TEST(RxFlood, AFlushOnACoherentProfileIsAConfigurationError) {
    workloads::RxFloodWorkload w;
    w.flush = workloads::RxFlush::RECEIVED_LENGTH;
    auto cfg = flood(w);
    cfg.machines[0].profile.dma->coherent = true;
    EXPECT_THROW(system::System{cfg}, system::ConfigError);
    cfg.machines[0].profile.dma.reset();
    EXPECT_THROW(system::System{cfg}, system::ConfigError);
    w.flush = workloads::RxFlush::NONE;
    auto none = flood(w);
    none.machines[0].profile.cipher = crypto::CipherCostTable{};
    EXPECT_THROW(system::System{none}, system::ConfigError); // no [cipher.aes128-gcm.*]
}

} // namespace
} // namespace kdsim
