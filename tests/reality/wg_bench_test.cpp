// The wg-bench reality case's mechanism: a host and a network namespace of one machine joined by a
// veth pair, WireGuard on both, one iperf3 stream from the host to the namespace. In functional
// mode every packet is really sealed by one end and opened by the other: both ends' tunnels
// authenticate (the data one way, the ACKs the other) and the veth pair conserves frames; the
// loader refuses a namespace with a key only a machine has, and a veth across two machines.
#include "../experiments/helpers.h"
#include "report/report.h"

#include <gtest/gtest.h>

#include <string>

namespace kdsim {
namespace {

using testing::metric;
using testing::ROOT;
using testing::stat;

results::RunResults run_functional(const std::string& rel) {
    scenario::LoadOptions lo;
    lo.mode_override = system::Mode::FUNCTIONAL;
    lo.assignments = {{"scenario.duration", "30 ms", "wg_bench_test"}};
    system::ScenarioConfig cfg = scenario::load_scenario(ROOT / rel, lo);
    system::System sys(cfg);
    return sys.run();
}

TEST(WgBench, BothTunnelEndsOnOneBoxAuthenticateEveryPacketAndTheVethPairConservesFrames) {
    auto r = run_functional("scenarios/reality/wg-bench-pi4/pi4-1500.toml");
    EXPECT_FALSE(r.failed) << (r.failures.empty() ? "" : r.failures.front());
    for (const char* m : {"pi4", "ns"}) {
        const std::string wg = std::string(m) + "/tunnel/wg0/";
        EXPECT_EQ(stat(r, wg + "auth_failures"), 0) << m;
        // each end decrypts what the other sent: data into the namespace, ACKs into the host
        EXPECT_GT(stat(r, wg + "decrypted"), 100) << m;
        // every outer packet the tunnel sent went to its veth: transmitted or dropped there, but
        // for those still in dev_queue_xmit when the run ends (at most one per CPU of the Pi's 4)
        const std::string dev = std::string(m) + (m == std::string("pi4") ? "/netdev/veth0/" : "/netdev/veth1/");
        const double in_xmit = stat(r, wg + "tx_sent") - (stat(r, dev + "tx_frames") + stat(r, dev + "tx_dropped"));
        EXPECT_GE(in_xmit, 0) << m;
        EXPECT_LE(in_xmit, 4) << m;
        // every frame the veth handed to its stack is a WireGuard packet of this tunnel
        EXPECT_EQ(stat(r, wg + "rx_packets"), stat(r, dev + "rx_frames")) << m;
    }
    // What one end transmitted the other received, but for what is still on a backlog at the end:
    // at most netdev_max_backlog + 1 queued and as many being spliced, per CPU.
    for (auto [tx, rx] : {std::pair{"pi4/netdev/veth0/tx_frames", "ns/netdev/veth1/rx_frames"},
                          std::pair{"ns/netdev/veth1/tx_frames", "pi4/netdev/veth0/rx_frames"}}) {
        const double in_flight = stat(r, tx) - stat(r, rx);
        EXPECT_GE(in_flight, 0) << tx;
        EXPECT_LE(in_flight, 4 * 2002) << tx;
    }
    EXPECT_EQ(stat(r, "pi4/*/softnet/dropped"), 0);
    EXPECT_GT(metric(r, "wg", "receiver_mbit_s"), 0);
}

// Two paced UDP streams over the case's tunnels, one each way, counted by hand: iperf3 -u sends
// datagram n at start + n x length x 8 / bitrate, so from 5 ms to a 30.05 ms end, 1000-byte
// datagrams at 80 Mbit/s (one per 100 us) are 251 and at 40 Mbit/s (one per 200 us) 126. Each is
// one WireGuard packet: sealed once by its sender's end, carried once by each veth end, opened
// once by the other end.
results::RunResults run_timing_30ms(const std::string& rel) {
    scenario::LoadOptions lo;
    lo.assignments = {{"scenario.duration", "30 ms", "wg_bench_test"}};
    system::ScenarioConfig cfg = scenario::load_scenario(ROOT / rel, lo);
    system::System sys(cfg);
    return sys.run();
}

TEST(WgBench, TheUnpinnedIperf3TasksMoveAndTheSameSeedGivesByteIdenticalJson) {
    // The case gives iperf3's client and server all 4 CPUs, as wg-bench pins neither (issue 14):
    // the server, which sleeps for data after every read, is placed on another CPU at least once
    // in 30 ms (its wake-ups come from NET_RX on busy CPUs), and two runs of one seed are the same
    // byte for byte.
    const auto a = run_timing_30ms("scenarios/reality/wg-bench-pi4/pi4-1500.toml");
    const auto b = run_timing_30ms("scenarios/reality/wg-bench-pi4/pi4-1500.toml");
    EXPECT_FALSE(a.failed) << (a.failures.empty() ? "" : a.failures.front());
    EXPECT_GT(metric(a, "wg", "server_migrations"), 0);
    EXPECT_EQ(report::to_json_text(a), report::to_json_text(b));
}

TEST(WgBench, PacedDatagramsEachWayAreEncryptedCarriedAndAuthenticatedOnceEach) {
    scenario::LoadOptions lo;
    lo.mode_override = system::Mode::FUNCTIONAL;
    lo.text = R"([scenario]
name = "udp-both-ways"
duration = "30.05 ms"
[[machine]]
name = "pi4"
profile = "arm64/cortex-a72"
cpus = 4
tunnel = { kind = "wireguard", aead = "chacha20-poly1305", peer = "ns" }
[[machine.workload]]
kind = "iperf3"
name = "back"
peer = "ns"
sender_cpu = 1
protocol = "udp"
bitrate = "40 Mbit/s"
length = 1000
rcvbuf = "208 KiB"
[[machine]]
name = "ns"
netns = "pi4"
tunnel = { kind = "wireguard", aead = "chacha20-poly1305", peer = "pi4" }
[[machine.workload]]
kind = "iperf3"
name = "out"
cpu = 3
peer = "pi4"
sender_cpu = 2
protocol = "udp"
bitrate = "80 Mbit/s"
length = 1000
rcvbuf = "208 KiB"
[[link]]
kind = "veth"
ends = ["pi4", "ns"]
)";
    system::ScenarioConfig cfg = scenario::load_scenario(ROOT / "scenarios/reality/wg-bench-pi4/inline.toml", lo);
    system::System sys(cfg);
    auto r = sys.run();
    EXPECT_FALSE(r.failed) << (r.failures.empty() ? "" : r.failures.front());
    EXPECT_EQ(metric(r, "out", "datagrams_sent"), 251);
    EXPECT_EQ(metric(r, "out", "datagrams_received"), 251);
    EXPECT_EQ(metric(r, "back", "datagrams_sent"), 126);
    EXPECT_EQ(metric(r, "back", "datagrams_received"), 126);
    // pi4 -> ns: 251 packets
    EXPECT_EQ(stat(r, "pi4/tunnel/wg0/encrypted"), 251);
    EXPECT_EQ(stat(r, "pi4/netdev/veth0/tx_frames"), 251);
    EXPECT_EQ(stat(r, "ns/netdev/veth1/rx_frames"), 251);
    EXPECT_EQ(stat(r, "ns/tunnel/wg0/decrypted"), 251);
    // ns -> pi4: 126 packets
    EXPECT_EQ(stat(r, "ns/tunnel/wg0/encrypted"), 126);
    EXPECT_EQ(stat(r, "ns/netdev/veth1/tx_frames"), 126);
    EXPECT_EQ(stat(r, "pi4/netdev/veth0/rx_frames"), 126);
    EXPECT_EQ(stat(r, "pi4/tunnel/wg0/decrypted"), 126);
    EXPECT_EQ(stat(r, "*/tunnel/wg0/auth_failures"), 0);
}

// Loading `text` fails with a diagnostic that contains `message`.
void expect_load_error(const std::string& text, const std::string& message) {
    scenario::LoadOptions lo;
    lo.root = ROOT;
    lo.text = text;
    std::string e;
    try {
        scenario::load_scenario(ROOT / "scenarios/reality/wg-bench-pi4/inline.toml", lo);
    } catch (const scenario::InputError& x) {
        e = x.what();
    }
    EXPECT_NE(e.find(message), std::string::npos) << e;
}

// A scenario of machine `box` (profile `profile`), then `rest`.
std::string with_machine(const std::string& box, const std::string& profile, const std::string& rest) {
    return "[scenario]\nname = \"t\"\n[[machine]]\nname = \"" + box + "\"\nprofile = \"" + profile + "\"\ncpus = 4\n" + rest;
}

TEST(WgBench, ANamespaceTakesItsMachinesCpusAndSaysSoAtAKeyOnlyAMachineHas) {
    expect_load_error(with_machine("pi4", "arm64/cortex-a72",
                                   "[[machine]]\nname = \"ns\"\nnetns = \"pi4\"\ncpus = 2\n"
                                   "[[link]]\nkind = \"veth\"\nends = [\"pi4\", \"ns\"]\n"),
                      "machine[1].cpus: a network namespace runs on the CPUs of machine 'pi4' with its profile and "
                      "kernel: no cpus here");
}

TEST(WgBench, AVethJoinsNamespacesOfOneMachineOnly) {
    expect_load_error(with_machine("pi4", "arm64/cortex-a72",
                                   "[[machine]]\nname = \"other\"\nprofile = \"arm64/cortex-a72\"\ncpus = 4\n"
                                   "[[link]]\nkind = \"veth\"\nends = [\"pi4\", \"other\"]\n"),
                      "link[0].ends: a veth pair joins two network namespaces of one machine; 'pi4' runs on 'pi4' "
                      "and 'other' on 'other'");
}

TEST(WgBench, AVethNeedsTheProfilesVethFigures) {
    expect_load_error(with_machine("pc", "x86/intel-icelake-server",
                                   "[[machine]]\nname = \"ns\"\nnetns = \"pc\"\n"
                                   "[[link]]\nkind = \"veth\"\nends = [\"pc\", \"ns\"]\n"),
                      "a veth link needs net.veth_xmit and net.process_backlog of profile x86/intel-icelake-server, "
                      "which lacks veth_xmit");
}

} // namespace
} // namespace kdsim
