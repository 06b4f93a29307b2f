// The SoC port's serialisation: expected times by hand from bytes / rate.
#include "devices/dma_port.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace kdsim::devices {
namespace {

constexpr engine::Tick MS = 1'000'000'000; // ps

TEST(DmaPort, AnIdlePortTakesATransferAtOnceAndCarriesItAtItsRate) {
    DmaPort port(1'000'000); // 1 MB/s: 1000 bytes take 1 ms
    EXPECT_EQ(port.post(5 * MS, 1000), 6 * MS);
    EXPECT_EQ(port.bytes(), 1000u);
    EXPECT_EQ(port.busy(), MS);
}

TEST(DmaPort, TransfersIssuedWhileItIsBusyQueueBehindInIssueOrder) {
    DmaPort port(1'000'000);
    EXPECT_EQ(port.post(0, 1000), MS);          // a receive write: 0 -> 1 ms
    EXPECT_EQ(port.post(MS / 2, 500), 3 * MS / 2); // a transmit fetch issued at 0.5 ms waits: 1 -> 1.5 ms
    EXPECT_EQ(port.post(MS / 2, 2000), 7 * MS / 2); // then 1.5 -> 3.5 ms
    EXPECT_EQ(port.post(10 * MS, 1), 10 * MS + MS / 1000); // idle again: 1 byte = 1 us
    EXPECT_EQ(port.busy(), 3 * MS + MS / 2 + MS / 1000);
    EXPECT_EQ(port.bytes(), 3501u);
}

TEST(DmaPort, ATransferTimeIsRoundedUpToAPicosecond) {
    DmaPort port(3); // 1 byte = 333,333,333,333.3 ps
    EXPECT_EQ(port.post(0, 1), 333'333'333'334);
}

TEST(DmaPort, APortThatCarriesNothingIsRefused) { EXPECT_THROW(DmaPort(0), std::invalid_argument); }

} // namespace
} // namespace kdsim::devices
