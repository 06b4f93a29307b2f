// Seeds that mean something: the NIC interrupt's delivery jitter ([variation] of a profile,
// scenarios/seeds/) draws its delays from the run's seed, so seeds give different results and
// one seed always the same bytes; without it (and without DRAM refresh) the run is E4's whatever the seed; and its effect on
// a round trip is what the mechanism says: two deliveries, each late by half the jitter on average.
// DRAM refresh ([memory.dram] refresh_interval / refresh_time) starts at a phase drawn from the
// seed, so a run on the memory hierarchy (E5's i.MX6QP) also differs from seed to seed.
#include "helpers.h"

#include "report/report.h"

#include <set>

namespace kdsim::testing {
namespace {

const char* const JITTER = "scenarios/seeds/arp-pingpong-irq-jitter.toml";

// Runs `rel` with `seed` (for `duration` when given), every machine's jitter replaced by
// `jitter_ns` when given, and without DRAM refresh when `refresh` is false (boards on the memory
// hierarchy: its refresh phase is the other variation source).
results::RunResults run_seeded(const char* rel, std::uint64_t seed, std::optional<std::uint64_t> jitter_ns, bool refresh,
                               std::optional<engine::Tick> duration = std::nullopt) {
    scenario::LoadOptions lo;
    lo.seed_override = seed;
    system::ScenarioConfig cfg = scenario::load_scenario(ROOT / rel, lo);
    if (duration) cfg.duration = *duration;
    for (auto& m : cfg.machines) {
        if (jitter_ns) m.profile.variation.irq_delivery_jitter = *jitter_ns;
        if (m.profile.memory && !refresh) m.profile.memory->refresh_interval_ns = m.profile.memory->refresh_time_ns = 0;
    }
    system::System sys(cfg);
    return sys.run();
}

// Runs the jitter scenario with `seed`, both boards' jitter replaced by `jitter_ns` when given.
results::RunResults run_jitter(std::uint64_t seed, std::optional<std::uint64_t> jitter_ns = std::nullopt) {
    return run_seeded(JITTER, seed, jitter_ns, true);
}

TEST(Seeds, TheSameSeedGivesTheSameBytes) {
    EXPECT_EQ(report::to_json_text(run_jitter(2)), report::to_json_text(run_jitter(2)));
}

TEST(Seeds, DifferentSeedsGiveDifferentRoundTripTimes) {
    std::set<double> means;
    for (std::uint64_t seed : {1, 2, 3}) {
        const results::RunResults r = run_jitter(seed);
        EXPECT_FALSE(r.failed) << "seed " << seed;
        EXPECT_EQ(metric(r, "arping", "round_trips"), 10000);
        means.insert(metric(r, "arping", "rtt_mean_us"));
    }
    EXPECT_EQ(means.size(), 3u);
}

TEST(Seeds, WithoutJitterAndRefreshTheRunIsE4sWhateverTheSeed) {
    const results::RunResults e4 = run_seeded("scenarios/e4/daif-built-out.toml", 1, std::nullopt, false);
    for (std::uint64_t seed : {1, 7}) {
        const results::RunResults r = run_seeded(JITTER, seed, 0, false);
        ASSERT_EQ(r.statistics.size(), e4.statistics.size());
        for (std::size_t i = 0; i < r.statistics.size(); ++i)
            EXPECT_EQ(r.statistics[i].value, e4.statistics[i].value) << r.statistics[i].path << " seed " << seed;
        EXPECT_EQ(metric(r, "arping", "rtt_mean_us"), metric(e4, "arping", "rtt_mean_us"));
    }
}

// E5's i.MX6QP run, 20 ms, with `seed`; refresh figures removed when `refresh` is false.
results::RunResults run_imx6(std::uint64_t seed, bool refresh = true) {
    return run_seeded("scenarios/e5/imx6qp-mtu-partial-sync.toml", seed, std::nullopt, refresh, 20 * engine::PS_PER_MS);
}

TEST(Seeds, TheDramRefreshPhaseComesFromTheSeed) {
    const char* const waits = "imx6qp/memory/refresh_waits";
    const char* const stalls = "imx6qp/memory/stall_cycles";
    std::set<double> seen;
    for (std::uint64_t seed : {1, 2, 3}) {
        const results::RunResults r = run_imx6(seed);
        EXPECT_FALSE(r.failed) << "seed " << seed;
        EXPECT_GT(stat(r, waits), 0) << "seed " << seed;
        seen.insert(stat(r, stalls));
    }
    EXPECT_EQ(seen.size(), 3u); // three phases, three stall totals
    // same seed, same bytes
    EXPECT_EQ(report::to_json_text(run_imx6(5)), report::to_json_text(run_imx6(5)));
    // without the refresh figures the seed changes nothing (the run draws no other random number)
    EXPECT_EQ(stat(run_imx6(1, false), stalls), stat(run_imx6(2, false), stalls));
}

TEST(Seeds, ARoundTripWaitsForTwoDeliveriesLateByHalfTheJitterOnAverage) {
    // A round trip takes one rx interrupt on each board (request, reply), each delivered
    // U[0, 2 us] late: the mean grows by 2 x 1 us. Over 10,000 round trips the sum of two such
    // delays has a standard error of sqrt(2 x (2 us)^2 / 12) / 100 = 0.008 us.
    const double calm = metric(run_jitter(1, 0), "arping", "rtt_mean_us");
    const double late = metric(run_jitter(1, 2000), "arping", "rtt_mean_us");
    EXPECT_NEAR(late - calm, 2.0, 0.05);
}

} // namespace
} // namespace kdsim::testing
