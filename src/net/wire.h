// The bytes of a modelled frame as the kernel would put them on the wire: Ethernet II, ARP
// (RFC 826), IPv4 (RFC 791) with its header checksum, TCP (RFC 9293) and UDP (RFC 768) with their
// pseudo-header checksums (RFC 1071 sums), and the outer headers of the tunnels (IPsec ESP, RFC
// 4303; WireGuard over UDP port 51820). The model moves frames as `Packet` records (kind, length,
// sequence numbers); these functions turn a record into the bytes a packet tap on the device
// (dev_queue_xmit_nit, netif_receive_skb's ptype_all delivery: what tcpdump sees) would copy,
// and give a tunnel the real inner IP packet it encrypts (net/tunnel_channel.h).
//
// What the model does not carry is made deterministic: machine i has MAC 02:00:00:00:00:(i+1)
// and address 192.0.2.(i+1) (RFC 5737 documentation range), the tunnel sides 198.51.100.1 and
// .2; a flow's client port is 32768 + (flow mod 28232), the server's 5201 (iperf3); the connection's initial
// sequence number is 0 (the model has no handshake), so a byte at stream offset o has sequence
// number o + 1; a payload byte at stream offset o (TCP) or byte i of datagram n (UDP) is
// (o mod 251) or ((n + i) mod 251); the TCP timestamp option the model's headers count is written
// with TSval = TSecr = 0 (the model keeps no timestamps); IP ID 0 with DF set, TTL 64.
#pragma once

#include "net/packet.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace kdsim::net {
class TunnelChannel;
}

namespace kdsim::net::wire {

// One end of an Ethernet segment: its MAC and IPv4 address (host byte order).
struct Endpoint {
    std::array<std::uint8_t, 6> mac{};
    std::uint32_t ip = 0;
};
// The addresses of the scenario's machine number `index` (0-based, in scenario order).
Endpoint machine_endpoint(std::size_t index);
// The tunnel-inner address of channel side 0 or 1.
std::uint32_t tunnel_ip(int side);

inline constexpr std::uint16_t IPERF3_PORT = 5201;
inline constexpr std::uint16_t WIREGUARD_PORT = 51820;
inline constexpr std::uint8_t IPPROTO_TCP_ = 6, IPPROTO_UDP_ = 17, IPPROTO_ESP_ = 50;
inline constexpr std::uint32_t TCP_WINDOW_SHIFT = 7; // the window scale a Linux receiver with MB buffers announces

// The client port of flow `flow`.
std::uint16_t client_port(std::uint32_t flow);
// The byte at stream offset `offset` of a TCP payload.
inline std::uint8_t tcp_payload_byte(std::uint64_t offset) { return static_cast<std::uint8_t>(offset % 251); }

// RFC 1071: the 16-bit one's complement of the one's complement sum of `data` (an odd last byte
// padded with zero), `sum` being a partial sum to start from (a pseudo-header's). The result goes
// into the header as is (big-endian).
std::uint16_t inet_checksum(std::span<const std::uint8_t> data, std::uint32_t sum = 0);
// The partial sum (not complemented, not folded) of `data`, for chaining into inet_checksum.
std::uint32_t inet_sum(std::span<const std::uint8_t> data, std::uint32_t sum = 0);

// Appends an IPv4 header (20 bytes) for a packet of `total_len` bytes, checksum filled in.
void put_ipv4(std::vector<std::uint8_t>& out, std::uint8_t protocol, std::uint16_t total_len, std::uint32_t src,
              std::uint32_t dst);
// Appends a UDP header for `payload_len` payload bytes already appended right after it: call
// with the payload in place, `at` being where the UDP header starts (8 bytes reserved there).
void finish_udp(std::vector<std::uint8_t>& out, std::size_t at, std::uint16_t sport, std::uint16_t dport,
                std::uint32_t src, std::uint32_t dst);

// Appends the IPv4 packet of the transport packet `p` (kind TCP_DATA, TCP_ACK or UDP_DATA; `len`
// the frame length, so the model's IP length is len - 14) from `src` to `dst`, and returns its
// length: len - 14, except an ACK with SACK blocks, whose options are written unpadded (TS 10 +
// SACK 2 + 8n bytes) and which is 2 bytes shorter than the model counts (the model adds the two
// NOPs that align SACK without TS).
std::size_t put_ip_packet(std::vector<std::uint8_t>& out, const Packet& p, std::uint32_t src, std::uint32_t dst);

// The whole frame of `p` (without FCS, exactly p.len bytes, zero-padded after the IP packet when
// that is shorter) as sent by `from` to `to`. ESP and WireGuard frames take their payload from
// `channel`, sent by its `sender_side`; nullptr for a machine without a tunnel. `out` is
// replaced.
void build_frame(std::vector<std::uint8_t>& out, const Packet& p, const Endpoint& from, const Endpoint& to,
                 const TunnelChannel* channel, int sender_side);

} // namespace kdsim::net::wire
