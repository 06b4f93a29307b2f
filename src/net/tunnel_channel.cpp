#include "net/tunnel_channel.h"

#include "net/wire.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kdsim::net {

namespace {
constexpr std::uint32_t ESP_SPI_BASE = 0x1000;
constexpr std::uint8_t IPPROTO_IPIP = 4; // ESP next header of a tunnel-mode IPv4 packet
std::uint32_t pad_to(std::uint32_t n, std::uint32_t a) { return (n + a - 1) / a * a; }
std::uint64_t esp_seq(std::uint64_t counter) { return counter + 1; } // RFC 4303: the first packet is 1
} // namespace

TunnelChannel::TunnelChannel(TunnelKind kind, crypto::AeadAlg alg, bool functional)
    : kind_(kind), alg_(alg), functional_(functional) {
    for (int side = 0; side < 2; ++side) {
        auto& key = key_[static_cast<std::size_t>(side)];
        key.resize(crypto::key_size(alg));
        for (std::size_t i = 0; i < key.size(); ++i) key[i] = static_cast<std::uint8_t>(0x40 + 0x20 * side + i);
        for (std::size_t i = 0; i < 4; ++i) salt_[static_cast<std::size_t>(side)][i] = static_cast<std::uint8_t>(0xa0 + 4 * side + i);
    }
    if (!functional_) return;
    for (std::size_t side = 0; side < 2; ++side) {
        aead_[side] = std::make_unique<crypto::AeadKey>(alg, key_[side]);
        store_[side].resize(SLOTS);
    }
}

TunnelChannel::Sa TunnelChannel::sa(int side) const {
    Sa s;
    const auto k = static_cast<std::size_t>(side);
    s.key = key_[k];
    if (kind_ == TunnelKind::ESP) {
        s.spi = ESP_SPI_BASE + 1 + static_cast<std::uint32_t>(side);
        s.key.insert(s.key.end(), salt_[k].begin(), salt_[k].end());
    } else {
        s.spi = ESP_SPI_BASE + 1 + static_cast<std::uint32_t>(1 - side); // the receiver's index
    }
    return s;
}

std::span<const std::uint8_t> TunnelChannel::plaintext(int side, const Packet& outer) {
    Packet inner = outer;
    inner.kind = outer.inner;
    inner.len = outer.inner_len;
    const std::uint32_t model_ip_len = inner.len - ETH_HEADER;
    pt_.clear();
    const std::size_t ip_len = wire::put_ip_packet(pt_, inner, wire::tunnel_ip(side), wire::tunnel_ip(1 - side));
    if (kind_ == TunnelKind::WIREGUARD) {
        pt_.resize(pad_to(model_ip_len, 16), 0); // wg's padding: zeros to a multiple of 16
        return pt_;
    }
    const std::size_t total = pad_to(model_ip_len + 2, 4);
    const std::size_t pad = total - 2 - ip_len;
    if (pad > 255) throw std::logic_error("esp: padding longer than 255 bytes");
    for (std::size_t i = 1; i <= pad; ++i) pt_.push_back(static_cast<std::uint8_t>(i)); // RFC 4303 2.4
    pt_.push_back(static_cast<std::uint8_t>(pad));
    pt_.push_back(IPPROTO_IPIP);
    return pt_;
}

std::array<std::uint8_t, 12> TunnelChannel::nonce(int side, std::uint64_t counter) const {
    std::array<std::uint8_t, 12> n{};
    if (kind_ == TunnelKind::WIREGUARD) { // 4 zero bytes + little-endian counter
        for (std::size_t i = 0; i < 8; ++i) n[4 + i] = static_cast<std::uint8_t>(counter >> (8 * i));
        return n;
    }
    const auto& salt = salt_[static_cast<std::size_t>(side)]; // salt || IV, IV = big-endian sequence number
    std::copy(salt.begin(), salt.end(), n.begin());
    const std::uint64_t seq = esp_seq(counter);
    for (std::size_t i = 0; i < 8; ++i) n[4 + i] = static_cast<std::uint8_t>(seq >> (56 - 8 * i));
    return n;
}

