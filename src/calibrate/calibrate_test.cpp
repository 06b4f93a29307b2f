// Unit tests of kdsim calibrate: the statistics and the fit on synthetic data (exact by
// construction), and measurements that must be positive, finite and ordered where physics orders
// them. No measured figure is asserted beyond that.
#include "calibrate/calibrate.h"
#include "calibrate/ciphers.h"
#include "calibrate/primitives.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>

using namespace kdsim::calibrate;

TEST(Fit, RecoversSlopeAndInterceptExactly) {
    std::vector<double> x, y;
    for (double len : {16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0}) {
        x.push_back(len);
        y.push_back(123.0 + 2.75 * len);
    }
    LineFit f = fit_line(x, y);
    EXPECT_NEAR(f.intercept, 123.0, 1e-6);
    EXPECT_NEAR(f.slope, 2.75, 1e-12);
    std::vector<double> w;
    for (double v : y) w.push_back(1.0 / (v * v));
    LineFit fw = fit_line(x, y, w);
    EXPECT_NEAR(fw.intercept, 123.0, 1e-6);
    EXPECT_NEAR(fw.slope, 2.75, 1e-12);
}

TEST(Fit, RelativeNoiseKeepsTheFitClose) {
    std::mt19937 rng(42);
    std::uniform_real_distribution<double> noise(-0.01, 0.01); // +-1 %
    std::vector<HashPoint> pts;
    for (std::size_t len : {16u, 64u, 256u, 1024u, 4096u, 16384u, 65536u}) {
        HashPoint p;
        p.len = len;
        p.cycles.stats.median = (300.0 + 1.9 * static_cast<double>(len)) * (1 + noise(rng));
        pts.push_back(p);
    }
    LineFit f = fit_hash(pts);
    EXPECT_NEAR(f.slope, 1.9, 0.05);
    EXPECT_NEAR(f.intercept, 300.0, 30.0);
}

TEST(Fit, RejectsDegenerateInput) {
    EXPECT_THROW(fit_line({1, 1, 1}, {2, 3, 4}), std::invalid_argument);
    EXPECT_THROW(fit_line({1, 2}, {2}), std::invalid_argument);
}

TEST(Stats, MedianQuartilesAndSpread) {
    Stats s = summarize({5, 1, 4, 2, 3});
    EXPECT_DOUBLE_EQ(s.median, 3);
    EXPECT_DOUBLE_EQ(s.q1, 2);
    EXPECT_DOUBLE_EQ(s.q3, 4);
    EXPECT_DOUBLE_EQ(s.spread, 2.0 / 3.0);
    EXPECT_EQ(s.n, 5u);
    Stats even = summarize({10, 10, 10, 10});
    EXPECT_DOUBLE_EQ(even.spread, 0);
    Stats e = summarize({});
    EXPECT_EQ(e.n, 0u);
}

TEST(Stats, NoisyMeasurementIsRepeatedThenMarked) {
    int calls = 0;
    std::mt19937 rng(1);
    Measured m = measure([&] { ++calls; return static_cast<double>(1 + rng() % 100); }, 9, 2, 0.05, 3);
    EXPECT_EQ(m.attempts, 3);
    EXPECT_TRUE(m.noisy);
    EXPECT_EQ(calls, 2 + 3 * 9);
    Measured q = measure([] { return 7.0; }, 9, 2, 0.05, 3);
    EXPECT_EQ(q.attempts, 1);
    EXPECT_FALSE(q.noisy);
    EXPECT_DOUBLE_EQ(q.stats.median, 7.0);
}

TEST(Masks, ForceablePathsAndUnknownName) {
    EXPECT_EQ(ia32cap_mask("shani").rfind("~0x", 0), 0u);
    EXPECT_THROW(ia32cap_mask("avx512"), std::invalid_argument);
    CpuFeatures none;
    none.vendor = "GenuineIntel";
    EXPECT_FALSE(hash_unavailable(none, "sha256", "generic"));
    EXPECT_TRUE(hash_unavailable(none, "sha256", "shani"));
    EXPECT_TRUE(hash_unavailable(none, "sha1", "avx2"));
    CpuFeatures all = none;
    all.ssse3 = all.avx = all.avx2 = all.bmi1 = all.bmi2 = all.sha = true;
    EXPECT_FALSE(hash_unavailable(all, "sha256", "shani"));
    EXPECT_FALSE(hash_unavailable(all, "sha256", "avx"));
    EXPECT_TRUE(hash_unavailable(all, "sha512", "shani"));
    EXPECT_TRUE(hash_unavailable(all, "sha512", "ssse3"));
    all.vendor = "AuthenticAMD"; // OpenSSL takes its AVX-only SHA paths on Intel only
    EXPECT_TRUE(hash_unavailable(all, "sha256", "avx"));
}

TEST(Machine, TscFrequencyIsPositiveAndFinite) {
    TscInfo t = measure_tsc(1, 0.02);
    EXPECT_GT(t.hz, 1e8);
    EXPECT_TRUE(std::isfinite(t.hz));
}

TEST(Machine, XsaveSaveAndRestoreArePositive) {
    CpuFeatures cpu = detect_cpu();
    if (!cpu.osxsave) GTEST_SKIP() << "XSAVE not enabled by the OS";
    XsaveResult r = measure_xsave(cpu, 5);
    EXPECT_GE(r.state_size, 576u); // legacy area + header
    EXPECT_GT(r.save.stats.median, 0);
    EXPECT_GT(r.restore.stats.median, 0);
    EXPECT_TRUE(std::isfinite(r.save.stats.median) && std::isfinite(r.restore.stats.median));
}

