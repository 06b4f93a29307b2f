// scenarios/virtio-offload (docs/gro-gso-tso.md): what each virtio-net offload feature changes in
// a TCP stream between the guest and its host, checked on the shipped scenarios: every byte
// delivered once, GSO skbs cross vhost whole only with the direction's TSO feature, the side that
// lacks it segments in software, and mergeable buffers hold a large skb in several buffers.
#include "helpers.h"

#include <gtest/gtest.h>

namespace kdsim {
namespace {

using namespace testing; // run_scenario, metric, stat (helpers.h)

results::RunResults run(const std::string& stem) {
    return testing::run_scenario("scenarios/virtio-offload/" + stem + ".toml");
}

constexpr const char* V = "host/vhost/guest/";

TEST(VirtioOffload, EveryRunDeliversEveryByteOnceAndResendsWhatTheTapDropped) {
    for (const char* s : {"g2h", "g2h-no-host-tso", "h2g", "h2g-big", "h2g-no-guest-tso"}) {
        auto r = run(s);
        EXPECT_FALSE(r.failed) << s;
        EXPECT_EQ(metric(r, "iperf3", "bytes_lost"), 0) << s;
        EXPECT_GE(metric(r, "iperf3", "retransmits"), stat(r, "host/netdev/tap0/tx_dropped")) << s;
    }
}

// With HOST_TSO4 the guest's segments cross as GSO skbs (the ACKs back are single frames); without
// it the guest's stack makes every segment and none crosses as a GSO skb.
TEST(VirtioOffload, HostTsoCarriesTheGuestsSegmentsInGsoSkbsElseTheGuestSegments) {
    auto on = run("g2h");
    const double segs = stat(on, std::string(V) + "tx_gso_segs");
    EXPECT_GT(stat(on, std::string(V) + "tx_gso_skbs"), 0);
    EXPECT_GT(segs / stat(on, std::string(V) + "tx_gso_skbs"), 2.0);
    EXPECT_EQ(stat(on, std::string(V) + "guest_sw_gso_segs"), 0);
    EXPECT_LE(segs, metric(on, "iperf3", "segments_sent"));
    auto off = run("g2h-no-host-tso");
    EXPECT_EQ(stat(off, std::string(V) + "tx_gso_skbs"), 0);
    EXPECT_GT(stat(off, std::string(V) + "guest_sw_gso_segs"), 0);
    EXPECT_LE(stat(off, std::string(V) + "guest_sw_gso_segs"), metric(off, "iperf3", "segments_sent"));
    EXPECT_GT(metric(on, "iperf3", "receiver_mbit_s"), metric(off, "iperf3", "receiver_mbit_s"));
}

// Mergeable buffers hold at most a page each (4,096 B), so a GSO skb of 45 segments (65,212 B of
// IP datagram) takes at least 16; big packets take one buffer per packet; without GUEST_TSO4 the
// host segments before the tap and each frame fits one buffer.
TEST(VirtioOffload, GuestTsoSkbsSpanMergeableBuffersOrOneBigBuffer) {
    auto mrg = run("h2g");
    EXPECT_GT(stat(mrg, std::string(V) + "rx_gso_skbs"), 0);
    EXPECT_GE(stat(mrg, std::string(V) + "rx_buffers_max"), 16);
    EXPECT_GT(stat(mrg, std::string(V) + "rx_buffers"), stat(mrg, std::string(V) + "rx_frames"));
    auto big = run("h2g-big");
    EXPECT_GT(stat(big, std::string(V) + "rx_gso_skbs"), 0);
    EXPECT_EQ(stat(big, std::string(V) + "rx_buffers_max"), 1);
    auto off = run("h2g-no-guest-tso");
    EXPECT_EQ(stat(off, std::string(V) + "rx_gso_skbs"), 0);
    EXPECT_GT(stat(off, std::string(V) + "host_sw_gso_segs"), 0);
    EXPECT_EQ(stat(off, std::string(V) + "rx_buffers_max"), 1);
}

} // namespace
} // namespace kdsim
