// UDP streams (iperf3 -u): pacing, conservation and where losses happen, on the shipped
// scenarios in scenarios/udp. Expected counts are computed from the offered rate.
#include "helpers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace kdsim {
namespace {

using namespace testing; // ROOT, run_scenario, metric, stat, peer_of, cpu0 (helpers.h)

results::RunResults run(const std::string& stem) { return testing::run_scenario("scenarios/udp/" + stem + ".toml"); }

TEST(Udp, TheSenderPacesDatagramsAtTheOfferedRate) {
    // 200 Mbit/s of 1472-byte datagrams (MTU 1500 - 28) from 5 ms to 100 ms: datagram n is due at
    // n x 1472 x 8 / 200e6 s, so ceil(0.095 x 200e6 / 11776) = 1614 are sent.
    auto r = run("imx6qp-200m");
    EXPECT_EQ(metric(r, "iperf3", "datagrams_sent"), std::ceil(0.095 * 200e6 / (1472.0 * 8)));
    EXPECT_NEAR(metric(r, "iperf3", "sender_mbit_s"), 200, 0.5);
}

TEST(Udp, BelowCapacityEveryDatagramArrives) {
    for (const char* s : {"imx6qp-200m", "wg-g2h-400m"}) {
        auto r = run(s);
        EXPECT_FALSE(r.failed) << s;
        // at most the datagrams on the wire or in the receiver's queues at the end
        EXPECT_LE(metric(r, "iperf3", "datagrams_lost"), 2) << s;
        EXPECT_NEAR(metric(r, "iperf3", "receiver_mbit_s"), metric(r, "iperf3", "sender_mbit_s"),
                    0.01 * metric(r, "iperf3", "sender_mbit_s"))
            << s;
    }
}

TEST(Udp, AboveCapacityEveryLostDatagramIsCountedWhereItWasDropped) {
    // 9 KiB buffers synced whole keep the i.MX6 CPU-bound well below 950 Mbit/s: the rx ring
    // overflows. sent = received + drops by place + in flight (the 128-descriptor ring, a few
    // frames on the wire).
    auto r = run("imx6qp-9k-full-950m");
    const double sent = metric(r, "iperf3", "datagrams_sent");
    const double received = metric(r, "iperf3", "datagrams_received");
    const double drops = stat(r, "@iperf3/netdev/*/rx_dropped") + metric(r, "iperf3", "socket_rcvbuf_drops") +
                         stat(r, peer_of(r, "iperf3") + "/netdev/*/tx_dropped");
    EXPECT_GT(stat(r, "@iperf3/netdev/*/rx_dropped"), 0);
    EXPECT_GE(sent - received - drops, 0);
    EXPECT_LE(sent - received - drops, 128 + 4);
    EXPECT_LT(metric(r, "iperf3", "receiver_mbit_s"), 0.5 * 950);
}

TEST(Udp, LostDatagramsAreIperf3sSequenceGapsAndTheVerdictSaysSo) {
    // Rings and socket queues are FIFO: every datagram numbered below the highest one read
    // ("expected" = highest + 1) was read or dropped, so missing = the drops among those, at most
    // all drops; the drops it cannot see are among the sent - expected datagrams after it.
    auto r = run("imx6qp-9k-full-950m");
    const double drops = stat(r, "@iperf3/netdev/*/rx_dropped") + metric(r, "iperf3", "socket_rcvbuf_drops") +
                         stat(r, peer_of(r, "iperf3") + "/netdev/*/tx_dropped");
    const double missing = metric(r, "iperf3", "datagrams_missing");
    std::string lost;
    for (const auto& w : r.workloads)
        if (w.name == "iperf3") lost = w.data_lost;
    double expected = 0;
    ASSERT_EQ(std::sscanf(lost.c_str(), "%*f of %lf datagrams never read", &expected), 1) << lost;
    EXPECT_GT(missing, 0);
    EXPECT_LE(missing, drops);
    EXPECT_LE(drops - missing, metric(r, "iperf3", "datagrams_sent") - expected);
    EXPECT_FALSE(r.failed); // said in the verdict, not a failure: UDP loses by design
    for (const auto& w : run("imx6qp-200m").workloads) EXPECT_TRUE(w.data_lost.empty()) << w.data_lost;
}

TEST(Udp, WithoutRcvbufAUdpSocketKeepsRmemDefault) {
    // The same scenario with its `rcvbuf = "208 KiB"` line removed gives the same run: a UDP
    // socket that iperf3 does not size keeps net.core.rmem_default, 212,992 bytes.
    std::ifstream in(ROOT / "scenarios/udp/imx6qp-200m.toml");
    std::string text, line;
    while (std::getline(in, line))
        if (line.rfind("rcvbuf", 0) != 0) text += line + "\n";
    const std::filesystem::path f = std::filesystem::temp_directory_path() / "kdsim-udp-no-rcvbuf.toml";
    std::ofstream(f) << text;
    scenario::LoadOptions lo;
    lo.root = ROOT;
    system::ScenarioConfig cfg = scenario::load_scenario(f, lo);
    std::filesystem::remove(f);
    const results::RunResults without = system::System(cfg).run();
    const results::RunResults with = run("imx6qp-200m");
    EXPECT_EQ(metric(without, "iperf3", "datagrams_received"), metric(with, "iperf3", "datagrams_received"));
    EXPECT_EQ(metric(without, "iperf3", "socket_rcvbuf_drops"), 0);
    EXPECT_GT(metric(without, "iperf3", "datagrams_received"), 1600);
}

} // namespace
} // namespace kdsim
