// The functional bytes of a tunnel between two machines (net/tunnel.h): the keys of its two
// directions and the packets in flight, really sealed by the sender and opened by the receiver
// through OpenSSL (crypto/aead.h). The plaintext is the real inner IPv4 packet (net/wire.h) with
// the protocol's trailer, as the drivers encrypt it:
//
// IPsec ESP in tunnel mode (net/ipv4/esp4.c, RFC 4303): plaintext = inner packet, padding 1, 2,
// 3, ... to a multiple of 4 with the pad-length and next-header (4, IPv4) bytes; rfc4106(gcm(aes))
// or rfc7539esp(chacha20,poly1305) (RFC 4106, RFC 7634): nonce = the SA's 4-byte salt || the
// 8-byte IV sent in the packet (here the 64-bit sequence number, as seqiv does), AAD = SPI ||
// sequence number. Sequence numbers start at 1. Each direction is its own SA (SPI 0x1001 for
// the packets side 0 sends, 0x1002 for side 1's) with its own key and salt.
//
// WireGuard transport data (drivers/net/wireguard/send.c, noise.c): type 4, 3 reserved bytes,
// the receiver's index, the 64-bit little-endian counter (from 0), then ChaCha20-Poly1305 of the
// inner packet zero-padded to a multiple of 16, nonce = 4 zero bytes || counter, no AAD; each
// direction has its own key.
//
// Keys are fixed patterns (sa() gives them), so that a capture can be decrypted (docs/pcap.md).
// In timing mode nothing is sealed and open() only reports the corruption it is told of.
#pragma once

#include "crypto/aead.h"
#include "net/config.h"
#include "net/packet.h"

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace kdsim::net {

class TunnelChannel {
public:
    TunnelChannel(TunnelKind kind, crypto::AeadAlg alg, bool functional);
    TunnelKind kind() const { return kind_; }
    crypto::AeadAlg alg() const { return alg_; }
    bool functional() const { return functional_; }
    // The sender (side 0 or 1) seals the inner packet the outer frame `outer` carries (its inner
    // kind, length and fields, under its counter); the receiver opens it. `corrupt` flips a byte
    // of the ciphertext first. open() returns false when authentication fails, and counts a
    // packet that authenticated but is not what was sent (payload_mismatches).
    void seal(int side, const Packet& outer, bool corrupt);
    bool open(int side, const Packet& outer, bool corrupt);
    std::uint64_t payload_mismatches() const { return mismatches_; }

    // Appends what follows the outer IPv4 header (ESP) or UDP header (WireGuard) of `outer` as
    // `side` sent it: the protocol header and the sealed bytes. Functional mode only; the packet
    // must still be held (sealed and not yet reused).
    void put_wire_payload(std::vector<std::uint8_t>& out, int side, const Packet& outer) const;

    // The security association of the packets `side` sends: ESP's SPI or WireGuard's receiver
    // index, and the key as the kernel holds it (ESP: the AEAD key followed by the 4-byte salt,
    // as `ip xfrm state ... aead 'rfc4106(gcm(aes))' KEY 128` takes it).
    struct Sa {
        std::uint32_t spi = 0;
        std::vector<std::uint8_t> key;
    };
    Sa sa(int side) const;

    // The plaintext of `outer` sent by `side`: the inner IP packet and the protocol's trailer.
    std::span<const std::uint8_t> plaintext(int side, const Packet& outer);

private:
    static constexpr std::size_t SLOTS = 8192; // initial store size per direction; it doubles when needed
    struct Slot {
        std::uint64_t counter = ~0ull;
        bool in_flight = false; // sealed and not yet opened (or dropped before it was)
        std::vector<std::uint8_t> bytes;
    };
    // The slot for `counter` on the sending side; the store grows rather than overwrite a
    // packet still in flight (packets dropped on the way keep their slot until it is reused).
    Slot& slot_for_seal(int side, std::uint64_t counter);
    const Slot& held(int side, std::uint64_t counter) const;
    std::array<std::uint8_t, 12> nonce(int side, std::uint64_t counter) const;
    std::array<std::uint8_t, 8> aad(int side, std::uint64_t counter) const;
    std::span<const std::uint8_t> aad_of(const std::array<std::uint8_t, 8>& a) const;
    TunnelKind kind_;
    crypto::AeadAlg alg_;
    bool functional_;
    std::array<std::vector<std::uint8_t>, 2> key_;  // per sending side
    std::array<std::array<std::uint8_t, 4>, 2> salt_{}; // ESP
    std::array<std::unique_ptr<crypto::AeadKey>, 2> aead_;
    std::array<std::vector<Slot>, 2> store_;
    std::vector<std::uint8_t> pt_, opened_;
    std::uint64_t mismatches_ = 0;
};

} // namespace kdsim::net
