// Tests of kdsim validate: the ring/NAPI harness conserves packets and authenticates them, the
// flush stand-in touches the lines it should, the comparison math, the shipped twins match the
// real configurations, and one `kdsim validate --quick` end to end.
#include "validate/compare.h"
#include "validate/configs.h"
#include "validate/datapath.h"
#include "validate/twin.h"

#include "scenario/load.h"
#include "workloads/config.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

using namespace kdsim::validate;
namespace fs = std::filesystem;

namespace {

const kdsim::calibrate::CpuFeatures& cpu() {
    static const kdsim::calibrate::CpuFeatures c = kdsim::calibrate::detect_cpu();
    return c;
}
double tsc_hz() {
    static const double hz = kdsim::calibrate::measure_tsc(1, 0.02).hz;
    return hz;
}
RxRun packets(std::uint64_t n) {
    RxRun r;
    r.packets = n;
    auto cpus = kdsim::calibrate::allowed_cpus();
    r.cpu_rx = cpus.at(0);
    r.cpu_device = cpus.size() > 1 ? cpus[1] : cpus[0];
    return r;
}
RxConfig small(std::size_t payload, kdsim::crypto::AeadAlg alg = kdsim::crypto::AeadAlg::AES_128_GCM) {
    RxConfig c;
    c.payload = payload;
    c.alg = alg;
    c.pool = 64;
    return c;
}

struct Cmd {
    int status = -1;
    std::string output;
};
Cmd run_cmd(const std::string& cmd) {
    Cmd r;
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    if (!p) return r;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
    int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

} // namespace

// ---- packets and their crypto ------------------------------------------------------------------

// Repeats {5, 3, 5}: rounds 0-2 visit all three configurations in order, rounds 3-4 only the two
// with five repeats; 13 runs in all, and no configuration runs twice in a row while another waits.
TEST(RoundRobin, RunsTheNthRepeatOfEveryConfigurationBeforeAnyNPlusFirst) {
    using P = std::pair<std::size_t, int>;
    const std::vector<P> want = {{0, 0}, {1, 0}, {2, 0}, {0, 1}, {1, 1}, {2, 1}, {0, 2},
                                 {1, 2}, {2, 2}, {0, 3}, {2, 3}, {0, 4}, {2, 4}};
    EXPECT_EQ(round_robin({5, 3, 5}), want);
    EXPECT_EQ(round_robin({1}), (std::vector<P>{{0, 0}}));
    EXPECT_TRUE(round_robin({}).empty());
    EXPECT_TRUE(round_robin({0, 0}).empty());
}

TEST(Frame, InPlaceOpenerAgreesWithTheLibraryWrapper) {
    for (auto alg : {kdsim::crypto::AeadAlg::AES_128_GCM, kdsim::crypto::AeadAlg::CHACHA20_POLY1305}) {
        Sa sa = make_sa(alg, 7);
        for (std::size_t payload : {64u, 512u, 1420u}) {
            std::vector<std::uint8_t> f = build_frame(sa, 3, 0x0102030405060708ull, payload, 7);
            ASSERT_EQ(f.size(), frame_len(payload));
            std::array<std::uint8_t, 12> nonce{};
            std::memcpy(nonce.data(), sa.salt.data(), 4);
            std::memcpy(nonce.data() + 4, f.data() + ESP_OFF + 8, 8);
            auto plain = kdsim::crypto::aead_open(alg, sa.key, nonce,
                                                  std::span<const std::uint8_t>(f.data() + ESP_OFF, 8),
                                                  std::span<const std::uint8_t>(f.data() + PAYLOAD_OFF, payload + 16));
            ASSERT_TRUE(plain.has_value());
            InPlaceOpener op(sa);
            ASSERT_TRUE(op.open(f));
            EXPECT_TRUE(std::equal(plain->begin(), plain->end(), f.begin() + PAYLOAD_OFF));
        }
    }
}

TEST(Frame, EveryCorruptedByteFailsAuthentication) {
    Sa sa = make_sa(kdsim::crypto::AeadAlg::CHACHA20_POLY1305, 1);
    const std::vector<std::uint8_t> good = build_frame(sa, 1, 42, 64, 1);
    InPlaceOpener op(sa);
    // The SPI, sequence number and IV (AAD and nonce), the ciphertext and the tag.
    for (std::size_t i = ESP_OFF; i < good.size(); ++i) {
        std::vector<std::uint8_t> f = good;
        f[i] ^= 0x80;
        EXPECT_FALSE(op.open(f)) << "byte " << i;
    }
    std::vector<std::uint8_t> f = good;
    EXPECT_TRUE(op.open(f));
}

TEST(Flush, CountsCeilOfLengthOverLine) {
    alignas(64) static std::uint8_t buf[9216];
    const bool opt = cpu().clflushopt;
    if (!opt && !cpu().clflush) GTEST_SKIP() << "no CLFLUSH";
    EXPECT_EQ(flush_lines(buf, 1, 64, opt), 1u);
    EXPECT_EQ(flush_lines(buf, 64, 64, opt), 1u);
    EXPECT_EQ(flush_lines(buf, 65, 64, opt), 2u);
    EXPECT_EQ(flush_lines(buf, frame_len(1420), 64, opt), 24u); // 1486 bytes
    EXPECT_EQ(flush_lines(buf, 9216, 64, opt), 144u);
}

// ---- the ring and NAPI harness -------------------------------------------------------------------

TEST(Ring, InlineConservesAndAuthenticatesEveryPacket) {
    for (auto alg : {kdsim::crypto::AeadAlg::AES_128_GCM, kdsim::crypto::AeadAlg::CHACHA20_POLY1305}) {
        RxResult r = run_rx(small(512, alg), packets(5000), cpu(), tsc_hz());
        EXPECT_EQ(r.produced, 5000u);
        EXPECT_EQ(r.decrypted, 5000u);
        EXPECT_EQ(r.auth_failures, 0u);
        EXPECT_EQ(r.ring_drops + r.queue_drops, 0u);
        EXPECT_TRUE(r.conserved);
        EXPECT_GE(r.polls, r.rounds);
    }
}

TEST(Ring, PacedDeviceDropsWhenTheRingIsFullAndStillConserves) {
    RxConfig c = small(1420);
    c.ring = 8;
    c.offered_pps = 20e6; // far above what one CPU decrypts: the ring overflows
    RxResult r = run_rx(c, packets(20000), cpu(), tsc_hz());
    EXPECT_EQ(r.produced, 20000u);
    EXPECT_EQ(r.auth_failures, 0u);
    EXPECT_GT(r.decrypted, 0u);
    EXPECT_EQ(r.produced, r.decrypted + r.ring_drops);
    EXPECT_TRUE(r.conserved);
}

TEST(Ring, CryptdHandOffConservesWithQueueDrops) {
    RxConfig c = small(1420);
    c.cryptd = true;
    c.cryptd_qlen = 4; // tiny: the NET_RX side outruns the worker and the queue overflows
    RxResult r = run_rx(c, packets(8000), cpu(), tsc_hz());
    EXPECT_EQ(r.produced, 8000u);
    EXPECT_EQ(r.auth_failures, 0u);
    EXPECT_EQ(r.produced, r.decrypted + r.queue_drops);
    EXPECT_TRUE(r.conserved);
    EXPECT_GT(r.decrypted, 0u);
}

TEST(Ring, ACorruptedPacketIsOneAuthenticationFailure) {
    for (bool cryptd : {false, true}) {
        RxConfig c = small(64);
        c.cryptd = cryptd;
        c.corrupt_packet = 17;
        RxResult r = run_rx(c, packets(200), cpu(), tsc_hz());
        EXPECT_EQ(r.auth_failures, 1u) << (cryptd ? "cryptd" : "inline");
        EXPECT_EQ(r.decrypted + r.queue_drops, 199u);
        EXPECT_TRUE(r.conserved);
    }
}

TEST(Ring, ReceivedLengthFlushTouchesCeilLenOver64LinesPerPacket) {
    for (std::size_t payload : {64u, 512u, 1420u}) {
        RxConfig c = small(payload);
        c.buffer_size = 9216;
        c.flush = Flush::RECEIVED_LENGTH;
        RxResult r = run_rx(c, packets(1000), cpu(), tsc_hz());
        const std::uint64_t lines = (frame_len(payload) + 63) / 64;
        EXPECT_EQ(r.lines_flushed, 1000u * lines) << payload << "-byte payload";
        EXPECT_EQ(r.decrypted, 1000u);
    }
    RxConfig full = small(64);
    full.buffer_size = 9216;
    full.flush = Flush::FULL_BUFFER;
    RxResult r = run_rx(full, packets(1000), cpu(), tsc_hz());
    EXPECT_EQ(r.lines_flushed, 1000u * 144u);
}

TEST(Ring, LiveUserStateIsSavedOncePerSoftirqRound) {
    RxConfig c = small(64);
    c.user_simd_live = true;
    RxResult r = run_rx(c, packets(3000), cpu(), tsc_hz());
    EXPECT_EQ(r.decrypted, 3000u);
    EXPECT_GT(r.xsaves, 0u);
    EXPECT_LE(r.xsaves, r.rounds);
    EXPECT_EQ(r.xsaves, r.xrstors);
}

TEST(Ring, MeasurementWindowGivesRates) {
    RxConfig c = small(512);
    RxRun run = packets(0);
    run.warmup_s = 0.01;
    run.window_s = 0.05;
    RxResult r = run_rx(c, run, cpu(), tsc_hz());
    EXPECT_TRUE(r.conserved);
    EXPECT_EQ(r.auth_failures, 0u);
    EXPECT_GT(r.pps, 0);
    EXPECT_GT(r.cycles_per_packet, 0);
    EXPECT_GT(r.longest_bracket_cycles, 0);
    EXPECT_NEAR(r.payload_mbit_s, r.pps * 512 * 8 / 1e6, 1e-6 * r.payload_mbit_s);
}

// ---- hashing load ----------------------------------------------------------------------------------

TEST(Hash, BracketsDigestsAndUserStateSaves) {
    auto cpus = kdsim::calibrate::allowed_cpus();
    if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs";
    for (Bracketing pol : {Bracketing::FIXED, Bracketing::YIELD}) {
        HashConfig h;
        h.sizes = {64 * 1024, 10000, 4096};
        h.passes = 100; // ~6 ms: a dozen probe periods
        h.policy = pol;
        h.probe_period_ns = 500'000;
        HashRunOpts o{cpus[0], cpus[1]};
        HashResult r = run_hash(h, o, cpu(), tsc_hz());
        EXPECT_EQ(r.digest_check, "");
        EXPECT_EQ(r.buffers, 300u);
        EXPECT_EQ(r.bytes, 100u * (65536 + 10000 + 4096));
        EXPECT_EQ(r.xsaves, 300u); // one per system call: the first kernel_fpu_begin()
        EXPECT_EQ(r.xrstors, 300u);
        if (pol == Bracketing::FIXED) EXPECT_EQ(r.brackets, 100u * (16 + 3 + 1)); // one per 4 KiB step
        else EXPECT_GE(r.brackets, 300u); // one per call, one more after each yield inside it
        EXPECT_GT(r.mb_per_s, 0);
        EXPECT_FALSE(r.probe_latency_us.empty());
        EXPECT_GE(r.probe_max_us, r.probe_p99_us);
        EXPECT_GE(r.probe_p99_us, r.probe_p50_us);
    }
}

// ---- comparison math -------------------------------------------------------------------------------

TEST(Compare, ErrorPercent) {
    EXPECT_DOUBLE_EQ(error_pct(100, 110), 10);
    EXPECT_DOUBLE_EQ(error_pct(100, 90), -10);
    EXPECT_DOUBLE_EQ(error_pct(200, 100), -50);
    EXPECT_DOUBLE_EQ(error_pct(0, 0), 0);
    EXPECT_TRUE(std::isinf(error_pct(0, 1)));
}

TEST(Compare, GoalsAndThreshold) {
    auto row = [](std::string m, double meas, std::optional<double> pred, std::optional<double> goal) {
        Row r;
        r.config = "c";
        r.metric = std::move(m);
        r.unit = "x";
        r.measured = meas;
        r.predicted = pred;
        r.goal_pct = goal;
        return r;
    };
    std::vector<Row> rows = {
        row("throughput", 1000, 1080, 10.0),  // +8 %: within ±10 %
        row("p99", 50, 38, 20.0),             // -24 %: misses ±20 %
        row("bracket", 10, 10.5, std::nullopt), // +5 %, no goal
        row("untwinned", 7, std::nullopt, 10.0), // no prediction: not compared
    };
    EXPECT_EQ(within_goal(rows[0]), std::optional<bool>(true));
    EXPECT_EQ(within_goal(rows[1]), std::optional<bool>(false));
    EXPECT_EQ(within_goal(rows[2]), std::nullopt);
    EXPECT_EQ(within_goal(rows[3]), std::nullopt);

    Verdict none = evaluate(rows, std::nullopt);
    EXPECT_EQ(none.compared, 3u);
    EXPECT_EQ(none.with_goal, 2u);
    EXPECT_EQ(none.goal_met, 1u);
    EXPECT_FALSE(none.exceeded()); // no threshold: never exceeded

    Verdict t25 = evaluate(rows, 25.0);
    EXPECT_FALSE(t25.exceeded());
    Verdict t20 = evaluate(rows, 20.0);
    ASSERT_EQ(t20.over.size(), 1u);
    EXPECT_NE(t20.over[0].find("p99"), std::string::npos);
    Verdict t5 = evaluate(rows, 5.0);
    EXPECT_EQ(t5.over.size(), 2u); // 8 % and 24 %; exactly 5 % is not above
    Verdict t0 = evaluate(rows, 0.0);
    EXPECT_EQ(t0.over.size(), 3u);

    std::string table = format_table(rows);
    EXPECT_NE(table.find("+8.0"), std::string::npos);
    EXPECT_NE(table.find("-24.0"), std::string::npos);
    EXPECT_NE(table.find("MISS"), std::string::npos);
    auto j = rows_json(rows);
    EXPECT_TRUE(j[3]["predicted"].is_null());
    EXPECT_NEAR(j[1]["error_pct"].get<double>(), -24.0, 1e-9);
}

// The prediction range: the error is taken against its centre, and a row meets its goal only
// when the range is no wider than the goal too. Figures by hand.
TEST(Compare, TheRangeCentreGivesTheErrorAndAWideRangeMissesTheGoal) {
    auto row = [](double meas, std::optional<double> profile, std::vector<double> others) {
        Row r;
        r.config = "c";
        r.metric = "throughput";
        r.unit = "x";
        r.measured = meas;
        r.goal_pct = 10.0;
        set_predictions(r, profile, others);
        return r;
    };
    // 900..1100 around 1000: error 0, but the range is 200 / 1000 = 20 % wide: WIDE, not met
    Row wide = row(1000, 1000, {900, 1100});
    EXPECT_DOUBLE_EQ(*wide.predicted, 1000);
    EXPECT_DOUBLE_EQ(*wide.predicted_low, 900);
    EXPECT_DOUBLE_EQ(*wide.predicted_high, 1100);
    EXPECT_DOUBLE_EQ(*row_error(wide), 0);
    EXPECT_DOUBLE_EQ(*range_pct(wide), 20);
    EXPECT_EQ(within_goal(wide), std::optional<bool>(false));
    EXPECT_TRUE(too_wide(wide));
    // 1000..1060, the profile's 1040 inside: centre 1030, error +3 %, width 60 / 1030 = 5.8 %: met
    Row ok = row(1000, 1040, {1000, 1060});
    EXPECT_DOUBLE_EQ(*ok.predicted, 1030);
    EXPECT_DOUBLE_EQ(*ok.predicted_profile, 1040);
    EXPECT_NEAR(*row_error(ok), 3.0, 1e-9);
    EXPECT_NEAR(*range_pct(ok), 60.0 / 1030 * 100, 1e-9);
    EXPECT_EQ(within_goal(ok), std::optional<bool>(true));
    // the profile's prediction outside the rounds' widens the range: 1180..1250, centre 1215
    Row miss = row(1000, 1250, {1180, 1210});
    EXPECT_DOUBLE_EQ(*miss.predicted_high, 1250);
    EXPECT_DOUBLE_EQ(*miss.predicted, 1215);
    EXPECT_EQ(within_goal(miss), std::optional<bool>(false));
    EXPECT_FALSE(too_wide(miss)); // the centre is out already
    // N calibrations: no profile of its own, the range is the calibrations'
    Row cals = row(1000, std::nullopt, {950, 1050});
    EXPECT_FALSE(cals.predicted_profile.has_value());
    EXPECT_DOUBLE_EQ(*cals.predicted, 1000);
    EXPECT_DOUBLE_EQ(*range_pct(cals), 10); // exactly the goal: not wider
    EXPECT_EQ(within_goal(cals), std::optional<bool>(true));
    // nothing predicted: not compared
    Row none = row(1000, std::nullopt, {});
    EXPECT_FALSE(none.predicted.has_value());
    EXPECT_EQ(within_goal(none), std::nullopt);

    const std::vector<Row> rows = {wide, ok, miss, cals, none};
    const Verdict v = evaluate(rows, std::nullopt);
    EXPECT_EQ(v.compared, 4u);
    EXPECT_EQ(v.goal_met, 2u);
    EXPECT_EQ(v.too_wide, 1u);
    const std::string table = format_table(rows);
    EXPECT_NE(table.find("WIDE"), std::string::npos) << table;
    EXPECT_NE(table.find("900.0..1100 20.0%"), std::string::npos) << table;
    const auto j = rows_json(rows);
    EXPECT_DOUBLE_EQ(j[0]["predicted_range_pct"].get<double>(), 20);
    EXPECT_FALSE(j[0]["range_within_goal"].get<bool>());
    EXPECT_FALSE(j[0]["within_goal"].get<bool>());
    EXPECT_NEAR(j[1]["predicted_profile_error_pct"].get<double>(), 4.0, 1e-9);
    EXPECT_EQ(j[2]["predictions"].size(), 2u);
    EXPECT_TRUE(j[3]["predicted_profile"].is_null());
}

// ---- the twins --------------------------------------------------------------------------------------

TEST(Twin, ShippedHashingTwinsMatchTheRealConfigurations) {
    const fs::path dir = fs::path(KDSIM_SOURCE_DIR) / "scenarios" / "validate";
    int n = 0;
    for (const Config& c : configurations()) {
        if (c.kind != Kind::HASH) continue;
        ++n;
        auto s = kdsim::scenario::load_scenario(dir / (c.name + ".toml"));
        EXPECT_EQ(twin_mismatch(c, s), std::nullopt) << c.name << ": " << twin_mismatch(c, s).value_or("");
        // One setting changed is a mismatch.
        auto t = s;
        t.machines[0].chunking.bytes = 8192;
        EXPECT_NE(twin_mismatch(c, t), std::nullopt);
        t = s;
        t.machines[0].kernel.preempt = kdsim::kernel::PreemptModel::FULL;
        EXPECT_NE(twin_mismatch(c, t), std::nullopt);
    }
    EXPECT_EQ(n, 2);
}

TEST(Twin, ShippedPacketTwinsMatchTheRealConfigurations) {
    const fs::path dir = fs::path(KDSIM_SOURCE_DIR) / "scenarios" / "validate";
    int n = 0;
    for (const Config& c : configurations()) {
        if (c.kind == Kind::HASH) continue;
        ++n;
        auto s = kdsim::scenario::load_scenario(dir / (c.name + ".toml"));
        EXPECT_EQ(twin_mismatch(c, s), std::nullopt) << c.name << ": " << twin_mismatch(c, s).value_or("");
        auto& w = s.machines[0].workloads[0].get<kdsim::workloads::RxFloodWorkload>();
        // One setting changed is a mismatch.
        for (int k = 0; k < 6; ++k) {
            auto t = s;
            auto& x = t.machines[0].workloads[0].get<kdsim::workloads::RxFloodWorkload>();
            switch (k) {
            case 0: x.payload += 1; break;
            case 1: x.alg = w.alg == kdsim::crypto::AeadAlg::AES_128_GCM ? kdsim::crypto::AeadAlg::CHACHA20_POLY1305
                                                                         : kdsim::crypto::AeadAlg::AES_128_GCM; break;
            case 2: x.cryptd = !x.cryptd; break;
            case 3: x.buffer = x.buffer == 9216 ? 1536 : 9216; break;
            case 4:
                x.flush = x.flush == kdsim::workloads::RxFlush::FULL_BUFFER ? kdsim::workloads::RxFlush::RECEIVED_LENGTH
                                                                            : kdsim::workloads::RxFlush::FULL_BUFFER;
                break;
            case 5: x.budget = 64; break;
            }
            EXPECT_NE(twin_mismatch(c, t), std::nullopt) << c.name << " change " << k;
        }
    }
    EXPECT_EQ(n, 12);
}

TEST(Twin, PacketTwinRunsWithAProfileThatHasCipherFigures) {
    const fs::path root(KDSIM_SOURCE_DIR);
    auto p = kdsim::scenario::load_profile(root / "data" / "profiles" / "x86" / "amd-zen3.toml");
    const Config* inl = nullptr;
    for (const Config& c : configurations())
        if (c.name == "rx-inline-1420-aes-128-gcm") inl = &c;
    ASSERT_NE(inl, nullptr);
    const fs::path file = root / "scenarios" / "validate" / (inl->name + ".toml");
    // without [cipher] tables the twin is refused with the reason
    p.cipher = kdsim::crypto::CipherCostTable{};
    Prediction none = simulate_twin(*inl, file, {}, p);
    EXPECT_FALSE(none.ok);
    EXPECT_NE(none.reason.find("cipher.aes128-gcm"), std::string::npos) << none.reason;
    p.cipher.set(kdsim::crypto::CipherPrim::AES128_GCM, kdsim::crypto::CipherImpl::AESNI, {1.0, 1000});
    Prediction pr = simulate_twin(*inl, file, {}, p);
    ASSERT_TRUE(pr.ok) << pr.reason;
    // 1000 + 1420 cycles a packet, plus the ticks and rounds: a little less than clock / 2420
    const double ideal = static_cast<double>(p.clock_hz) / 2420;
    EXPECT_LT(pr.values.at(M_THROUGHPUT), ideal);
    EXPECT_GT(pr.values.at(M_THROUGHPUT), ideal * 0.98);
    EXPECT_EQ(pr.values.count(M_LONGEST_BRACKET), 0u); // no kernel SIMD bracket: not predicted
}

TEST(Twin, FlushTwinsChargeTheProfilesFlushStandInAndNeedIt) {
    const fs::path root(KDSIM_SOURCE_DIR);
    auto p = kdsim::scenario::load_profile(root / "data" / "profiles" / "x86" / "amd-zen3.toml");
    ASSERT_TRUE(p.flush.has_value());
    std::map<std::string, double> pps;
    for (const Config& c : configurations()) {
        if (c.kind != Kind::FLUSH) continue;
        const fs::path file = root / "scenarios" / "validate" / (c.name + ".toml");
        Prediction pr = simulate_twin(c, file, {}, p);
        ASSERT_TRUE(pr.ok) << c.name << ": " << pr.reason;
        pps[c.name] = pr.values.at(M_THROUGHPUT);
        auto bare = p;
        bare.flush.reset(); // coherent [dma] and no stand-in: refused, saying why
        Prediction none = simulate_twin(c, file, {}, bare);
        EXPECT_FALSE(none.ok) << c.name;
        EXPECT_NE(none.reason.find("[flush]"), std::string::npos) << none.reason;
    }
    // 144 lines flushed per packet cost more than 24
    EXPECT_LT(pps.at("rx-flush-9k-full"), pps.at("rx-flush-9k-rxlen"));
    EXPECT_EQ(pps.at("rx-flush-1536-full"), pps.at("rx-flush-1536-rxlen")); // both 24 lines
}

TEST(Twin, ProfileReplacementRefusesOverridesAndMissingImplementations) {
    const fs::path root(KDSIM_SOURCE_DIR);
    auto s = kdsim::scenario::load_scenario(root / "scenarios" / "validate" / "hash-yield-4k.toml");
    auto p = kdsim::scenario::load_profile(root / "data" / "profiles" / "x86" / "intel-icelake-server.toml");
    auto ok = s;
    EXPECT_EQ(replace_profile(ok, p), std::nullopt);
    EXPECT_EQ(ok.machines[0].profile.name, p.name);
    auto ov = s;
    ov.machines[0].overrides.push_back("simd.save: 1 cycles (profile: 2 cycles)");
    EXPECT_NE(replace_profile(ov, p), std::nullopt);
    auto gen = p;
    gen.hash = {};
    auto sha = s;
    sha.machines[0].workloads[0].get<kdsim::workloads::ModuleLoadWorkload>().impl = kdsim::crypto::HashImpl::SHANI;
    auto why = replace_profile(sha, gen);
    ASSERT_NE(why, std::nullopt);
    EXPECT_NE(why->find("lacks"), std::string::npos);
}

TEST(Twin, MissingScenarioIsReportedNotCounted) {
    const Config& c = configurations().front();
    auto p = kdsim::scenario::load_profile(fs::path(KDSIM_SOURCE_DIR) / "data" / "profiles" / "x86" / "amd-zen3.toml");
    Prediction pr = simulate_twin(c, "/nonexistent/" + c.name + ".toml", {}, p);
    EXPECT_FALSE(pr.ok);
    EXPECT_NE(pr.reason.find("does not exist"), std::string::npos);
    EXPECT_TRUE(pr.values.empty());
}

TEST(Twin, HashingTwinRunsWithAProfile) {
    const fs::path root(KDSIM_SOURCE_DIR);
    auto p = kdsim::scenario::load_profile(root / "data" / "profiles" / "x86" / "amd-zen3.toml");
    for (const Config& c : configurations()) {
        if (c.kind != Kind::HASH) continue;
        Prediction pr = simulate_twin(c, root / "scenarios" / "validate" / (c.name + ".toml"), {}, p);
        ASSERT_TRUE(pr.ok) << pr.reason;
        EXPECT_GT(pr.values.at(M_THROUGHPUT), 0);
        EXPECT_GE(pr.values.at(M_PROBE_P99), pr.values.at(M_PROBE_P50));
        EXPECT_GT(pr.values.at(M_LONGEST_BRACKET), 0);
    }
}

// ---- the command, end to end ----------------------------------------------------------------------

TEST(Cli, QuickRunEndToEnd) {
    const fs::path out = fs::temp_directory_path() / ("kdsim-validate-test-" + std::to_string(getpid()) + ".json");
    auto t0 = std::chrono::steady_clock::now();
    Cmd c = run_cmd(std::string(KDSIM_EXE) + " validate --quick --out " + out.string());
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(c.status, 0) << c.output;
    // A figure, not a timed test: about 10 s on a quiet 2-core machine, 87 s under ASan and load.
    std::printf("validate --quick took %.1f s wall\n", s);
    EXPECT_NE(c.output.find("configuration"), std::string::npos);
    EXPECT_NE(c.output.find("hash-yield-4k"), std::string::npos);
    std::ifstream in(out);
    ASSERT_TRUE(in.good());
    nlohmann::json j = nlohmann::json::parse(in);
    fs::remove(out);
    EXPECT_EQ(j["configurations"].size(), 4u);
    EXPECT_EQ(j["exit_status"], 0);
    // the quick calibration's three [memory] rounds, each a profile the twins also ran with
    EXPECT_EQ(j["profile"]["range_profiles"], 3);
    for (const auto& cfg : j["configurations"]) {
        if (cfg["twin"]["status"] == "ok") {
            EXPECT_EQ(cfg["predicted_range_profiles"].size(), 3u) << cfg["name"];
        }
    }
    for (const auto& r : j["rows"])
        if (!r["predicted"].is_null()) {
            EXPECT_LE(r["predicted_low"].get<double>(), r["predicted"].get<double>());
            EXPECT_GE(r["predicted_high"].get<double>(), r["predicted"].get<double>());
        }
    bool hash_twin = false;
    for (const auto& cfg : j["configurations"]) {
        if (cfg["name"] == "hash-yield-4k") hash_twin = cfg["twin"]["status"] == "ok";
        for (const auto& run : cfg["runs"])
            if (run.contains("auth_failures")) {
                EXPECT_EQ(run["auth_failures"], 0);
                EXPECT_TRUE(run["conserved"].get<bool>());
            }
    }
    EXPECT_TRUE(hash_twin);
}

TEST(Cli, CalibrationsGiveTheRangeOverTheirProfilesAlone) {
    // Two quick calibrations, one configuration: the range is over the two profiles, and there is
    // no profile prediction of its own (no [memory] rounds' profiles either).
    const fs::path out = fs::temp_directory_path() / ("kdsim-validate-cal2-" + std::to_string(getpid()) + ".json");
    Cmd c = run_cmd(std::string(KDSIM_EXE) + " validate --quick --calibrations 2 --only hash-yield-4k --out " + out.string());
    ASSERT_EQ(c.status, 0) << c.output;
    std::ifstream in(out);
    ASSERT_TRUE(in.good());
    nlohmann::json j = nlohmann::json::parse(in);
    fs::remove(out);
    EXPECT_EQ(j["profile"]["range_profiles"], 2);
    ASSERT_EQ(j["configurations"].size(), 1u);
    EXPECT_EQ(j["configurations"][0]["predicted_range_profiles"].size(), 2u);
    bool any = false;
    for (const auto& r : j["rows"])
        if (!r["predicted"].is_null()) {
            any = true;
            EXPECT_TRUE(r["predicted_profile"].is_null());
            ASSERT_EQ(r["predictions"].size(), 2u);
            const double a = r["predictions"][0].get<double>(), b = r["predictions"][1].get<double>();
            EXPECT_DOUBLE_EQ(r["predicted"].get<double>(), (a + b) / 2);
        }
    EXPECT_TRUE(any);
}

TEST(Cli, BadInputIsExitTwoAndWritesNothing) {
    const std::string exe = KDSIM_EXE;
    const fs::path out = fs::temp_directory_path() / "kdsim-validate-no-such-dir" / "x.json";
    Cmd a = run_cmd(exe + " validate --quick --out " + out.string());
    EXPECT_EQ(a.status, 2) << a.output;
    EXPECT_NE(a.output.find("does not exist"), std::string::npos);
    EXPECT_FALSE(fs::exists(out));
    Cmd b = run_cmd(exe + " validate --quick --max-error -5");
    EXPECT_EQ(b.status, 2) << b.output;
    Cmd c = run_cmd(exe + " validate --quick --profile /nonexistent/profile.toml");
    EXPECT_EQ(c.status, 2) << c.output;
    Cmd e = run_cmd(exe + " validate --quick --calibrations 2 --profile " + std::string(KDSIM_SOURCE_DIR) +
                    "/data/profiles/x86/intel-icelake-server.toml");
    EXPECT_EQ(e.status, 2) << e.output;
    EXPECT_NE(e.output.find("--calibrations"), std::string::npos) << e.output;
    Cmd d = run_cmd(exe + " validate --quick --only no-such-configuration");
    EXPECT_EQ(d.status, 2) << d.output;
    EXPECT_NE(d.output.find("rx-inline-64-aes-128-gcm"), std::string::npos);
}

TEST(Cli, MaxErrorDecidesTheExitStatus) {
    // A profile from a different CPU (no calibration: fast) and the hashing twin only; a
    // threshold of 0 % fails on any difference, a huge one passes.
    const std::string exe = KDSIM_EXE;
    const std::string prof = std::string(KDSIM_SOURCE_DIR) + "/data/profiles/x86/intel-icelake-server.toml";
    Cmd strict = run_cmd(exe + " validate --quick --only hash-yield-4k --profile " + prof + " --max-error 0");
    EXPECT_EQ(strict.status, 1) << strict.output;
    EXPECT_NE(strict.output.find("above --max-error"), std::string::npos);
    Cmd lax = run_cmd(exe + " validate --quick --only hash-yield-4k --profile " + prof + " --max-error 1e9");
    EXPECT_EQ(lax.status, 0) << lax.output;
}
