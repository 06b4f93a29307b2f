// The PCIe link's byte count and serialisation against the spec's arithmetic, worked by hand.
#include "devices/pcie.h"

#include <gtest/gtest.h>

using namespace kdsim;
using devices::PcieCosts;
using devices::PcieLink;

namespace {

PcieCosts gen2_x1_mps128() {
    PcieCosts c;
    c.transfer_rate = 5e9; // Gen2: 5 GT/s per lane
    c.lanes = 1;
    c.encoded_bits = 10; // 8b/10b
    c.data_bits = 8;
    c.max_payload = 128;
    c.tlp_overhead = 20; // STP 1 + sequence 2 + 3-DW header 12 + LCRC 4 + END 1
    c.dllp_bytes = 8;
    c.rx_descriptor_bytes = 16;
    c.rx_dllps_per_frame = 2;
    return c;
}

} // namespace

TEST(Pcie, Gen2X1DataRateIs5GTTimesEightTenthsIn500MBPerSecond) {
    PcieLink l(gen2_x1_mps128());
    EXPECT_DOUBLE_EQ(l.data_rate(), 500e6); // 5e9 x 8/10 bits / 8
    PcieCosts c = gen2_x1_mps128();
    c.lanes = 4;
    EXPECT_DOUBLE_EQ(PcieLink(c).data_rate(), 2000e6);
}

TEST(Pcie, AWriteIsSplitIntoMaxPayloadTlpsEachWithItsOverhead) {
    PcieLink l(gen2_x1_mps128());
    EXPECT_EQ(l.write_wire_bytes(128), 148u);          // one full TLP
    EXPECT_EQ(l.write_wire_bytes(129), 129u + 2 * 20); // a second TLP for 1 byte
    EXPECT_EQ(l.write_wire_bytes(16), 36u);            // a descriptor write-back
    EXPECT_EQ(l.write_wire_bytes(1514), 1514u + 12 * 20); // ceil(1514 / 128) = 12 TLPs
}

TEST(Pcie, AnMtuFrameCostsItsTlpsTheDescriptorAndTwoDllpsGivingAboutThreePointTwoGbitOfTcpPayload) {
    PcieLink l(gen2_x1_mps128());
    // 1514 + 240 (12 TLPs) + 36 (descriptor TLP) + 16 (2 DLLPs) = 1806 bytes on the wire
    EXPECT_EQ(l.rx_frame_wire_bytes(1514), 1806u);
    EXPECT_NEAR(l.rx_efficiency(1514), 1514.0 / 1806.0, 1e-12);
    // frames per second = 500e6 / 1806; TCP payload 1448 B each (1514 - 14 - 20 - 20 - 12 options)
    const double payload_bps = 500e6 / 1806.0 * 1448 * 8;
    EXPECT_NEAR(payload_bps / 1e9, 3.207, 0.001);
    // a larger MPS needs fewer TLPs: 256 B -> ceil(1514 / 256) = 6
    PcieCosts c = gen2_x1_mps128();
    c.max_payload = 256;
    EXPECT_EQ(PcieLink(c).rx_frame_wire_bytes(1514), 1514u + 6 * 20 + 36 + 16);
}

TEST(Pcie, PostsSerialiseInIssueOrderAtTheDataRate) {
    PcieLink l(gen2_x1_mps128());
    // 500 bytes take 1 us at 500 MB/s
    EXPECT_EQ(l.post(0, 500), engine::PS_PER_US);
    EXPECT_EQ(l.post(0, 500), 2 * engine::PS_PER_US); // queued behind the first
    EXPECT_EQ(l.post(10 * engine::PS_PER_US, 250), 10 * engine::PS_PER_US + engine::PS_PER_US / 2); // idle link
    EXPECT_EQ(l.wire_bytes(), 1250u);
    EXPECT_EQ(l.busy(), 2 * engine::PS_PER_US + engine::PS_PER_US / 2);
}

TEST(Pcie, InconsistentFiguresAreRefused) {
    PcieCosts c = gen2_x1_mps128();
    c.max_payload = 0;
    EXPECT_THROW(PcieLink{c}, std::invalid_argument);
    c = gen2_x1_mps128();
    c.encoded_bits = 4; // fewer symbols than data bits
    EXPECT_THROW(PcieLink{c}, std::invalid_argument);
}