TEST(Machine, FlushPerLineAndReReadArePositive) {
    CpuFeatures cpu = detect_cpu();
    auto r = measure_flush(cpu, {1536, 4096, 9216}, 5);
    ASSERT_EQ(r.points.size(), 3u);
    EXPECT_EQ(r.points[0].lines, 24u);
    EXPECT_EQ(r.points[2].lines, 144u);
    for (auto& p : r.points) {
        EXPECT_GT(p.dirty.stats.median, 0);
        EXPECT_GT(p.clean.stats.median, 0);
        EXPECT_GT(p.reread.stats.median, 0);
    }
    // Flushing 144 lines costs more in all than flushing 24 (whatever the per-line cost).
    EXPECT_GT(r.points[2].dirty.stats.median * 144, r.points[0].dirty.stats.median * 24);
    EXPECT_GT(r.dirty_fit.slope, 0);
    EXPECT_TRUE(std::isfinite(r.dirty_fit.intercept) && std::isfinite(r.clean_fit.slope) &&
                std::isfinite(r.reread_fit.slope));
}

// A KVM guest whose kernel lists no /sys/.../cache folders (this project's Zen 5 machine) still
// has CPUID's descriptors; the registers below are that guest's, decoded by hand.
TEST(CpuidCaches, AmdLegacyDescriptorsGiveL1AndL2AndLeaveOutAnL3WhoseCodeDefersToFn8000_001D) {
    CpuidCacheRegs r;
    r.amd = true;
    r.l1d_ecx = 0x300C0140; // 48 KiB, 12-way, 1 line per tag, 64 B lines
    r.l2_ecx = 0x04006140;  // 1024 KiB, code 6h (8 ways), 64 B lines
    r.l3_edx = (1016u << 18) | (0x9u << 12) | 64; // code 9h: "see Fn8000_001D", which the guest hides
    const auto v = cpuid_cache_levels(r);
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].level, 1);
    EXPECT_EQ(v[0].size, 48u * 1024);
    EXPECT_EQ(v[0].ways, 12u);
    EXPECT_EQ(v[0].line, 64u);
    EXPECT_FALSE(v[0].shared);
    EXPECT_EQ(v[1].level, 2);
    EXPECT_EQ(v[1].size, 1024u * 1024);
    EXPECT_EQ(v[1].ways, 8u);
    EXPECT_FALSE(v[1].shared);
    EXPECT_NE(v[1].ways_source.find("Fn8000_0006 ECX[15:12] = 6h"), std::string::npos) << v[1].ways_source;
    // a legacy L3 of code 8h (16 ways), 64 x 512 KiB: shared
    r.l3_edx = (64u << 18) | (0x8u << 12) | 64;
    const auto w = cpuid_cache_levels(r);
    ASSERT_EQ(w.size(), 3u);
    EXPECT_EQ(w[2].size, 32u << 20);
    EXPECT_EQ(w[2].ways, 16u);
    EXPECT_TRUE(w[2].shared);
    // an L1 reported fully associative (FFh) has no set to model: left out
    r.l1d_ecx = 0x30FF0140;
    EXPECT_EQ(cpuid_cache_levels(r).front().level, 2);
}

TEST(CpuidCaches, TheDeterministicLeafIsDecodedAndPreferredOverTheLegacyDescriptors) {
    CpuidCacheRegs r;
    r.amd = false;
    r.l2_ecx = 0x04006140; // ignored: the deterministic leaf lists caches
    // leaf 4 subleaves {EAX, EBX, ECX}: L1D (type 1, level 1, 2 sharers), 12 ways x 1 x 64 B x 64 sets
    r.deterministic.push_back({0x1u | (1u << 5) | (1u << 14), (11u << 22) | 63u, 63u});
    // L1I (type 2): skipped
    r.deterministic.push_back({0x2u | (1u << 5), (7u << 22) | 63u, 63u});
    // L2 (type 3, level 2): 20 ways x 1 x 64 B x 1024 sets = 1.25 MiB
    r.deterministic.push_back({0x3u | (2u << 5), (19u << 22) | 63u, 1023u});
    const auto v = cpuid_cache_levels(r);
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].size, 12u * 64 * 64);
    EXPECT_EQ(v[0].ways, 12u);
    EXPECT_EQ(v[0].sharers, 2);
    EXPECT_EQ(v[1].level, 2);
    EXPECT_EQ(v[1].size, 20u * 64 * 1024);
    EXPECT_EQ(v[1].ways, 20u);
    EXPECT_NE(v[1].size_source.find("CPUID leaf 4"), std::string::npos) << v[1].size_source;
}

TEST(Machine, APointerChaseBeyondTheCachesIsSlowerThanWithinL1) {
    auto levels = read_cache_levels(0);
    if (levels.empty()) GTEST_SKIP() << "neither sysfs nor CPUID lists a cache level";
    EXPECT_EQ(levels.front().level, 1);
    for (std::size_t i = 1; i < levels.size(); ++i) EXPECT_GE(levels[i].size, levels[i - 1].size);
    auto h = measure_hierarchy(levels, 64, 3);
    ASSERT_EQ(h.latency.size(), levels.size());
    EXPECT_EQ(h.working_set[0], levels[0].size / 2);
    EXPECT_GE(h.dram_working_set, std::uint64_t{64} << 20);
    // a dependent load from memory takes several times an L1 hit on any machine
    EXPECT_GT(h.dram_latency.stats.median, 3 * h.latency[0].stats.median);
    EXPECT_GT(h.copy_cycles_per_byte.stats.median, 0);
    // the tables either are consistent for the model or say why not
    std::string problem;
    const auto cpus = allowed_cpus();
    const DeviceLinesResult dev =
        measure_device_lines(cpus.size() > 1 ? std::optional<int>(cpus[1]) : std::nullopt, 3);
    pin_to_cpu(cpus.front());
    const std::string t = memory_tables(h, dev, 2e9, 64, "measured", problem);
    EXPECT_NE(t.empty(), problem.empty());
    if (!t.empty()) {
        EXPECT_NE(t.find("[memory.dram]"), std::string::npos);
    }
}

