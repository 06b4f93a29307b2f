// A frame as the model moves it: its length and what kind of frame it is; the bytes are not
// carried (the ping-pong needs none; functional payloads belong to the network issue).
#pragma once

#include "engine/time.h"

#include <cstdint>

namespace kdsim::net {

enum class FrameKind : std::uint8_t { ARP_REQUEST, ARP_REPLY };

struct Packet {
    FrameKind kind = FrameKind::ARP_REQUEST;
    std::uint32_t len = 42;  // bytes of the frame without FCS (ARP: 14 + 28)
    std::uint64_t seq = 0;
    engine::Tick sent = 0;
};

} // namespace kdsim::net
