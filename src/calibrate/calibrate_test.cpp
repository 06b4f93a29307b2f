// Unit tests of kdsim calibrate: the statistics and the fit on synthetic data (exact by
// construction), and measurements that must be positive, finite and ordered where physics orders
// them. No measured figure is asserted beyond that.
#include "calibrate/calibrate.h"
#include "calibrate/primitives.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

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
    auto v = measure_flush(cpu, {1536, 9216}, 5);
    ASSERT_EQ(v.size(), 2u);
    for (auto& p : v) {
        EXPECT_GT(p.flush.stats.median, 0);
        EXPECT_GT(p.reread.stats.median, 0);
    }
}

TEST(Machine, MemcpyLongerCopiesCostMore) {
    auto r = measure_memcpy({64, 1500}, 7);
    EXPECT_GT(r.points[0].cycles.stats.median, 0);
    EXPECT_GT(r.points[1].cycles.stats.median, r.points[0].cycles.stats.median);
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