TEST(Machine, LinesWrittenWithNonTemporalStoresAreReadFromMemory) {
    const auto cpus = allowed_cpus();
    pin_to_cpu(cpus.front());
    const DeviceLinesResult d = measure_device_lines(cpus.size() > 1 ? std::optional<int>(cpus[1]) : std::nullopt, 5);
    EXPECT_EQ(d.two_cpus, cpus.size() > 1);
    // a line the other writer sent to memory is a miss: several times an L1 hit (4-5 cycles) anywhere
    EXPECT_GT(d.chase.stats.median, 20);
    ASSERT_EQ(d.seq.size(), std::size(DeviceLinesResult::SEQ_LINES));
    // sixteen lines of a buffer cost more than two, and each point is the median less the bracket
    EXPECT_GT(d.seq.back().net, d.seq[1].net);
    for (const auto& p : d.seq) EXPECT_NEAR(p.net, std::max(0.0, p.cycles.stats.median - d.bracket.stats.median), 1e-9);
    EXPECT_TRUE(std::isfinite(d.seq_fit.slope) && std::isfinite(d.seq_fit.intercept));
}

// Hand-made measurements -> the [memory] tables: which level stays, and the DRAM and prefetch figures.
TEST(Tables, DeviceWrittenLinesGiveTheDramLatencyAndThePrefetchFigures) {
    HierarchyResult h;
    auto level = [](int n, std::uint64_t size, bool shared) {
        CacheLevelInfo c;
        c.level = n;
        c.size = size;
        c.ways = 8;
        c.line = 64;
        c.shared = shared;
        return c;
    };
    auto m = [](double v) {
        Measured x;
        x.stats.median = v;
        x.stats.n = 3;
        return x;
    };
    h.levels = {level(1, 32768, false), level(2, 1 << 20, false), level(3, 32 << 20, true)};
    h.working_set = {16384, 1 << 19, 16 << 20};
    h.latency = {m(4), m(14), m(800)}; // the L3 chase costs more than a line from memory: left out
    h.dram_working_set = 128 << 20;
    h.dram_latency = m(1000);
    h.copy_bytes = 128 << 20;
    h.copy_cycles_per_byte = m(0.5); // 2e9 / 0.5 = 4e9 B/s copied: bandwidth 1.2e10
    DeviceLinesResult d;
    d.two_cpus = true;
    d.chase = m(400);            // 400 cycles at 2 GHz = 200 ns
    d.seq_fit = {420, 16};       // one exposed miss (420 / 400 rounds to 1), then 64 B per 16 cycles
    d.peer = m(451.4);           // half a round trip of the bounced line, rounded
    std::string problem;
    const std::string t = memory_tables(h, d, 2e9, 64, "measured", problem);
    ASSERT_TRUE(problem.empty()) << problem;
    EXPECT_NE(t.find("levels = [\"l1d\", \"l2\"]"), std::string::npos) << t;
    EXPECT_NE(t.find("level left out: l3"), std::string::npos);
    EXPECT_NE(t.find("latency = { value = 200.0, unit = \"ns\""), std::string::npos) << t;
    EXPECT_NE(t.find("bandwidth = { value = 1.2e+10"), std::string::npos) << t;
    // 64 B x 2e9 / 16 = 8e9 B/s, below the shared 1.2e10
    EXPECT_NE(t.find("core_bandwidth = { value = 8e+09"), std::string::npos) << t;
    EXPECT_NE(t.find("trigger = { value = 1,"), std::string::npos) << t;
    EXPECT_NE(t.find("peer_latency = { value = 451, unit = \"cycles\""), std::string::npos) << t;
    // a stream faster than the shared channel is written as the channel's bandwidth
    d.seq_fit = {900, 4}; // 64 x 2e9 / 4 = 3.2e10 > 1.2e10; 900 / 400 rounds to 2 exposed misses
    const std::string u = memory_tables(h, d, 2e9, 64, "measured", problem);
    EXPECT_NE(u.find("core_bandwidth = { value = 1.2e+10"), std::string::npos) << u;
    EXPECT_NE(u.find("trigger = { value = 2,"), std::string::npos) << u;
    // with one CPU the writer shared it: no line came from another core's cache
    d.two_cpus = false;
    EXPECT_EQ(memory_tables(h, d, 2e9, 64, "measured", problem).find("peer_latency"), std::string::npos);
}

// The median and range of synthetic rounds, by hand: sorted 71, 81.4, 81.4, 88.1, 109: median
// 81.4, range (109 - 71) / 81.4 = 46.7 % (above 20 %: disagree).
TEST(Rounds, MedianLowHighAndRangeOfSyntheticRounds) {
    const RoundSpread a = combine_rounds({71, 109, 88.1, 81.4, 81.4}, 0.20);
    EXPECT_DOUBLE_EQ(a.median, 81.4);
    EXPECT_DOUBLE_EQ(a.low, 71);
    EXPECT_DOUBLE_EQ(a.high, 109);
    EXPECT_NEAR(a.range, 38.0 / 81.4, 1e-12);
    EXPECT_TRUE(a.disagree);
    ASSERT_EQ(a.values.size(), 5u);
    EXPECT_DOUBLE_EQ(a.values[1], 109); // kept in round order
    // 96, 100, 104: median 100, range 8 %: agree
    const RoundSpread b = combine_rounds({100, 104, 96}, 0.20);
    EXPECT_DOUBLE_EQ(b.median, 100);
    EXPECT_NEAR(b.range, 0.08, 1e-12);
    EXPECT_FALSE(b.disagree);
    // exactly at the bound is not above it: 90, 100, 110 -> 20 %
    EXPECT_FALSE(combine_rounds({90, 100, 110}, 0.20).disagree);
    // an even count: the median between the middle two (type 7): 1, 2, 3, 10 -> 2.5, range 9 / 2.5
    const RoundSpread c = combine_rounds({10, 1, 3, 2}, 0.20);
    EXPECT_DOUBLE_EQ(c.median, 2.5);
    EXPECT_DOUBLE_EQ(c.range, 3.6);
    // all equal: range 0, even at 0; around a median of 0 any difference is unbounded
    EXPECT_EQ(combine_rounds({0, 0, 0}, 0.20).range, 0);
    EXPECT_FALSE(combine_rounds({0, 0, 0}, 0.20).disagree);
    const RoundSpread z = combine_rounds({0, 2, 0}, 0.20);
    EXPECT_EQ(z.median, 0);
    EXPECT_TRUE(std::isinf(z.range));
    EXPECT_TRUE(z.disagree);
    EXPECT_EQ(combine_rounds({}, 0.20).values.size(), 0u);
}