std::array<std::uint8_t, 8> TunnelChannel::aad(int side, std::uint64_t counter) const {
    std::array<std::uint8_t, 8> a{}; // ESP: SPI || 32-bit sequence number
    const std::uint32_t spi = ESP_SPI_BASE + 1 + static_cast<std::uint32_t>(side);
    const auto seq = static_cast<std::uint32_t>(esp_seq(counter));
    for (std::size_t i = 0; i < 4; ++i) {
        a[i] = static_cast<std::uint8_t>(spi >> (24 - 8 * i));
        a[4 + i] = static_cast<std::uint8_t>(seq >> (24 - 8 * i));
    }
    return a;
}

std::span<const std::uint8_t> TunnelChannel::aad_of(const std::array<std::uint8_t, 8>& a) const {
    if (kind_ == TunnelKind::WIREGUARD) return {};
    return a;
}

TunnelChannel::Slot& TunnelChannel::slot_for_seal(int side, std::uint64_t counter) {
    auto& store = store_[static_cast<std::size_t>(side)];
    Slot* s = &store[counter % store.size()];
    // A slot still holding an unopened packet from less than one store-length ago: grow. (An
    // older unopened one was dropped on the way and is reused.)
    if (s->in_flight && s->counter + store.size() * 4 > counter) {
        std::vector<Slot> bigger(store.size() * 2);
        for (Slot& old : store)
            if (old.counter != ~0ull) bigger[old.counter % bigger.size()] = std::move(old);
        store = std::move(bigger);
        s = &store[counter % store.size()];
    }
    return *s;
}

const TunnelChannel::Slot& TunnelChannel::held(int side, std::uint64_t counter) const {
    const auto& store = store_[static_cast<std::size_t>(side)];
    if (store.empty()) throw std::logic_error("tunnel store: no bytes are sealed in timing mode");
    const Slot& s = store[counter % store.size()];
    if (s.counter != counter)
        throw std::logic_error("tunnel store: packet " + std::to_string(counter) + " was never sealed or is no longer held");
    return s;
}

void TunnelChannel::seal(int side, const Packet& outer, bool corrupt) {
    if (!functional_) return;
    const auto a = aad(side, outer.counter);
    const auto n = nonce(side, outer.counter);
    auto pt = plaintext(side, outer);
    Slot& s = slot_for_seal(side, outer.counter);
    s.counter = outer.counter;
    s.in_flight = true;
    aead_[static_cast<std::size_t>(side)]->seal(n, aad_of(a), pt, s.bytes);
    if (corrupt) s.bytes[0] ^= 0x5a;
}

bool TunnelChannel::open(int side, const Packet& outer, bool corrupt) {
    if (!functional_) return !corrupt;
    const int sender = 1 - side;
    auto& store = store_[static_cast<std::size_t>(sender)];
    Slot& s = store[outer.counter % store.size()];
    if (s.counter != outer.counter) throw std::logic_error("tunnel store: a packet was opened that was never sealed");
    s.in_flight = false;
    if (corrupt) s.bytes[s.bytes.size() / 2] ^= 0xa5;
    const auto a = aad(sender, outer.counter);
    if (!aead_[static_cast<std::size_t>(sender)]->open(nonce(sender, outer.counter), aad_of(a), s.bytes, opened_))
        return false;
    auto pt = plaintext(sender, outer);
    if (opened_.size() != pt.size() || !std::equal(pt.begin(), pt.end(), opened_.begin())) ++mismatches_;
    return true;
}

void TunnelChannel::put_wire_payload(std::vector<std::uint8_t>& out, int side, const Packet& outer) const {
    const Slot& s = held(side, outer.counter);
    auto put32 = [&](std::uint32_t v, bool little) {
        for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (little ? 8 * i : 24 - 8 * i)));
    };
    if (kind_ == TunnelKind::ESP) {
        const auto a = aad(side, outer.counter); // SPI, sequence number
        out.insert(out.end(), a.begin(), a.end());
        const auto n = nonce(side, outer.counter); // the IV: the nonce after the salt
        out.insert(out.end(), n.begin() + 4, n.end());
    } else {
        put32(4, true); // message type 4 (transport data) and 3 reserved zero bytes
        put32(ESP_SPI_BASE + 1 + static_cast<std::uint32_t>(1 - side), true); // the receiver's index
        for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(outer.counter >> (8 * i)));
    }
    out.insert(out.end(), s.bytes.begin(), s.bytes.end());
}

} // namespace kdsim::net
