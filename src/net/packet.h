// A frame as the model moves it: its length and what kind of frame it is; the bytes are not
// carried (the ping-pong needs none; functional payloads belong to the network issue).
#pragma once

#include "engine/time.h"

#include <cstdint>

namespace kdsim::net {

enum class FrameKind : std::uint8_t { ARP_REQUEST, ARP_REPLY, TCP_DATA, TCP_ACK };

struct Packet {
    FrameKind kind = FrameKind::ARP_REQUEST;
    std::uint32_t len = 42;  // bytes of the frame without FCS (ARP: 14 + 28)
    std::uint64_t seq = 0;   // ARP: round-trip number; TCP: first payload byte's sequence number
    engine::Tick sent = 0;
    std::uint32_t payload = 0; // TCP payload bytes
    std::uint64_t ack = 0;     // TCP_ACK: next byte expected
    std::uint64_t window = 0;  // TCP_ACK: advertised receive window, bytes
};

} // namespace kdsim::net