// Three hand-made rounds -> the [memory] tables: each figure the median of the rounds' own
// figures (not a figure of the median round), its source listing the rounds and their range.
TEST(Tables, EachMemoryFigureIsTheMedianOfTheRoundsWithTheirSpreadInItsSource) {
    HierarchyResult h;
    CacheLevelInfo l1;
    l1.level = 1;
    l1.size = 32768;
    l1.ways = 8;
    l1.line = 64;
    h.levels = {l1};
    auto m = [](double v) {
        Measured x;
        x.stats.median = v;
        x.stats.n = 3;
        return x;
    };
    h.working_set = {16384};
    h.latency = {m(4)};
    h.dram_working_set = h.copy_bytes = 64 << 20;
    h.dram_latency = m(1000);
    auto round = [&](double chase, double par_one, double par_best, std::vector<double> pos, std::vector<double> skip) {
        MemoryRound r;
        r.dev.two_cpus = true;
        r.dev.chase = m(chase);
        r.dev.seq_fit = {420, 16};                  // 64 B x 2e9 / 16 = 8e9 B/s; 420 / chase rounds to 1 (at least 1)
        r.dev.peer = m(451.4);
        r.dev.parallel = {m(par_one), m(par_best)}; // 1 and 2 chases
        r.dev.stride_position = std::move(pos);
        r.dev.stride_skip = std::move(skip);
        r.copy = m(0.5);                            // 2e9 / 0.5 x 3 = 1.2e10 B/s in every round
        return r;
    };
    // chase 400 / 600 / 500 cycles = 200 / 300 / 250 ns: median 250, range 100 / 250 = 40 %
    // fill buffers 400/40 = 10, 600/30 = 20, 500/50 = 10: median 10, range 100 %
    // stride: round 1 first cheap (under 200) at position 2 -> trigger 1, skips 1 and 2 cheap -> degree 2;
    //         round 2 first cheap (under 300) at 3 -> trigger 2, skip 1 only -> degree 1;
    //         round 3 none cheap (under 250) -> 0 and 0. Medians: trigger 1, degree 1.
    const std::vector<MemoryRound> rounds = {
        round(400, 400, 40, {900, 900, 100, 100}, {100, 100, 900}),
        round(600, 600, 30, {900, 900, 900, 100}, {100, 900, 900}),
        round(500, 500, 50, {900, 900, 900, 900}, {900, 900, 900}),
    };
    const MemoryFigures f1 = round_figures(rounds[0], 2e9, 64);
    EXPECT_DOUBLE_EQ(f1.fill_buffers, 10);
    EXPECT_DOUBLE_EQ(f1.stride_trigger, 1);
    EXPECT_DOUBLE_EQ(f1.stride_degree, 2);
    EXPECT_DOUBLE_EQ(f1.dram_bandwidth, 1.2e10);
    EXPECT_DOUBLE_EQ(f1.stream_bps, 8e9);
    const MemoryFigures f2 = round_figures(rounds[1], 2e9, 64);
    EXPECT_DOUBLE_EQ(f2.fill_buffers, 20);
    EXPECT_DOUBLE_EQ(f2.stride_trigger, 2);
    EXPECT_DOUBLE_EQ(f2.stride_degree, 1);
    const MemoryFigures f3 = round_figures(rounds[2], 2e9, 64);
    EXPECT_DOUBLE_EQ(f3.stride_trigger, 0);
    EXPECT_DOUBLE_EQ(f3.stride_first_cheap, -1);

    std::string problem;
    const std::string t = memory_tables(h, rounds, 2e9, 64, "measured", problem);
    ASSERT_TRUE(problem.empty()) << problem;
    auto line_of = [&](const std::string& key) { // the first after [memory] (the DRAM's latency after [memory.dram])
        const auto at = t.find("\n" + key + " = {", t.find(key == "latency" ? "[memory.dram]" : "[memory]"));
        if (at == std::string::npos) return std::string();
        return t.substr(at + 1, t.find('\n', at + 1) - at - 1);
    };
    const std::string dram = line_of("latency");
    EXPECT_NE(dram.find("value = 250.0, unit = \"ns\""), std::string::npos) << dram;
    EXPECT_NE(dram.find("median of 3 round(s)"), std::string::npos) << dram;
    EXPECT_NE(dram.find("200.0 / 300.0 / 250.0 ns; range 40% of the median, ROUNDS DISAGREE (above 20%)"),
              std::string::npos)
        << dram;
    const std::string fill = line_of("fill_buffers");
    EXPECT_NE(fill.find("value = 10,"), std::string::npos) << fill;
    EXPECT_NE(fill.find("10 / 20 / 10 lines; range 100% of the median, ROUNDS DISAGREE"), std::string::npos) << fill;
    const std::string bw = line_of("bandwidth");
    EXPECT_NE(bw.find("value = 1.2e+10"), std::string::npos) << bw;
    EXPECT_NE(bw.find("range 0% of the median"), std::string::npos) << bw;
    EXPECT_EQ(bw.find("ROUNDS DISAGREE"), std::string::npos) << bw;
    EXPECT_NE(line_of("stride_trigger").find("value = 1,"), std::string::npos) << t;
    EXPECT_NE(line_of("stride_degree").find("value = 1,"), std::string::npos) << t;
    EXPECT_NE(line_of("stride_degree").find("2 / 1 / 0 lines"), std::string::npos) << t;
    EXPECT_NE(line_of("core_bandwidth").find("value = 8e+09"), std::string::npos) << t;
    EXPECT_NE(line_of("peer_latency").find("value = 451,"), std::string::npos) << t;
    // each round's raw figures are kept as comments
    EXPECT_NE(t.find("round 3 of 3"), std::string::npos);
    // one round alone: that round's figures, range 0
    const std::string one = memory_tables(h, std::vector<MemoryRound>{rounds[1]}, 2e9, 64, "measured", problem);
    EXPECT_NE(one.find("latency = { value = 300.0, unit = \"ns\""), std::string::npos) << one;
    EXPECT_NE(one.find("fill_buffers = { value = 20,"), std::string::npos) << one;
    EXPECT_EQ(one.find("ROUNDS DISAGREE (above"), std::string::npos) << one;
    // no round: no tables, and a problem that says so
    EXPECT_TRUE(memory_tables(h, std::vector<MemoryRound>{}, 2e9, 64, "measured", problem).empty());
    EXPECT_FALSE(problem.empty());
}

