// Many UDP flows (udp_flows, scenarios/scale): datagram counts worked out from flows, interval,
// count and duration; every datagram accounted for (received, or dropped at a named place, or in
// flight at the end); fairness across flows; determinism; configurations the model refuses.
#include "helpers.h"

#include "report/report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>

namespace kdsim {
namespace {

using namespace testing; // ROOT, run_scenario, metric, stat, peer_of, cpu0 (helpers.h)

const char* const W = "clients";

// Runs a scenario written to a temporary file (profiles from the repository).
results::RunResults run_text(const std::string& name, const std::string& toml) {
    const std::filesystem::path f = std::filesystem::path(::testing::TempDir()) / (name + ".toml");
    std::ofstream(f) << toml;
    scenario::LoadOptions lo;
    lo.root = testing::ROOT;
    system::ScenarioConfig cfg = scenario::load_scenario(f, lo);
    system::System sys(cfg);
    return sys.run();
}

// A server receiving `workload` (a [[machine.workload]] body) from a one-CPU x86 client machine.
std::string two_machines(const std::string& scenario, const std::string& server_profile, int server_cpus,
                         const std::string& workload, const std::string& rate = "10 Gbit/s") {
    return "[scenario]\nname = \"t\"\nseed = 5\n" + scenario + "\n[[machine]]\nname = \"server\"\nprofile = \"" +
           server_profile + "\"\ncpus = " + std::to_string(server_cpus) +
           "\n[[machine.workload]]\nkind = \"udp_flows\"\nname = \"clients\"\npeer = \"clients\"\n" + workload +
           "\n[[machine]]\nname = \"clients\"\nprofile = \"x86/intel-icelake-server\"\ncpus = 1\n[[link]]\nends = "
           "[\"clients\", \"server\"]\nrate = \"" +
           rate + "\"\n";
}

double drops(const results::RunResults& r) {
    return metric(r, W, "socket_rcvbuf_drops") + stat(r, "server/netdev/eth0/rx_dropped") + stat(r, "clients/netdev/eth0/tx_dropped");
}

TEST(UdpFlows, EveryFlowSendsCountDatagramsAndAllArriveBelowCapacity) {
    // 10^4 flows, count = 2, interval 1 s from 1 ms: datagram (r, flow) is due at 1 ms + r s +
    // phase, phase in [0, 1 s), so both rounds fall before 2.001 s < duration 2.011 s:
    // 2 x 10,000 = 20,000 datagrams. At 10^4 datagrams/s the x86 server keeps up: all arrive,
    // each flow twice, and the 10 ms after the last send drain every queue.
    auto r = testing::run_scenario("scenarios/scale/ten-thousand-flows.toml");
    EXPECT_FALSE(r.failed);
    EXPECT_EQ(metric(r, W, "flows"), 10'000);
    EXPECT_EQ(metric(r, W, "datagrams_sent"), 20'000);
    EXPECT_EQ(metric(r, W, "flow_sent_min"), 2);
    EXPECT_EQ(metric(r, W, "flow_sent_max"), 2);
    EXPECT_EQ(metric(r, W, "datagrams_received"), 20'000);
    EXPECT_EQ(metric(r, W, "datagrams_read"), 20'000);
    EXPECT_EQ(drops(r), 0);
    EXPECT_EQ(metric(r, W, "datagrams_in_flight"), 0);
    EXPECT_EQ(metric(r, W, "flow_received_min"), 2);
    EXPECT_EQ(metric(r, W, "flow_received_max"), 2);
    EXPECT_EQ(metric(r, W, "flows_without_datagram"), 0);
}

TEST(UdpFlows, AMillionFlowsAreEachServedTwice) {
    // scenarios/scale/million-flows.toml: 10^6 flows x count 2 = 2,000,000 datagrams, all due
    // before 2.001 s; 10^6 datagrams/s is within what the server's two CPUs do (no drops), and
    // the last 10 ms drain the queues.
    auto r = testing::run_scenario("scenarios/scale/million-flows.toml");
    EXPECT_FALSE(r.failed);
    EXPECT_EQ(metric(r, W, "flows"), 1'000'000);
    EXPECT_EQ(metric(r, W, "datagrams_sent"), 2'000'000);
    EXPECT_EQ(metric(r, W, "datagrams_received"), 2'000'000);
    EXPECT_EQ(metric(r, W, "datagrams_read"), 2'000'000);
    EXPECT_EQ(drops(r), 0);
    EXPECT_EQ(metric(r, W, "flow_received_min"), 2);
    EXPECT_EQ(metric(r, W, "flow_received_max"), 2);
}

TEST(UdpFlows, WithoutCountTheFlowsSendUntilTheRunEnds) {
    // count = 0: every datagram due before the end is passed to sendto(). 1,000 flows, interval 10 ms, start
    // 1 ms, duration 31 ms = start + 3 intervals: round r is due in [1 + 10 r, 11 + 10 r) ms, so
    // rounds 0, 1, 2 are sent and round 3 (from 31 ms) is not: 3,000 datagrams, 3 per flow. With no
    // timer slack: with the default 50 us a datagram due in the last 50 us may still wait at the end.
    auto r = run_text("until-end",
                      two_machines("duration = \"31 ms\"", "x86/intel-icelake-server", 2,
                                   "cpu = 1\nflows = 1000\ninterval = \"10 ms\"\nstart = \"1 ms\"\ntimer_slack = \"0 us\""));
    EXPECT_EQ(metric(r, W, "datagrams_sent"), 3'000);
    EXPECT_EQ(metric(r, W, "flow_sent_min"), 3);
    EXPECT_EQ(metric(r, W, "flow_sent_max"), 3);
    // the last datagrams (due just before 31 ms) may still be in the client's kernel, on the
    // wire or in a queue
    EXPECT_EQ(metric(r, W, "datagrams_in_flight"),
              metric(r, W, "datagrams_sent") - metric(r, W, "datagrams_received") - drops(r));
    EXPECT_GE(metric(r, W, "datagrams_in_flight"), 0);
    EXPECT_LE(metric(r, W, "datagrams_in_flight"), 5);
    EXPECT_EQ(drops(r), 0);
}

TEST(UdpFlows, TheSendersEpollWaitEndsItsTimerSlackLateWhenNoOtherTimerComesFirst) {
    // One flow, one datagram: the sender sleeps in epoll_wait until it is due. Its timeout is under
    // 50 ms, so select_estimate_accuracy gives the task's timer_slack: the wake-up comes at the hard
    // expiry, due + slack, and the datagram leaves that late plus the wake-up path (a few us on this
    // x86 profile); with no slack only the wake-up path is left. The datagram is due in [1.3, 1.4) ms
    // (start + a phase under the 100 us interval), so no tick (every 1 ms at most) falls between
    // due and due + 200 us to end the sleep earlier.
    const auto lag_us = [](const char* slack) {
        auto r = run_text(std::string("slack-") + slack,
                          two_machines("duration = \"20 ms\"", "x86/intel-icelake-server", 2,
                                       fmt::format("cpu = 1\nflows = 1\ncount = 1\ninterval = \"100 us\"\n"
                                                   "start = \"1.3 ms\"\ntimer_slack = \"{}\"",
                                                   slack)));
        return metric(r, W, "sender_max_lag_us");
    };
    const double none = lag_us("0 us"), dflt = lag_us("50 us"), big = lag_us("200 us");
    EXPECT_LT(none, 5.0);
    EXPECT_GE(dflt, 50.0);
    EXPECT_LT(dflt, 55.0);
    EXPECT_NEAR(big - dflt, 150.0, 1e-6); // the same wake-up path, 150 us later
}

TEST(UdpFlows, AboveCapacityEveryDatagramIsReceivedOrDroppedWhereItWasDropped) {
    // 4 flows of a datagram every 2 us each (2 M/s offered, 4,000 datagrams) into a one-CPU
    // i.MX6 whose NET_RX cannot keep up: the 128-descriptor rx ring overflows, and the reader,
    // sharing the CPU with NET_RX, rarely runs, so each 128-byte socket buffer (two datagrams)
    // overflows too. The client sends every datagram (late): all 4,000. After the sends end the
    // queues drain well before 20 ms: sent = received + ring drops + socket drops exactly.
    auto r = run_text("drops", two_machines("duration = \"20 ms\"", "arm/cortex-a9-imx6qp", 1,
                                            "flows = 4\ninterval = \"2 us\"\ncount = 1000\nrcvbuf = \"128 B\"",
                                            "1 Gbit/s"));
    EXPECT_FALSE(r.failed);
    EXPECT_EQ(metric(r, W, "datagrams_sent"), 4'000);
    EXPECT_GT(stat(r, "server/netdev/eth0/rx_dropped"), 0);
    EXPECT_GT(metric(r, W, "socket_rcvbuf_drops"), 0);
    EXPECT_EQ(metric(r, W, "datagrams_in_flight"), 0);
    EXPECT_EQ(metric(r, W, "datagrams_sent"), metric(r, W, "datagrams_received") + drops(r));
    EXPECT_EQ(metric(r, W, "datagrams_read"), metric(r, W, "datagrams_received"));
    EXPECT_LE(metric(r, W, "flow_received_min"), metric(r, W, "flow_received_max"));
    EXPECT_LE(4 * metric(r, W, "flow_received_min"), metric(r, W, "datagrams_received"));
    EXPECT_GE(4 * metric(r, W, "flow_received_max"), metric(r, W, "datagrams_received"));
}

TEST(UdpFlows, TheSameSeedGivesByteIdenticalJsonAnotherSeedOtherPhasesSameCounts) {
    const std::string s = "scenarios/scale/ten-thousand-flows.toml";
    auto a = testing::run_scenario(s, 1), b = testing::run_scenario(s, 1), c = testing::run_scenario(s, 2);
    EXPECT_EQ(report::to_json_text(a), report::to_json_text(b));
    // other phases: other arrival times, so other batching on the receiver
    EXPECT_NE(report::to_json_text(a), report::to_json_text(c));
    EXPECT_EQ(metric(c, W, "datagrams_sent"), 20'000);
    EXPECT_EQ(metric(c, W, "datagrams_received"), 20'000);
}

TEST(UdpFlows, ADatagramLargerThanTheRouteMtuIsRefusedByTheLoaderAtItsLength) {
    // 1473 + 28 bytes of IPv4 and UDP headers > 1500: no IP fragmentation is modelled.
    try {
        run_text("too-long", two_machines("duration = \"1 ms\"", "x86/intel-icelake-server", 1,
                                          "flows = 1\ninterval = \"1 ms\"\nlength = 1473"));
        FAIL() << "accepted";
    } catch (const scenario::InputError& e) {
        ASSERT_EQ(e.diagnostics.size(), 1u) << e.what();
        EXPECT_EQ(e.diagnostics[0].key, "machine[0].workload[0].length") << e.what();
        EXPECT_NE(e.diagnostics[0].message.find("MTU 1500"), std::string::npos) << e.what();
        EXPECT_NE(e.diagnostics[0].message.find("found 1473 bytes"), std::string::npos) << e.what();
    }
}

} // namespace
} // namespace kdsim
