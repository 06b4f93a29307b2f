// The link's loss pattern (net/link_drops.h): which TCP data frames it discards.
#include "net/link_drops.h"

#include <gtest/gtest.h>

namespace kdsim::net {
namespace {

// The index-th full segment of a flow: bytes [index x 1448, (index + 1) x 1448).
Packet segment(std::uint64_t index, std::uint32_t flow = 0) {
    return transport_packet(FrameKind::TCP_DATA, 1448, 52, index * 1448, flow);
}

TEST(SegmentDrops, LosesTheListedSegmentsOnTheirFirstCrossingOnly) {
    SegmentDrops d({3, 5}, 0);
    std::vector<std::uint64_t> lost;
    for (std::uint64_t i = 0; i < 8; ++i)
        if (d.lost(segment(i))) lost.push_back(i);
    EXPECT_EQ(lost, (std::vector<std::uint64_t>{3, 5}));
    EXPECT_FALSE(d.lost(segment(3))); // the retransmissions get through
    EXPECT_FALSE(d.lost(segment(5)));
    EXPECT_EQ(d.dropped(), 2u);
}

TEST(SegmentDrops, EveryKthSegmentIsIndexKMinusOneThen2KMinusOne) {
    SegmentDrops d({}, 4);
    std::vector<std::uint64_t> lost;
    for (std::uint64_t i = 0; i < 12; ++i)
        if (d.lost(segment(i))) lost.push_back(i);
    EXPECT_EQ(lost, (std::vector<std::uint64_t>{3, 7, 11}));
}

TEST(SegmentDrops, CountsEachFlowApartAndNeverDropsAcks) {
    SegmentDrops d({1}, 0);
    EXPECT_FALSE(d.lost(segment(0, 0)));
    EXPECT_TRUE(d.lost(segment(1, 0)));
    EXPECT_TRUE(d.lost(segment(1, 7))); // flow 7's own segment 1
    Packet ack{};
    ack.kind = FrameKind::TCP_ACK;
    ack.ack = 1448;
    EXPECT_FALSE(d.lost(ack));
    EXPECT_EQ(d.dropped(), 2u);
}

} // namespace
} // namespace kdsim::net