TEST(Rounds, RoundProfilesGoBesideTheProfile) {
    EXPECT_EQ(round_profile_path("/tmp/x/calibrated.toml", 2), std::filesystem::path("/tmp/x/calibrated.round2.toml"));
    EXPECT_EQ(round_profile_path("my.toml", 1), std::filesystem::path("my.round1.toml"));
}

TEST(Machine, MemcpyLongerCopiesCostMore) {
    auto r = measure_memcpy({64, 1500, 9000}, 7);
    ASSERT_EQ(r.points.size(), 3u);
    EXPECT_GT(r.points[0].cycles.stats.median, 0);
    EXPECT_GT(r.points[1].cycles.stats.median, r.points[0].cycles.stats.median);
    EXPECT_GT(r.points[2].cycles.stats.median, r.points[1].cycles.stats.median);
    EXPECT_GT(r.fit.slope, 0);
}

TEST(Machine, TimerSignalRoundTripIsMeasured) {
    TscInfo t = measure_tsc(1, 0.02);
    SignalResult s = measure_signals(t.hz, 5);
    EXPECT_GT(s.self_signal.stats.median, 0);
    EXPECT_GT(s.timer_round_trip.stats.median, 0);
    EXPECT_EQ(s.timer_round_trip.stats.n, 5u);
    // The gap around a signal contains the handler: both parts are positive and add up to it.
    EXPECT_GT(s.timer_to_handler.stats.median, 0);
    EXPECT_GT(s.handler_to_thread.stats.median, 0);
    EXPECT_TRUE(std::isfinite(s.timer_round_trip.stats.median));
}

TEST(Hash, GenericFitIsPositiveAndLongerHashesCostMore) {
    HashRun r = spawn_hash_measurement(KDSIM_EXE, "sha256", "generic", {64, 65536}, 5, allowed_cpus().front());
    ASSERT_EQ(r.points.size(), 2u);
    EXPECT_GT(r.points[1].cycles.stats.median, r.points[0].cycles.stats.median);
    EXPECT_GT(r.fit.slope, 0);
    EXPECT_TRUE(std::isfinite(r.fit.slope) && std::isfinite(r.fit.intercept));
}

TEST(Hash, ShaNiIsNotSlowerThanGenericAt64KiB) {
    CpuFeatures cpu = detect_cpu();
    if (hash_unavailable(cpu, "sha256", "shani")) GTEST_SKIP() << "no SHA-NI SHA-256 path on this CPU";
    int c = allowed_cpus().front();
    for (const char* alg : {"sha1", "sha256"}) {
        HashRun g = spawn_hash_measurement(KDSIM_EXE, alg, "generic", {65536}, 5, c);
        HashRun n = spawn_hash_measurement(KDSIM_EXE, alg, "shani", {65536}, 5, c);
        // Physics orders them (SHA-NI is several times faster); the 1.25 factor only absorbs the
        // noise of a shared machine running other tests at the same time.
        EXPECT_LE(n.points[0].cycles.stats.median, 1.25 * g.points[0].cycles.stats.median) << alg;
    }
}

TEST(Hash, Avx2IsNotSlowerThanGenericAt64KiB) {
    CpuFeatures cpu = detect_cpu();
    if (hash_unavailable(cpu, "sha512", "avx2")) GTEST_SKIP() << "no AVX2 SHA-512 path on this CPU";
    int c = allowed_cpus().front();
    HashRun g = spawn_hash_measurement(KDSIM_EXE, "sha512", "generic", {65536}, 5, c);
    HashRun a = spawn_hash_measurement(KDSIM_EXE, "sha512", "avx2", {65536}, 5, c);
    EXPECT_LE(a.points[0].cycles.stats.median, 1.25 * g.points[0].cycles.stats.median); // see above
}

// ---- ciphers ------------------------------------------------------------------------------------

