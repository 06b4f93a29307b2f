#include "net/virtio_offload.h"

#include <algorithm>

namespace kdsim::net {

bool& VirtioFeatures::operator[](std::size_t i) {
    std::array<bool*, NAMES.size()> m{&csum, &guest_csum, &host_tso4, &host_tso6, &guest_tso4, &guest_tso6, &mrg_rxbuf};
    return *m.at(i);
}

// As QEMU's virtio_net_get_features() (hw/net/virtio-net.c) clears them.
VirtioFeatures VirtioFeatures::negotiated() const {
    VirtioFeatures f = *this;
    if (!f.csum) f.host_tso4 = f.host_tso6 = false;
    if (!f.guest_csum) f.guest_tso4 = f.guest_tso6 = false;
    return f;
}

// virtnet_probe's mergeable_rx_bufs and big_packets.
// Models: virtnet_probe() (drivers/net/virtio_net.c)
VirtioRxMode rx_mode(const VirtioFeatures& f) {
    if (f.mrg_rxbuf) return VirtioRxMode::MERGEABLE;
    if (f.guest_tso4 || f.guest_tso6) return VirtioRxMode::BIG;
    return VirtioRxMode::SMALL;
}

// get_mergeable_buf_len (room 0: no XDP headroom): hdr + clamp(ewma, min_buf_len, PAGE_SIZE -
// hdr), aligned to L1_CACHE_BYTES. min_buf_len (mergeable_min_buf_len) is GOOD_PACKET_LEN for a
// 256-entry ring: (hdr + ETH_HLEN + VLAN_HLEN + IP_MAX_MTU) / 256 = 257 is below it.
// Models: add_recvbuf_mergeable() (drivers/net/virtio_net.c)
std::uint32_t MergeableBufs::next_len() {
    const std::uint64_t clamped = std::clamp<std::uint64_t>(ewma_, GOOD_PACKET_LEN, VIRTIO_PAGE_SIZE - VNET_HDR_LEN);
    std::uint32_t len = static_cast<std::uint32_t>((VNET_HDR_LEN + clamped + L1_CACHE_BYTES - 1) / L1_CACHE_BYTES * L1_CACHE_BYTES);
    if (PAGE_FRAG_SIZE - offset_ < len) offset_ = 0; // skb_page_frag_refill: a new 32 KiB page
    offset_ += len;
    const std::uint32_t hole = PAGE_FRAG_SIZE - offset_;
    if (hole < len) { // too little left for another buffer: this one takes it
        len += hole;
        offset_ += hole;
    }
    return len;
}

// ewma_add with weight_rcp 64, precision 0: the first value is taken as it is.
void MergeableBufs::add_packet(std::uint32_t len) {
    ewma_ = ewma_ ? ((ewma_ << 6) - ewma_ + len) >> 6 : len;
}

std::uint32_t tx_sg_entries(std::uint32_t tcp_payload) {
    return 1 + (tcp_payload + PAGE_FRAG_SIZE - 1) / PAGE_FRAG_SIZE;
}

} // namespace kdsim::net
