// The link's sender queue (net/link.h): what it holds, and what leaves it.
#include "net/link.h"

#include "net/napi.h"
#include "net/nic.h"

#include <gtest/gtest.h>

namespace kdsim::net {
namespace {

// Two NICs on a 1 Gbit/s link with a 1 ms latency and a 10-frame queue per direction. A 1514-byte
// frame takes (1514 + 24) x 8 bits / 1 Gbit/s = 12.304 us to serialise.
struct Ends {
    engine::Simulation sim{1};
    kernel::Cpu a{sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    kernel::Cpu b{sim, 1, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    Softnet sa{a}, sb{b};
    Nic na{sa, 40, NetCosts{}, "a.eth0"}, nb{sb, 40, NetCosts{}, "b.eth0"};
    Link link{sim, 1'000'000'000, engine::PS_PER_MS, 10};
    Ends() { link.attach(na, nb); }
    // Frames of 1514 bytes `na` hands the link now, until it refuses one: how many it took.
    int fill() {
        Packet p = transport_packet(FrameKind::TCP_DATA, 1448, 52, 0, 0);
        int n = 0;
        while (n < 100 && link.transmit(na, p)) ++n;
        return n;
    }
};

TEST(Link, AFrameThatHasLeftTheSenderTakesNoQueueRoomWhileItPropagates) {
    // At t = 0 ten frames fill the queue. By 10 x 12.304 = 123.04 us all ten have been serialised;
    // they are on the wire until 1 ms + 12.304 us at the earliest, and the queue takes ten more.
    Ends e;
    EXPECT_EQ(e.fill(), 10);
    e.sim.run(123'040'000); // ps
    EXPECT_EQ(e.fill(), 10);
    EXPECT_EQ(e.link.frames(), 20u);
}

TEST(Link, AFrameBeingSerialisedStillTakesQueueRoom) {
    // One ps before the tenth frame's end (123.04 us) it is still being serialised: one frame room.
    Ends e;
    EXPECT_EQ(e.fill(), 10);
    e.sim.run(123'040'000 - 1);
    EXPECT_EQ(e.fill(), 9);
}

} // namespace
} // namespace kdsim::net
