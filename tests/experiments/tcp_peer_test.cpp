// scenarios/tcp-peer (docs/tcp.md): kdsim's side of the peer check against ns-3's TcpCubic,
// read from the tcp:tcp_probe trace (snd_cwnd, ssthresh and icsk_ca_state as each ACK reaches the
// sender). Every loss episode must follow CUBIC's multiplicative decrease as RFC 9438 gives it
// with the kernel's beta = 717/1024: ssthresh = max(floor(cwnd x 717 / 1024), 2), and fast
// recovery must end with cwnd = ssthresh (tcp_end_cwnd_reduction). The link's drop pattern loses
// exactly the listed segments, each retransmitted once, and every byte is read.
#include "helpers.h"

#include "kernel/trace.h"

#include <gtest/gtest.h>

#include <vector>

namespace kdsim {
namespace {

using namespace testing; // ROOT, metric, stat (helpers.h)

constexpr std::uint8_t CA_OPEN = 0, CA_DISORDER = 1, CA_RECOVERY = 3, CA_LOSS = 4;
constexpr std::uint32_t INFINITE_SSTHRESH = 0x7fffffff;

struct Probe {
    engine::Tick t;
    std::uint32_t cwnd, ssthresh;
    std::uint8_t state;
};

struct Episode {
    std::uint32_t cwnd_before; // at the last ACK before recovery
    std::uint32_t ssthresh;    // set on entering it
    std::uint32_t cwnd_after;  // at the first ACK after it ended (0: it had not)
    std::uint8_t state;        // CA_RECOVERY or CA_LOSS (an RTO)
};

struct TracedRun {
    results::RunResults r;
    std::vector<Probe> probes;
    std::vector<Episode> episodes;
};

TracedRun run_traced(const std::string& rel) {
    system::ScenarioConfig cfg = scenario::load_scenario(ROOT / rel, scenario::LoadOptions{});
    system::System sys(cfg);
    system::TraceRequest req;
    req.limit = 10'000'000;
    EXPECT_EQ(system::parse_trace_categories("tcp", req.filter), "");
    EXPECT_TRUE(sys.enable_trace(req));
    TracedRun out{sys.run(), {}, {}};
    for (const kernel::TraceRecord& rec : sys.trace()->records())
        if (rec.kind == kernel::TraceKind::TCP_PROBE && rec.name == 0)
            out.probes.push_back(Probe{rec.begin, static_cast<std::uint32_t>(rec.arg), static_cast<std::uint32_t>(rec.arg >> 32), rec.sub});
    for (std::size_t i = 1; i < out.probes.size(); ++i) {
        const Probe& p = out.probes[i];
        const Probe& prev = out.probes[i - 1];
        const bool in = p.state == CA_RECOVERY || p.state == CA_LOSS;
        const bool was = prev.state == CA_RECOVERY || prev.state == CA_LOSS;
        if (in && !was) out.episodes.push_back(Episode{prev.cwnd, p.ssthresh, 0, p.state});
        if (!in && was && !out.episodes.empty()) out.episodes.back().cwnd_after = p.cwnd;
    }
    return out;
}

// The multiplicative decrease of every episode, and its end at ssthresh.
void expect_cubic_decrease(const TracedRun& run) {
    for (std::size_t i = 0; i < run.episodes.size(); ++i) {
        const Episode& e = run.episodes[i];
        EXPECT_EQ(e.state, CA_RECOVERY) << "episode " << i << " was an RTO";
        EXPECT_EQ(e.ssthresh, std::max<std::uint32_t>(e.cwnd_before * 717 / 1024, 2)) << "episode " << i;
        if (e.cwnd_after) EXPECT_EQ(e.cwnd_after, e.ssthresh) << "episode " << i;
    }
}

void expect_every_byte_read(const TracedRun& run) {
    EXPECT_FALSE(run.r.failed);
    EXPECT_EQ(metric(run.r, "iperf3", "bytes_lost"), 0);
    EXPECT_EQ(metric(run.r, "iperf3", "rto"), 0);
}

// A case whose drops all fall into one window: one recovery, one retransmission per drop.
void expect_one_recovery(const std::string& scenario, int drops) {
    const TracedRun run = run_traced(scenario);
    EXPECT_EQ(stat(run.r, "tx/wire/eth0/segments_dropped"), drops);
    EXPECT_EQ(metric(run.r, "iperf3", "retransmits"), drops);
    ASSERT_EQ(run.episodes.size(), 1u);
    expect_cubic_decrease(run);
    EXPECT_GT(run.episodes[0].cwnd_after, 0u); // recovery ended within the run
    expect_every_byte_read(run);
}

TEST(TcpPeer, OneDropIsOneRetransmissionAndOneRecoveryToSsthresh717Over1024OfCwnd) {
    expect_one_recovery("scenarios/tcp-peer/one-drop.toml", 1);
}

TEST(TcpPeer, ABurstOfThreeDropsInOneWindowIsOneReductionWithThreeRetransmissions) {
    // RFC 6675: one window's losses are one congestion event, so cwnd is reduced once.
    expect_one_recovery("scenarios/tcp-peer/burst3.toml", 3);
}

TEST(TcpPeer, EveryThousandthSegmentLostIsOneReductionPerDropEachTo717Over1024) {
    // cwnd stays below 1000 segments, so no two drops fall into one window: one episode and one
    // retransmission per drop, but the last drop may not be detected yet when the run ends.
    const TracedRun run = run_traced("scenarios/tcp-peer/periodic.toml");
    std::uint32_t most = 0;
    for (const Probe& p : run.probes) most = std::max(most, p.cwnd);
    ASSERT_LT(most, 1000u);
    const double drops = stat(run.r, "tx/wire/eth0/segments_dropped");
    EXPECT_GE(drops, 10);
    const auto episodes = static_cast<double>(run.episodes.size());
    EXPECT_EQ(metric(run.r, "iperf3", "retransmits"), episodes);
    EXPECT_TRUE(episodes == drops || episodes == drops - 1) << episodes << " episodes, " << drops << " drops";
    expect_cubic_decrease(run);
    expect_every_byte_read(run);
}

TEST(TcpPeer, WithoutDropsHyStartEndsSlowStartWithSsthreshAtCwndBeforeAnyLoss) {
    const TracedRun run = run_traced("scenarios/tcp-peer/no-loss.toml");
    ASSERT_FALSE(run.probes.empty());
    EXPECT_EQ(run.probes.front().cwnd, 10u); // the initial window (RFC 6928)
    EXPECT_EQ(run.probes.front().ssthresh, INFINITE_SSTHRESH);
    std::size_t exit = 0;
    while (exit < run.probes.size() && run.probes[exit].ssthresh == INFINITE_SSTHRESH) ++exit;
    ASSERT_LT(exit, run.probes.size());
    // HyStart sets ssthresh = cwnd in Open state; cwnd can have grown by this ACK's segments
    // after hystart_update ran (tcp_slow_start is capped at ssthresh, so not past it).
    EXPECT_TRUE(run.probes[exit].state == CA_OPEN || run.probes[exit].state == CA_DISORDER);
    EXPECT_EQ(run.probes[exit].cwnd, run.probes[exit].ssthresh);
    // The 1000-frame queue overflows later: those losses are CUBIC decreases too.
    expect_cubic_decrease(run);
    expect_every_byte_read(run);
}

} // namespace
} // namespace kdsim