// The masks, written out by hand from OpenSSL's documented bit numbers (OPENSSL_ia32cap(3)): the
// first word is CPUID.1:EDX | CPUID.1:ECX << 32, the second CPUID.7:EBX | CPUID.7:ECX << 32.
//   P1 (ECX.1) bits: 1 PCLMULQDQ, 11 XOP (AMD), 12 FMA, 25 AES-NI, 28 AVX, 29 F16C
//     -> ssse3 clears 1,11,12,25,28,29 = 0x32001802 << 32; aesni clears 11,12,28,29 = 0x30001800 << 32;
//        avx2/vaes/avx512 clear XOP only = 0x800 << 32
//   P2 (EBX.7) bits: 3 BMI1, 5 AVX2, 8 BMI2, 29 SHA; AVX-512 16 F, 17 DQ, 21 IFMA, 26 PF, 27 ER,
//     28 CD, 30 BW, 31 VL = 0xdc230000; with BMI1/AVX2/BMI2/SHA = 0xfc230128
//   P3 (ECX.7) bits: 9 VAES, 10 VPCLMULQDQ = 0x600 << 32
TEST(CipherMasks, EachImplementationNameHasTheDerivedMask) {
    const std::map<std::string, std::string> want = {
        {"generic", "~0x32181a0306800000:~0xe00fc230128"}, // the hashes' generic mask
        {"ssse3", "~0x3200180200000000:~0x600fc230128"},
        {"aesni", "~0x3000180000000000:~0x600fc230128"},
        {"avx", "~0x80000000000:~0x600fc230128"}, // XOP; everything above SSE4 but AVX itself
        {"avx2", "~0x80000000000:~0x600dc230000"},
        {"vaes", "~0x80000000000:~0xdc230000"},
        {"avx512", "~0x80000000000:~0x0"},
    };
    ASSERT_EQ(std::size(CIPHER_IMPLS), want.size());
    for (const char* impl : CIPHER_IMPLS) EXPECT_EQ(cipher_ia32cap_mask(impl), want.at(impl)) << impl;
    EXPECT_EQ(cipher_ia32cap_mask("generic"), ia32cap_mask("generic"));
    EXPECT_THROW(cipher_ia32cap_mask("neon"), std::invalid_argument);
    EXPECT_THROW(cipher_ia32cap_mask("shani"), std::invalid_argument);
    EXPECT_THROW(cipher_ia32cap_mask(""), std::invalid_argument);
}

TEST(CipherMasks, ApplyingAMaskFollowsCpuidC) {
    Ia32Cap c;
    c.p[0] = 0x178bfbff;
    c.p[1] = 0x7ed8320b;
    c.p[2] = 0x219c97a9;
    c.p[3] = 0x0040069c;
    Ia32Cap m = apply_ia32cap(c, "~0x200000000000000:~0x20"); // AES-NI (P1 bit 25), AVX2 (P2 bit 5)
    EXPECT_EQ(m.p[0], c.p[0] | (1u << 10)); // bit 10 marks the vector initialised
    EXPECT_EQ(m.p[1], c.p[1] & ~(1u << 25));
    EXPECT_EQ(m.p[2], c.p[2] & ~(1u << 5));
    EXPECT_EQ(m.p[3], c.p[3]);
    Ia32Cap no_colon = apply_ia32cap(c, "~0x0");
    EXPECT_EQ(no_colon.p[2], 0u); // without ":..." OpenSSL zeroes P2 and P3
    EXPECT_EQ(no_colon.p[3], 0u);
    Ia32Cap fxsr = apply_ia32cap(c, "~0x1000000:~0x0"); // FXSR also masks PCLMULQDQ, XOP, AES-NI, AVX
    EXPECT_EQ(fxsr.p[1], c.p[1] & ~(1u << 1 | 1u << 11 | 1u << 25 | 1u << 28));
    EXPECT_THROW(apply_ia32cap(c, "~zz:~0x0"), std::invalid_argument);
}

namespace {
// Two CPUs by their CPUID words: an AMD Zen 3 like this one (AES-NI, PCLMULQDQ, AVX2, VAES,
// no AVX-512) and an Intel Ice Lake server (AVX-512 F/DQ/IFMA/BW/VL, VAES).
CpuFeatures zen3() {
    CpuFeatures f;
    f.vendor = "AuthenticAMD";
    f.leaf1_eax = 0x00a00f11;
    f.leaf1_ecx = 0x7ef8320b; // SSE3 PCLMUL SSSE3 FMA CX16 SSE4.1/4.2 MOVBE POPCNT AES XSAVE OSXSAVE AVX F16C RDRAND
    f.leaf1_edx = 0x178bfbff;
    f.leaf7_ebx = 0x219c97a9; // BMI1 AVX2 BMI2 ... SHA, no AVX-512
    f.leaf7_ecx = 0x0040069c; // VAES VPCLMULQDQ
    f.xcr0 = 0x7;
    return f;
}
CpuFeatures icelake() {
    CpuFeatures f;
    f.vendor = "GenuineIntel";
    f.leaf1_eax = 0x000606a6;
    f.leaf1_ecx = 0x7ffefbff;
    f.leaf1_edx = 0xbfebfbff;
    f.leaf7_ebx = 0xf3bfb7ef; // AVX2, AVX512 F DQ IFMA CD BW VL, SHA
    f.leaf7_ecx = 0x40417f5e; // VAES VPCLMULQDQ ...
    f.xcr0 = 0xe7;
    return f;
}
std::set<std::string> available(const CpuFeatures& cpu, const std::string& prim) {
    std::set<std::string> out;
    for (const char* impl : CIPHER_IMPLS)
        if (!cipher_unavailable(cpu, prim, impl)) out.insert(impl);
    return out;
}
} // namespace

