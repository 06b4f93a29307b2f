// E5's i.MX6 receive path on the memory hierarchy (the profile's [memory].copy is given): the
// lines each received segment pulls from DRAM, counted by hand from the path and the profile's
// prefetcher; timing and functional modes agree; the same seed gives the same JSON.
#include "helpers.h"

#include "report/report.h"

#include <gtest/gtest.h>

namespace kdsim {
namespace {

using testing::metric;
using testing::ROOT;
using testing::stat;

system::ScenarioConfig partial_sync(system::Mode mode, engine::Tick duration) {
    scenario::LoadOptions lo;
    lo.mode_override = mode;
    auto cfg = scenario::load_scenario(ROOT / "scenarios/e5/imx6qp-mtu-partial-sync.toml", lo);
    cfg.duration = duration;
    return cfg;
}

TEST(E5Memory, EachSegmentPullsFourLinesOnDemandAndFortyFourBehindThePrefetcher) {
    // 32 B lines; rx buffers of 1536 B = 48 lines, the frame from byte 0; 2 stream trackers per
    // CPU that follow a stream after 2 consecutive line misses. Per frame:
    //   CPU 0 (NET_RX): eth_type_trans reads bytes 0-13 (line 0), ip_rcv/tcp_v4_rcv bytes 14-65
    //   (lines 0-2): line 0 and 1 miss on demand (a new stream, then its second miss), line 2
    //   follows the stream: 2 demand + 1 streamed;
    //   CPU 1 (the reader) copies bytes 66-1513 (lines 2-47): line 2 is in the shared L2 (CPU 0
    //   read it), lines 3 and 4 miss on demand (CPU 1's own trackers), lines 5-47 stream: 2 + 43.
    // At the end of the run the last polled frame may not have been touched yet, or only by
    // eth_type_trans (line 0: 1 demand, nothing streamed; the run can end between it and ip_rcv),
    // and one copy may have been costed (at its exec's start) but not completed: the last frame's
    // (demand, streamed) in {(2, 1), (1, 0), (0, 0)} and b in {0, 1} below.
    auto cfg = partial_sync(system::Mode::TIMING, 50 * engine::PS_PER_MS);
    system::System sys(cfg);
    auto r = sys.run();
    const double polled = stat(r, "@iperf3/netdev/*/rx_frames");
    const double copied = metric(r, "iperf3", "receiver_bytes") / 1448;
    const double demand = stat(r, "@iperf3/memory/dram_demand_lines");
    const double streamed = stat(r, "@iperf3/memory/dram_stream_lines");
    ASSERT_GT(copied, 1000);
    bool explained = false;
    const std::pair<double, double> last[] = {{2, 1}, {1, 0}, {0, 0}};
    for (const auto& [d, s] : last)
        for (int b = 0; b <= 1; ++b)
            explained = explained || (demand == 2 * (polled - 1) + d + 2 * (copied + b) &&
                                       streamed == (polled - 1) + s + 43 * (copied + b));
    EXPECT_TRUE(explained) << "polled " << polled << ", copied " << copied << ", demand " << demand << ", streamed "
                           << streamed;
    // the device wrote every frame taken off the ring (1514 B + FCS), and at most a ring more
    const double dma = stat(r, "@iperf3/memory/dma_write_bytes");
    EXPECT_GE(dma, polled * 1518);
    EXPECT_LE(dma, (polled + 128) * 1518);
    EXPECT_EQ(stat(r, "@iperf3/dma/stale_reads"), 0);
}

TEST(E5Memory, FunctionalAndTimingModesGiveIdenticalResults) {
    auto ct = partial_sync(system::Mode::TIMING, 20 * engine::PS_PER_MS);
    auto cf = partial_sync(system::Mode::FUNCTIONAL, 20 * engine::PS_PER_MS);
    system::System st(ct), sf(cf);
    auto rt = st.run();
    auto rf = sf.run();
    ASSERT_GT(stat(rt, "@iperf3/memory/stall_cycles"), 0);
    rf.mode = rt.mode; // the only field allowed to differ
    EXPECT_EQ(report::to_json_text(rt), report::to_json_text(rf));
}

TEST(E5Memory, TheSameSeedGivesByteIdenticalJson) {
    auto once = [] {
        auto cfg = partial_sync(system::Mode::TIMING, 20 * engine::PS_PER_MS);
        system::System sys(cfg);
        return report::to_json_text(sys.run());
    };
    EXPECT_EQ(once(), once());
}

} // namespace
} // namespace kdsim
