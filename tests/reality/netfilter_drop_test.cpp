// The receive-and-drop mechanism of the xdp-paper-drop reality case: an iptables DROP rule at
// PRE_ROUTING ([machine.netfilter]) fed by a pktgen flood. Expected values come from the
// profile's figures by hand: on a saturated core every packet costs the driver's receive, the
// DMA API's two syncs (mlx5e's recycled page: no new buffer, no mapping), the netfilter path and
// the free, plus a share of the NAPI poll; nothing is delivered, nothing is lost unaccounted.
#include "../experiments/helpers.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace kdsim {
namespace {

using testing::metric;
using testing::ROOT;

struct PerPacket {
    double cycles;
    double hz;
};

// The per-packet cost of the drop path on the case's profile, from its figures.
PerPacket by_hand(bool conntrack) {
    auto p = scenario::load_profile(ROOT / "data/profiles/x86/intel-broadwell-e5-1650v4.toml");
    const auto& n = *p.net;
    const auto& d = *p.dma;
    const auto& f = *p.netfilter;
    double c = static_cast<double>(n.driver_rx + n.netif_receive_skb) +                         // driver, demux
               static_cast<double>(*n.gro_receive) +                                            // GRO, a UDP frame
               static_cast<double>(2 * d.sync_call) + // page-reuse, coherent: for the CPU, then the refill's for the device
               static_cast<double>(f.ip_rcv_core + f.drop_rule + f.kfree_skb) +                  // ip_rcv .. NF_DROP
               // conntrack: the lookup misses, a new entry is made, and the free destroys it (a
               // dropped packet never reaches ipv4_confirm, so no packet finds an entry)
               (conntrack ? static_cast<double>(f.nf_conntrack_in + f.init_conntrack + f.nf_ct_destroy) : 0.0) +
               static_cast<double>(n.napi_poll) / 64.0;                                         // one poll per 64
    // eth_type_trans's first touch of the frame (session 18: the datapath on [memory]): the NIC's
    // write put its one line in the LLC (DDIO), so an L3 hit beyond an L1 hit; GRO's header read
    // then finds the line in L1 (the 60-byte frame ends inside it)
    const auto& m = *p.memory;
    EXPECT_TRUE(m.dma_write_allocate);
    c += static_cast<double>(m.levels.back().latency - m.levels.front().latency);
    return {c, static_cast<double>(p.clock_hz)};
}

TEST(NetfilterDrop, ASaturatedCoreDropsAtClockOverThePerPacketCostOfTheRawPath) {
    auto r = testing::run_scenario("scenarios/reality/xdp-paper-drop/raw.toml");
    PerPacket pp = by_hand(false);
    const double expect_mpps = pp.hz / pp.cycles / 1e6;
    // The rest (softirq rounds, masking calls around each poll) is well under 1 % per packet.
    EXPECT_NEAR(metric(r, "pktgen", "rx_mpps"), expect_mpps, 0.01 * expect_mpps);
}

TEST(NetfilterDrop, ConntrackCreatesAndDestroysAnUnconfirmedEntryForEveryDroppedPacket) {
    auto r = testing::run_scenario("scenarios/reality/xdp-paper-drop/conntrack.toml");
    PerPacket pp = by_hand(true);
    const double expect_mpps = pp.hz / pp.cycles / 1e6;
    EXPECT_NEAR(metric(r, "pktgen", "rx_mpps"), expect_mpps, 0.01 * expect_mpps);
    // every dropped packet made an entry; the one the CPU may still be working on when the run
    // stops has made its entry and not yet met the rule
    const double made_not_dropped = metric(r, "pktgen", "nf_ct_created") - metric(r, "pktgen", "nf_dropped");
    EXPECT_GE(made_not_dropped, 0);
    EXPECT_LE(made_not_dropped, 1);
}

TEST(NetfilterDrop, EveryReceivedPacketIsDroppedByTheRuleAndEverySentOneIsAccountedFor) {
    for (const char* v : {"raw", "conntrack"}) {
        auto r = testing::run_scenario(std::string("scenarios/reality/xdp-paper-drop/") + v + ".toml");
        const double sent = metric(r, "pktgen", "packets_sent");
        const double received = metric(r, "pktgen", "packets_received");
        const double ring = metric(r, "pktgen", "rx_dropped");
        const double txq = metric(r, "pktgen", "sender_tx_dropped");
        EXPECT_GT(ring, 0) << v << ": the generator must outpace the core";
        // Every packet taken off the ring is dropped by the rule, but for the one the single CPU
        // may still be working on when the run stops.
        const double in_stack = received - metric(r, "pktgen", "nf_dropped");
        EXPECT_GE(in_stack, 0) << v;
        EXPECT_LE(in_stack, 1) << v;
        // What is neither received nor dropped is in the 1024-descriptor ring or on the link
        // (its queue holds 1000 frames), at most.
        const double rest = sent - received - ring - txq;
        EXPECT_GE(rest, 0) << v;
        EXPECT_LE(rest, 1024 + 1000) << v;
        EXPECT_EQ(metric(r, "pktgen", "in_flight"), rest) << v;
    }
}

TEST(NetfilterDrop, ARuleWithoutTheProfilesFiguresIsRefusedAtItsTable) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("kdsim-nf-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::ifstream in(ROOT / "scenarios/reality/xdp-paper-drop/raw.toml");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    text.replace(text.find("x86/intel-broadwell-e5-1650v4"), 29, "x86/intel-icelake-server");
    std::ofstream(dir / "nf.toml") << text;
    scenario::LoadOptions lo;
    lo.root = ROOT;
    try {
        scenario::load_scenario(dir / "nf.toml", lo);
        ADD_FAILURE() << "expected an error";
    } catch (const scenario::InputError& e) {
        EXPECT_NE(std::string(e.what()).find(
                      "machine[0].netfilter: a netfilter rule needs the [netfilter] figures of profile x86/intel-icelake-server, which has none"),
                  std::string::npos)
            << e.what();
    }
    std::filesystem::remove_all(dir);
}

} // namespace
} // namespace kdsim