TEST(CipherDispatch, Zen3RunsTheseOpenSsl30Paths) {
    CpuFeatures z = zen3();
    using S = std::set<std::string>;
    EXPECT_EQ(available(z, "chacha20"), (S{"generic", "ssse3", "avx2"}));
    EXPECT_EQ(available(z, "poly1305"), (S{"generic", "avx", "avx2"})); // no SSSE3 Poly1305: ssse3 runs scalar
    // avx: SSSE3 ChaCha20 (OpenSSL has no AVX-only ChaCha20) with AVX Poly1305
    EXPECT_EQ(available(z, "chacha20-poly1305"), (S{"generic", "ssse3", "avx", "avx2"}));
    EXPECT_EQ(available(z, "aes128-ctr"), (S{"generic", "ssse3", "aesni"}));
    EXPECT_EQ(available(z, "aes128-gcm"), (S{"generic", "ssse3", "avx", "aesni"}));
    EXPECT_EQ(available(z, "aes256-gcm"), (S{"generic", "ssse3", "avx", "aesni"}));
    // AES-GCM with AVX on runs the stitched AVX code (the avx implementation) under the avx2 mask
    // too; VAES is never used.
    EXPECT_EQ(forced_cipher_path(z, "aes128-gcm", "avx2"), "avx");
    EXPECT_EQ(forced_cipher_path(z, "aes128-gcm", "avx"), "avx");
    EXPECT_EQ(forced_cipher_path(z, "chacha20", "avx"), "ssse3");
    EXPECT_NE(cipher_unavailable(z, "aes128-gcm", "vaes")->find("never tests the VAES"), std::string::npos);
    EXPECT_NE(cipher_unavailable(z, "chacha20", "avx512")->find("AVX-512"), std::string::npos);
    EXPECT_EQ(forced_cipher_path(z, "aes128-ctr", "generic"), "generic");
    EXPECT_EQ(forced_cipher_path(z, "aes128-gcm", "ssse3"), "ssse3");
}

TEST(CipherDispatch, IceLakeAddsAvx512AndNoCpuMeansGeneric) {
    CpuFeatures i = icelake();
    EXPECT_TRUE(available(i, "chacha20").count("avx512"));
    EXPECT_TRUE(available(i, "poly1305").count("avx512"));
    EXPECT_TRUE(available(i, "chacha20-poly1305").count("avx512"));
    EXPECT_FALSE(available(i, "aes128-gcm").count("avx512"));
    CpuFeatures skx = i;
    skx.leaf1_eax = 0x00050654; // Skylake-X: OpenSSL suppresses AVX512F; ChaCha20 still runs its VL code
    skx.leaf7_ebx &= ~(1u << 21); // no IFMA
    EXPECT_EQ(forced_cipher_path(skx, "chacha20", "avx512"), "avx512");
    EXPECT_EQ(forced_cipher_path(skx, "poly1305", "avx512"), "avx2");
    CpuFeatures none;
    none.vendor = "GenuineIntel";
    for (const char* prim : CIPHER_PRIMS) EXPECT_EQ(available(none, prim), (std::set<std::string>{"generic"})) << prim;
    EXPECT_THROW(cipher_unavailable(none, "aes192-gcm", "generic"), std::invalid_argument);
}

TEST(ChildSpec, UnknownNamesAreRejectedWithAClearError) {
    MeasureSpec ok = parse_measure_spec("aes128-gcm:aesni:16,65536:5:0");
    EXPECT_TRUE(ok.cipher);
    EXPECT_EQ(ok.sizes, (std::vector<std::size_t>{16, 65536}));
    EXPECT_FALSE(parse_measure_spec("sha256:shani:64:3:1").cipher);
    auto error_of = [](const std::string& spec) {
        try {
            parse_measure_spec(spec);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("(accepted)");
    };
    EXPECT_NE(error_of("md5:generic:16:3:0").find("unknown algorithm 'md5'; expected one of: sha1"), std::string::npos);
    EXPECT_NE(error_of("aes128-gcm:shani:16:3:0").find("unknown cipher implementation 'shani' for aes128-gcm"),
              std::string::npos);
    EXPECT_NE(error_of("sha256:aesni:16:3:0").find("unknown hash implementation 'aesni' for sha256"),
              std::string::npos);
    EXPECT_NE(error_of("chacha20:generic:0:3:0").find("size '0'"), std::string::npos);
    EXPECT_NE(error_of("chacha20:generic:16:x:0").find("sample count 'x'"), std::string::npos);
    EXPECT_NE(error_of("chacha20:generic:16:3").find("bad measurement spec"), std::string::npos);
}

namespace {
// Runs `kdsim calibrate --internal-measure spec` with OPENSSL_ia32cap=mask (unset when empty);
// returns the exit status and stderr.
std::pair<int, std::string> run_child(const std::string& spec, const std::string& mask) {
    std::string cmd = (mask.empty() ? std::string("env -u OPENSSL_ia32cap ") : "OPENSSL_ia32cap='" + mask + "' ") +
                      "'" KDSIM_EXE "' calibrate --internal-measure '" + spec + "' 2>&1 >/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return {-1, ""};
    std::string err;
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) err += buf;
    int st = pclose(p);
    return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, err};
}
} // namespace

TEST(ChildSpec, TheChildRejectsUnknownNamesAndAForeignMask) {
    auto [st1, e1] = run_child("aes128-gcm:bogus:16:3:0", cipher_ia32cap_mask("generic"));
    EXPECT_EQ(st1, 2);
    EXPECT_NE(e1.find("unknown cipher implementation 'bogus'"), std::string::npos) << e1;
    auto [st2, e2] = run_child("rc4:generic:16:3:0", cipher_ia32cap_mask("generic"));
    EXPECT_EQ(st2, 2);
    EXPECT_NE(e2.find("unknown algorithm 'rc4'"), std::string::npos) << e2;
    // Measuring "aesni" under the generic mask would label the generic code aesni: refused.
    auto [st3, e3] = run_child("aes128-gcm:aesni:16:3:0", cipher_ia32cap_mask("generic"));
    EXPECT_EQ(st3, 2);
    EXPECT_NE(e3.find("must run with OPENSSL_ia32cap=" + cipher_ia32cap_mask("aesni")), std::string::npos) << e3;
    auto [st4, e4] = run_child("chacha20:generic:16:3:0", "");
    EXPECT_EQ(st4, 2);
    EXPECT_NE(e4.find("found it unset"), std::string::npos) << e4;
}

