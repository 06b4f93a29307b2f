// System in steps (start, advance, finish: what kdsim run --precision does) gives the same
// results as one run(), for a run of fixed duration and for one that ends when its finite
// workloads do; and a workload's progress amount is the integral of its rate metric.
#include "helpers.h"

#include "report/report.h"

namespace kdsim::testing {
namespace {

std::string stepped_json(const std::string& rel, engine::Tick step) {
    system::ScenarioConfig cfg = scenario::load_scenario(ROOT / rel, scenario::LoadOptions{});
    system::System sys(cfg);
    sys.start();
    engine::Tick t = 0;
    while (sys.advance(t += step)) {
    }
    return report::to_json_text(sys.finish());
}

TEST(Stepping, AFixedDurationRunInOneMillisecondStepsIsByteIdenticalToOneRun) {
    const std::string rel = "scenarios/e5/imx6qp-9k-full-sync.toml";
    EXPECT_EQ(stepped_json(rel, engine::PS_PER_MS), report::to_json_text(run_scenario(rel)));
}

TEST(Stepping, ARunEndingWithItsFiniteWorkloadsStopsThereWhenStepped) {
    const std::string rel = "scenarios/e2/yield-4k-alone.toml"; // no duration: ends when module loading ends
    const std::string one = report::to_json_text(run_scenario(rel));
    EXPECT_EQ(stepped_json(rel, 3 * engine::PS_PER_MS), one);
}

TEST(Stepping, Iperf3ProgressIsTheMegabitsBehindItsReceiverRate) {
    system::ScenarioConfig cfg = scenario::load_scenario(ROOT / "scenarios/e5/x86-9k-full-sync.toml", scenario::LoadOptions{});
    system::System sys(cfg);
    sys.start();
    sys.advance(sys.end());
    const auto progress = sys.progress();
    const results::RunResults r = sys.finish();
    ASSERT_EQ(progress.size(), 1u);
    EXPECT_EQ(progress[0].first, "workload.iperf3.receiver_mbit_s");
    // megabits read / seconds measured = the reported Mbit/s; and megabits = bytes * 8 / 1e6
    EXPECT_NEAR(progress[0].second / metric(r, "iperf3", "seconds"), metric(r, "iperf3", "receiver_mbit_s"), 1e-9);
    EXPECT_DOUBLE_EQ(progress[0].second, metric(r, "iperf3", "receiver_bytes") * 8 / 1e6);
}

} // namespace
} // namespace kdsim::testing
