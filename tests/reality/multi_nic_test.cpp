// Several NICs on one machine (the cm4-multi-nic-clock case's mechanism), counted by hand: each
// Ethernet link gives the machine its own device with its own ring, NAPI instance and interrupt;
// each interrupt and its NET_RX work land on the CPU [machine.nic] irq_cpus names; a flow's
// replies leave by the device its frames came in on; the devices listed in pcie share one PCIe
// link whose upstream bytes are the spec's TLP arithmetic; and every frame is accounted for.
#include "../experiments/helpers.h"

#include <gtest/gtest.h>

#include <string>

namespace kdsim {
namespace {

using testing::metric;
using testing::ROOT;
using testing::stat;

// `n` clients, each on its own link to `rx`, each sending to its own iperf3 server there.
std::string scenario_text(int n, const std::string& stream, const std::string& nic_extra, const std::string& overrides = "") {
    std::string t = R"([scenario]
name = "multi-nic"
duration = "30.05 ms"
[[machine]]
name = "rx"
profile = "arm64/cortex-a72"
cpus = 4
)" + overrides + R"(
[machine.nic]
rx_strategy = "partial-sync"
rx_buffer = "2 KiB"
rx_ring = 256
)" + nic_extra + "\n";
    for (int k = 0; k < n; ++k)
        t += "[[machine.workload]]\nkind = \"iperf3\"\nname = \"s" + std::to_string(k) + "\"\ncpu = " + std::to_string(1 + k % 3) +
             "\npeer = \"c" + std::to_string(k) + "\"\n" + stream + "\n";
    for (int k = 0; k < n; ++k)
        t += "[[machine]]\nname = \"c" + std::to_string(k) + "\"\nprofile = \"x86/intel-icelake-server\"\ncpus = 1\n";
    for (int k = 0; k < n; ++k)
        t += "[[link]]\nends = [\"c" + std::to_string(k) + "\", \"rx\"]\nrate = \"1 Gbit/s\"\nlatency = \"1 us\"\n";
    return t;
}

struct Outcome {
    system::ScenarioConfig cfg;
    results::RunResults r;
};

Outcome run_text(const std::string& text) {
    scenario::LoadOptions lo;
    lo.text = text;
    Outcome out;
    out.cfg = scenario::load_scenario(ROOT / "tests/reality/inline.toml", lo);
    system::System sys(out.cfg);
    out.r = sys.run();
    return out;
}

const std::string UDP_40M = "protocol = \"udp\"\nbitrate = \"40 Mbit/s\"\nlength = 1000\nrcvbuf = \"208 KiB\"\nsender_cpu = 0";

// iperf3 -u sends datagram i at 5 ms + i x 1000 x 8 / 40e6 = 5 ms + i x 200 us: i = 0..125 by
// 30.05 ms, 126 datagrams per stream; each is one frame of 1000 + 8 + 20 + 14 = 1042 bytes.
TEST(MultiNic, ThreeNicsEachCarryTheirPeersDatagramsAndTheirIrqAndNetRxRunWhereTheAffinitySays) {
    const Outcome run = run_text(scenario_text(3, UDP_40M, "irq_cpus = [0, 2, 2]\npcie = [\"eth1\", \"eth2\"]\nrx_fifo = \"32 KiB\""));
    const auto& r = run.r;
    EXPECT_FALSE(r.failed) << (r.failures.empty() ? "" : r.failures.front());
    for (int k = 0; k < 3; ++k) {
        const std::string s = "s" + std::to_string(k), dev = "rx/netdev/eth" + std::to_string(k) + "/";
        EXPECT_EQ(metric(r, s, "datagrams_sent"), 126) << s;
        EXPECT_EQ(metric(r, s, "datagrams_received"), 126) << s;
        EXPECT_EQ(stat(r, "c" + std::to_string(k) + "/netdev/eth0/tx_frames"), 126) << s;
        EXPECT_EQ(stat(r, dev + "rx_frames"), 126) << s; // each peer's frames on its own device
        EXPECT_EQ(stat(r, dev + "rx_dropped"), 0) << s;
        EXPECT_GT(stat(r, dev + "irqs"), 0) << s;
    }
    // the rx interrupt handler's cycles (driver, in hardirq) are on CPU 0 for eth0, on CPU 2 for
    // eth1 and eth2, nowhere else; NAPI polls each frame on its device's CPU. Beyond the handler's
    // figure per interrupt each pays its code's instruction fetch stall: at most the machine's
    // whole L1I stall (the A72's [memory.l1i]).
    const std::uint64_t per_irq = run.cfg.machines[0].profile.net->driver_rx_irq;
    auto irq_cycles = [&](int cpu) {
        const auto& c = r.machines.at(0).cpus.at(static_cast<std::size_t>(cpu)).cycles;
        auto ctx = c.find("hardirq");
        if (ctx == c.end()) return std::uint64_t{0};
        auto d = ctx->second.find("driver");
        return d == ctx->second.end() ? std::uint64_t{0} : static_cast<std::uint64_t>(d->second);
    };
    const auto l1i_stall = static_cast<std::uint64_t>(stat(r, "rx/memory/l1i/stall_cycles"));
    const auto on0 = static_cast<std::uint64_t>(stat(r, "rx/netdev/eth0/irqs")) * per_irq;
    const auto on2 = static_cast<std::uint64_t>(stat(r, "rx/netdev/eth1/irqs") + stat(r, "rx/netdev/eth2/irqs")) * per_irq;
    EXPECT_GE(irq_cycles(0), on0);
    EXPECT_LE(irq_cycles(0), on0 + l1i_stall);
    EXPECT_GE(irq_cycles(2), on2);
    EXPECT_LE(irq_cycles(2), on2 + l1i_stall);
    EXPECT_EQ(irq_cycles(1), 0u);
    EXPECT_EQ(irq_cycles(3), 0u);
    EXPECT_EQ(stat(r, "rx/cpu0/softnet/processed"), 126);
    EXPECT_EQ(stat(r, "rx/cpu2/softnet/processed"), 252);
    EXPECT_EQ(stat(r, "rx/cpu1/softnet/processed"), 0);
    EXPECT_EQ(stat(r, "rx/cpu3/softnet/processed"), 0);
    // eth1 and eth2 are behind the PCIe link: per frame ceil(1042 / MPS) TLPs, the descriptor's
    // TLP and the DLLPs; eth0 (the GENET-like one) is not
    const devices::PcieCosts& p = *run.cfg.machines[0].profile.pcie;
    const std::uint64_t tlps = (1042 + p.max_payload - 1) / p.max_payload;
    const double per_frame = 1042.0 + static_cast<double>(tlps * p.tlp_overhead) +
                             static_cast<double>(p.rx_descriptor_bytes + p.tlp_overhead) +
                             std::round(p.rx_dllps_per_frame * static_cast<double>(p.dllp_bytes));
    EXPECT_EQ(stat(r, "rx/pcie/wire_bytes"), 252 * per_frame);
    EXPECT_EQ(stat(r, "rx/netdev/eth1/rx_fifo_dropped"), 0);
}

// Without irq_cpus every NIC's interrupt is on CPU 0 (no irqbalance): all NET_RX work is there.
TEST(MultiNic, WithoutAnAffinityEveryNicsInterruptAndNetRxRunOnCpu0) {
    const Outcome run = run_text(scenario_text(3, UDP_40M, ""));
    EXPECT_EQ(stat(run.r, "rx/cpu0/softnet/processed"), 378);
    for (int c = 1; c < 4; ++c) EXPECT_EQ(stat(run.r, "rx/cpu" + std::to_string(c) + "/softnet/processed"), 0) << c;
}

// TCP: each server's ACKs leave by the device its stream came in on, so each client gets the
// ACKs of its own stream only, and every one of them.
TEST(MultiNic, EachStreamsAcksLeaveByTheDeviceItsDataCameInOn) {
    const Outcome run = run_text(scenario_text(3, "sender_cpu = 0", ""));
    const auto& r = run.r;
    EXPECT_FALSE(r.failed) << (r.failures.empty() ? "" : r.failures.front());
    for (int k = 0; k < 3; ++k) {
        const std::string c = "c" + std::to_string(k), dev = "rx/netdev/eth" + std::to_string(k) + "/";
        EXPECT_GT(metric(r, "s" + std::to_string(k), "receiver_mbit_s"), 100) << c;
        // what rx sent on eth_k reached c_k, but for the frames still on the 1 us link
        const double acks = stat(r, dev + "tx_frames"), got = stat(r, c + "/netdev/eth0/rx_frames");
        EXPECT_GT(acks, 100) << c;
        EXPECT_LE(got, acks) << c;
        EXPECT_GE(got, acks - 2) << c;
    }
}

// A PCIe link slower than the streams: the devices' FIFOs overflow, and every datagram is sent,
// received, dropped in a FIFO or ring, or still on its way (in a FIFO or on the wire) at the end.
TEST(MultiNic, ASlowPcieLinkDropsInTheDeviceFifosAndEveryFrameIsAccountedFor) {
    const Outcome run = run_text(scenario_text(2, "protocol = \"udp\"\nbitrate = \"200 Mbit/s\"\nlength = 1000\nrcvbuf = \"4 MiB\"\nsender_cpu = 0",
                                           "pcie = [\"eth0\", \"eth1\"]\nrx_fifo = \"16 KiB\"",
                                           "[machine.overrides]\n\"pcie.transfer_rate\" = 2.5e8\n"));
    const auto& r = run.r;
    // Each stream sends a datagram every 1000 x 8 / 200e6 = 40 us from 5 ms: 627 by 30.05 ms. The
    // link carries 2.5e8 x 8/10 / 8 = 25 MB/s, 1,274 bytes per frame (1042 + 9 TLPs x 20 + 36 + 16):
    // 19,623 frames/s, so about 25 ms x 19,623 = 490 of the 1,254 frames cross it by the end.
    EXPECT_EQ(stat(r, "c0/netdev/eth0/tx_frames") + stat(r, "c1/netdev/eth0/tx_frames"), 1254);
    const double through = stat(r, "rx/netdev/eth0/rx_frames") + stat(r, "rx/netdev/eth1/rx_frames");
    EXPECT_GE(through, 480);
    EXPECT_LE(through, 491);
    const double fifo = stat(r, "rx/netdev/eth0/rx_fifo_dropped") + stat(r, "rx/netdev/eth1/rx_fifo_dropped");
    EXPECT_GE(fifo, 1254 - 491 - 2 * (15 + 3));
    EXPECT_LE(fifo, 1254 - 480);
    for (int k = 0; k < 2; ++k) {
        const std::string dev = "rx/netdev/eth" + std::to_string(k) + "/";
        const double sent = stat(r, "c" + std::to_string(k) + "/netdev/eth0/tx_frames");
        const double accounted = stat(r, dev + "rx_frames") + stat(r, dev + "rx_dropped");
        // in flight at the end: a FIFO of 16 KiB holds at most 15 frames of 1042 bytes, the wire a few
        EXPECT_GE(sent - accounted, 0) << k;
        EXPECT_LE(sent - accounted, 15 + 3) << k;
    }
}

// The error text of loading `text`, or "loaded".
std::string load_error(const std::string& text) {
    scenario::LoadOptions lo;
    lo.text = text;
    try {
        scenario::load_scenario(ROOT / "tests/reality/inline.toml", lo);
    } catch (const scenario::InputError& e) {
        return e.what();
    }
    return "loaded";
}

// The loader: a pcie device the machine does not have, irq_cpus of a CPU it does not have.
TEST(MultiNic, TheLoaderRefusesAPcieDeviceBeyondTheLinksAndAnIrqCpuBeyondTheCpus) {
    const std::string pcie = load_error(scenario_text(2, UDP_40M, "pcie = [\"eth2\"]\nrx_fifo = \"32 KiB\""));
    EXPECT_NE(pcie.find("machine[0].nic.pcie[0]"), std::string::npos) << pcie;
    EXPECT_NE(pcie.find("eth0..eth1"), std::string::npos) << pcie;
    const std::string cpu = load_error(scenario_text(2, UDP_40M, "irq_cpus = [0, 4]"));
    EXPECT_NE(cpu.find("machine[0].nic.irq_cpus[1]"), std::string::npos) << cpu;
}

// [machine.nic.eth0] gives one NIC its own rx strategy and tail batch: here eth0 recycles its
// pages (igb's page reuse: a sync for the CPU and one for the device per frame, no map or unmap)
// and writes its tail after every descriptor; eth1 keeps the machine's partial-sync (a sync for
// the CPU, an unmap and a new buffer's map per frame) and the default batch of 16. The counts by
// hand: maps = both rings' 256 at open + one per eth1 frame; unmaps = eth1's frames; syncs for the
// device = eth0's frames; syncs for the CPU = both devices' frames.
TEST(MultiNic, ANicsOwnTableGivesItItsRxStrategyAndTailBatchAndTheOthersKeepTheMachines) {
    const Outcome run = run_text(scenario_text(2, UDP_40M, "[machine.nic.eth0]\nrx_strategy = \"page-reuse\"\nrx_tail_batch = 1"));
    const auto& r = run.r;
    ASSERT_FALSE(r.failed) << (r.failures.empty() ? "" : r.failures.front());
    const double f0 = stat(r, "rx/netdev/eth0/rx_frames"), f1 = stat(r, "rx/netdev/eth1/rx_frames");
    ASSERT_EQ(f0, 126);
    ASSERT_EQ(f1, 126);
    EXPECT_EQ(stat(r, "rx/dma/maps"), 2 * 256 + f1);
    EXPECT_EQ(stat(r, "rx/dma/unmaps"), f1);
    EXPECT_EQ(stat(r, "rx/dma/syncs_for_device"), f0);
    EXPECT_EQ(stat(r, "rx/dma/syncs_for_cpu"), f0 + f1);
    EXPECT_EQ(stat(r, "rx/netdev/eth0/rx_tail_writes"), f0); // one per descriptor
    // eth1: one write per 16 descriptors and one per poll for the rest, at most
    EXPECT_LE(stat(r, "rx/netdev/eth1/rx_tail_writes"), f1 / 16 + stat(r, "rx/netdev/eth1/polls"));
}

TEST(MultiNic, TheLoaderRefusesANicsOwnTableBeyondTheLinksAndAKeyItDoesNotTake) {
    const std::string beyond = load_error(scenario_text(2, UDP_40M, "[machine.nic.eth2]\nrx_tail_batch = 1"));
    EXPECT_NE(beyond.find("machine[0].nic.eth2"), std::string::npos) << beyond;
    EXPECT_NE(beyond.find("eth0..eth1"), std::string::npos) << beyond;
    const std::string key = load_error(scenario_text(2, UDP_40M, "[machine.nic.eth1]\nrx_ring = 64"));
    EXPECT_NE(key.find("unknown key 'rx_ring' in [machine.nic.eth1]"), std::string::npos) << key;
}

} // namespace
} // namespace kdsim