TEST(Cipher, ReferenceDigestIsPerPrimitive) {
    std::set<std::string> seen;
    for (const char* prim : CIPHER_PRIMS) {
        std::string d = cipher_reference_digest(prim);
        EXPECT_EQ(d.size(), 64u) << prim;
        EXPECT_EQ(d, cipher_reference_digest(prim)) << prim; // deterministic
        seen.insert(d);
    }
    EXPECT_EQ(seen.size(), std::size(CIPHER_PRIMS));
}

// The quick run's cipher part, exactly as `kdsim calibrate --quick` does it, rendered as profile
// text: one table per primitive and implementation, each with two positive finite figures (or a
// per-call figure of 0 whose source names the negative fit it replaces) and a curve of one point
// per measured size, and a generic table for every primitive.
TEST(Cipher, QuickRunEmitsTablesWithPositiveFiniteFiguresAndCurves) {
    CpuFeatures cpu = detect_cpu();
    CipherPlan plan;
    plan.exe = KDSIM_EXE;
    plan.sizes = {16, 256, 4096, 65536};
    plan.samples = 11;
    plan.runs = 1;
    plan.cpu = allowed_cpus().front();
    std::vector<std::string> unavailable;
    auto ms = measure_ciphers(cpu, plan, &unavailable, {}, {});
    std::string text = cipher_tables_toml(ms, cpu.model, "2026-01-01", true);

    std::regex header(R"re(^\[cipher\.([a-z0-9-]+)\.([a-z0-9]+)\]$)re");
    std::regex figure(R"re(^(cycles_per_byte|cycles_per_call) = \{ value = ([^,]+), unit = "([^"]+)", source = "(.*)" \}$)re");
    std::regex curve(R"re(^curve = \{ value = \[(.*)\], unit = "cycles", source = "(.*)" \}$)re");
    std::map<std::string, std::set<std::string>> tables;
    std::istringstream in(text);
    std::string line, prim, impl;
    int figures = 0, curves = 0;
    while (std::getline(in, line)) {
        std::smatch m;
        if (line.empty()) continue;
        if (std::regex_match(line, m, header)) {
            prim = m[1];
            impl = m[2];
            EXPECT_TRUE(is_cipher_prim(prim)) << line;
            EXPECT_TRUE(is_cipher_impl(impl)) << line;
            EXPECT_TRUE(tables[prim].insert(impl).second) << "duplicate " << line;
            continue;
        }
        if (std::regex_match(line, m, curve)) { // one [bytes, cycles] pair per measured size, in order
            std::string pairs = m[1];
            std::regex pair(R"re(\[(\d+), (\d+)\])re");
            std::vector<std::size_t> sizes;
            for (std::sregex_iterator it(pairs.begin(), pairs.end(), pair), end; it != end; ++it) {
                sizes.push_back(std::stoul((*it)[1]));
                EXPECT_GT(std::stod((*it)[2]), 0) << line;
            }
            EXPECT_EQ(sizes, plan.sizes) << line;
            EXPECT_EQ(m[2].str().rfind(cpu.model + ", 2026-01-01, measured by kdsim calibrate: ", 0), 0u) << line;
            ++curves;
            continue;
        }
        ASSERT_TRUE(std::regex_match(line, m, figure)) << "unexpected line: " << line;
        double v = std::stod(m[2]);
        // A fitted per-call intercept can come out below zero when the machine is loaded (the
        // quick run takes one child process); the table then writes 0 and says so in the source.
        bool clamped = m[1] == "cycles_per_call" && v == 0 &&
                       m[4].str().find("< 0, written as 0") != std::string::npos;
        EXPECT_TRUE(std::isfinite(v) && (v > 0 || clamped)) << prim << "." << impl << " " << line;
        EXPECT_EQ(m[3], m[1] == "cycles_per_byte" ? "cycles/byte" : "cycles") << line;
        if (m[1] == "cycles_per_call") {
            EXPECT_EQ(m[2].str().find('.'), std::string::npos) << "integer: " << line;
        }
        EXPECT_EQ(m[4].str().rfind(cpu.model + ", 2026-01-01, measured by kdsim calibrate: ", 0), 0u) << line;
        ++figures;
    }
    ASSERT_EQ(tables.size(), std::size(CIPHER_PRIMS)); // every primitive is there ...
    for (auto& [p, impls] : tables) EXPECT_TRUE(impls.count("generic")) << p; // ... with its generic table
    std::size_t n_tables = 0;
    for (auto& [p, impls] : tables) n_tables += impls.size();
    EXPECT_EQ(figures, static_cast<int>(2 * n_tables));
    EXPECT_EQ(curves, static_cast<int>(n_tables));
    // Tables are exactly the named measurements; everything else was reported unavailable.
    std::size_t named = 0;
    for (auto& m : ms) named += m.named;
    EXPECT_EQ(named, n_tables);
    EXPECT_EQ(n_tables + unavailable.size(), std::size(CIPHER_PRIMS) * std::size(CIPHER_IMPLS));
}

TEST(Cipher, AesNiGcmIsNotSlowerPerByteThanGeneric) {
    CpuFeatures cpu = detect_cpu();
    if (cipher_unavailable(cpu, "aes128-gcm", "aesni")) GTEST_SKIP() << "no AES-NI AES-GCM path on this CPU";
    int c = allowed_cpus().front();
    HashRun g = spawn_cipher_measurement(KDSIM_EXE, "aes128-gcm", "generic", {4096, 65536}, 5, c);
    HashRun a = spawn_cipher_measurement(KDSIM_EXE, "aes128-gcm", "aesni", {4096, 65536}, 5, c);
    ASSERT_GT(g.fit.slope, 0);
    ASSERT_GT(a.fit.slope, 0);
    // Physics orders them (AES-NI + PCLMULQDQ is several times faster than tables); the 1.25 factor
    // only absorbs the noise of a shared machine running other tests at the same time.
    EXPECT_LE(a.fit.slope, 1.25 * g.fit.slope);
}
