// A frame as the model moves it: its length, what kind of frame it is and the header fields the
// modelled protocols read. Payload bytes are not carried in the frame: in functional mode a
// tunnel keeps the ciphertext of each packet in its PacketStore, indexed by the packet's
// tunnel counter (tunnel.h).
#pragma once

#include "engine/time.h"

#include <array>
#include <cstdint>

namespace kdsim::net {

// A SACK block of an ACK (RFC 2018): bytes [ack + start, ack + end) held out of order.
struct SackBlock {
    std::uint32_t start = 0, end = 0;
};
inline constexpr std::size_t TCP_MAX_SACKS = 3; // with the timestamp option, 3 blocks fit

enum class FrameKind : std::uint8_t { ARP_REQUEST, ARP_REPLY, TCP_DATA, TCP_ACK, UDP_DATA, WG_DATA, ESP };

inline constexpr std::uint32_t ETH_HEADER = 14; // destination, source, EtherType

struct Packet {
    FrameKind kind = FrameKind::ARP_REQUEST;
    std::uint32_t len = 42;  // bytes of the frame without FCS (ARP: 14 + 28)
    std::uint64_t seq = 0;   // ARP: round-trip number; TCP: first payload byte's sequence number
    std::uint32_t payload = 0; // TCP or UDP payload bytes
    std::uint64_t ack = 0;     // TCP_ACK: next byte expected
    std::uint64_t window = 0;  // TCP_ACK: advertised receive window, bytes
    std::array<SackBlock, TCP_MAX_SACKS> sack{}; // TCP_ACK: the first `sacks` are valid
    std::uint8_t sacks = 0;
    // Tunnelled frames (WG_DATA, ESP): the inner packet's kind and length, and the sender's
    // per-tunnel counter (WireGuard's nonce counter, ESP's sequence number).
    FrameKind inner = FrameKind::TCP_DATA;
    std::uint32_t inner_len = 0;
    std::uint64_t counter = 0;
    // The connection or UDP socket pair a segment or datagram belongs to (one per iperf3 stream,
    // one per udp_flows flow).
    std::uint32_t flow = 0;
    // The CPU read some of this frame's bytes stale from a non-coherent DMA buffer.
    bool corrupt = false;
    // A segment skb_segment made with features 0 (a tunnel's skb_gso_segment: wg_xmit,
    // xfrm_output_gso): a new linear skb of its own whose payload was copied and checksummed
    // (skb->ip_summed == CHECKSUM_NONE). Else a locally built skb is CHECKSUM_PARTIAL.
    bool csum_none = false;
    // skb->priority (TC_PRIO_*): pfifo_fast's band (prio2band), fq's high-priority flow (7).
    std::uint8_t priority = 0;
    // skb->tstamp as the sender set it: an earliest departure time (EDT, TCP under fq); 0: none.
    engine::Tick tstamp = 0;
    // skb->truesize a TCP sender charged to sk_wmem_alloc (TSQ, under a qdisc layer); 0: none.
    std::uint32_t truesize = 0;
    // Where the received frame's first byte lies in the receiving machine's memory hierarchy
    // (its rx buffer, which becomes the skb's data); 0 when that machine has none. A locally
    // built TCP skb's: its payload's address less the headers (TcpSource::tcp_transmit_skb), a
    // WireGuard packet's: its linear buffer's frame (tunnel.cpp).
    std::uint64_t data = 0;
    // A GRO or GSO super-packet: the segments it stands for (1: a plain frame), each of gso_size
    // payload bytes but the last. A GRO skb also points at each segment's frame in memory
    // (frag_data[i], valid while it is being delivered; nullptr otherwise).
    std::uint32_t gso_segs = 1;
    std::uint32_t gso_size = 0;
    const std::uint64_t* frag_data = nullptr;
};

// A TCP segment or UDP datagram of `payload` bytes as the transport hands it to IP: the frame's
// length adds the transport and IP headers (`headers`) and Ethernet's.
inline Packet transport_packet(FrameKind kind, std::uint32_t payload, std::uint32_t headers, std::uint64_t seq,
                               std::uint32_t flow) {
    Packet p{};
    p.kind = kind;
    p.len = payload + headers + ETH_HEADER;
    p.seq = seq;
    p.payload = payload;
    p.flow = flow;
    return p;
}

// The frame length of segment i of the GSO skb `p` (gso_segment_of(p, i).len).
inline std::uint32_t gso_segment_len(const Packet& p, std::uint32_t i) {
    return p.len - p.payload + (i + 1 < p.gso_segs ? p.gso_size : p.payload - i * p.gso_size);
}

// Turns `s`, a copy of a GSO skb, into its segment i (gso_segment_of's fields, in place).
inline void gso_segment_in_place(Packet& s, std::uint32_t i) {
    const std::uint32_t off = i * s.gso_size;
    const std::uint32_t payload = i + 1 < s.gso_segs ? s.gso_size : s.payload - off;
    s.seq += off;
    s.len = s.len - s.payload + payload;
    s.payload = payload;
    s.data = s.data ? s.data + off : 0;
    s.gso_segs = 1;
    s.gso_size = 0;
    s.frag_data = nullptr;
}

// Segment i of the GSO skb `p` (skb_segment): its own sequence number and payload (gso_size, the
// last one the rest), the same headers; its data where its payload lies in the skb's (a locally
// built skb's payload is one run of bytes in the sender's page frags: tcp.h).
inline Packet gso_segment_of(const Packet& p, std::uint32_t i) {
    Packet s = p;
    gso_segment_in_place(s, i);
    return s;
}

} // namespace kdsim::net
