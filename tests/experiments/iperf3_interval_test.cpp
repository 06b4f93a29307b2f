// iperf3's interval report (-i) on E5's x86 run (200 ms, the stream from 5 ms): one sender and one
// receiver line per interval, whose figures add up to the closing lines'.
#include "helpers.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace kdsim {
namespace {

using namespace testing; // ROOT, metric (helpers.h)

results::RunResults run_with_interval(const std::string& interval) {
    scenario::LoadOptions lo;
    lo.assignments.push_back(scenario::Assignment{"machine[0].workload[0].interval", interval, "--set"});
    system::ScenarioConfig cfg = scenario::load_scenario(ROOT / "scenarios/e5/x86-mtu-partial-sync.toml", lo);
    system::System sys(cfg);
    return sys.run();
}

std::vector<std::string> notes(const results::RunResults& r, const std::string& key) {
    std::vector<std::string> out;
    for (const auto& w : r.workloads)
        for (const auto& [k, text] : w.notes)
            if (k == key) out.push_back(text);
    return out;
}

TEST(Iperf3Interval, FiveIntervalsOf39MsCoverThe195MsStreamAndAddUpToItsTotals) {
    // 195 ms / 39 ms = 5 lines each side; the last ends at the stream's end.
    auto r = run_with_interval("39 ms");
    const auto tx = notes(r, "interval sender  "), rx = notes(r, "interval receiver");
    ASSERT_EQ(tx.size(), 5u);
    ASSERT_EQ(rx.size(), 5u);
    EXPECT_EQ(rx[0].rfind("0.00-0.04 sec", 0), 0u) << rx[0];
    EXPECT_EQ(rx[1].rfind("0.04-0.08 sec", 0), 0u) << rx[1];
    // The receiver's bitrates, weighted by their 39 ms, give the closing line's, within the
    // rounding of each to a whole Mbit/s (0.5 at most).
    double sum = 0;
    for (const std::string& line : rx) {
        double from, to, mbytes, mbit;
        ASSERT_EQ(std::sscanf(line.c_str(), "%lf-%lf sec %lf MBytes %lf Mbits/sec", &from, &to, &mbytes, &mbit), 4) << line;
        sum += mbit * 0.039;
    }
    EXPECT_NEAR(sum / 0.195, metric(r, "iperf3", "receiver_mbit_s"), 0.5);
    // Retr adds up to the run's retransmits; the last Cwnd is the closing cwnd x 1448-byte MSS.
    double retr = 0, cwnd_kb = 0;
    for (const std::string& line : tx) {
        const auto at = line.find("Mbits/sec");
        ASSERT_NE(at, std::string::npos) << line;
        double n;
        ASSERT_EQ(std::sscanf(line.c_str() + at, "Mbits/sec %lf Retr %lf KBytes Cwnd", &n, &cwnd_kb), 2) << line;
        retr += n;
    }
    EXPECT_EQ(retr, metric(r, "iperf3", "retransmits"));
    EXPECT_NEAR(cwnd_kb, metric(r, "iperf3", "cwnd") * 1448 / 1024.0, 0.5);
}

TEST(Iperf3Interval, ZeroTurnsTheReportOffAndOneIntervalWouldOnlyRepeatTheClosingLines) {
    EXPECT_TRUE(notes(run_with_interval("0 s"), "interval receiver").empty());
    // iperf3 -i 1 (the default) on a 0.195 s stream: its one interval is the whole stream
    EXPECT_TRUE(notes(run_with_interval("1 s"), "interval receiver").empty());
    // 100 ms: a full interval and a partial one of 95 ms
    const auto rx = notes(run_with_interval("100 ms"), "interval receiver");
    ASSERT_EQ(rx.size(), 2u);
    EXPECT_EQ(rx[1].rfind("0.10-", 0), 0u) << rx[1];
}

} // namespace
} // namespace kdsim
