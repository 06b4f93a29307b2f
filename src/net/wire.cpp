#include "net/wire.h"

#include "net/tunnel_channel.h"

#include <stdexcept>

namespace kdsim::net::wire {

namespace {

void put16(std::vector<std::uint8_t>& out, std::uint32_t v) {
    out.push_back(static_cast<std::uint8_t>(v >> 8));
    out.push_back(static_cast<std::uint8_t>(v));
}
void put32(std::vector<std::uint8_t>& out, std::uint32_t v) {
    put16(out, v >> 16);
    put16(out, v & 0xffff);
}
void set16(std::vector<std::uint8_t>& out, std::size_t at, std::uint32_t v) {
    out[at] = static_cast<std::uint8_t>(v >> 8);
    out[at + 1] = static_cast<std::uint8_t>(v);
}
void put_mac(std::vector<std::uint8_t>& out, const std::array<std::uint8_t, 6>& mac) {
    out.insert(out.end(), mac.begin(), mac.end());
}
void put_eth(std::vector<std::uint8_t>& out, const std::array<std::uint8_t, 6>& dst, const Endpoint& from,
             std::uint16_t type) {
    put_mac(out, dst);
    put_mac(out, from.mac);
    put16(out, type);
}

// The sum of the IPv4 pseudo-header of a transport segment (RFC 793 / 768).
std::uint32_t pseudo_sum(std::uint32_t src, std::uint32_t dst, std::uint8_t protocol, std::uint32_t len) {
    return (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + protocol + len;
}

void put_arp(std::vector<std::uint8_t>& out, bool reply, const Endpoint& from, const Endpoint& to) {
    put16(out, 1);      // hardware: Ethernet
    put16(out, 0x0800); // protocol: IPv4
    out.push_back(6);
    out.push_back(4);
    put16(out, reply ? 2 : 1);
    put_mac(out, from.mac);
    put32(out, from.ip);
    put_mac(out, reply ? to.mac : std::array<std::uint8_t, 6>{});
    put32(out, to.ip);
}

} // namespace

Endpoint machine_endpoint(std::size_t index) {
    Endpoint e;
    e.mac = {0x02, 0, 0, 0, static_cast<std::uint8_t>((index + 1) >> 8), static_cast<std::uint8_t>(index + 1)};
    e.ip = (192u << 24) | (0u << 16) | (2u << 8) | static_cast<std::uint32_t>(index % 254 + 1);
    return e;
}

std::uint32_t tunnel_ip(int side) { return (198u << 24) | (51u << 16) | (100u << 8) | static_cast<std::uint32_t>(side + 1); }

std::uint16_t client_port(std::uint32_t flow) { return static_cast<std::uint16_t>(32768 + flow % 28232); }

std::uint32_t inet_sum(std::span<const std::uint8_t> data, std::uint32_t sum) {
    std::uint64_t s = sum;
    std::size_t i = 0;
    for (; i + 1 < data.size(); i += 2) s += static_cast<std::uint32_t>(data[i] << 8 | data[i + 1]);
    if (i < data.size()) s += static_cast<std::uint32_t>(data[i] << 8);
    while (s >> 32) s = (s & 0xffffffff) + (s >> 32);
    return static_cast<std::uint32_t>(s);
}

std::uint16_t inet_checksum(std::span<const std::uint8_t> data, std::uint32_t sum) {
    std::uint32_t s = inet_sum(data, sum);
    while (s >> 16) s = (s & 0xffff) + (s >> 16);
    return static_cast<std::uint16_t>(~s);
}

void put_ipv4(std::vector<std::uint8_t>& out, std::uint8_t protocol, std::uint16_t total_len, std::uint32_t src,
              std::uint32_t dst) {
    const std::size_t at = out.size();
    out.push_back(0x45); // version 4, 5 words
    out.push_back(0);    // DSCP/ECN
    put16(out, total_len);
    put16(out, 0);      // identification
    put16(out, 0x4000); // DF
    out.push_back(64);  // TTL
    out.push_back(protocol);
    put16(out, 0);
    put32(out, src);
    put32(out, dst);
    set16(out, at + 10, inet_checksum(std::span(out).subspan(at, 20)));
}

void finish_udp(std::vector<std::uint8_t>& out, std::size_t at, std::uint16_t sport, std::uint16_t dport,
                std::uint32_t src, std::uint32_t dst) {
    const std::uint32_t len = static_cast<std::uint32_t>(out.size() - at);
    set16(out, at, sport);
    set16(out, at + 2, dport);
    set16(out, at + 4, len);
    set16(out, at + 6, 0);
    std::uint16_t c = inet_checksum(std::span(out).subspan(at), pseudo_sum(src, dst, IPPROTO_UDP_, len));
    set16(out, at + 6, c == 0 ? 0xffff : c); // RFC 768: a computed 0 is sent as all ones
}

std::size_t put_ip_packet(std::vector<std::uint8_t>& out, const Packet& p, std::uint32_t src, std::uint32_t dst) {
    const std::size_t start = out.size();
    const std::uint32_t model_ip_len = p.len - ETH_HEADER;
    if (p.kind == FrameKind::UDP_DATA) {
        if (model_ip_len < 28) throw std::logic_error("wire: a UDP frame shorter than its headers");
        put_ipv4(out, IPPROTO_UDP_, static_cast<std::uint16_t>(model_ip_len), src, dst);
        const std::size_t udp = out.size();
        out.resize(udp + 8);
        for (std::uint32_t i = 0; i < model_ip_len - 28; ++i) out.push_back(static_cast<std::uint8_t>((p.seq + i) % 251));
        finish_udp(out, udp, client_port(p.flow), IPERF3_PORT, src, dst);
        return out.size() - start;
    }
    if (p.kind != FrameKind::TCP_DATA && p.kind != FrameKind::TCP_ACK)
        throw std::logic_error("wire: not a TCP or UDP packet");
    const bool data = p.kind == FrameKind::TCP_DATA;
    const std::uint32_t sacks = data ? 0 : p.sacks;
    const std::uint32_t tcp_header = 32 + 8 * sacks; // 20 + timestamps 10 + (SACK 2 + 8n, or 2 NOPs)
    const std::uint32_t headers = 20 + tcp_header;
    const std::uint32_t payload = data ? model_ip_len - headers : 0;
    const std::uint32_t ip_len = headers + payload;
    if (model_ip_len < headers || (!data && model_ip_len != 52 + (sacks ? 2 + 8 * sacks : 0)))
        throw std::logic_error("wire: a TCP frame whose length does not fit its headers");
    put_ipv4(out, IPPROTO_TCP_, static_cast<std::uint16_t>(ip_len), src, dst);
    const std::size_t tcp = out.size();
    const std::uint16_t cport = client_port(p.flow);
    put16(out, data ? cport : IPERF3_PORT);
    put16(out, data ? IPERF3_PORT : cport);
    put32(out, data ? static_cast<std::uint32_t>(p.seq + 1) : 1);
    put32(out, data ? 1 : static_cast<std::uint32_t>(p.ack + 1));
    out.push_back(static_cast<std::uint8_t>(tcp_header / 4 << 4));
    out.push_back(data ? 0x18 : 0x10); // ACK (+ PSH on data, as tcp_push marks a write's last segment)
    put16(out, data ? 0xffff : static_cast<std::uint32_t>(std::min<std::uint64_t>(p.window >> TCP_WINDOW_SHIFT, 0xffff)));
    put16(out, 0); // checksum
    put16(out, 0); // urgent pointer
    if (!sacks) {
        out.push_back(1); // NOP
        out.push_back(1); // NOP
    }
    out.push_back(8); // timestamps
    out.push_back(10);
    put32(out, 0);
    put32(out, 0);
    if (sacks) {
        out.push_back(5);
        out.push_back(static_cast<std::uint8_t>(2 + 8 * sacks));
        for (std::uint32_t i = 0; i < sacks; ++i) {
            put32(out, static_cast<std::uint32_t>(p.ack + 1 + p.sack[i].start));
            put32(out, static_cast<std::uint32_t>(p.ack + 1 + p.sack[i].end));
        }
    }
    for (std::uint32_t i = 0; i < payload; ++i) out.push_back(tcp_payload_byte(p.seq + i));
    set16(out, tcp + 16, inet_checksum(std::span(out).subspan(tcp), pseudo_sum(src, dst, IPPROTO_TCP_, tcp_header + payload)));
    return out.size() - start;
}

void build_frame(std::vector<std::uint8_t>& out, const Packet& p, const Endpoint& from, const Endpoint& to,
                 const TunnelChannel* channel, int sender_side) {
    out.clear();
    switch (p.kind) {
    case FrameKind::ARP_REQUEST:
        put_eth(out, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, from, 0x0806);
        put_arp(out, false, from, to);
        break;
    case FrameKind::ARP_REPLY:
        put_eth(out, to.mac, from, 0x0806);
        put_arp(out, true, from, to);
        break;
    case FrameKind::TCP_DATA:
    case FrameKind::TCP_ACK:
    case FrameKind::UDP_DATA:
        put_eth(out, to.mac, from, 0x0800);
        put_ip_packet(out, p, from.ip, to.ip);
        break;
    case FrameKind::ESP:
    case FrameKind::WG_DATA: {
        if (!channel) throw std::logic_error("wire: a tunnel frame on a machine without a tunnel");
        const bool esp = p.kind == FrameKind::ESP;
        put_eth(out, to.mac, from, 0x0800);
        put_ipv4(out, esp ? IPPROTO_ESP_ : IPPROTO_UDP_, static_cast<std::uint16_t>(p.len - ETH_HEADER), from.ip, to.ip);
        const std::size_t udp = out.size();
        if (!esp) out.resize(udp + 8);
        channel->put_wire_payload(out, sender_side, p);
        if (!esp) finish_udp(out, udp, WIREGUARD_PORT, WIREGUARD_PORT, from.ip, to.ip);
        break;
    }
    }
    if (out.size() > p.len) throw std::logic_error("wire: a frame's headers are longer than the frame");
    out.resize(p.len, 0);
}

} // namespace kdsim::net::wire
