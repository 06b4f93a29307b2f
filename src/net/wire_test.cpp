// The frame bytes of net/wire.h and the tunnel payloads of net/tunnel_channel.h, checked against
// sums worked by hand (RFC 1071's example, a textbook IPv4 header, a TCP ACK summed word by word)
// and against an independent decryption with the SA's key.
#include "net/wire.h"

#include "crypto/aead.h"
#include "net/tunnel_channel.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace kdsim::net::wire {
namespace {

std::uint16_t be16(const std::vector<std::uint8_t>& b, std::size_t at) {
    return static_cast<std::uint16_t>(b[at] << 8 | b[at + 1]);
}

TEST(InetChecksum, Rfc1071WorkedExampleGives220d) {
    // RFC 1071 section 3: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2 (after the end-around carry),
    // whose complement is 220d.
    const std::vector<std::uint8_t> bytes{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
    EXPECT_EQ(inet_checksum(bytes), 0x220d);
}

TEST(InetChecksum, AnOddLastByteIsPaddedWithZero) {
    // 0x0102 + 0x0300 = 0x0402 -> ~ = 0xfbfd
    EXPECT_EQ(inet_checksum(std::vector<std::uint8_t>{0x01, 0x02, 0x03}), 0xfbfd);
}

TEST(Ipv4Header, TheTextbookHeaderGetsChecksumB861) {
    // 45 00 00 73 00 00 40 00 40 11 [b8 61] c0 a8 00 01 c0 a8 00 c7: a UDP packet of 115 bytes,
    // DF, TTL 64, 192.168.0.1 -> 192.168.0.199 (the worked example of the IPv4 header checksum).
    std::vector<std::uint8_t> out;
    put_ipv4(out, IPPROTO_UDP_, 0x73, 0xc0a80001, 0xc0a800c7);
    const std::vector<std::uint8_t> expected{0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                                             0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
    EXPECT_EQ(out, expected);
}

Packet ack(std::uint64_t acked, std::uint64_t window, std::uint8_t sacks) {
    Packet p;
    p.kind = FrameKind::TCP_ACK;
    p.len = 66 + (sacks ? 2 + 8u * sacks : 0);
    p.ack = acked;
    p.window = window;
    p.sacks = sacks;
    for (std::uint8_t i = 0; i < sacks; ++i) p.sack[i] = SackBlock{1000u * (i + 1), 1000u * (i + 1) + 500};
    return p;
}

TEST(TcpSegment, AnAckFromThe5201ServerHasTheChecksumSummedByHand) {
    // 192.0.2.2 -> 192.0.2.1, ports 5201 -> 32768 (flow 0), seq 1, ack 1, data offset 8, ACK,
    // window 128000 >> 7 = 1000, options NOP NOP TS(0, 0).
    // pseudo-header: c000+0202+c000+0201+0006+0020 = 0x18429
    // header: 1451+8000+0000+0001+0000+0001+8010+03e8+0000+0000+0101+080a = 0x12156
    // 0x18429 + 0x12156 = 0x2a57f -> 0xa57f + 2 = 0xa581 -> ~ = 0x5a7e
    std::vector<std::uint8_t> out;
    const std::size_t n = put_ip_packet(out, ack(0, 128000, 0), 0xc0000202, 0xc0000201);
    ASSERT_EQ(n, 52u);
    EXPECT_EQ(be16(out, 20), 5201);
    EXPECT_EQ(be16(out, 22), 32768);
    EXPECT_EQ(be16(out, 20 + 14), 1000);
    EXPECT_EQ(be16(out, 20 + 16), 0x5a7e);
}

// The one's complement sum of a segment with its pseudo-header is ffff when its checksum is right.
std::uint32_t folded(std::uint32_t s) {
    while (s >> 16) s = (s & 0xffff) + (s >> 16);
    return s;
}
std::uint32_t verify_transport(const std::vector<std::uint8_t>& ip) {
    const std::uint32_t len = be16(ip, 2) - 20u;
    std::uint32_t s = be16(ip, 12) + be16(ip, 14) + be16(ip, 16) + be16(ip, 18) + ip[9] + len;
    return folded(inet_sum(std::span(ip).subspan(20, len), s));
}

TEST(TcpSegment, ADataSegmentCarriesThePatternAtItsStreamOffsetAndVerifies) {
    Packet p;
    p.kind = FrameKind::TCP_DATA;
    p.len = 14 + 52 + 1448;
    p.seq = 1448 * 5;
    p.flow = 3;
    std::vector<std::uint8_t> out;
    ASSERT_EQ(put_ip_packet(out, p, 0xc0000201, 0xc0000202), 1500u);
    EXPECT_EQ(folded(inet_sum(std::span(out).subspan(0, 20))), 0xffffu);
    EXPECT_EQ(verify_transport(out), 0xffffu);
    EXPECT_EQ(be16(out, 20), 32768 + 3);
    // sequence number 7240 + 1 (ISN 0)
    EXPECT_EQ((std::uint32_t{out[24]} << 24 | out[25] << 16 | out[26] << 8 | out[27]), 7241u);
    EXPECT_EQ(out[52], 7240 % 251);
    EXPECT_EQ(out[52 + 300], (7240 + 300) % 251);
}

TEST(TcpSegment, AnAckWithTwoSackBlocksWritesThemUnpaddedTwoBytesShortOfTheModelsLength) {
    // TS 10 + SACK 2 + 16 = 28 option bytes: header 48; the model counts 52 + 18 = 70 IP bytes.
    std::vector<std::uint8_t> out;
    const std::size_t n = put_ip_packet(out, ack(10'000, 65536, 2), 0xc0000202, 0xc0000201);
    EXPECT_EQ(n, 68u);
    EXPECT_EQ(out[20 + 12] >> 4, 12); // data offset 48 / 4
    EXPECT_EQ(out[20 + 30], 5);       // SACK kind after TS
    EXPECT_EQ(out[20 + 31], 18);
    // first block: 10000 + 1 + 1000 .. + 1500
    EXPECT_EQ((std::uint32_t{out[52]} << 24 | out[53] << 16 | out[54] << 8 | out[55]), 11'001u);
    EXPECT_EQ(verify_transport(out), 0xffffu);
    std::vector<std::uint8_t> frame;
    build_frame(frame, ack(10'000, 65536, 2), machine_endpoint(1), machine_endpoint(0), nullptr, 0);
    EXPECT_EQ(frame.size(), 14u + 70u);
    EXPECT_EQ(frame[frame.size() - 1], 0); // the 2 bytes the model adds: Ethernet padding
}

TEST(UdpDatagram, ChecksumVerifiesAndTheFrameHasTheModelsLength) {
    Packet p;
    p.kind = FrameKind::UDP_DATA;
    p.len = 14 + 28 + 1000;
    p.seq = 42;
    std::vector<std::uint8_t> frame;
    build_frame(frame, p, machine_endpoint(0), machine_endpoint(1), nullptr, 0);
    ASSERT_EQ(frame.size(), p.len);
    EXPECT_EQ(be16(frame, 12), 0x0800);
    const std::vector<std::uint8_t> ip(frame.begin() + 14, frame.end());
    EXPECT_EQ(verify_transport(ip), 0xffffu);
    EXPECT_EQ(ip[28], 42 % 251);
}

TEST(ArpFrame, ARequestIsBroadcastAndAsksForThePeersAddress) {
    Packet p; // ARP_REQUEST, 42 bytes
    std::vector<std::uint8_t> frame;
    build_frame(frame, p, machine_endpoint(0), machine_endpoint(1), nullptr, 0);
    ASSERT_EQ(frame.size(), 42u);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(frame[static_cast<std::size_t>(i)], 0xff);
    EXPECT_EQ(be16(frame, 12), 0x0806);
    EXPECT_EQ(be16(frame, 20), 1); // request
    EXPECT_EQ(frame[41], 2);       // target 192.0.2.2: machine 1
}

Packet esp_frame(std::uint64_t counter, std::uint32_t inner_ip_len) {
    Packet p;
    p.kind = FrameKind::ESP;
    p.inner = FrameKind::TCP_DATA;
    p.inner_len = inner_ip_len + 14;
    p.seq = 5000;
    p.counter = counter;
    // as esp_output sizes it: 14 + 20 + 8 + 8 + pad_to(ip + 2, 4) + 16
    p.len = 14 + 20 + 8 + 8 + (inner_ip_len + 2 + 3) / 4 * 4 + 16;
    return p;
}

TEST(EspFrame, ItsCiphertextDecryptsWithTheSaKeyToTheInnerPacketAndTheRfc4303Trailer) {
    TunnelChannel ch(TunnelKind::ESP, crypto::AeadAlg::AES_128_GCM, true);
    const Packet p = esp_frame(4, 52 + 101); // 153 bytes + 1 pad byte + 2 = 156
    ch.seal(1, p, false);
    std::vector<std::uint8_t> frame;
    build_frame(frame, p, machine_endpoint(1), machine_endpoint(0), &ch, 1);
    ASSERT_EQ(frame.size(), p.len);
    EXPECT_EQ(frame[14 + 9], 50); // IP protocol ESP
    const std::size_t esp = 14 + 20;
    const TunnelChannel::Sa sa = ch.sa(1);
    EXPECT_EQ(sa.spi, 0x1002u);
    EXPECT_EQ(be16(frame, esp + 2), 0x1002);
    EXPECT_EQ(be16(frame, esp + 6), 5); // sequence number: counter 4 is the 5th packet
    ASSERT_EQ(sa.key.size(), 20u);      // AES-128 key + salt
    std::vector<std::uint8_t> nonce(sa.key.begin() + 16, sa.key.end());
    nonce.insert(nonce.end(), frame.begin() + esp + 8, frame.begin() + esp + 16); // explicit IV
    const std::vector<std::uint8_t> aad(frame.begin() + esp, frame.begin() + esp + 8);
    const std::vector<std::uint8_t> sealed(frame.begin() + esp + 16, frame.end());
    auto pt = crypto::aead_open(crypto::AeadAlg::AES_128_GCM, std::span(sa.key).first(16), nonce, aad, sealed);
    ASSERT_TRUE(pt.has_value());
    ASSERT_EQ(pt->size(), 156u);
    EXPECT_EQ((*pt)[0], 0x45);
    EXPECT_EQ(be16(*pt, 2), 153);
    EXPECT_EQ((*pt)[12], 198); // inner source: the tunnel address of side 1
    EXPECT_EQ((*pt)[15], 2);
    EXPECT_EQ((*pt)[153], 1); // padding 1
    EXPECT_EQ((*pt)[154], 1); // pad length
    EXPECT_EQ((*pt)[155], 4); // next header: IPv4
    EXPECT_TRUE(ch.open(0, p, false));
    EXPECT_EQ(ch.payload_mismatches(), 0u);
}

TEST(WireGuardFrame, ATransportDataMessageOverUdp51820WhoseTagVerifiesWithTheDirectionsKey) {
    TunnelChannel ch(TunnelKind::WIREGUARD, crypto::AeadAlg::CHACHA20_POLY1305, true);
    Packet p = esp_frame(9, 100);
    p.kind = FrameKind::WG_DATA;
    p.len = 14 + 28 + 16 + 112 + 16;
    ch.seal(0, p, false);
    std::vector<std::uint8_t> frame;
    build_frame(frame, p, machine_endpoint(0), machine_endpoint(1), &ch, 0);
    ASSERT_EQ(frame.size(), p.len);
    const std::size_t udp = 14 + 20, wg = udp + 8;
    EXPECT_EQ(be16(frame, udp), 51820);
    EXPECT_EQ(be16(frame, udp + 2), 51820);
    const std::vector<std::uint8_t> ip(frame.begin() + 14, frame.end());
    EXPECT_EQ(verify_transport(ip), 0xffffu);
    EXPECT_EQ(frame[wg], 4); // message type: transport data
    EXPECT_EQ(frame[wg + 8], 9); // little-endian counter
    std::vector<std::uint8_t> nonce(4, 0);
    nonce.insert(nonce.end(), frame.begin() + wg + 8, frame.begin() + wg + 16);
    const std::vector<std::uint8_t> sealed(frame.begin() + wg + 16, frame.end());
    auto pt = crypto::aead_open(crypto::AeadAlg::CHACHA20_POLY1305, ch.sa(0).key, nonce, {}, sealed);
    ASSERT_TRUE(pt.has_value());
    EXPECT_EQ(pt->size(), 112u); // 100 zero-padded to 16
    EXPECT_EQ(be16(*pt, 2), 100);
    EXPECT_EQ((*pt)[111], 0);
    // the other direction's key does not open it
    EXPECT_FALSE(crypto::aead_open(crypto::AeadAlg::CHACHA20_POLY1305, ch.sa(1).key, nonce, {}, sealed).has_value());
}

} // namespace
} // namespace kdsim::net::wire
