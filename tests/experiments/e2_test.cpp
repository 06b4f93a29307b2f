// The claims of experiment E2 (issue: x86 FPU section bounding), checked on the shipped
// scenarios. Every bound is computed here from the profile's own figures and the workload's
// definition, never taken from a previous run's output.
#include "report/report.h"
#include "helpers.h"
#include "scenario/load.h"
#include "system/system.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

namespace kdsim {
namespace {

namespace fs = std::filesystem;
using namespace testing; // ROOT, run_scenario, metric, stat, peer_of, cpu0 (helpers.h)

results::RunResults run(const std::string& rel, std::optional<std::uint64_t> seed = std::nullopt) {
    return testing::run_scenario(rel, seed);
}

struct E2 : ::testing::Test {
    static void SetUpTestSuite() {
        profile = scenario::load_profile(ROOT / "data/profiles/x86/intel-icelake-server.toml");
        for (const char* s : {"none", "fixed-4k", "fixed-20k", "yield-4k", "yield-4k-alone", "none-probe",
                              "fixed-4k-probe", "fixed-20k-probe", "yield-4k-probe", "fixed-4k-probe-full",
                              "yield-4k-probe-full"})
            runs[s] = run(std::string("scenarios/e2/") + s + ".toml");
    }
    // Upper bound of the probe's wake-up latency when the CPU can reschedule after at most one
    // 4 KiB step of the slowest SIMD driver that hashes on the CPU (the self-tests run every
    // registered driver; sha256-ssse3 has the most cycles per byte): the step itself (with the
    // final block and API cost), the bracket's end, cond_resched, the timer interrupt path with
    // the wake-up, a tick that may coincide, the switch, and the probe's FPU restore. In
    // microseconds.
    static double one_chunk_bound_us() {
        const auto& k = profile.kernel;
        double worst_step = 0;
        for (auto alg : {crypto::HashAlg::SHA1, crypto::HashAlg::SHA256, crypto::HashAlg::SHA512})
            for (auto impl : {crypto::HashImpl::SSSE3, crypto::HashImpl::AVX, crypto::HashImpl::AVX2, crypto::HashImpl::SHANI})
                if (const auto& h = profile.hash.get(alg, impl))
                    worst_step = std::max(worst_step, 4096 * h->cycles_per_byte + static_cast<double>(h->cycles_per_call));
        double cycles = worst_step + static_cast<double>(profile.simd.begin + profile.simd.end + profile.simd.save +
                                                         profile.simd.restore + k.cond_resched + k.irq_entry + k.irq_exit +
                                                         2 * k.timer_handler + k.wakeup + k.wakeup_activate + k.tick + k.context_switch);
        return cycles / static_cast<double>(profile.clock_hz) * 1e6;
    }
    static inline system::Profile profile;
    static inline std::map<std::string, results::RunResults> runs;
};

TEST_F(E2, EveryScenarioFinishesItsBootWorkWithoutFindings) {
    for (const auto& [name, r] : runs) {
        EXPECT_FALSE(r.failed) << name;
        EXPECT_EQ(results::finding_count(r, "simd_clobber"), 0u) << name;
        EXPECT_EQ(metric(r, "modprobe", "completed"), 1) << name;
        EXPECT_EQ(metric(r, "modprobe", "modules"), 400) << name;
    }
}

TEST_F(E2, TheSelfTestsRunEveryRegisteredDriverAsTestmgrCountsIt) {
    // drivers x vectors x (9 default + 100 random configs) + (drivers - generic) x 800 random
    // vectors: sha1 5 drivers (generic ssse3 avx avx2 ni) and 6 vectors, sha256 5 and 5, sha512
    // 4 (no ni) and 6.
    const auto& r = runs["fixed-20k"];
    EXPECT_EQ(metric(r, "cryptomgr-sha1", "tests"), 5 * 6 * 109 + 4 * 800);
    EXPECT_EQ(metric(r, "cryptomgr-sha256", "tests"), 5 * 5 * 109 + 4 * 800);
    EXPECT_EQ(metric(r, "cryptomgr-sha512", "tests"), 4 * 6 * 109 + 3 * 800);
    EXPECT_EQ(metric(r, "cryptomgr-sha512", "drivers"), 4);
}

TEST_F(E2, InFunctionalModeEveryDigestOfTheSelfTestsSplitCallsVerifiesAndTimingIsUnchanged) {
    // OpenSSL hashes every byte testmgr's calls feed, split as the configurations split them;
    // each test's digest must equal the one-shot digest, and the run's timing the timing mode's.
    scenario::LoadOptions f;
    f.mode_override = system::Mode::FUNCTIONAL;
    const auto cfg = scenario::load_scenario(ROOT / "scenarios/e2/yield-4k.toml", f);
    system::System sys(cfg);
    const auto r = sys.run();
    EXPECT_EQ(results::finding_count(r, "digest_mismatch"), 0u);
    for (const char* w : {"cryptomgr-sha1", "cryptomgr-sha256", "cryptomgr-sha512"})
        EXPECT_GT(metric(r, w, "digests_checked"), metric(r, w, "tests")) << w; // shash and ahash per test
    EXPECT_EQ(r.events, runs["yield-4k"].events);
    EXPECT_EQ(r.simulated_us, runs["yield-4k"].simulated_us);
}

TEST_F(E2, ConditionalYieldEntersFarFewerBracketsAndSpendsFarLessInBeginEndThanFixedLimits) {
    // The modules are hashed by sha512-avx2 (the self-tests' messages, at most 8 KiB, hardly
    // depend on the policy): its brackets and begin/end cycles under each policy.
    const std::string d = "boot/cpu0/simd/alg/sha512-avx2/";
    for (const char* p : {"", "-probe"}) {
        const auto& y = runs[std::string("yield-4k") + p];
        const auto& f4 = runs[std::string("fixed-4k") + p];
        const auto& f20 = runs[std::string("fixed-20k") + p];
        EXPECT_LT(stat(y, d + "brackets") * 3, stat(f4, d + "brackets")) << p;
        EXPECT_LT(stat(y, d + "brackets"), stat(f20, d + "brackets")) << p;
        EXPECT_LT(stat(y, d + "begin_end_cycles") * 2, stat(f4, d + "begin_end_cycles")) << p;
        EXPECT_LT(stat(y, d + "begin_end_cycles"), stat(f20, d + "begin_end_cycles")) << p;
    }
}

TEST_F(E2, PerDriverBracketFiguresAddUpToTheCpuTotals) {
    // Every bracket of E2 is a hash driver's, so the drivers' brackets, begin/end cycles and
    // bytes sum to the CPU's, and the longest of theirs is the CPU's longest bracket.
    const std::string alg = "boot/cpu0/simd/alg/";
    for (const auto& [name, r] : runs) {
        std::map<std::string, std::map<std::string, double>> by_driver;
        for (const auto& st : r.statistics)
            if (st.path.rfind(alg, 0) == 0) {
                const std::string rest = st.path.substr(alg.size());
                by_driver[rest.substr(0, rest.find('/'))][rest.substr(rest.find('/') + 1)] = st.value;
            }
        ASSERT_FALSE(by_driver.empty()) << name;
        double brackets = 0, cycles = 0, bytes = 0, longest = 0;
        for (const auto& [driver, f] : by_driver) {
            brackets += f.at("brackets");
            cycles += f.at("begin_end_cycles");
            bytes += f.at("bytes");
            longest = std::max(longest, f.at("longest_bracket_cycles"));
        }
        EXPECT_EQ(brackets, stat(r, "boot/cpu0/simd/brackets")) << name;
        EXPECT_EQ(cycles, stat(r, "boot/cpu0/simd/begin_end_cycles")) << name;
        EXPECT_EQ(bytes, stat(r, "boot/cpu0/simd/bytes")) << name;
        EXPECT_EQ(longest, static_cast<double>(cpu0(r).simd.longest_bracket_cycles)) << name;
        EXPECT_EQ(cpu0(r).simd.longest_bracket_holder_by_driver.size(), by_driver.size()) << name;
    }
}

TEST_F(E2, FixedLimitsBoundTheBracketToTheLimit) {
    // No driver's bracket holds more than the limit; the modules' driver fills it exactly.
    for (const auto& [scenario, limit] : {std::pair{"fixed-4k", 4096.0}, std::pair{"fixed-20k", 20480.0}}) {
        const auto& r = runs[scenario];
        EXPECT_LE(static_cast<double>(cpu0(r).simd.longest_bracket_bytes), limit) << scenario;
        for (const auto& [driver, holder] : cpu0(r).simd.longest_bracket_holder_by_driver)
            EXPECT_LE(stat(r, "boot/cpu0/simd/alg/" + driver + "/longest_bracket_bytes"), limit) << scenario << " " << driver;
        EXPECT_EQ(stat(r, "boot/cpu0/simd/alg/sha512-avx2/longest_bracket_bytes"), limit) << scenario;
    }
}

TEST_F(E2, WithNothingElseRunnableTheConditionalBracketSpansWholeBuffers) {
    // One bracket per module (its signed part); the longest holds the largest module sampled.
    const auto& r = runs["yield-4k-alone"];
    EXPECT_EQ(stat(r, "boot/cpu0/simd/brackets"), 400);
    EXPECT_EQ(stat(r, "boot/cpu0/simd/bytes"), metric(r, "modprobe", "bytes_hashed"));
    EXPECT_EQ(cpu0(r).simd.longest_bracket_bytes, cpu0(runs["none"]).simd.longest_bracket_bytes);
    EXPECT_GT(cpu0(r).simd.longest_bracket_bytes, 64u * 1024);
}

TEST_F(E2, UnderFullPreemptionTheProbesWorstLatencyStaysNearOneChunk) {
    const double bound = one_chunk_bound_us();
    for (const char* s : {"yield-4k-probe-full", "fixed-4k-probe-full"}) {
        double mx = metric(runs[s], "cyclictest", "latency_max_us");
        EXPECT_LE(mx, bound) << s;
        EXPECT_GT(mx, 0.0) << s;
    }
}

TEST_F(E2, UnderVoluntaryPreemptionTheConditionalYieldLeavesTheSelfTestsAsTheProbesWorstHolder) {
    // The loaders yield within a 4 KiB step; what remains is testmgr running configurations
    // back to back between its cond_resched() calls, more than one chunk but far below a module.
    const auto& y = runs["yield-4k-probe"];
    const double mx = metric(y, "cyclictest", "latency_max_us");
    EXPECT_GT(mx, one_chunk_bound_us());
    EXPECT_LT(mx * 10, metric(runs["fixed-4k-probe"], "cyclictest", "latency_max_us"));
    EXPECT_NE(cpu0(y).longest_np_holder.find("cryptomgr-"), std::string::npos) << cpu0(y).longest_np_holder;
}

TEST_F(E2, UnderVoluntaryPreemptionFixedLimitsAloneDoNotHelpTheProbe) {
    // preempt_enable() at the end of each fixed bracket is no preemption point under
    // PREEMPT_VOLUNTARY: the probe waits for the whole module as with no limit at all.
    const double bound = one_chunk_bound_us();
    EXPECT_GT(metric(runs["fixed-4k-probe"], "cyclictest", "latency_max_us"), 10 * bound);
    EXPECT_GT(metric(runs["none-probe"], "cyclictest", "latency_max_us"), 10 * bound);
}

// --- determinism ------------------------------------------------------------------------

std::string json_of(const std::string& rel, std::optional<std::uint64_t> seed = std::nullopt) {
    return report::to_json_text(run(rel, seed));
}

TEST(Determinism, TheSameScenarioAndSeedGiveByteIdenticalJson) {
    for (const char* s : {"scenarios/e2/yield-4k-probe.toml", "scenarios/softirq-simd/x86-preempt-disable-kthread.toml"})
        EXPECT_EQ(json_of(s), json_of(s)) << s;
}

TEST(Determinism, AnotherSeedChangesOnlyTheRandomParts) {
    // E2's random parts are the sample of modules and testmgr's random configurations and
    // vectors: the same number of modules and of tests (fixed by testmgr's rules), other bytes.
    auto a = run("scenarios/e2/yield-4k.toml", 1);
    auto b = run("scenarios/e2/yield-4k.toml", 2);
    EXPECT_NE(metric(a, "modprobe", "bytes_hashed"), metric(b, "modprobe", "bytes_hashed"));
    EXPECT_EQ(metric(a, "modprobe", "modules"), metric(b, "modprobe", "modules"));
    for (const char* w : {"cryptomgr-sha1", "cryptomgr-sha256", "cryptomgr-sha512"}) {
        EXPECT_NE(metric(a, w, "bytes_hashed"), metric(b, w, "bytes_hashed")) << w;
        EXPECT_EQ(metric(a, w, "tests"), metric(b, w, "tests")) << w;
        EXPECT_EQ(metric(a, w, "random_vectors"), metric(b, w, "random_vectors")) << w;
    }
    // A scenario whose only randomness is packet arrival jitter: the same number of CPUs,
    // workloads and policies, other arrival times.
    auto c = run("scenarios/softirq-simd/x86-bh-disable-kthread.toml", 1);
    auto d = run("scenarios/softirq-simd/x86-bh-disable-kthread.toml", 2);
    EXPECT_NE(report::to_json_text(c), report::to_json_text(d));
    EXPECT_EQ(c.workloads.size(), d.workloads.size());
    EXPECT_EQ(results::finding_count(c, "simd_clobber"), 0u);
    EXPECT_EQ(results::finding_count(d, "simd_clobber"), 0u);
}

TEST(Determinism, FunctionalAndTimingModesGiveTheSameTiming) {
    scenario::LoadOptions t, f;
    t.mode_override = system::Mode::TIMING;
    f.mode_override = system::Mode::FUNCTIONAL;
    auto ct = scenario::load_scenario(ROOT / "scenarios/softirq-simd/arm32-softirq-neon-kthread.toml", t);
    auto cf = scenario::load_scenario(ROOT / "scenarios/softirq-simd/arm32-softirq-neon-kthread.toml", f);
    ct.duration = cf.duration = 200 * engine::PS_PER_MS;
    system::System st(ct), sf(cf);
    auto rt = st.run();
    auto rf = sf.run();
    EXPECT_EQ(rt.events, rf.events);
    EXPECT_EQ(rt.simulated_us, rf.simulated_us);
    EXPECT_EQ(cpu0(rt).cycles, cpu0(rf).cycles);
    EXPECT_GT(metric(rf, "kcryptd", "digests_checked"), 0);
    EXPECT_EQ(results::finding_count(rf, "digest_mismatch"), 0u);
}

// --- unsafe policies --------------------------------------------------------------------

TEST(Unsafe, EveryShippedUnsafeScenarioIsCaughtWithAClobberReport) {
    for (const auto& e : fs::directory_iterator(ROOT / "scenarios/unsafe")) {
        if (e.path().extension() != ".toml" || e.path().filename() == "experiment.toml") continue; // scenarios only
        auto r = run(fs::relative(e.path(), ROOT).string());
        EXPECT_TRUE(r.failed) << e.path();
        EXPECT_GT(results::finding_count(r, "simd_clobber"), 0u) << e.path();
        ASSERT_FALSE(results::findings_of(r, "simd_clobber").empty()) << e.path();
        EXPECT_FALSE(results::findings_of(r, "simd_clobber")[0]->victim.empty());
        EXPECT_NE(results::findings_of(r, "simd_clobber")[0]->culprit.find("softirq"), std::string::npos) << results::findings_of(r, "simd_clobber")[0]->culprit;
    }
}

TEST(Unsafe, TheSafeTwinsReportNoClobberOverLongRandomisedRuns) {
    for (std::uint64_t seed : {1, 2, 3}) {
        for (const auto& e : fs::directory_iterator(ROOT / "scenarios/softirq-simd")) {
            if (e.path().extension() != ".toml" || e.path().filename() == "experiment.toml") continue;
            auto r = run(fs::relative(e.path(), ROOT).string(), seed);
            EXPECT_FALSE(r.failed) << e.path() << " seed " << seed;
            EXPECT_EQ(results::finding_count(r, "simd_clobber"), 0u) << e.path() << " seed " << seed;
        }
    }
}

} // namespace
} // namespace kdsim
